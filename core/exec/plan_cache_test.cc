#include "core/exec/plan_cache.h"

#include <vector>

#include "gtest/gtest.h"

namespace pooch {
namespace {

using Kind = StreamEvent::Kind;

std::vector<StreamEvent> Events(uint64_t alloc_signature) {
  return {{Kind::kOp, 1, 0}, {Kind::kAlloc, alloc_signature, 7, 64}, {Kind::kFree, 3, 7}};
}

TEST(PlanCacheTest, KeyFollowsKindsAndSignaturesNotIds) {
  std::vector<StreamEvent> other_ids = Events(2);
  other_ids[1].allocation = other_ids[2].allocation = 99;
  other_ids[1].bytes = 128;
  EXPECT_EQ(PlanCache::Key(Events(2)), PlanCache::Key(other_ids));
  EXPECT_NE(PlanCache::Key(Events(2)), PlanCache::Key(Events(5)));
  std::vector<StreamEvent> kind = Events(2);
  kind[0].kind = Kind::kAlloc;
  EXPECT_NE(PlanCache::Key(Events(2)), PlanCache::Key(kind));
  std::vector<StreamEvent> longer = Events(2);
  longer.push_back({Kind::kOp, 1, 0});
  EXPECT_NE(PlanCache::Key(Events(2)), PlanCache::Key(longer));
}

TEST(PlanCacheTest, FindsWhatWasPutCountsAndDropsTheOldest) {
  PlanCache cache;
  EXPECT_EQ(cache.Find(1), nullptr);
  PlanCache::Entry one;
  one.headroom_bytes = 10;
  one.plan_line = "one";
  cache.Put(1, one);
  ASSERT_NE(cache.Find(1), nullptr);
  EXPECT_EQ(cache.Find(1)->plan_line, "one");
  one.headroom_bytes = 20;  // a re-plan replaces it
  cache.Put(1, one);
  EXPECT_EQ(cache.Find(1)->headroom_bytes, 20);
  EXPECT_EQ(cache.hits(), 3);
  EXPECT_EQ(cache.misses(), 1);
  EXPECT_EQ(cache.Put(1, one), std::nullopt);  // replaced: nothing dropped
  for (uint64_t k = 2; k <= PlanCache::kMaxEntries; ++k) {
    EXPECT_EQ(cache.Put(k, PlanCache::Entry()), std::nullopt);
  }
  EXPECT_NE(cache.Peek(1), nullptr);
  EXPECT_EQ(cache.Put(PlanCache::kMaxEntries + 1, PlanCache::Entry()), 1u);  // the oldest
  EXPECT_EQ(cache.size(), PlanCache::kMaxEntries);
  EXPECT_EQ(cache.Find(1), nullptr);  // the oldest went
  EXPECT_NE(cache.Find(PlanCache::kMaxEntries + 1), nullptr);
}

}  // namespace
}  // namespace pooch
