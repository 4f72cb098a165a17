// launch_verdicts.h: what core/kernels' analysis concludes about the kernel a launch runs
// (Note [Kernel write sets] in core/kernels/analysis.h), looked up from the launch's handle.
//
// Note [Verdicts at launch]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// The first launch of a kernel finds the module it came from (module_registry.h: the fat
// binaries and cubins the program registered or loaded, kept by pointer), extracts the cubin for
// the device's architecture (or POOCH_KERNEL_ARCH's) once per module into a temporary folder
// kept until exit, runs nvdisasm and the analysis over that kernel and its callees only (Note
// [One kernel at a time] in core/kernels/cubin_analysis.h), and keeps its verdict for the
// process's life, on disk too (verdict_cache.h: the module's file gains kernels as they are
// analysed); every later launch of the handle is one hash look-up. A kernel is
// unknown (nullptr) when the analysis is off (POOCH_KERNEL_ANALYSIS=off), when nvdisasm or
// cuobjdump cannot be found (said once), when its module is not known or has no SASS for the
// architecture (PTX JIT), or when the module fails to analyse; an unknown kernel's launch is
// treated as before (it may read and write everything its parameter words point into). When a
// name is found in several modules and the launch handle does not say which, the verdicts of all
// are merged (union of the sets; unknown if one is), so the answer stays an over-approximation.
//
// Thread safety: thread-safe; the returned pointers stay valid for the process's life.
#ifndef POOCH_INTERPOSE_KERNELS_LAUNCH_VERDICTS_H_
#define POOCH_INTERPOSE_KERNELS_LAUNCH_VERDICTS_H_

#include <string>

#include "core/kernels/verdict.h"
#include "interpose/symbols/cuda_api.h"

namespace pooch::interpose {

// From the configuration (POOCH_KERNEL_ANALYSIS, POOCH_KERNEL_ARCH, POOCH_KERNEL_CACHE).
struct LaunchVerdictOptions {
  bool enabled = false;   // false: every kernel is unknown, nothing is noted or run
  std::string arch;       // "sm_90"; empty: the device's
  std::string cache_dir;  // empty: verdicts are kept in memory only
};

// Set once at start-up (libpooch.cc); until then every kernel is unknown.
void ConfigureLaunchVerdicts(const LaunchVerdictOptions& options);
bool LaunchVerdictsEnabled();
bool LaunchVerdictsConfigured();

// The verdict of the kernel a launch handle runs, or nullptr when unknown. A non-null verdict
// may still be inexact (KernelVerdict::Exact() false): then only its known half may be used.
//   __cudaLaunchKernel(_ptsz): the cudaKernel_t (a CUkernel);
//   cudaLaunchKernel / ExC / Cooperative(_ptsz): the host stub `func` (or a cudaKernel_t);
//   cuLaunchKernel(Ex)(_ptsz): the CUfunction.
const pooch::kernels::KernelVerdict* VerdictForKernel(cudaKernel_t kernel);
const pooch::kernels::KernelVerdict* VerdictForHostStub(const void* func);
const pooch::kernels::KernelVerdict* VerdictForFunction(CUfunction f);

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_KERNELS_LAUNCH_VERDICTS_H_
