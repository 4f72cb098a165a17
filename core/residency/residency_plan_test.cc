// Tests of the planned-residency primitives (Offload, Drop, Prefetch; Note [Planned residency])
// on the fake device.
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/testing/fake_device.h"
#include "core/residency/residency.h"
#include "core/residency/residency_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using Mode = AccessRange::Mode;

constexpr int64_t kG = ::pooch::testing::ResidencyFixture::kG;

class ResidencyPlanTest : public ::pooch::testing::ResidencyFixture {
 protected:
  void Init(int64_t limit, FakeDevice::Mode mode = FakeDevice::Mode::kImmediate) {
    FakeDevice::Options o;
    o.mode = mode;
    o.copy_bytes_per_us = 1000;
    ResidencyOptions r = Options(limit, std::nullopt, reuse_cache_bytes_);
    r.time_copies = time_copies_;
    Start(o, r);
  }

  std::optional<int64_t> reuse_cache_bytes_ = 0;  // off unless a test turns it on
  bool time_copies_ = false;
};

TEST_F(ResidencyPlanTest, OffloadThenTouchGivesTheSameBitsAtTheSameAddress) {
  Init(4 * kG);
  DeviceAddress a = *manager_->Allocate(2 * kG + 5);  // not a multiple of the granularity
  const std::vector<uint8_t> pattern = Pattern(2 * kG + 5);
  ASSERT_TRUE(device_->Write(a, pattern.data(), 2 * kG + 5).ok());
  ASSERT_TRUE(manager_->Offload(a).ok());
  EXPECT_EQ(StateOf(a), ResidencyState::kSwappingOut);
  ASSERT_TRUE(manager_->Poll().ok());
  EXPECT_EQ(StateOf(a), ResidencyState::kOnHost);
  EXPECT_EQ(device_->physical_bytes(), 0);
  EXPECT_EQ(manager_->Stats().device_bytes, 0);
  ASSERT_TRUE(manager_->Offload(a).ok());  // already on the host: a no-op
  absl::StatusOr<std::vector<uint8_t>> back = ReadBack(a, 2 * kG + 5);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, pattern);
  ResidencyStats s = manager_->Stats();
  EXPECT_EQ(s.planned_swap_outs, 1);
  EXPECT_EQ(s.demand_swap_outs, 0);
  EXPECT_EQ(s.swap_outs, 1);
  EXPECT_EQ(s.demand_swap_ins, 1);  // nobody prefetched it: the safety net caught it
  EXPECT_EQ(s.prefetches, 0);
  EXPECT_EQ(s.bytes_swapped_out, 2 * kG + 5);
  ASSERT_TRUE(manager_->Free(a).ok());
}

TEST_F(ResidencyPlanTest, OffloadIsANoOpWhenPinnedTooSmallOrNotABase) {
  Init(4 * kG);
  DeviceAddress a = *manager_->Allocate(kG);
  DeviceAddress small = *manager_->Allocate(kG / 2);  // below min_swap_bytes
  absl::StatusOr<OpTicket> t = manager_->BeforeOp(stream_, {{a, kG}});
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(manager_->Offload(a).ok());
  EXPECT_EQ(StateOf(a), ResidencyState::kResident);
  ASSERT_TRUE(manager_->AfterOp(*std::move(t)).ok());
  ASSERT_TRUE(manager_->Offload(small).ok());
  EXPECT_EQ(StateOf(small), ResidencyState::kResident);
  EXPECT_TRUE(absl::IsNotFound(manager_->Offload(a + 1)));
  EXPECT_EQ(manager_->Stats().planned_swap_outs, 0);
  EXPECT_EQ(manager_->Stats().swap_outs, 0);
  ASSERT_TRUE(manager_->Free(a).ok());
  ASSERT_TRUE(manager_->Free(small).ok());
}

TEST_F(ResidencyPlanTest, OffloadWaitsForQueuedWriters) {
  Init(4 * kG, FakeDevice::Mode::kManual);
  DeviceAddress a = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(a, kG, 5).ok());  // queued, not run
  ASSERT_TRUE(manager_->Offload(a).ok());
  device_->RunPending();
  ASSERT_TRUE(manager_->Poll().ok());
  EXPECT_EQ(StateOf(a), ResidencyState::kOnHost);
  EXPECT_TRUE(Holds(a, kG, 5));  // the copy saw the write, not the chunk's garbage
  ASSERT_TRUE(manager_->Free(a).ok());
}

