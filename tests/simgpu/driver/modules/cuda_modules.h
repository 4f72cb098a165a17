// cuda_modules.h: libcuda.so.1's modules, libraries, functions and kernels.
//
// One Module object stands for both a CUmodule and a CUlibrary (cuLibraryGetModule returns the
// same object), and one Function for both a CUfunction and a CUkernel (cuKernelGetFunction
// returns the same object): simgpu has one device and no per-context copies of code. Loading a
// module reads its container and parses the cubin it needs (Note [Any cubin will do]); a
// Function carries the kernel's parsed info (cubin.h), from the module's PTX when no cubin has
// the kernel (Note [PTX parameters]), or none when that PTX is not understood, in which case it
// cannot be launched. Handles stay valid until
// cuModuleUnload / cuLibraryUnload; kernel names are interned for the life of the process,
// since device ops keep them for messages.
//
// Thread safety: the table of live handles and each module's lazily filled state are guarded
// by one mutex; a Function's attributes are atomics.
#ifndef SIMGPU_DRIVER_CUDA_MODULES_H_
#define SIMGPU_DRIVER_CUDA_MODULES_H_

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "tests/simgpu/driver/modules/cubin.h"

namespace simgpu::driver {

struct Module;

struct Function {
  Module* module;
  const char* name;                     // mangled; interned (lives as long as the process)
  const cubin::KernelInfo* info;        // nullptr: no parameter info (cannot be launched)
  std::string no_info;                  // then why not
  int binary_arch;                      // the architecture of the cubin `info` came from (0: PTX)
  std::atomic<int> max_dynamic_shared;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
  std::atomic<int> carveout{-1};        // CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
  std::atomic<bool> warned{false};      // printed its one "cannot run" line
  std::atomic<void*> twin{nullptr};     // its CPU twin (Note [CPU twins] in libcuda/cuda_twins.h)
  std::atomic<bool> twin_looked_up{false};
};

// The live Function behind a CUfunction or CUkernel handle, or nullptr.
Function* FindFunction(const void* handle);

// The device's compute capability as sm_XY = 10 * X + Y.
int DeviceArch();

// Per-block limits of the device (cuDeviceGetAttribute's values).
struct BlockLimits {
  int max_threads;
  int max_dim[3];
  int max_grid[3];
  int shared_default;  // dynamic + static shared memory without opting in
  int shared_optin;    // the most with CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
};
BlockLimits DeviceBlockLimits();

}  // namespace simgpu::driver

#endif  // SIMGPU_DRIVER_CUDA_MODULES_H_
