#include "core/residency/parts/reuse_cache.h"

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "core/testing/fake_device.h"
#include "core/residency/parts/residency_events.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Entries stand for freed allocations; their events are recorded on streams of a FakeDevice in
// kManual mode, so that they stay pending until RunPending.
class ReuseCacheTest : public ::testing::Test {
 protected:
  ReuseCacheTest() : device_(ManualOptions()), events_(device_) {
    s1_ = *device_.CreateStream();
    s2_ = *device_.CreateStream();
  }
  ~ReuseCacheTest() override {
    device_.RunPending();
    device_.DestroyStream(s1_).IgnoreError();
    device_.DestroyStream(s2_).IgnoreError();
  }
  static FakeDevice::Options ManualOptions() {
    FakeDevice::Options o;
    o.mode = FakeDevice::Mode::kManual;
    return o;
  }

  // An entry at `address` of `bytes`, with a pending event on each of `streams`.
  FreedRange Entry(DeviceAddress address, int64_t bytes, std::vector<StreamHandle> streams = {}) {
    FreedRange r;
    r.address = address;
    r.mapped_bytes = bytes;
    r.physical = address;  // any non-zero handle: the cache never uses it
    for (StreamHandle s : streams) r.AddEvent(*events_.Record(s), s);
    return r;
  }

  FakeDevice device_;
  EventPool events_;
  StreamHandle s1_ = 0;
  StreamHandle s2_ = 0;
};

TEST_F(ReuseCacheTest, AddEventKnowsTheStreamOnlyWhileAllEventsShareIt) {
  FreedRange r = Entry(1, 10, {s1_, s1_});
  EXPECT_EQ(r.events_stream, s1_);
  r.AddEvent(*events_.Record(s2_), s2_);
  EXPECT_EQ(r.events_stream, std::nullopt);
  FreedRange copy = Entry(2, 10);
  copy.AddEvent(*events_.Record(s1_), std::nullopt);  // a copy stream of the manager's
  EXPECT_EQ(copy.events_stream, std::nullopt);
}

TEST_F(ReuseCacheTest, TakesTheOldestCompletedEntryOfExactlyTheSize) {
  ReuseCache cache(/*limit_bytes=*/1000, /*max_entries=*/8);
  cache.Put(Entry(1, 100));
  cache.Put(Entry(2, 200));
  cache.Put(Entry(3, 100));
  EXPECT_EQ(cache.bytes(), 400);
  EXPECT_EQ(cache.Take(150, std::nullopt, events_), std::nullopt);
  std::optional<FreedRange> r = cache.Take(100, std::nullopt, events_);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->address, 1u);
  EXPECT_EQ(cache.bytes(), 300);
  EXPECT_EQ(cache.Take(100, std::nullopt, events_)->address, 3u);
  EXPECT_EQ(cache.Take(100, std::nullopt, events_), std::nullopt);
  EXPECT_EQ(cache.bytes(), 200);
}

TEST_F(ReuseCacheTest, NeverHandsOutPendingWorkButOnTheStreamItIsOn) {
  ReuseCache cache(1000, 8);
  cache.Put(Entry(1, 100, {s1_}));
  cache.Put(Entry(2, 100, {s1_, s2_}));
  EXPECT_EQ(cache.Take(100, std::nullopt, events_), std::nullopt);
  EXPECT_EQ(cache.Take(100, s2_, events_), std::nullopt);  // 2's events are on two streams
  // Note [Reuse on the allocating stream]: 1's work is all on s1; it keeps its event.
  std::optional<FreedRange> r = cache.Take(100, s1_, events_);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->address, 1u);
  EXPECT_EQ(r->events.size(), 1u);
  EXPECT_EQ(r->events_stream, s1_);
  EXPECT_EQ(cache.bytes(), 100);
}

TEST_F(ReuseCacheTest, PrefersACompletedEntryToOneOnTheStream) {
  ReuseCache cache(1000, 8);
  cache.Put(Entry(1, 100, {s1_}));
  device_.RunPending();
  cache.Put(Entry(2, 100, {s1_}));  // pending
  std::optional<FreedRange> r = cache.Take(100, s1_, events_);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->address, 1u);
  EXPECT_THAT(r->events, IsEmpty());  // completed: nothing to wait for
}

TEST_F(ReuseCacheTest, BoundsSayWhenAndHowMuchToSpill) {
  ReuseCache cache(300, /*max_entries=*/2);
  EXPECT_TRUE(cache.Fits(300));
  EXPECT_FALSE(cache.Fits(301));
  EXPECT_FALSE(cache.MustSpillFor(300));  // empty: nothing to spill
  cache.Put(Entry(1, 100));
  EXPECT_FALSE(cache.MustSpillFor(200));
  EXPECT_TRUE(cache.MustSpillFor(250));
  EXPECT_EQ(cache.Excess(250), 50);
  cache.Put(Entry(2, 100));
  EXPECT_TRUE(cache.MustSpillFor(50));  // two entries already
  EXPECT_EQ(cache.Excess(50), 1);       // at least one byte
  ReuseCache disabled(0, 8);
  EXPECT_FALSE(disabled.Fits(1));
}

TEST_F(ReuseCacheTest, SpillsCompletedEntriesFirstThenTheOldestPending) {
  ReuseCache cache(1000, 8);
  cache.Put(Entry(1, 100, {s1_}));  // pending
  cache.Put(Entry(2, 100, {s1_}));  // pending
  cache.Put(Entry(3, 100));         // completed
  cache.Put(Entry(4, 100));         // completed
  std::vector<DeviceAddress> released;
  std::vector<DeviceAddress> retired;
  auto release = [&](FreedRange& r) { released.push_back(r.address); };
  auto retire = [&](FreedRange& r) { retired.push_back(r.address); };
  EXPECT_EQ(cache.Spill(150, events_, release, retire), 200);
  EXPECT_THAT(released, ElementsAre(DeviceAddress{3}, DeviceAddress{4}));
  EXPECT_THAT(retired, IsEmpty());
  EXPECT_EQ(cache.Spill(150, events_, release, retire), 200);
  EXPECT_THAT(retired, ElementsAre(DeviceAddress{1}, DeviceAddress{2}));
  EXPECT_TRUE(cache.empty());
  EXPECT_EQ(cache.bytes(), 0);
  EXPECT_EQ(cache.Spill(1, events_, release, retire), 0);
}

TEST_F(ReuseCacheTest, AllDoneStopsAtTheFirstPendingEvent) {
  std::vector<EventRef> list = {*events_.Record(s1_), *events_.Record(s2_)};
  EXPECT_FALSE(*AllDone(events_, list));
  EXPECT_TRUE(*AllDone(events_, std::vector<EventRef>{}));
  device_.RunPending();
  EXPECT_TRUE(*AllDone(events_, list));
  std::vector<std::pair<StreamHandle, EventRef>> uses = {{s1_, *events_.Record(s1_)}};
  EXPECT_FALSE(*AllDone(events_, uses));
  device_.RunPending();
  EXPECT_TRUE(*AllDone(events_, uses));
}

}  // namespace
}  // namespace pooch
