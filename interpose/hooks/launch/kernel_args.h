// kernel_args.h: the device memory a kernel launch may touch, found in its argument bytes.
//
// A kernel's parameters are opaque; their sizes come from cudaFuncGetParamInfo /
// cuFuncGetParamInfo / cuKernelGetParamInfo (CUDA 12.4+). Every 8-byte-aligned word of every
// parameter that points into one of the manager's allocations counts as a use of that allocation
// (FIELD-NOTES, "Interposing CUDA"): false positives only make more memory resident than needed.
// When the sizes cannot be found (an old driver, a kernel without parameter info) the launch is
// opaque: the functions below return nullopt and the hook makes everything resident first
// (Note [Opaque calls] in interpose/process/opaque.h).
//
// Thread safety: thread-safe (reads the manager's table under its lock).
#ifndef POOCH_INTERPOSE_HOOKS_LAUNCH_KERNEL_ARGS_H_
#define POOCH_INTERPOSE_HOOKS_LAUNCH_KERNEL_ARGS_H_

#include <optional>

#include "absl/functional/function_ref.h"
#include "interpose/hooks/launch/kernel_replay.h"
#include "interpose/process/managed.h"
#include "interpose/symbols/cuda_api.h"

namespace pooch::interpose {

// What a parameter-info query said about parameter `index`.
enum class ParamLookup {
  kFound,    // *offset and *size are set
  kPastEnd,  // there is no such parameter: the previous one was the last
  kUnknown,  // the layout cannot be found (no such query, an error other than invalid-value)
};

// The words of `params[i]` (sizes from `info`) that point into `manager`'s allocations; nullopt
// when the layout is unknown, or when the kernel has parameters but `params` is null.
std::optional<Ranges> ScanParams(const pooch::ResidencyManager* manager, void* const* params,
                                 absl::FunctionRef<ParamLookup(size_t, size_t*, size_t*)> info);

// cudaLaunchKernel(func, ..., args, ...) and friends: sizes from the real cudaFuncGetParamInfo.
std::optional<Ranges> RuntimeKernelRanges(const pooch::ResidencyManager* manager, const void* func,
                                          void** args);
// __cudaLaunchKernel(kernel, ..., args, ...): sizes from the real cuKernelGetParamInfo
// (cudaKernel_t and CUkernel are the same handle).
std::optional<Ranges> KernelHandleRanges(const pooch::ResidencyManager* manager,
                                         cudaKernel_t kernel, void** args);
// cuLaunchKernel(f, ..., kernelParams, extra): kernelParams (sizes from the real
// cuFuncGetParamInfo), or the buffer that CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE pass in `extra`.
std::optional<Ranges> DriverKernelRanges(const pooch::ResidencyManager* manager, CUfunction f,
                                         void** kernel_params, void** extra);

// The launch's arguments copied into a parameter buffer laid out by the same queries (for its
// replay recipe, kernel_replay.h); nullopt when the layout is unknown or an argument is missing.
std::optional<ParamBuffer> RuntimeKernelParams(const void* func, void* const* args);
std::optional<ParamBuffer> KernelHandleParams(cudaKernel_t kernel, void* const* args);
std::optional<ParamBuffer> DriverKernelParams(CUfunction f, void* const* kernel_params);

// Why the calling thread's last call above that returned nullopt found no layout (for the
// message that names an opaque kernel); "" before any.
const char* UnknownLayoutReason();

// The 8-byte-aligned words of the `bytes` bytes at `data` that point into one of `manager`'s
// allocations, added to `out` (a trailing partial word is not a pointer).
void ScanWords(const pooch::ResidencyManager* manager, const void* data, size_t bytes, Ranges* out);

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_HOOKS_LAUNCH_KERNEL_ARGS_H_