TEST_F(ResidencyPlanTest, EvictionsCountAsDemandSwapOuts) {
  Init(2 * kG);
  DeviceAddress a = *manager_->Allocate(kG);
  DeviceAddress b = *manager_->Allocate(kG);
  ASSERT_TRUE(manager_->Offload(b).ok());
  DeviceAddress c = *manager_->Allocate(kG);  // room from b's planned swap-out: no eviction
  EXPECT_EQ(manager_->Stats().demand_swap_outs, 0);
  DeviceAddress d = *manager_->Allocate(kG);  // evicts a
  ResidencyStats s = manager_->Stats();
  EXPECT_EQ(s.planned_swap_outs, 1);
  EXPECT_EQ(s.demand_swap_outs, 1);
  EXPECT_EQ(s.swap_outs, 2);
  EXPECT_EQ(StateOf(a), ResidencyState::kOnHost);
  for (DeviceAddress x : {a, b, c, d}) ASSERT_TRUE(manager_->Free(x).ok());
}

TEST_F(ResidencyPlanTest, DropThenWriteOnlyOpMapsAFreshChunkWithoutACopy) {
  Init(4 * kG);
  DeviceAddress a = *manager_->Allocate(2 * kG);
  ASSERT_TRUE(Fill(a, 2 * kG, 1).ok());
  ASSERT_TRUE(manager_->Drop(a).ok());
  EXPECT_EQ(StateOf(a), ResidencyState::kDropped);
  EXPECT_EQ(device_->physical_bytes(), 0);  // nothing used it any more: released at once
  EXPECT_EQ(manager_->Stats().device_bytes, 0);
  EXPECT_EQ(manager_->Stats().host_bytes, 0);  // no copy anywhere
  const int64_t creates = device_->create_physical_calls();
  ASSERT_TRUE(Fill(a, 2 * kG, 7, Mode::kWrite).ok());  // the replay that recomputes it
  EXPECT_EQ(StateOf(a), ResidencyState::kResident);
  EXPECT_EQ(device_->create_physical_calls(), creates + 1);
  EXPECT_EQ(manager_->Lookup(a)->address, a);
  EXPECT_TRUE(Holds(a, 2 * kG, 7));
  ResidencyStats s = manager_->Stats();
  EXPECT_EQ(s.drops, 1);
  EXPECT_EQ(s.restores, 1);
  EXPECT_EQ(s.swap_outs, 0);
  EXPECT_EQ(s.swap_ins, 0);
  EXPECT_EQ(s.bytes_swapped_in, 0);
  ASSERT_TRUE(manager_->Free(a).ok());
}

TEST_F(ResidencyPlanTest, ReadingADroppedAllocationIsFailedPreconditionAndPinsNothing) {
  Init(4 * kG);
  DeviceAddress a = *manager_->Allocate(kG);
  DeviceAddress b = *manager_->Allocate(kG);
  ASSERT_TRUE(manager_->Drop(a).ok());
  for (Mode mode : {Mode::kRead, Mode::kReadWrite}) {
    absl::StatusOr<OpTicket> t = manager_->BeforeOp(stream_, {{b, kG}, {a, kG, mode}});
    ASSERT_FALSE(t.ok());
    EXPECT_TRUE(absl::IsFailedPrecondition(t.status())) << t.status();
    EXPECT_THAT(t.status().message(), HasSubstr("dropped and must be recomputed"));
  }
  // A write of one part and a read of another is still a read.
  absl::StatusOr<OpTicket> t =
      manager_->BeforeOp(stream_, {{a, 16, Mode::kWrite}, {a + 16, 16, Mode::kRead}});
  EXPECT_TRUE(absl::IsFailedPrecondition(t.status())) << t.status();
  EXPECT_EQ(StateOf(a), ResidencyState::kDropped);
  EXPECT_EQ(manager_->Stats().restores, 0);
  // b was not left pinned: a planned swap-out (a no-op while pinned) takes it.
  ASSERT_TRUE(manager_->Offload(b).ok());
  EXPECT_EQ(StateOf(b), ResidencyState::kSwappingOut);
  ASSERT_TRUE(manager_->Free(a).ok());
  ASSERT_TRUE(manager_->Free(b).ok());
}

