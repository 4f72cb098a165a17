// kernel_names.h: the name of the kernel a launch runs, for the profiler's op names, the trace
// and the iteration tracker's signatures (Note [Kernel op names]).
//
// Note [Kernel op names]
// ~~~~~~~~~~~~~~~~~~~~~~
// Every kernel of a framework goes through the same few launch entry points, so the API name
// (`__cudaLaunchKernel`) says nothing about which op ran; the kernel's own (mangled) name does.
// The launch hooks name their op after the kernel (HookScope's op name, hook_table.h), from the
// real cuKernelGetName / cuFuncGetName (a runtime function pointer goes through
// cudaGetFuncBySymbol first). Names are asked once per handle and kept for the process's life
// (the profile keeps op names as pointers). When no name can be had, the op keeps the API's name.
// The answer only names ops; it never decides what an op touches.
//
// Thread safety: thread-safe.
#ifndef POOCH_INTERPOSE_HOOKS_LAUNCH_KERNEL_NAMES_H_
#define POOCH_INTERPOSE_HOOKS_LAUNCH_KERNEL_NAMES_H_

#include "interpose/symbols/cuda_api.h"

namespace pooch::interpose {

// A permanent copy of the kernel's name, or nullptr when it cannot be found.
const char* KernelHandleName(cudaKernel_t kernel);
const char* DriverFunctionName(CUfunction f);
const char* RuntimeFunctionName(const void* func);

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_HOOKS_LAUNCH_KERNEL_NAMES_H_
