// Unit tests of the PyTorch allocator choice of `pooch run` (torch_allocator.h).
#include "cli/torch_allocator.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

TEST(ChooseAllocator, UnsetGetsTheAsyncBackend) {
  const AllocatorChoice c = ChooseAllocator(std::nullopt, std::nullopt, false);
  EXPECT_THAT(c.settings, ElementsAre(Pair("PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync")));
  EXPECT_FALSE(c.warning.has_value());
  // An empty variable is as good as unset.
  EXPECT_THAT(ChooseAllocator("", "", false).settings, ElementsAre(Pair(testing::_, testing::_)));
}

TEST(ChooseAllocator, UsersPerTensorSettingsStandQuietly) {
  for (const AllocatorChoice& c :
       {ChooseAllocator(std::nullopt, "1", false),
        ChooseAllocator("backend:cudaMallocAsync", std::nullopt, false),
        ChooseAllocator(" garbage_collection_threshold:0.8 , backend: cudaMallocAsync", "0",
                        false)}) {
    EXPECT_THAT(c.settings, IsEmpty());
    EXPECT_FALSE(c.warning.has_value());
  }
}

TEST(ChooseAllocator, UsersCachingSettingStandsWithOneLine) {
  for (const AllocatorChoice& c : {ChooseAllocator("expandable_segments:True", std::nullopt, false),
                                   ChooseAllocator("backend:native", std::nullopt, false),
                                   ChooseAllocator(std::nullopt, "0", false)}) {
    EXPECT_THAT(c.settings, IsEmpty());
    ASSERT_TRUE(c.warning.has_value());
    EXPECT_THAT(*c.warning, HasSubstr("caching allocator stays on"));
    EXPECT_EQ(c.warning->find('\n'), std::string::npos);
  }
}

TEST(ChooseAllocator, PolicyOffSetsNothing) {
  const AllocatorChoice c = ChooseAllocator(std::nullopt, std::nullopt, true);
  EXPECT_THAT(c.settings, IsEmpty());
  EXPECT_FALSE(c.warning.has_value());
}

}  // namespace
}  // namespace pooch::cli