TEST_F(ResidencyPlanTest, DropKeepsTheChunkUntilQueuedReadersFinish) {
  Init(4 * kG, FakeDevice::Mode::kManual);
  StreamHandle other = *device_->CreateStream();
  DeviceAddress a = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(a, kG, 3).ok());
  absl::StatusOr<OpTicket> t = manager_->BeforeOp(other, {{a, kG, Mode::kRead}});
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(device_->Launch(other, {{a, kG}}, [](FakeDevice::Memory&) {}).ok());
  ASSERT_TRUE(manager_->AfterOp(*std::move(t)).ok());
  ASSERT_TRUE(manager_->Drop(a).ok());
  EXPECT_EQ(StateOf(a), ResidencyState::kDropped);
  EXPECT_EQ(device_->physical_bytes(), kG);  // queued work still uses it
  EXPECT_EQ(manager_->Stats().device_bytes, kG);
  device_->RunPending();
  ASSERT_TRUE(manager_->Poll().ok());
  EXPECT_EQ(device_->physical_bytes(), 0);
  EXPECT_EQ(manager_->Stats().device_bytes, 0);
  ASSERT_TRUE(manager_->Free(a).ok());
}

TEST_F(ResidencyPlanTest, RestoreBeforeTheReleaseKeepsTheChunkAndWaitsForItsUsers) {
  Init(4 * kG, FakeDevice::Mode::kManual);
  StreamHandle other = *device_->CreateStream();
  DeviceAddress a = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(a, kG, 3).ok());
  // A reader on another stream, queued: it must see 3, not the replay's 9.
  auto seen = std::make_shared<uint8_t>(0);
  absl::StatusOr<OpTicket> t = manager_->BeforeOp(other, {{a, kG, Mode::kRead}});
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(
      device_
          ->Launch(other, {{a, kG}},
                   [=](FakeDevice::Memory& m) { m.Read(a + kG - 1, seen.get(), 1).IgnoreError(); })
          .ok());
  ASSERT_TRUE(manager_->AfterOp(*std::move(t)).ok());
  ASSERT_TRUE(manager_->Drop(a).ok());
  const int64_t creates = device_->create_physical_calls();
  ASSERT_TRUE(Fill(a, kG, 9, Mode::kWrite).ok());
  EXPECT_EQ(device_->create_physical_calls(), creates);  // kept the pending chunk
  EXPECT_EQ(StateOf(a), ResidencyState::kResident);
  EXPECT_EQ(manager_->Stats().restores, 1);
  ASSERT_TRUE(device_->SynchronizeStream(stream_).ok());  // runs the replay and what it waits for
  ASSERT_TRUE(device_->SynchronizeStream(other).ok());
  EXPECT_EQ(*seen, 3);
  EXPECT_TRUE(Holds(a, kG, 9));
  ASSERT_TRUE(manager_->Free(a).ok());
  device_->RunPending();
  ASSERT_TRUE(manager_->Drain().ok());
}

TEST_F(ResidencyPlanTest, DropIsANoOpUnlessResident) {
  Init(4 * kG);
  DeviceAddress a = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(a, kG, 4).ok());
  ASSERT_TRUE(manager_->Offload(a).ok());
  ASSERT_TRUE(manager_->Drop(a).ok());  // swapping out: its data is on the way to the host
  ASSERT_TRUE(manager_->Poll().ok());
  ASSERT_TRUE(manager_->Drop(a).ok());  // on the host: the copy is kept
  EXPECT_EQ(StateOf(a), ResidencyState::kOnHost);
  EXPECT_EQ(manager_->Stats().drops, 0);
  EXPECT_TRUE(Holds(a, kG, 4));
  EXPECT_TRUE(absl::IsNotFound(manager_->Drop(a + kG / 2)));
  ASSERT_TRUE(manager_->Free(a).ok());
}

TEST_F(ResidencyPlanTest, FreeOfADroppedAllocation) {
  for (FakeDevice::Mode mode : {FakeDevice::Mode::kImmediate, FakeDevice::Mode::kManual}) {
    Init(4 * kG, mode);
    DeviceAddress a = *manager_->Allocate(kG);
    ASSERT_TRUE(Fill(a, kG, 1).ok());
    ASSERT_TRUE(manager_->Drop(a).ok());
    ASSERT_TRUE(manager_->Free(a).ok());
    EXPECT_FALSE(manager_->Lookup(a).has_value());
    device_->RunPending();
    ASSERT_TRUE(manager_->Drain().ok());
    EXPECT_EQ(device_->physical_bytes(), 0);
    EXPECT_EQ(manager_->Stats().device_bytes, 0);
    EXPECT_THAT(device_->violations(), IsEmpty());
    manager_.reset();
  }
}

