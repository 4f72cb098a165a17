#include "core/residency/parts/chunk_pool.h"

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<PhysicalHandle> Handles(const std::vector<ChunkPool::Spare>& spares) {
  std::vector<PhysicalHandle> handles;
  for (const ChunkPool::Spare& s : spares) handles.push_back(s.handle);
  return handles;
}

TEST(ChunkPoolTest, KeepsSparesWithinTheCountAndTheByteLimit) {
  ChunkPool pool(/*max_spares=*/2);
  EXPECT_TRUE(pool.KeepSpare(100, 1, /*byte_limit=*/250));
  EXPECT_FALSE(pool.KeepSpare(200, 2, 250));  // 300 bytes > 250
  EXPECT_TRUE(pool.KeepSpare(150, 3, 250));
  EXPECT_FALSE(pool.KeepSpare(1, 4, 1000));  // two already
  EXPECT_EQ(pool.spare_bytes(), 250);
  EXPECT_TRUE(pool.has_spares());
}

TEST(ChunkPoolTest, NoSparesWhenTheCountIsNotPositive) {
  ChunkPool none(0);
  EXPECT_FALSE(none.KeepSpare(1, 1, 100));
  ChunkPool negative(-3);
  EXPECT_FALSE(negative.KeepSpare(1, 1, 100));
  EXPECT_FALSE(negative.has_spares());
}

TEST(ChunkPoolTest, TakesTheOldestSpareOfExactlyTheSize) {
  ChunkPool pool(8);
  ASSERT_TRUE(pool.KeepSpare(100, 1, 1000));
  ASSERT_TRUE(pool.KeepSpare(200, 2, 1000));
  ASSERT_TRUE(pool.KeepSpare(100, 3, 1000));
  EXPECT_TRUE(pool.HasSpare(200));
  EXPECT_FALSE(pool.HasSpare(150));
  EXPECT_EQ(pool.TakeSpare(150), std::nullopt);
  EXPECT_EQ(pool.TakeSpare(100), PhysicalHandle{1});
  EXPECT_EQ(pool.TakeSpare(100), PhysicalHandle{3});
  EXPECT_EQ(pool.TakeSpare(100), std::nullopt);
  EXPECT_EQ(pool.spare_bytes(), 200);
}

TEST(ChunkPoolTest, TakesOldestSparesUntilTheirBytesReachTheAmount) {
  ChunkPool pool(8);
  ASSERT_TRUE(pool.KeepSpare(100, 1, 1000));
  ASSERT_TRUE(pool.KeepSpare(200, 2, 1000));
  ASSERT_TRUE(pool.KeepSpare(300, 3, 1000));
  EXPECT_THAT(Handles(pool.TakeOldestSpares(150)),
              ElementsAre(PhysicalHandle{1}, PhysicalHandle{2}));
  EXPECT_EQ(pool.spare_bytes(), 300);
  EXPECT_THAT(Handles(pool.TakeOldestSpares(1000)), ElementsAre(PhysicalHandle{3}));
  EXPECT_EQ(pool.spare_bytes(), 0);
  EXPECT_THAT(pool.TakeOldestSpares(1), IsEmpty());
}

// The retained entries stand for allocations whose state the caller knows: here a map from id to
// mapped bytes of those still retained.
TEST(ChunkPoolTest, ReclaimsRetainedChunksOldestFirstSkippingStaleEntries) {
  ChunkPool pool(8);
  absl::flat_hash_map<AllocationId, int64_t> retained = {{1, 100}, {2, 200}, {3, 300}};
  auto is_retained = [&](AllocationId id) { return retained.contains(id); };
  pool.Retain(1, 100, is_retained);
  pool.Retain(2, 200, is_retained);
  pool.Retain(3, 300, is_retained);
  EXPECT_EQ(pool.retained_bytes(), 600);
  retained.erase(1);  // brought back (or freed): stale
  pool.Unretain(100);
  EXPECT_EQ(pool.retained_bytes(), 500);
  std::vector<AllocationId> unmapped;
  auto unmap = [&](AllocationId id) -> int64_t {
    auto it = retained.find(id);
    if (it == retained.end()) return 0;
    unmapped.push_back(id);
    const int64_t bytes = it->second;
    retained.erase(it);
    return bytes;
  };
  EXPECT_EQ(pool.ReclaimRetained(150, unmap), 200);
  EXPECT_THAT(unmapped, ElementsAre(AllocationId{2}));
  EXPECT_EQ(pool.retained_bytes(), 300);
  EXPECT_EQ(pool.retained_entries(), 1u);  // the stale entry went with the reclaimed one
  EXPECT_EQ(pool.ReclaimRetained(1000, unmap), 300);
  EXPECT_EQ(pool.retained_bytes(), 0);
  EXPECT_EQ(pool.retained_entries(), 0u);
  EXPECT_EQ(pool.ReclaimRetained(1000, unmap), 0);
}

TEST(ChunkPoolTest, DropsStaleRetainedEntriesWhenTheListGrowsLong) {
  ChunkPool pool(8);
  auto none_retained = [](AllocationId) { return false; };
  for (AllocationId id = 1; id <= 1024; ++id) {
    pool.Retain(id, 1, none_retained);
    pool.Unretain(1);
  }
  EXPECT_EQ(pool.retained_entries(), 1024u);
  pool.Retain(2000, 1, [](AllocationId id) { return id == 2000; });
  EXPECT_EQ(pool.retained_entries(), 1u);
  EXPECT_EQ(pool.retained_bytes(), 1);
}

}  // namespace
}  // namespace pooch
