// libcudart.so.13: loading the driver through cuGetProcAddress_v2, error translation, the last
// error, and the error-string API.
#include "tests/simgpu/driver/libcudart/runtime_driver.h"

#include <dlfcn.h>

#include <cstdio>
#include <mutex>

#include "tests/simgpu/device/simgpu.h"

namespace simgpu::runtime {
namespace {

thread_local cudaError_t t_last_error = cudaSuccess;
thread_local bool t_context_current = false;

struct Loaded {
  DriverTable table;
  CUcontext primary = nullptr;
  cudaError_t error = cudaSuccess;
};

Loaded Load() {
  Loaded l;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "simgpu: libcudart: cannot load libcuda.so.1: %s\n", dlerror());
    l.error = cudaErrorInsufficientDriver;
    return l;
  }
  auto get_proc = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(lib, "cuGetProcAddress_v2"));
  if (get_proc == nullptr) {
    l.error = cudaErrorInsufficientDriver;
    return l;
  }
  CUdriverProcAddressQueryResult found;
#define SIMGPU_LOOKUP(name, type)                                              \
  if (get_proc(#name, reinterpret_cast<void**>(&l.table.name), CUDART_VERSION, \
               CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS ||         \
      l.table.name == nullptr) {                                               \
    std::fprintf(stderr, "simgpu: libcudart: the driver has no %s\n", #name);  \
    l.error = cudaErrorInsufficientDriver;                                     \
    return l;                                                                  \
  }
  SIMGPU_RUNTIME_DRIVER_CALLS(SIMGPU_LOOKUP)
#undef SIMGPU_LOOKUP
  CUdevice dev = 0;
  if (l.table.cuInit(0) != CUDA_SUCCESS || l.table.cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      l.table.cuDevicePrimaryCtxRetain(&l.primary, dev) != CUDA_SUCCESS) {
    l.error = cudaErrorInitializationError;
  }
  return l;
}

}  // namespace

const DriverTable* Driver(cudaError_t* err) {
  static Loaded* loaded = new Loaded(Load());  // thread-safe static initialisation
  if (loaded->error != cudaSuccess) {
    *err = loaded->error;
    return nullptr;
  }
  // The runtime makes the primary context current on every thread that uses it.
  if (!t_context_current) {
    if (loaded->table.cuCtxSetCurrent(loaded->primary) != CUDA_SUCCESS) {
      *err = cudaErrorInitializationError;
      return nullptr;
    }
    t_context_current = true;
  }
  return &loaded->table;
}

cudaError_t ToRuntime(CUresult r) {
  switch (r) {
    case CUDA_SUCCESS:
      return cudaSuccess;
    case CUDA_ERROR_INVALID_VALUE:
      return cudaErrorInvalidValue;
    case CUDA_ERROR_OUT_OF_MEMORY:
      return cudaErrorMemoryAllocation;
    case CUDA_ERROR_NOT_INITIALIZED:
      return cudaErrorInitializationError;
    case CUDA_ERROR_INVALID_DEVICE:
      return cudaErrorInvalidDevice;
    case CUDA_ERROR_INVALID_CONTEXT:
      return cudaErrorDeviceUninitialized;
    case CUDA_ERROR_INVALID_HANDLE:
      return cudaErrorInvalidResourceHandle;
    case CUDA_ERROR_NOT_FOUND:
      return cudaErrorSymbolNotFound;
    case CUDA_ERROR_NOT_READY:
      return cudaErrorNotReady;
    case CUDA_ERROR_ILLEGAL_ADDRESS:
      return cudaErrorIllegalAddress;
    case CUDA_ERROR_ILLEGAL_STATE:
      return cudaErrorIllegalState;
    case CUDA_ERROR_NOT_SUPPORTED:
      return cudaErrorNotSupported;
    default:
      return cudaErrorUnknown;
  }
}

cudaError_t Record(cudaError_t e) {
  if (e != cudaSuccess && e != cudaErrorNotReady) t_last_error = e;
  return e;
}

cudaError_t Record(CUresult r) { return Record(ToRuntime(r)); }

cudaError_t PeekLastError() { return t_last_error; }

cudaError_t TakeLastError() {
  cudaError_t e = t_last_error;
  t_last_error = cudaSuccess;
  return e;
}

}  // namespace simgpu::runtime

namespace {

struct Named {
  cudaError_t code;
  const char* name;
};

constexpr Named kNames[] = {
#define X(name) {name, #name},
#include "tests/simgpu/driver/libcudart/cuda_error_names.inc"
#undef X
};

// CUDA's wording for the codes simgpu returns.
constexpr Named kDescriptions[] = {
    {cudaSuccess, "no error"},
    {cudaErrorInvalidValue, "invalid argument"},
    {cudaErrorMemoryAllocation, "out of memory"},
    {cudaErrorInitializationError, "initialization error"},
    {cudaErrorInvalidDevice, "invalid device ordinal"},
    {cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy"},
    {cudaErrorInsufficientDriver, "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorDeviceUninitialized, "invalid device context"},
    {cudaErrorInvalidResourceHandle, "invalid resource handle"},
    {cudaErrorIllegalState, "the operation cannot be performed in the present state"},
    {cudaErrorSymbolNotFound, "named symbol not found"},
    {cudaErrorNotReady, "device not ready"},
    {cudaErrorIllegalAddress, "an illegal memory access was encountered"},
    {cudaErrorNotSupported, "operation not supported"},
    {cudaErrorUnknown, "unknown error"},
};

}  // namespace

SIMGPU_RT_EXPORT const char* cudaGetErrorName(cudaError_t error) {
  for (const Named& n : kNames) {
    if (n.code == error) return n.name;
  }
  return "cudaErrorUnknown";
}

SIMGPU_RT_EXPORT const char* cudaGetErrorString(cudaError_t error) {
  for (const Named& n : kDescriptions) {
    if (n.code == error) return n.name;
  }
  for (const Named& n : kNames) {
    if (n.code == error) return n.name;
  }
  return "unrecognized error code";
}

SIMGPU_RT_EXPORT cudaError_t cudaGetLastError() { return simgpu::runtime::TakeLastError(); }

SIMGPU_RT_EXPORT cudaError_t cudaPeekAtLastError() { return simgpu::runtime::PeekLastError(); }
