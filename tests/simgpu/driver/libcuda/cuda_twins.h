// cuda_twins.h: CPU twins, the host functions a program brings for its own kernels so that they
// run in math mode.
//
// Note [CPU twins]
// ~~~~~~~~~~~~~~~~
// simgpu runs no device code. A program that wants its kernels to compute on simgpu brings, for
// each, a host function with the same effect, exported from the executable (linked with
// -rdynamic, CMake's ENABLE_EXPORTS) or from a shared library it loaded, named
// `simgpu_twin_` followed by the kernel's mangled name (a C identifier), with C linkage:
//
//   extern "C" void simgpu_twin_<mangled>(const unsigned grid[3], const unsigned block[3],
//                                        unsigned dynamic_shared, void** args);
//
// `args` holds one pointer per parameter, as cuLaunchKernel's kernelParams, into a copy of the
// parameter buffer (whatever the launch path: <<<>>>, cudaLaunchKernel, cuLaunchKernel with
// kernelParams or with `extra`). Device addresses are host addresses in simgpu, so the twin reads
// and writes device memory through the kernel's own pointers. In math mode the launch is checked,
// timed and hazard-checked as any kernel op (Note [Kernel ops]) and the twin runs once it is
// issued, on the calling thread, as a cuDNN op's body does; a kernel without a twin fails with
// CUDA_ERROR_NOT_SUPPORTED as before. Timing mode never calls a twin. The lookup is by name
// through dlsym(RTLD_DEFAULT), once per function, so a twin is found wherever the dynamic linker
// sees it and costs nothing at later launches. simgpu cannot check that a twin matches its
// kernel: that is the program's promise (cnn_train's own kernels compare bits on a GPU).
#ifndef SIMGPU_DRIVER_LIBCUDA_CUDA_TWINS_H_
#define SIMGPU_DRIVER_LIBCUDA_CUDA_TWINS_H_

#include "tests/simgpu/driver/modules/cuda_modules.h"

namespace simgpu::driver {

using CpuTwin = void (*)(const unsigned grid[3], const unsigned block[3], unsigned dynamic_shared,
                         void** args);

// The twin of `f`'s kernel, or nullptr when the program brings none (looked up once per function).
CpuTwin FindTwin(Function& f);

}  // namespace simgpu::driver

#endif  // SIMGPU_DRIVER_LIBCUDA_CUDA_TWINS_H_
