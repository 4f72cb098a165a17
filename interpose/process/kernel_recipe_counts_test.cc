// Unit tests of the kernel_recipes: summary line (kernel_recipe_counts.h).
#include "interpose/process/kernel_recipe_counts.h"

#include <optional>
#include <string>

#include "gtest/gtest.h"

namespace pooch::interpose {
namespace {

TEST(KernelRecipeCountsTest, NoLineBeforeALaunchThenEveryReasonCounted) {
  EXPECT_FALSE(KernelRecipesLine().has_value());
  CountKernelLaunch(KernelRecipeWhy::kRecipe, "relu");
  CountKernelLaunch(KernelRecipeWhy::kRecipe, "relu");
  CountKernelLaunch(KernelRecipeWhy::kUnknown, "gather");
  CountKernelLaunch(KernelRecipeWhy::kShared, nullptr);
  CountKernelLaunch(KernelRecipeWhy::kCount, "ignored");  // not a reason
  const std::optional<std::string> line = KernelRecipesLine();
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(*line,
            "kernel_recipes: launches 4 recipe 2 link 0 no_verdict 0 unknown 1 not_replayable 0 "
            "no_writes 0 layout 0 not_base 0 shared_output 1 reads_output 0");
}

}  // namespace
}  // namespace pooch::interpose
