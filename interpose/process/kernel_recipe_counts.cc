// kernel_recipe_counts.cc: the per-launch counts of Note [Kernel recipes]'s outcomes
// (kernel_recipe_counts.h).
#include "interpose/process/kernel_recipe_counts.h"

#include <array>
#include <atomic>
#include <string>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/base/log.h"
#include "core/base/mutex.h"

namespace pooch::interpose {
namespace {

constexpr int kWhyCount = static_cast<int>(KernelRecipeWhy::kCount);

std::array<std::atomic<uint64_t>, kWhyCount>& Counts() {
  static auto* counts = new std::array<std::atomic<uint64_t>, kWhyCount>{};  // hooks run at exit
  return *counts;
}

// The kernels whose reason was logged, with it (a kernel may meet several rules over its
// launches: a null output word in one, a slice in another).
bool FirstTime(const char* kernel, KernelRecipeWhy why) {
  struct Said {
    Mutex mu;
    absl::flat_hash_set<std::pair<std::string, int>> seen ABSL_GUARDED_BY(mu);
  };
  static Said* said = new Said;
  MutexLock lock(&said->mu);
  return said->seen.insert({kernel != nullptr ? kernel : "(unnamed)", static_cast<int>(why)})
      .second;
}

}  // namespace

const char* KernelRecipeWhyName(KernelRecipeWhy why) {
  switch (why) {
    case KernelRecipeWhy::kRecipe:
      return "recipe";
    case KernelRecipeWhy::kLink:
      return "link";
    case KernelRecipeWhy::kNoVerdict:
      return "no_verdict";
    case KernelRecipeWhy::kUnknown:
      return "unknown";
    case KernelRecipeWhy::kNotReplayable:
      return "not_replayable";
    case KernelRecipeWhy::kNoWrites:
      return "no_writes";
    case KernelRecipeWhy::kLayout:
      return "layout";
    case KernelRecipeWhy::kNotBase:
      return "not_base";
    case KernelRecipeWhy::kShared:
      return "shared_output";
    case KernelRecipeWhy::kReadWritten:
      return "reads_output";
    case KernelRecipeWhy::kCount:
      break;
  }
  return "?";
}

bool KernelRecipeCountsOn() { return LogEnabled(Severity::kInfo); }

void CountKernelLaunch(KernelRecipeWhy why, const char* kernel) {
  const int i = static_cast<int>(why);
  if (i < 0 || i >= kWhyCount) return;
  Counts()[static_cast<size_t>(i)].fetch_add(1, std::memory_order_relaxed);
  if (LogEnabled(Severity::kDebug) && FirstTime(kernel, why)) {
    POOCH_LOG_AT(kDebug, "kernel_recipe: %s: %s", KernelRecipeWhyName(why),
                 kernel != nullptr ? kernel : "(unnamed)");
  }
}

std::optional<std::string> KernelRecipesLine() {
  uint64_t total = 0;
  std::array<uint64_t, kWhyCount> counts{};
  for (int i = 0; i < kWhyCount; ++i) {
    counts[static_cast<size_t>(i)] =
        Counts()[static_cast<size_t>(i)].load(std::memory_order_relaxed);
    total += counts[static_cast<size_t>(i)];
  }
  if (total == 0) return std::nullopt;
  std::string line = absl::StrCat("kernel_recipes: launches ", total);
  for (int i = 0; i < kWhyCount; ++i) {
    absl::StrAppend(&line, " ", KernelRecipeWhyName(static_cast<KernelRecipeWhy>(i)), " ",
                    counts[static_cast<size_t>(i)]);
  }
  return line;
}

}  // namespace pooch::interpose
