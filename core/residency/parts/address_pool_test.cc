// AddressPool (Note [Address pool]): ranges kept by exact size, oldest first, within the bound.
#include "core/residency/parts/address_pool.h"

#include <algorithm>

#include "gtest/gtest.h"

namespace pooch {
namespace {

constexpr int64_t kG = 2 << 20;

TEST(AddressPoolTest, HandsOutAKeptRangeOfExactlyTheSizeOldestFirst) {
  AddressPool pool(10 * kG);
  EXPECT_FALSE(pool.Take(kG).has_value());
  ASSERT_TRUE(pool.Keep(0x1000000, kG));
  ASSERT_TRUE(pool.Keep(0x2000000, 2 * kG));
  ASSERT_TRUE(pool.Keep(0x3000000, kG));
  EXPECT_EQ(pool.bytes(), 4 * kG);
  EXPECT_FALSE(pool.Take(3 * kG).has_value());  // no range of that size
  EXPECT_EQ(pool.Take(kG), 0x1000000u);
  EXPECT_EQ(pool.Take(kG), 0x3000000u);
  EXPECT_FALSE(pool.Take(kG).has_value());
  EXPECT_EQ(pool.Take(2 * kG), 0x2000000u);
  EXPECT_EQ(pool.bytes(), 0);
}

TEST(AddressPoolTest, KeepsNothingBeyondItsBound) {
  AddressPool pool(3 * kG);
  EXPECT_TRUE(pool.Keep(0x1000000, 2 * kG));
  EXPECT_FALSE(pool.Keep(0x2000000, 2 * kG));  // 4 kG > 3 kG: the caller frees it
  EXPECT_TRUE(pool.Keep(0x3000000, kG));
  EXPECT_EQ(pool.bytes(), 3 * kG);
  AddressPool none(0);
  EXPECT_FALSE(none.Keep(0x1000000, kG));
}

TEST(AddressPoolTest, TakeAllGivesEveryRangeBack) {
  AddressPool pool(10 * kG);
  ASSERT_TRUE(pool.Keep(0x1000000, kG));
  ASSERT_TRUE(pool.Keep(0x2000000, 2 * kG));
  auto all = pool.TakeAll();
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0], std::make_pair(DeviceAddress{0x1000000}, kG));
  EXPECT_EQ(all[1], std::make_pair(DeviceAddress{0x2000000}, 2 * kG));
  EXPECT_EQ(pool.bytes(), 0);
  EXPECT_FALSE(pool.Take(kG).has_value());
}

}  // namespace
}  // namespace pooch
