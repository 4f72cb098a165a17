// kernel_replay.h: kernel launches as replay recipes (replay_recipe.h; Note [Replay] in
// core/recompute/recomputer.h), from what the analysis of the kernel's machine code concludes
// (Note [Verdicts at launch] in interpose/kernels/launch_verdicts.h).
//
// Note [Kernel recipes]
// ~~~~~~~~~~~~~~~~~~~~~
// A launch is a recipe when relaunching it with a copy of its parameter buffer, on pooch's
// stream, rebuilds its outputs bit for bit and writes nothing else:
//   - its verdict is exact, with no atomics and no clock (KernelVerdict::Replayable, but for a
//     word both read and written, which makes it a link: Note [Kernel links]); the launch's
//     verdict, that is: none when a word it may store points into pooch's memory (Note
//     [Conditional escapes] in core/kernels/analysis.h; launch_hooks.cc passes what its scan
//     leaves);
//   - each non-null word it may write holds the base of one of pooch's allocations, a
//     different allocation per address: its outputs. A store's address comes from one word
//     plus integer arithmetic (Note [Kernel write sets] in core/kernels/analysis.h), so what the
//     launch writes through a word stays in that word's allocation unless the program writes
//     out of bounds; a target that is not pooch's memory would be written again behind the
//     program's back, and a word into the middle of an allocation writes a slice the analysis
//     cannot bound. (Null written words are kept: the same parameters give the same branches,
//     so a replay skips them as the launch did.) The recipe rebuilds one output, the one the
//     plan asks for; the others are its side outputs, rewritten with the bytes they hold (Note
//     [Side outputs] in core/lineage/replay_recipe.h);
//   - every non-null word it may read lies outside all its outputs, or the launch writes one
//     output and reads it (`out += identity` in a ResNet block: a word read and another written
//     holding the same address, or one word both read and written, `y[i] += b`): then the
//     recipe is a link of that map's chain (Note [Kernel links]), which the Recomputer appends to
//     the chain of the call that wrote the map before, and refuses when there is none (Note
//     [Chained recipes] in core/lineage/lineage.cc): replayed after the chain's earlier links, it
//     reads what it read then. A link with side outputs is refused: the side outputs' bytes would
//     depend on the chain's state. The Recomputer watches the read words' allocations
//     (Recomputer::Offer refuses a word outside pooch's memory: it cannot be watched).
// The analysis bounds no extent, so the recipe takes the kernel to write its whole output
// allocation. That is the rule the plan holds it to: the planner recomputes a tensor only
// through its only writer in the whole iteration (Note [Sound replays] in
// core/model/candidates.cc), so the bytes the kernel leaves alone were never written by anyone
// and no one reads them. A word the kernel may write is read and written (Note [Kernel words] in
// kernel_args.h); the profile counts that use as a write only when nothing has written the
// allocation since it was made (Note [First writers] in core/profile/profile_builder.cc), which
// is how a kernel becomes its output's only writer. Under dtr recipes are kept without a plan,
// for any call that produced an allocation, so a kernel that wrote a slice of a map another call
// wrote too would lose the other part when its map was dropped: launches offer no recipe under
// dtr (MayReplayKernel).
// The function handle is the program's; the recipe holds it as cuDNN's recipes hold their
// pointers, for a module the program does not unload.
//
// Note [Kernel links]
// ~~~~~~~~~~~~~~~~~~~
// A launch that reads its output (a bias or a residual added in place: y = y + b) is a link of
// the output's chain, as cudnnAddTensor in place is (Note [Chains] in core/model/candidates.cc,
// Note [Chained recipes] in core/lineage/lineage.cc): its recipe reads the whole output, the
// chain's previous state, so the Recomputer only appends it to the chain its map's earlier
// writes opened and refuses it alone. Replayed after those earlier links it starts from the
// memory it started from at the launch, so the verdict it needs is KernelVerdict::Replayable's
// but for the word both read and written (exact, no atomics, no clock). That rests on the
// launch's threads not racing on what they read and write (a thread reading an element another
// writes, unordered): such a kernel's result would vary from run to run of the program itself.
// In the profile the launch reads and writes its map, so the planner rebuilds the map through
// the whole chain; a launch that is its map's first writer (Note [First writers]) is planned
// alone, and its recipe refused at run time: the map is swapped instead.
//
// Thread safety: thread-safe (the builder holds no state); recipes' issue functions are
// serialised by the caller (the Recomputer's lock).
#ifndef POOCH_INTERPOSE_HOOKS_LAUNCH_KERNEL_REPLAY_H_
#define POOCH_INTERPOSE_HOOKS_LAUNCH_KERNEL_REPLAY_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "absl/functional/function_ref.h"
#include "core/kernels/verdict.h"
#include "core/lineage/replay_recipe.h"
#include "core/residency/residency.h"
#include "interpose/process/kernel_recipe_counts.h"

namespace pooch::interpose {

// A launch's arguments copied into a parameter buffer laid out as the kernel's parameter info
// says (the offsets the verdict's words are given in).
struct ParamBuffer {
  std::vector<uint8_t> bytes;
  std::vector<size_t> offsets;  // of each parameter, by ordinal
};

// Issues the launch again on `stream` with `args` (one pointer per parameter, as
// cudaLaunchKernel takes them); true when the real entry point accepted it.
using Relaunch = std::function<bool(uintptr_t stream, void** args)>;

// The allocation of pooch's that holds an address (ResidencyManager::Lookup), or nullopt.
using AllocationLookup =
    absl::FunctionRef<std::optional<pooch::AllocationInfo>(pooch::DeviceAddress)>;

// Cheap, at every launch (the profile's replay_capable flag): whether the launch may have a
// recipe. `dtr`: the recomputer keeps recipes without a plan (Note [Kernel recipes]).
bool MayReplayKernel(const pooch::kernels::KernelVerdict* verdict, bool dtr);

// A launch's outputs under Note [Kernel recipes]: the allocations its non-null written words
// are the bases of (address and size, mode kWrite, in the words' address order) and its
// non-null read words.
struct KernelOutputs {
  std::vector<pooch::AccessRange> written;
  std::vector<uint64_t> read;
};

// Which of Note [Kernel recipes]' rules the launch of `verdict`'s kernel (null: not analysed)
// with `params` breaks first, or kRecipe or kLink (a recipe that reads its one output; then
// `outputs`, when given, receives its outputs).
KernelRecipeWhy KernelRecipeOutputs(const pooch::kernels::KernelVerdict* verdict,
                                    const ParamBuffer& params, AllocationLookup lookup,
                                    KernelOutputs* outputs = nullptr);

// The recipe of the launch of `name` (a permanent string) whose arguments are `params`, under
// Note [Kernel recipes]'s rules, rebuilding its first output (ForOutput in replay_recipe.h picks
// another); nullopt when they do not hold.
std::optional<ReplayRecipe> KernelRecipe(const char* name,
                                         const pooch::kernels::KernelVerdict& verdict,
                                         ParamBuffer params, AllocationLookup lookup,
                                         Relaunch relaunch);

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_HOOKS_LAUNCH_KERNEL_REPLAY_H_
