// lookup_hooks.cc: driver entry-point look-ups hand out pooch's hooks.
//
// cuGetProcAddress(_v2) and cudaGetDriverEntryPoint(ByVersion) are first answered by the real
// library; when that succeeds for a symbol pooch hooks, the caller gets the hook that the
// version asked for selects (hook_table.h: DriverHookFor), so that a program or library that
// reaches the driver through a look-up is intercepted exactly as one that calls it by name.
// A per-thread-default-stream request gets the _ptsz/_ptds hook (POOCH_DRIVER_HOOK_PT).
// Everything else (other symbols, failures) is returned untouched.
#include "core/base/log.h"
#include "interpose/symbols/hook_table.h"
#include "interpose/symbols/intercept.h"

namespace pooch::interpose {
namespace {

void Substitute(const char* via, const char* symbol, int version, bool per_thread, void** pfn) {
  if (pfn == nullptr || *pfn == nullptr) return;
  void* hook = DriverHookFor(symbol, version, per_thread);
  if (hook == nullptr) return;
  POOCH_LOG_AT(kDebug, "%s(%s, %d) -> pooch's hook", via, symbol, version);
  *pfn = hook;
}

// cudaGetDriverEntryPoint (without a version) resolves as the runtime's own version.
constexpr int kRuntimeVersion = CUDART_VERSION;

}  // namespace

namespace intercept {

CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  const CUresult result = real::cuGetProcAddress()(symbol, pfn, cudaVersion, flags);
  if (result == CUDA_SUCCESS) {
    Substitute("cuGetProcAddress", symbol, cudaVersion,
               (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0, pfn);
  }
  return result;
}

CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* symbolStatus) {
  const CUresult result =
      real::cuGetProcAddress_v2()(symbol, pfn, cudaVersion, flags, symbolStatus);
  if (result == CUDA_SUCCESS) {
    Substitute("cuGetProcAddress_v2", symbol, cudaVersion,
               (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0, pfn);
  }
  return result;
}

cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** funcPtr, unsigned long long flags,
                                    enum cudaDriverEntryPointQueryResult* driverStatus) {
  const cudaError_t result = real::cudaGetDriverEntryPoint()(symbol, funcPtr, flags, driverStatus);
  if (result == cudaSuccess) {
    Substitute("cudaGetDriverEntryPoint", symbol, kRuntimeVersion,
               (flags & cudaEnablePerThreadDefaultStream) != 0, funcPtr);
  }
  return result;
}

cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** funcPtr,
                                             unsigned int cudaVersion, unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult* driverStatus) {
  const cudaError_t result =
      real::cudaGetDriverEntryPointByVersion()(symbol, funcPtr, cudaVersion, flags, driverStatus);
  if (result == cudaSuccess) {
    Substitute("cudaGetDriverEntryPointByVersion", symbol, static_cast<int>(cudaVersion),
               (flags & cudaEnablePerThreadDefaultStream) != 0, funcPtr);
  }
  return result;
}

}  // namespace intercept
}  // namespace pooch::interpose
