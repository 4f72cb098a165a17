// kernel_args.h: the device memory a kernel launch may touch, found in its argument bytes.
//
// A kernel's parameters are opaque; their sizes come from cudaFuncGetParamInfo /
// cuFuncGetParamInfo (CUDA 12.4+). Every 8-byte-aligned word of every parameter that points
// into one of the manager's allocations counts as a use of that allocation (FIELD-NOTES,
// "Interposing CUDA"): false positives only make more memory resident than needed. When the
// sizes are unknown (an old driver, simgpu) nothing is found and the launch is forwarded as is.
//
// Thread safety: thread-safe (reads the manager's table under its lock).
#ifndef POOCH_INTERPOSE_HOOKS_KERNEL_ARGS_H_
#define POOCH_INTERPOSE_HOOKS_KERNEL_ARGS_H_

#include "interpose/symbols/cuda_api.h"
#include "interpose/process/managed.h"

namespace pooch::interpose {

// cudaLaunchKernel(func, ..., args, ...), parameter sizes from the real cudaFuncGetParamInfo.
Ranges RuntimeKernelRanges(const pooch::ResidencyManager* manager, const void* func, void** args);
// cuLaunchKernel(f, ..., kernelParams, extra): kernelParams (sizes from the real
// cuFuncGetParamInfo), or the buffer that CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE pass in `extra`.
Ranges DriverKernelRanges(const pooch::ResidencyManager* manager, CUfunction f,
                          void** kernel_params, void** extra);

// The 8-byte-aligned words of the `bytes` bytes at `data` that point into one of `manager`'s
// allocations, added to `out` (a trailing partial word is not a pointer).
void ScanWords(const pooch::ResidencyManager* manager, const void* data, size_t bytes, Ranges* out);

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_HOOKS_KERNEL_ARGS_H_
