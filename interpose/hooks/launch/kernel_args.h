// kernel_args.h: the device memory a kernel launch may touch, found in its argument bytes.
//
// Note [Kernel words]
// ~~~~~~~~~~~~~~~~~~~
// A word that points into a managed allocation is a use of it in the mode the kernel's verdict
// (interpose/kernels/launch_verdicts.h; Note [Kernel write sets] in core/kernels/analysis.h)
// gives the word's byte offset in the parameter buffer (WordMode):
//   no verdict, or its writes unknown    read and written (as before the analysis)
//   writes known, reads unknown          written words read and written, the others read
//   exact (writes and reads known)       written words read and written, read-only words read,
//                                        the others no use at all
// A written word stays read too: "may write" is not "overwrites", so the bytes the kernel does
// not write must be there (resident, recomputed, swapped in) as before. A word the exact kernel
// neither reads nor writes (a stale pointer in a struct passed by value, a pointer the kernel
// only compares) makes nothing resident and invalidates nothing (Note [Kernel writes] in
// launch_hooks.cc).
//
// Note [Small blocks in the lineage]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A word the kernel may write (WordMode not kRead) that points into a slab of the small
// allocations (Note [Small allocations] in core/residency/residency.h) is a write of that block
// for the lineage alone (Ranges::AddSmallWrite): a recipe may read a small block (a bias, a small
// weight that an optimizer kernel updates in place), and a write the lineage does not see would
// leave that recipe to rebuild its map from the changed input (Note [Replay] in
// core/recompute/recomputer.h). So RunOp hands the recomputer those writes with the op's ranges,
// exactly as a write into a managed allocation: the recipes that read the block are forgotten, or
// rebuilt first when dropped. The manager and the profile do not see them: slabs are always
// resident and hold no host copy, and the planner never swaps, drops or recomputes a small
// block, so the profile and the plans stay what they were. Reads are left out: a small block is
// never a recipe's output (Recomputer::Offer), so reading one concerns no recipe. The whole slab
// counts (its rounding and free space too), as a word one past a block's end may be: a false
// positive only forgets a recipe. Library calls, copies and memsets need nothing more: their
// operands are named, not scanned, and reach the lineage whoever allocated them; an opaque call
// forgets every recipe (Note [Opaque calls] in interpose/process/opaque.h).
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
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "core/kernels/verdict.h"
#include "core/small_alloc/small_allocator.h"
#include "interpose/hooks/launch/kernel_replay.h"
#include "interpose/process/managed.h"
#include "interpose/symbols/cuda_api.h"

namespace pooch::interpose {

// The memory a launch's words are matched against: the manager's allocations, and the
// sub-allocator's slabs (Note [Small blocks in the lineage]; null: none).
struct KernelMemory {
  const pooch::ResidencyManager* manager = nullptr;
  const pooch::SmallAllocator* small = nullptr;
};

// What a parameter-info query said about parameter `index`.
enum class ParamLookup {
  kFound,    // *offset and *size are set
  kPastEnd,  // there is no such parameter: the previous one was the last
  kUnknown,  // the layout cannot be found (no such query, an error other than invalid-value)
};

// The words of `params[i]` (sizes from `info`) that point into `memory` (ScanWords), each in its
// mode under the launch's verdict; nullopt when the layout is unknown, or when the kernel has
// parameters but `params` is null. The launch's verdict is `verdict` (null: unknown), or null
// when one of its escaping words points into `memory` (EscapeVerdict); it is stored in
// `*launch_verdict` when that is not null (it may be `&verdict`'s variable), for the recipe.
std::optional<Ranges> ScanParams(const KernelMemory& memory, void* const* params,
                                 absl::FunctionRef<ParamLookup(size_t, size_t*, size_t*)> info,
                                 const pooch::kernels::KernelVerdict* verdict = nullptr,
                                 const pooch::kernels::KernelVerdict** launch_verdict = nullptr);

// cudaLaunchKernel(func, ..., args, ...) and friends: sizes from the real cudaFuncGetParamInfo.
std::optional<Ranges> RuntimeKernelRanges(
    const KernelMemory& memory, const void* func, void** args,
    const pooch::kernels::KernelVerdict* verdict = nullptr,
    const pooch::kernels::KernelVerdict** launch_verdict = nullptr);
// __cudaLaunchKernel(kernel, ..., args, ...): sizes from the real cuKernelGetParamInfo
// (cudaKernel_t and CUkernel are the same handle).
std::optional<Ranges> KernelHandleRanges(
    const KernelMemory& memory, cudaKernel_t kernel, void** args,
    const pooch::kernels::KernelVerdict* verdict = nullptr,
    const pooch::kernels::KernelVerdict** launch_verdict = nullptr);
// cuLaunchKernel(f, ..., kernelParams, extra): kernelParams (sizes from the real
// cuFuncGetParamInfo), or the buffer that CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE pass in `extra`.
std::optional<Ranges> DriverKernelRanges(
    const KernelMemory& memory, CUfunction f, void** kernel_params, void** extra,
    const pooch::kernels::KernelVerdict* verdict = nullptr,
    const pooch::kernels::KernelVerdict** launch_verdict = nullptr);

// One parameter's bytes at its offset in the parameter buffer.
struct ParamBytes {
  size_t offset = 0;
  size_t size = 0;
  const void* data = nullptr;
};

// Note [Conditional escapes] (core/kernels/analysis.h): `verdict`, or null (the launch is
// unknown) when the 64-bit value of one of its escaping words, read from `params`, points into
// `memory` (one of the manager's allocations, freed-but-held too, or a small allocator's slab).
// A word that no single parameter covers whole holds no pointer. Without a manager nothing is
// pooch's, and `verdict` stands.
const pooch::kernels::KernelVerdict* EscapeVerdict(const KernelMemory& memory,
                                                   const pooch::kernels::KernelVerdict* verdict,
                                                   absl::Span<const ParamBytes> params);

// The launch's arguments copied into a parameter buffer laid out by the same queries (for its
// replay recipe, kernel_replay.h); nullopt when the layout is unknown or an argument is missing.
std::optional<ParamBuffer> RuntimeKernelParams(const void* func, void* const* args);
std::optional<ParamBuffer> KernelHandleParams(cudaKernel_t kernel, void* const* args);
std::optional<ParamBuffer> DriverKernelParams(CUfunction f, void* const* kernel_params);

// Why the calling thread's last call above that returned nullopt found no layout (for the
// message that names an opaque kernel); "" before any.
const char* UnknownLayoutReason();

// Note [Kernel words]: how the kernel of `verdict` (null: unknown) uses the word at byte
// `offset` of its parameter buffer; nullopt: not at all.
std::optional<pooch::AccessRange::Mode> WordMode(const pooch::kernels::KernelVerdict* verdict,
                                                 size_t offset);

// The 8-byte-aligned words of the `bytes` bytes at `data` that point into one of the manager's
// allocations, added to `out` in their WordMode (`data` starts at byte `offset` of the parameter
// buffer; a trailing partial word is not a pointer); those the kernel may write that point into
// a small slab instead, added as small writes (Note [Small blocks in the lineage]). Nothing
// without a manager.
void ScanWords(const KernelMemory& memory, const void* data, size_t bytes, Ranges* out,
               const pooch::kernels::KernelVerdict* verdict = nullptr, size_t offset = 0);

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_HOOKS_LAUNCH_KERNEL_ARGS_H_