TEST_F(ResidencyPlanTest, DroppedChunkPendingReleaseIsWaitedForNotEvictedAround) {
  Init(2 * kG, FakeDevice::Mode::kManual);
  DeviceAddress a = *manager_->Allocate(kG);
  DeviceAddress b = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(a, kG, 1).ok());
  ASSERT_TRUE(Fill(b, kG, 2).ok());
  ASSERT_TRUE(manager_->Drop(a).ok());
  DeviceAddress c = *manager_->Allocate(kG);  // waits for a's chunk rather than evicting b
  EXPECT_EQ(StateOf(b), ResidencyState::kResident);
  EXPECT_EQ(manager_->Stats().swap_outs, 0);
  for (DeviceAddress x : {a, b, c}) ASSERT_TRUE(manager_->Free(x).ok());
  device_->RunPending();
  ASSERT_TRUE(manager_->Drain().ok());
}

TEST_F(ResidencyPlanTest, PrefetchWithRoomStartsTheSwapInAndTheOpMakesNoSecondCopy) {
  Init(2 * kG);
  DeviceAddress a = *manager_->Allocate(kG);
  const std::vector<uint8_t> pattern = Pattern(kG);
  ASSERT_TRUE(device_->Write(a, pattern.data(), kG).ok());
  ASSERT_TRUE(manager_->Offload(a).ok());
  ASSERT_TRUE(manager_->Poll().ok());
  absl::StatusOr<bool> started = manager_->Prefetch(a);
  ASSERT_TRUE(started.ok()) << started.status();
  EXPECT_TRUE(*started);
  EXPECT_EQ(StateOf(a), ResidencyState::kSwappingIn);
  EXPECT_EQ(*manager_->Prefetch(a), true);  // already on its way: a no-op
  absl::StatusOr<std::vector<uint8_t>> back = ReadBack(a, kG);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, pattern);
  ResidencyStats s = manager_->Stats();
  EXPECT_EQ(s.prefetches, 1);
  EXPECT_EQ(s.swap_ins, 1);
  EXPECT_EQ(s.demand_swap_ins, 0);
  EXPECT_EQ(s.bytes_swapped_in, kG);
  EXPECT_EQ(*manager_->Prefetch(a), true);  // resident
  EXPECT_EQ(manager_->Stats().prefetches, 1);
  ASSERT_TRUE(manager_->Free(a).ok());
}

TEST_F(ResidencyPlanTest, PrefetchWithoutRoomEvictsNothing) {
  Init(2 * kG);
  DeviceAddress a = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(a, kG, 6).ok());
  ASSERT_TRUE(manager_->Offload(a).ok());
  DeviceAddress b = *manager_->Allocate(kG);
  DeviceAddress c = *manager_->Allocate(kG);
  absl::StatusOr<bool> started = manager_->Prefetch(a);
  ASSERT_TRUE(started.ok()) << started.status();
  EXPECT_FALSE(*started);
  EXPECT_EQ(StateOf(a), ResidencyState::kOnHost);
  EXPECT_EQ(StateOf(b), ResidencyState::kResident);
  EXPECT_EQ(StateOf(c), ResidencyState::kResident);
  EXPECT_EQ(manager_->Stats().swap_outs, 1);
  EXPECT_EQ(manager_->Stats().prefetches, 0);
  ASSERT_TRUE(manager_->Free(c).ok());
  EXPECT_EQ(*manager_->Prefetch(a), true);  // the retry at a later op finds room
  EXPECT_TRUE(Holds(a, kG, 6));
  EXPECT_EQ(manager_->Stats().prefetches, 1);
  EXPECT_EQ(manager_->Stats().demand_swap_ins, 0);
  ASSERT_TRUE(manager_->Free(a).ok());
  ASSERT_TRUE(manager_->Free(b).ok());
}

