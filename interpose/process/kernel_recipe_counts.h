// kernel_recipe_counts.h: why kernel launches are, or are not, replay recipes (Note [Kernel
// recipes] in interpose/hooks/launch/kernel_replay.h), counted per launch for the summary's
// `kernel_recipes:` line, so that a user can see what stands between their kernels and
// recomputation.
//
// Counting costs a copy of the parameter buffer and an allocation look-up per launch of an exact
// kernel, so the launch hooks count only while the summary's detailed lines are printed
// (POOCH_LOG=info or more: KernelRecipeCountsOn). At POOCH_LOG=debug each kernel's reason is
// also logged once, by name.
//
// Thread safety: thread-safe.
#ifndef POOCH_INTERPOSE_PROCESS_KERNEL_RECIPE_COUNTS_H_
#define POOCH_INTERPOSE_PROCESS_KERNEL_RECIPE_COUNTS_H_

#include <cstdint>
#include <optional>
#include <string>

namespace pooch::interpose {

// A launch's outcome under Note [Kernel recipes], in the order its rules are checked.
enum class KernelRecipeWhy : int {
  kRecipe = 0,     // every rule holds: the launch can be a recipe
  kLink,           // a recipe that reads its one output: only a link of that map's chain
  kNoVerdict,      // the kernel was not analysed (no tools, no SASS for the arch, analysis off)
  kUnknown,        // its writes or reads are unknown
  kNotReplayable,  // exact, but atomics, a clock, or a word both read and written
  kNoWrites,       // it writes no word (or only null ones)
  kLayout,         // a verdict's word lies past the parameter buffer
  kNotBase,        // a written word is not the base of one of pooch's allocations
  kShared,         // two written words point into one allocation at different addresses
  kReadWritten,    // a read word points into an allocation it writes
  kCount,
};

// The word that names `why` in the summary line ("recipe", "no_verdict", "unknown", ...).
const char* KernelRecipeWhyName(KernelRecipeWhy why);

// Whether the launch hooks count (POOCH_LOG at info or more).
bool KernelRecipeCountsOn();
// Counts one launch of `kernel` (a permanent name, or null) and, at debug, logs `kernel`'s
// reason the first time it is seen with it.
void CountKernelLaunch(KernelRecipeWhy why, const char* kernel);
// "kernel_recipes: launches M recipe N no_verdict A unknown B ..." (every reason, 0 included);
// nullopt when no launch was counted.
std::optional<std::string> KernelRecipesLine();

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_PROCESS_KERNEL_RECIPE_COUNTS_H_
