// libcuda.so.1: cuGetProcAddress and cuGetProcAddress_v2 over driver_symbols.inc. The runtime
// (simgpu's libcudart.so.13, like NVIDIA's) obtains every driver entry point here, so an
// interposer that hooks cuGetProcAddress sees all of the runtime's driver calls.
#include <cstring>

#include "tests/simgpu/driver/libcuda/driver_common.h"
#include "tests/simgpu/driver/libcuda/driver_legacy.h"

namespace {

struct Entry {
  const char* name;
  int version;
  void* fn;
};

const Entry kEntries[] = {
#define X(name, version, symbol) {#name, version, reinterpret_cast<void*>(&symbol)},
#include "tests/simgpu/driver/libcuda/driver_symbols.inc"
#undef X
};

CUresult Lookup(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                CUdriverProcAddressQueryResult* status) {
  simgpu::CheckConfigOrExit();
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  if ((flags & ~uint64_t{CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                         CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM}) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0) {
    simgpu::driver::Unsupported("cuGetProcAddress",
                                "CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  const Entry* best = nullptr;
  bool named = false;
  for (const Entry& e : kEntries) {
    if (std::strcmp(e.name, symbol) != 0) continue;
    named = true;
    if (e.version <= cuda_version && (best == nullptr || e.version > best->version)) best = &e;
  }
  if (best == nullptr) {
    if (status != nullptr) {
      *status =
          named ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    }
    return CUDA_ERROR_NOT_FOUND;
  }
  if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  *pfn = best->fn;
  return CUDA_SUCCESS;
}

}  // namespace

SIMGPU_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cuda_version,
                                           cuuint64_t flags,
                                           CUdriverProcAddressQueryResult* status) {
  return Lookup(symbol, pfn, cuda_version, flags, status);
}

SIMGPU_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int cuda_version,
                                        cuuint64_t flags) {
  return Lookup(symbol, pfn, cuda_version, flags, nullptr);
}
