// lookup_hooks.cc: driver entry-point look-ups hand out pooch's hooks.
//
// cuGetProcAddress(_v2) and cudaGetDriverEntryPoint(ByVersion) are first answered by the real
// library; when that succeeds for a symbol pooch hooks, the caller gets the hook that the
// version asked for selects (hook_table.h: DriverHookFor), so that a program or library that
// reaches the driver through a look-up is intercepted exactly as one that calls it by name.
// A per-thread-default-stream request gets the _ptsz/_ptds hook (POOCH_DRIVER_HOOK_PT).
// Note [Opaque calls] (interpose/process/opaque.h): a symbol pooch does not model is handed
// out as libpooch.so's opaque hook of the same exported name when there is one: the real
// look-up's answer is named by dladdr (cuMemcpy3D asked for at 12000 is cuMemcpy3D_v2; with the
// per-thread flag, cuMemcpy3D_v2_ptds), so the version and flag choose exactly as the driver
// does. An answer that dladdr cannot name as an export of its library is a function pooch cannot
// classify: counted for the summary's `unclassified`, and said once. Everything else (`none`
// functions, failures) is returned untouched.
#include <dlfcn.h>

#include <atomic>
#include <cstring>

#include "core/base/log.h"
#include "interpose/symbols/hook_table.h"
#include "interpose/symbols/intercept.h"

namespace pooch::interpose {
namespace {

std::atomic<uint64_t> g_unclassified{0};

// libpooch.so itself, to find its opaque hooks by name (dlsym on it searches it and its C and
// C++ runtime only: it needs no CUDA library).
void* Self() {
  static void* const self = [] {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&Self), &info) == 0 || info.dli_fname == nullptr) {
      return static_cast<void*>(nullptr);
    }
    return dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  }();
  return self;
}

// Note [Opaque calls]: libpooch.so's hook of the export the real look-up answered with, or null.
void* OpaqueHookFor(const char* via, const char* symbol, void* real) {
  Dl_info info{};
  if (dladdr(real, &info) == 0 || info.dli_sname == nullptr || info.dli_saddr != real) {
    if (g_unclassified.fetch_add(1, std::memory_order_relaxed) == 0) {
      LogLine(
          "%s(%s): the driver answered with a function that is not an export of its library; "
          "pooch cannot classify it (please report it)",
          via, symbol);
    }
    return nullptr;
  }
  void* self = Self();
  if (self == nullptr) return nullptr;
  void* hook = dlsym(self, info.dli_sname);
  Dl_info mine{};
  // Only libpooch.so's own definition (not one found in a library it depends on).
  if (hook == nullptr || hook == real || dladdr(hook, &mine) == 0 ||
      mine.dli_fbase == info.dli_fbase || mine.dli_fname == nullptr ||
      std::strcmp(mine.dli_sname ? mine.dli_sname : "", info.dli_sname) != 0) {
    return nullptr;
  }
  return hook;
}

void Substitute(const char* via, const char* symbol, int version, bool per_thread, void** pfn) {
  if (pfn == nullptr || *pfn == nullptr) return;
  void* hook = DriverHookFor(symbol, version, per_thread);
  if (hook == nullptr && symbol != nullptr) hook = OpaqueHookFor(via, symbol, *pfn);
  if (hook == nullptr) return;
  POOCH_LOG_AT(kDebug, "%s(%s, %d) -> pooch's hook", via, symbol, version);
  *pfn = hook;
}

// cudaGetDriverEntryPoint (without a version) resolves as the runtime's own version.
constexpr int kRuntimeVersion = CUDART_VERSION;

}  // namespace

uint64_t UnclassifiedLookups() { return g_unclassified.load(std::memory_order_relaxed); }

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
