// libcuda.so.1: cuGetErrorName and cuGetErrorString. Names come from the toolkit's own enum
// (cu_result_names.inc); descriptions are CUDA's wording for the codes simgpu returns, the name
// otherwise.
#include "tests/simgpu/driver/libcuda/driver_common.h"

namespace {

struct Named {
  CUresult code;
  const char* name;
};

constexpr Named kNames[] = {
#define X(name) {name, #name},
#include "tests/simgpu/driver/libcuda/cu_result_names.inc"
#undef X
};

constexpr Named kDescriptions[] = {
    {CUDA_SUCCESS, "no error"},
    {CUDA_ERROR_INVALID_VALUE, "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "initialization error"},
    {CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"},
    {CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state"},
    {CUDA_ERROR_NOT_SUPPORTED, "operation not supported"},
    {CUDA_ERROR_UNKNOWN, "unknown error"},
};

}  // namespace

SIMGPU_EXPORT CUresult cuGetErrorName(CUresult error, const char** str) {
  if (str == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (const Named& n : kNames) {
    if (n.code == error) {
      *str = n.name;
      return CUDA_SUCCESS;
    }
  }
  *str = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}

SIMGPU_EXPORT CUresult cuGetErrorString(CUresult error, const char** str) {
  if (str == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (const Named& n : kDescriptions) {
    if (n.code == error) {
      *str = n.name;
      return CUDA_SUCCESS;
    }
  }
  return cuGetErrorName(error, str);
}
