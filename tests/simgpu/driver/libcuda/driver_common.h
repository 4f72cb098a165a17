// driver_common.h: what every file of simgpu's libcuda.so.1 shares: the export macro, the entry
// guard, the Err -> CUresult mapping and the primary context.
//
// Thread safety: the initialised flag and the primary context's reference count are atomics;
// the current context is per thread, as in CUDA.
#ifndef SIMGPU_DRIVER_DRIVER_COMMON_H_
#define SIMGPU_DRIVER_DRIVER_COMMON_H_

#include <cuda.h>

#include "tests/simgpu/device/device.h"
#include "tests/simgpu/device/simgpu.h"

// Marks a function exported from libcuda.so.1 (the library builds with -fvisibility=hidden).
#define SIMGPU_EXPORT extern "C" __attribute__((visibility("default")))

namespace simgpu::driver {

// The one place where device outcomes become driver codes. kHazard becomes
// CUDA_ERROR_ILLEGAL_STATE: a race found by the hazard checker (SIMGPU_HAZARDS=error).
CUresult ToCU(Err e);

// True once cuInit(0) has succeeded.
bool Initialized();
void SetInitialized();

// The current context of the calling thread (nullptr if none) and the primary context.
CUcontext CurrentContext();
void SetCurrentContext(CUcontext ctx);
CUcontext PrimaryContext();
bool IsPrimaryContext(CUcontext ctx);

// Prints "simgpu: <api>: <what> is not supported" once per call site's api name.
void Unsupported(const char* api, const char* what);

}  // namespace simgpu::driver

// First statement of every driver entry point that needs cuInit: an invalid SIMGPU_* variable
// exits 2 here (at the first CUDA call), and calls before cuInit fail as on CUDA.
#define SIMGPU_DRIVER_ENTER()                                                \
  do {                                                                       \
    ::simgpu::CheckConfigOrExit();                                           \
    if (!::simgpu::driver::Initialized()) return CUDA_ERROR_NOT_INITIALIZED; \
  } while (0)

// As SIMGPU_DRIVER_ENTER, for entry points that need a current context and fail with the
// sticky error after a fault.
#define SIMGPU_DRIVER_ENTER_CTX()                                                                  \
  do {                                                                                             \
    SIMGPU_DRIVER_ENTER();                                                                         \
    if (::simgpu::driver::CurrentContext() == nullptr) return CUDA_ERROR_INVALID_CONTEXT;          \
    if (::simgpu::Err sticky_ = ::simgpu::Device::Get().Sticky(); sticky_ != ::simgpu::Err::kOk) { \
      return ::simgpu::driver::ToCU(sticky_);                                                      \
    }                                                                                              \
  } while (0)

#endif  // SIMGPU_DRIVER_DRIVER_COMMON_H_