// Note [Prefetch in device order]: the memory of an allocation freed while an op still uses it
// is on its way out; a prefetch that fits once it is released waits for the op rather than
// give up, and evicts nothing. Without prefetch_waits it gives up.
// An allocation that needs memory several swap-outs in flight will release waits for the
// earliest queued one only (the copy stream runs them in order): waiting for a later one would
// hold the host until the copies before it ran too. Eight candidates, so that a pick in a hash
// set's order is caught seven times in eight.
TEST_F(ResidencyPlanTest, AllocationWaitsForTheEarliestSwapOutInFlight) {
  constexpr int kMaps = 8;
  ResidencyOptions options;
  options.memory_limit = kMaps * kG;
  options.min_swap_bytes = kG;
  options.reuse_cache_bytes = 0;
  FakeDevice::Options device;
  device.mode = FakeDevice::Mode::kManual;
  Start(device, options);
  std::vector<DeviceAddress> maps;
  for (int i = 0; i < kMaps; ++i) {
    maps.push_back(*manager_->Allocate(kG));
    ASSERT_TRUE(Fill(maps.back(), kG, static_cast<uint8_t>(10 + i)).ok());
  }
  device_->RunPending();
  for (DeviceAddress m : maps) ASSERT_TRUE(manager_->Offload(m).ok());  // queued, not run
  DeviceAddress extra = *manager_->Allocate(kG);
  EXPECT_EQ(StateOf(maps[0]), ResidencyState::kOnHost);
  for (int i = 1; i < kMaps; ++i) {
    EXPECT_EQ(StateOf(maps[i]), ResidencyState::kSwappingOut) << i;
  }
  EXPECT_EQ(manager_->Stats().demand_swap_outs, 0);
  device_->RunPending();
  ASSERT_TRUE(manager_->Poll().ok());
  for (int i = 0; i < kMaps; ++i) EXPECT_TRUE(Holds(maps[i], kG, static_cast<uint8_t>(10 + i)));
  for (DeviceAddress m : maps) ASSERT_TRUE(manager_->Free(m).ok());
  ASSERT_TRUE(manager_->Free(extra).ok());
  ASSERT_TRUE(manager_->Drain().ok());
}

// Prefetch(base, may_wait = false), the pilot's (core/exec/pilot_actions.h), never waits.
TEST_F(ResidencyPlanTest, PrefetchWaitsForMemoryOnItsWayOut) {
  const std::pair<bool, bool> cases[] = {{true, true}, {false, true}, {true, false}};
  for (const auto& [prefetch_waits, may_wait] : cases) {
    SCOPED_TRACE(absl::StrCat("prefetch_waits ", prefetch_waits, " may_wait ", may_wait));
    const bool waits = prefetch_waits && may_wait;
    ResidencyOptions options;
    options.memory_limit = 2 * kG;
    options.min_swap_bytes = kG;
    options.reuse_cache_bytes = 0;
    options.prefetch_waits = prefetch_waits;
    FakeDevice::Options device;
    device.mode = FakeDevice::Mode::kManual;
    Start(device, options);
    DeviceAddress a = *manager_->Allocate(kG);
    ASSERT_TRUE(Fill(a, kG, 3).ok());
    ASSERT_TRUE(manager_->Offload(a).ok());
    device_->RunPending();
    ASSERT_TRUE(manager_->Poll().ok());
    ASSERT_EQ(StateOf(a), ResidencyState::kOnHost);
    DeviceAddress b = *manager_->Allocate(kG);
    DeviceAddress c = *manager_->Allocate(kG);
    ASSERT_TRUE(Fill(b, kG, 4).ok());
    ASSERT_TRUE(Fill(c, kG, 5).ok());     // queued, not run (kManual)
    ASSERT_TRUE(manager_->Free(c).ok());  // its chunk goes once the fill ran
    absl::StatusOr<bool> started = manager_->Prefetch(a, may_wait);
    ASSERT_TRUE(started.ok()) << started.status();
    EXPECT_EQ(*started, waits);
    EXPECT_EQ(manager_->Stats().prefetch_waits, waits ? 1 : 0);
    EXPECT_EQ(StateOf(b), ResidencyState::kResident);  // nothing evicted
    EXPECT_TRUE(Holds(a, kG, 3));
    EXPECT_TRUE(Holds(b, kG, 4));
    ASSERT_TRUE(manager_->Free(a).ok());
    ASSERT_TRUE(manager_->Free(b).ok());
    TearDown();
  }
}

