#include "tests/simgpu/device/time/hazards.h"

#include <gtest/gtest.h>

namespace simgpu {
namespace {

TEST(Hazards, ReadAfterWriteOnAnotherStream) {
  HazardTracker h;
  h.Record(1000, 2000, /*write=*/true, /*stream=*/2, /*end=*/100, "copy");
  EXPECT_FALSE(h.Check(1000, 2000, false, 2, 50).has_value());   // same stream: ordered
  EXPECT_FALSE(h.Check(1000, 2000, false, 3, 100).has_value());  // starts after the write ends
  std::optional<Race> r = h.Check(1500, 1600, false, 3, 99);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->addr, 1500u);
  EXPECT_STREQ(r->earlier.op, "copy");
  EXPECT_TRUE(r->earlier_write);
  EXPECT_FALSE(h.Check(2000, 3000, false, 3, 0).has_value());  // disjoint
}

TEST(Hazards, WriteAfterReadAndLatestRead) {
  HazardTracker h;
  h.Record(0, 100, false, 2, 50, "readA");
  h.Record(0, 100, false, 3, 80, "readB");
  EXPECT_FALSE(h.Check(0, 100, false, 4, 0).has_value());  // reads do not conflict
  std::optional<Race> r = h.Check(0, 100, true, 2, 60);    // readB (stream 3) ends at 80
  ASSERT_TRUE(r.has_value());
  EXPECT_STREQ(r->earlier.op, "readB");
  EXPECT_FALSE(h.Check(0, 100, true, 3, 60).has_value());  // same stream as the latest read
}

TEST(Hazards, PartialOverlapAndRelease) {
  HazardTracker h;
  h.Record(0, 100, true, 2, 50, "w1");
  h.Record(50, 150, true, 3, 90, "w2");
  std::optional<Race> r = h.CheckRelease(0, 200, kHostStreamId, 60);
  ASSERT_TRUE(r.has_value());
  EXPECT_STREQ(r->earlier.op, "w2");
  EXPECT_EQ(r->addr, 50u);
  EXPECT_FALSE(h.CheckRelease(0, 200, kHostStreamId, 90).has_value());
  h.Reset(0, 200, Use{"free", 2, 120});
  EXPECT_TRUE(h.Check(0, 10, false, 3, 100).has_value());  // reuse before the stream-ordered free
  EXPECT_FALSE(h.Check(0, 10, false, 2, 100).has_value());
  h.Reset(0, 200, Use{});
  EXPECT_EQ(h.segments(), 0u);
}

}  // namespace
}  // namespace simgpu