TEST_F(ResidencyPlanTest, PrefetchSpillsTheReuseCache) {
  reuse_cache_bytes_ = std::nullopt;  // the default: a quarter of the limit
  Init(4 * kG);
  DeviceAddress a = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(a, kG, 8).ok());
  ASSERT_TRUE(manager_->Offload(a).ok());
  DeviceAddress b = *manager_->Allocate(3 * kG);
  DeviceAddress c = *manager_->Allocate(kG);
  ASSERT_TRUE(manager_->Free(c).ok());  // cached: still counted
  EXPECT_EQ(manager_->Stats().cached_bytes, kG);
  EXPECT_EQ(*manager_->Prefetch(a), true);
  EXPECT_EQ(manager_->Stats().cached_bytes, 0);
  EXPECT_EQ(StateOf(b), ResidencyState::kResident);
  EXPECT_TRUE(Holds(a, kG, 8));
  ASSERT_TRUE(manager_->Free(a).ok());
  ASSERT_TRUE(manager_->Free(b).ok());
}

TEST_F(ResidencyPlanTest, OpAfterPrefetchWaitsForTheCopyOnTheDevice) {
  Init(2 * kG, FakeDevice::Mode::kManual);
  DeviceAddress a = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(a, kG, 5).ok());
  ASSERT_TRUE(manager_->Offload(a).ok());
  device_->RunPending();
  ASSERT_TRUE(manager_->Poll().ok());
  ASSERT_EQ(StateOf(a), ResidencyState::kOnHost);
  EXPECT_EQ(*manager_->Prefetch(a), true);
  EXPECT_GT(device_->queued_commands(), 0);  // the copy is queued, not run: nothing blocked
  // The read runs only with what its stream waits for (kManual): without the wait on the
  // copy's event it would read the fresh chunk's garbage.
  EXPECT_TRUE(Holds(a, kG, 5));
  ResidencyStats s = manager_->Stats();
  EXPECT_EQ(s.swap_ins, 1);
  EXPECT_EQ(s.demand_swap_ins, 0);
  ASSERT_TRUE(manager_->Free(a).ok());
}

TEST_F(ResidencyPlanTest, PrefetchOfAnAllocationSwappingOutCancelsTheSwapOut) {
  Init(2 * kG, FakeDevice::Mode::kManual);
  DeviceAddress a = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(a, kG, 2).ok());
  ASSERT_TRUE(manager_->Offload(a).ok());
  ASSERT_EQ(StateOf(a), ResidencyState::kSwappingOut);
  EXPECT_EQ(*manager_->Prefetch(a), true);
  EXPECT_EQ(StateOf(a), ResidencyState::kResident);
  EXPECT_EQ(manager_->Stats().cancelled_swap_outs, 1);
  EXPECT_EQ(manager_->Stats().prefetches, 0);  // no copy was needed
  EXPECT_TRUE(Holds(a, kG, 2));
  ASSERT_TRUE(manager_->Free(a).ok());
  device_->RunPending();
  ASSERT_TRUE(manager_->Drain().ok());
}

TEST_F(ResidencyPlanTest, PrefetchOfADroppedAllocationIsFailedPrecondition) {
  Init(2 * kG);
  DeviceAddress a = *manager_->Allocate(kG);
  ASSERT_TRUE(manager_->Drop(a).ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(manager_->Prefetch(a).status()));
  EXPECT_TRUE(absl::IsNotFound(manager_->Prefetch(a + 1).status()));
  ASSERT_TRUE(manager_->Free(a).ok());
}

TEST_F(ResidencyPlanTest, FreeWhilePrefetchingOrOffloading) {
  Init(4 * kG, FakeDevice::Mode::kManual);
  DeviceAddress a = *manager_->Allocate(kG);
  DeviceAddress b = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(a, kG, 1).ok());
  ASSERT_TRUE(Fill(b, kG, 2).ok());
  ASSERT_TRUE(manager_->Offload(a).ok());
  device_->RunPending();
  ASSERT_TRUE(manager_->Poll().ok());
  EXPECT_EQ(*manager_->Prefetch(a), true);  // H2D queued
  ASSERT_TRUE(manager_->Offload(b).ok());   // D2H queued
  ASSERT_EQ(StateOf(a), ResidencyState::kSwappingIn);
  ASSERT_EQ(StateOf(b), ResidencyState::kSwappingOut);
  ASSERT_TRUE(manager_->Free(a).ok());
  ASSERT_TRUE(manager_->Free(b).ok());
  EXPECT_GT(device_->physical_bytes(), 0);  // the copies still use the chunks
  device_->RunPending();
  ASSERT_TRUE(manager_->Drain().ok());
  EXPECT_EQ(device_->physical_bytes(), 0);
  EXPECT_EQ(manager_->Stats().device_bytes, 0);
  EXPECT_EQ(manager_->Stats().host_bytes, 0);
}

TEST_F(ResidencyPlanTest, CopyTimingsReportEachCompletedSwapCopy) {
  time_copies_ = true;
  Init(4 * kG, FakeDevice::Mode::kManual);
  DeviceAddress a = *manager_->Allocate(2 * kG);
  DeviceAddress b = *manager_->Allocate(kG + 10);
  ASSERT_TRUE(Fill(a, 2 * kG, 1).ok());
  ASSERT_TRUE(Fill(b, kG + 10, 2).ok());
  ASSERT_TRUE(manager_->Offload(a).ok());
  ASSERT_TRUE(manager_->Offload(b).ok());
  EXPECT_THAT(manager_->TakeCopyTimings(), IsEmpty());  // nothing ran yet
  device_->RunPending();
  ASSERT_TRUE(manager_->Poll().ok());
  EXPECT_EQ(*manager_->Prefetch(a), true);
  device_->RunPending();
  const std::vector<CopyTiming> t = manager_->TakeCopyTimings();
  ASSERT_EQ(t.size(), 3u);
  const AllocationId ia = manager_->Lookup(a)->id;
  const AllocationId ib = manager_->Lookup(b)->id;
  EXPECT_EQ(t[0].allocation, ia);
  EXPECT_EQ(t[0].direction, CopyTiming::Direction::kToHost);
  EXPECT_EQ(t[0].bytes, 2 * kG);
  EXPECT_DOUBLE_EQ(t[0].microseconds, 2.0 * kG / 1000);  // the fake device's copy rate
  EXPECT_EQ(t[1].allocation, ib);
  EXPECT_EQ(t[1].bytes, kG + 10);
  EXPECT_DOUBLE_EQ(t[1].microseconds, (kG + 10) / 1000.0);
  EXPECT_EQ(t[2].allocation, ia);
  EXPECT_EQ(t[2].direction, CopyTiming::Direction::kToDevice);
  EXPECT_DOUBLE_EQ(t[2].microseconds, 2.0 * kG / 1000);
  EXPECT_THAT(manager_->TakeCopyTimings(), IsEmpty());  // taken once
  ASSERT_TRUE(manager_->Offload(a).ok());  // still in flight at destruction: cleaned up
  ASSERT_TRUE(manager_->Free(a).ok());
  ASSERT_TRUE(manager_->Free(b).ok());
}

TEST_F(ResidencyPlanTest, NoCopyTimingsUnlessAskedFor) {
  Init(kG);
  DeviceAddress a = *manager_->Allocate(kG);
  DeviceAddress b = *manager_->Allocate(kG);  // evicts a
  ASSERT_TRUE(ReadBack(a, kG).ok());          // evicts b
  EXPECT_EQ(manager_->Stats().swap_outs, 2);
  EXPECT_THAT(manager_->TakeCopyTimings(), IsEmpty());
  ASSERT_TRUE(manager_->Free(a).ok());
  ASSERT_TRUE(manager_->Free(b).ok());
}

// Profiling times copies and stops once the profile is made (Note [Copy times] in
// core/measure/copy_times.h): no timing, and so no event, is kept for a copy made after.
TEST_F(ResidencyPlanTest, SetTimeCopiesStartsAndStopsTiming) {
  Init(kG);
  DeviceAddress a = *manager_->Allocate(kG);
  DeviceAddress b = *manager_->Allocate(kG);  // evicts a: not timed
  EXPECT_THAT(manager_->TakeCopyTimings(), IsEmpty());
  manager_->SetTimeCopies(true);
  ASSERT_TRUE(ReadBack(a, kG).ok());  // evicts b, swaps a in: two timed copies
  EXPECT_EQ(manager_->TakeCopyTimings().size(), 2u);
  manager_->SetTimeCopies(false);
  ASSERT_TRUE(ReadBack(b, kG).ok());  // two more copies, not timed
  EXPECT_EQ(manager_->Stats().swap_outs, 3);
  EXPECT_THAT(manager_->TakeCopyTimings(), IsEmpty());
  ASSERT_TRUE(manager_->Free(a).ok());
  ASSERT_TRUE(manager_->Free(b).ok());
}

}  // namespace
}  // namespace pooch
