#include "core/residency/residency.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/units.h"
#include "core/testing/fake_device.h"
#include "core/device/timed_device.h"
#include "core/residency/residency_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr int64_t kG = ::pooch::testing::ResidencyFixture::kG;

class RecordingObserver : public ResidencyObserver {
 public:
  void OnSwap(const SwapRecord& r) override { swaps.push_back(r.kind); }
  void OnMemory(int64_t device, int64_t host, absl::Time) override {
    max_device = std::max(max_device, device);
  }
  std::vector<SwapRecord::Kind> swaps;
  int64_t max_device = 0;
};

class ResidencyTest : public ::pooch::testing::ResidencyFixture {
 protected:
  void Init(int64_t limit, std::optional<int64_t> host_limit = std::nullopt,
            FakeDevice::Mode mode = FakeDevice::Mode::kImmediate) {
    FakeDevice::Options o;
    o.mode = mode;
    Start(o, Options(limit, host_limit, reuse_cache_bytes_), &observer_);
  }

  // Note [Reuse cache]: off unless a test turns it on, so that the other tests see every release.
  std::optional<int64_t> reuse_cache_bytes_ = 0;
  RecordingObserver observer_;
};

TEST_F(ResidencyTest, AllocatesUnderTheLimit) {
  Init(4 * kG);
  DeviceAddress a = *manager_->Allocate(kG);
  DeviceAddress b = *manager_->Allocate(kG + 1);  // rounded up to 2 granules
  EXPECT_NE(a, b);
  EXPECT_EQ(device_->physical_bytes(), 3 * kG);
  ASSERT_TRUE(Fill(a, kG, 1).ok());
  ASSERT_TRUE(Fill(b, kG + 1, 2).ok());
  EXPECT_TRUE(Holds(a, kG, 1));
  EXPECT_TRUE(Holds(b, kG + 1, 2));
  ResidencyStats s = manager_->Stats();
  EXPECT_EQ(s.swap_outs, 0);
  EXPECT_EQ(s.device_bytes, 3 * kG);
  EXPECT_EQ(s.allocations, 2);
  ASSERT_TRUE(manager_->Free(a).ok());
  ASSERT_TRUE(manager_->Free(b).ok());
  EXPECT_EQ(device_->physical_bytes(), 0);
  EXPECT_TRUE(absl::IsNotFound(manager_->Free(a)));
}

TEST_F(ResidencyTest, EvictsLeastRecentlyUsedFirst) {
  Init(3 * kG);
  DeviceAddress a = *manager_->Allocate(kG);
  DeviceAddress b = *manager_->Allocate(kG);
  DeviceAddress c = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(b, kG, 2).ok());
  ASSERT_TRUE(Fill(a, kG, 1).ok());
  ASSERT_TRUE(Fill(c, kG, 3).ok());  // LRU order now: b, a, c
  DeviceAddress d = *manager_->Allocate(kG);
  EXPECT_EQ(StateOf(b), ResidencyState::kOnHost);
  EXPECT_EQ(StateOf(a), ResidencyState::kResident);
  EXPECT_EQ(StateOf(c), ResidencyState::kResident);
  DeviceAddress e = *manager_->Allocate(kG);
  EXPECT_EQ(StateOf(a), ResidencyState::kOnHost);
  EXPECT_EQ(StateOf(c), ResidencyState::kResident);
  EXPECT_EQ(StateOf(d), ResidencyState::kResident);
  EXPECT_LE(device_->physical_bytes(), 3 * kG);
  EXPECT_LE(observer_.max_device, 3 * kG);
  for (DeviceAddress x : {a, b, c, d, e}) ASSERT_TRUE(manager_->Free(x).ok());
}

TEST_F(ResidencyTest, SwapInRestoresIdenticalBytesAtTheSameAddress) {
  Init(2 * kG);
  DeviceAddress a = *manager_->Allocate(2 * kG);
  // A pattern, not a constant, so that an offset error shows.
  std::vector<uint8_t> pattern(2 * kG);
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<uint8_t>(i * 7 + i / 251);
  ASSERT_TRUE(device_->Write(a, pattern.data(), 2 * kG).ok());
  DeviceAddress b = *manager_->Allocate(2 * kG);  // evicts a
  EXPECT_EQ(StateOf(a), ResidencyState::kOnHost);
  absl::StatusOr<std::vector<uint8_t>> back = ReadBack(a, 2 * kG);  // evicts b, brings a back
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, pattern);
  EXPECT_EQ(manager_->Lookup(a)->address, a);
  EXPECT_EQ(StateOf(b), ResidencyState::kOnHost);
  ResidencyStats s = manager_->Stats();
  EXPECT_EQ(s.swap_outs, 2);
  EXPECT_EQ(s.swap_ins, 1);
  EXPECT_EQ(s.demand_swap_ins, 1);
  EXPECT_EQ(s.bytes_swapped_out, 4 * kG);
  EXPECT_EQ(s.bytes_swapped_in, 2 * kG);
  EXPECT_EQ(s.peak_device_bytes, 2 * kG);
  ASSERT_TRUE(manager_->Free(a).ok());
  ASSERT_TRUE(manager_->Free(b).ok());
}

TEST_F(ResidencyTest, AllocationLargerThanTheLimitIsResourceExhausted) {
  Init(4 * kG);
  DeviceAddress a = *manager_->Allocate(2 * kG);
  ASSERT_TRUE(Fill(a, 2 * kG, 9).ok());
  absl::StatusOr<DeviceAddress> big = manager_->Allocate(4 * kG + 1);
  ASSERT_TRUE(absl::IsResourceExhausted(big.status())) << big.status();
  EXPECT_THAT(big.status().message(), HasSubstr("larger than the memory limit"));
  EXPECT_EQ(StateOf(a), ResidencyState::kResident);  // nothing evicted for nothing
  EXPECT_TRUE(Holds(a, 2 * kG, 9));
  EXPECT_EQ(manager_->Stats().out_of_memory, 1);
  ASSERT_TRUE(manager_->Free(a).ok());
}

TEST_F(ResidencyTest, TooSmallToSwapStaysResidentAndCanExhaust) {
  Init(2 * kG);
  DeviceAddress small = *manager_->Allocate(100);  // below min_swap_bytes: never evicted
  DeviceAddress a = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(small, 100, 5).ok());
  DeviceAddress b = *manager_->Allocate(kG);  // evicts a, not small
  EXPECT_EQ(StateOf(small), ResidencyState::kResident);
  EXPECT_EQ(StateOf(a), ResidencyState::kOnHost);
  absl::StatusOr<DeviceAddress> c = manager_->Allocate(2 * kG);
  EXPECT_TRUE(absl::IsResourceExhausted(c.status())) << c.status();
  EXPECT_TRUE(Holds(small, 100, 5));
  for (DeviceAddress x : {small, a, b}) ASSERT_TRUE(manager_->Free(x).ok());
}

TEST_F(ResidencyTest, HostBudgetExhaustedFailsCleanlyAndLosesNothing) {
  Init(2 * kG, /*host_limit=*/2 * kG);
  DeviceAddress a = *manager_->Allocate(kG);
  DeviceAddress b = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(a, kG, 0xA).ok());
  ASSERT_TRUE(Fill(b, kG, 0xB).ok());
  DeviceAddress c = *manager_->Allocate(kG);  // a -> host
  ASSERT_TRUE(Fill(c, kG, 0xC).ok());
  DeviceAddress d = *manager_->Allocate(kG);  // b -> host; host budget now full
  ASSERT_TRUE(Fill(d, kG, 0xD).ok());
  absl::StatusOr<DeviceAddress> e = manager_->Allocate(kG);
  ASSERT_TRUE(absl::IsResourceExhausted(e.status())) << e.status();
  EXPECT_THAT(e.status().message(), HasSubstr("POOCH_HOST_MEMORY_LIMIT"));
  // Everything still reads back: c and d resident, a and b from the host once there is room.
  EXPECT_EQ(StateOf(c), ResidencyState::kResident);
  EXPECT_EQ(StateOf(d), ResidencyState::kResident);
  EXPECT_TRUE(Holds(c, kG, 0xC));
  EXPECT_TRUE(Holds(d, kG, 0xD));
  ASSERT_TRUE(manager_->Free(c).ok());
  ASSERT_TRUE(manager_->Free(d).ok());
  EXPECT_TRUE(Holds(a, kG, 0xA));
  EXPECT_TRUE(Holds(b, kG, 0xB));
  ASSERT_TRUE(manager_->Free(a).ok());
  ASSERT_TRUE(manager_->Free(b).ok());
  EXPECT_EQ(manager_->Stats().host_bytes, 0);
}

// An op whose own memory exceeds the limit cannot run under any plan: the error says how much
// the ops in progress pin, so that the user sees the limit is below one op's memory.
TEST_F(ResidencyTest, AnOpLargerThanTheLimitSaysWhatItPins) {
  Init(2 * kG);
  DeviceAddress a = *manager_->Allocate(kG);
  DeviceAddress b = *manager_->Allocate(kG);
  DeviceAddress c = *manager_->Allocate(kG);  // a -> host
  absl::StatusOr<OpTicket> t = manager_->BeforeOp(
      stream_, {{b, kG, Mode::kRead}, {c, kG, Mode::kRead}, {a, kG, Mode::kRead}});
  ASSERT_TRUE(absl::IsResourceExhausted(t.status())) << t.status();
  EXPECT_THAT(t.status().message(),
              HasSubstr(absl::StrCat(FormatBytes(2 * kG), " pinned by ops in progress")));
  // Nothing stays pinned: the same memory one op at a time is fine.
  for (DeviceAddress x : {a, b, c}) {
    t = manager_->BeforeOp(stream_, {{x, kG, Mode::kRead}});
    ASSERT_TRUE(t.ok()) << t.status();
    ASSERT_TRUE(manager_->AfterOp(*std::move(t)).ok());
  }
  for (DeviceAddress x : {a, b, c}) ASSERT_TRUE(manager_->Free(x).ok());
}

// Note [Reading the host copy]: with the host budget full, nothing can be swapped out, so a
// swapped-out allocation cannot come back; an op that only reads it through host_copy_ok ranges
// reads the pinned host copy instead, at the range's offset, and the allocation stays put.
TEST_F(ResidencyTest, ReadsTheHostCopyWhenThereIsNoRoomToSwapIn) {
  Init(2 * kG, /*host_limit=*/2 * kG);
  DeviceAddress a = *manager_->Allocate(kG);
  DeviceAddress b = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(a, kG, 0xA).ok());
  ASSERT_TRUE(Fill(b, kG, 0xB).ok());
  DeviceAddress c = *manager_->Allocate(kG);  // a -> host
  ASSERT_TRUE(Fill(c, kG, 0xC).ok());
  DeviceAddress d = *manager_->Allocate(kG);  // b -> host; host budget now full
  ASSERT_TRUE(Fill(d, kG, 0xD).ok());
  // Without host_copy_ok, as before: no room.
  absl::StatusOr<OpTicket> t = manager_->BeforeOp(stream_, {{a, kG, Mode::kRead}});
  ASSERT_TRUE(absl::IsResourceExhausted(t.status())) << t.status();
  // A copy of a's bytes [100, 1100) into c: the host copy is its source.
  t = manager_->BeforeOp(
      stream_, {{a + 100, 1000, Mode::kRead, /*host_copy_ok=*/true}, {c, 1000, Mode::kWrite}});
  ASSERT_TRUE(t.ok()) << t.status();
  const void* host = t->HostSource(0);
  ASSERT_NE(host, nullptr);
  EXPECT_EQ(t->HostSource(1), nullptr);
  EXPECT_EQ(StateOf(a), ResidencyState::kOnHost);
  ASSERT_TRUE(device_->CopyToDeviceAsync(c, host, 1000, stream_).ok());
  ASSERT_TRUE(manager_->AfterOp(*std::move(t)).ok());
  EXPECT_EQ(manager_->Stats().host_reads, 1);
  absl::StatusOr<std::vector<uint8_t>> copied = ReadBack(c, kG);
  ASSERT_TRUE(copied.ok()) << copied.status();
  EXPECT_EQ(std::vector<uint8_t>(copied->begin(), copied->begin() + 1000),
            std::vector<uint8_t>(1000, 0xA));
  EXPECT_EQ(std::vector<uint8_t>(copied->begin() + 1000, copied->end()),
            std::vector<uint8_t>(kG - 1000, 0xC));
  // Not for a write, nor for a read that runs past the allocation's bytes.
  t = manager_->BeforeOp(stream_, {{a, kG, Mode::kWrite, /*host_copy_ok=*/true}});
  EXPECT_TRUE(absl::IsResourceExhausted(t.status())) << t.status();
  t = manager_->BeforeOp(stream_, {{a + 1, kG, Mode::kRead, /*host_copy_ok=*/true}});
  EXPECT_TRUE(absl::IsResourceExhausted(t.status())) << t.status();
  // Once there is room, a read swaps it in as before; its host buffer stays, current (Note
  // [Current host copies]).
  ASSERT_TRUE(manager_->Free(d).ok());
  EXPECT_TRUE(Holds(a, kG, 0xA));
  ASSERT_TRUE(manager_->Poll().ok());
  EXPECT_EQ(StateOf(a), ResidencyState::kResident);
  EXPECT_EQ(manager_->Stats().host_bytes, 2 * kG);
  EXPECT_TRUE(Holds(b, kG, 0xB));
  for (DeviceAddress x : {a, b, c}) ASSERT_TRUE(manager_->Free(x).ok());
  EXPECT_EQ(manager_->Stats().host_bytes, 0);
}

// Note [Reading the host copy]: a read of the host copy still queued keeps the host buffer when
// a swap-in started meanwhile completes; otherwise the next swap-out (here c's) would take the
// buffer from the pool and overwrite it before the read ran.
TEST_F(ResidencyTest, HostCopyOutlivesTheReadsQueuedOnIt) {
  Init(3 * kG, /*host_limit=*/2 * kG, FakeDevice::Mode::kManual);
  const StreamHandle reader = *device_->CreateStream();
  const StreamHandle other = *device_->CreateStream();
  DeviceAddress a = *manager_->Allocate(kG);
  DeviceAddress b = *manager_->Allocate(kG);
  DeviceAddress c = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(a, kG, 0xA).ok());
  ASSERT_TRUE(Fill(b, kG, 0xB).ok());
  ASSERT_TRUE(Fill(c, kG, 0xC).ok());
  DeviceAddress d = *manager_->Allocate(kG);  // a -> host
  ASSERT_TRUE(Fill(d, kG, 0xD).ok());
  DeviceAddress e = *manager_->Allocate(kG);  // b -> host; host budget now full
  ASSERT_TRUE(Fill(e, kG, 0xE).ok());
  // A copy of a into d on `reader` reads a's host copy; queued, not run.
  absl::StatusOr<OpTicket> t = manager_->BeforeOp(
      reader, {{a, kG, Mode::kRead, /*host_copy_ok=*/true}, {d, kG, Mode::kWrite}});
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_NE(t->HostSource(0), nullptr);
  ASSERT_TRUE(device_->CopyToDeviceAsync(d, t->HostSource(0), kG, reader).ok());
  ASSERT_TRUE(manager_->AfterOp(*std::move(t)).ok());
  // Room again: a read on another stream swaps a in, and that stream's work completes.
  ASSERT_TRUE(manager_->Free(e).ok());
  absl::StatusOr<std::vector<uint8_t>> back = ReadBack(a, kG, other);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, std::vector<uint8_t>(kG, 0xA));
  ASSERT_TRUE(manager_->Poll().ok());
  EXPECT_EQ(StateOf(a), ResidencyState::kResident);
  EXPECT_EQ(manager_->Stats().host_bytes, 2 * kG);  // a's buffer is held for the queued copy
  // A new allocation evicts: c cannot get a host buffer, a reuses its own behind the copy.
  absl::StatusOr<DeviceAddress> f = manager_->Allocate(kG);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(StateOf(c), ResidencyState::kResident);
  device_->RunPending();
  EXPECT_TRUE(Holds(d, kG, 0xA));
  EXPECT_TRUE(Holds(c, kG, 0xC));
  for (DeviceAddress x : {a, b, c, d, *f}) ASSERT_TRUE(manager_->Free(x).ok());
  device_->RunPending();
  ASSERT_TRUE(manager_->Drain().ok());
  EXPECT_EQ(manager_->Stats().host_bytes, 0);
}

// Note [Range checks]: a range may not run past the bytes an allocation was made with (its
// rounding included) nor start in a freed one the manager still holds; other memory is not its
// business.
TEST_F(ResidencyTest, CheckRangeRejectsRangesPastTheEndOrInFreedMemory) {
  reuse_cache_bytes_ = 8 * kG;
  Init(8 * kG);
  DeviceAddress a = *manager_->Allocate(kG + 100);  // mapped as 2 granules
  EXPECT_TRUE(manager_->CheckRange(a, kG + 100).ok());
  EXPECT_TRUE(manager_->CheckRange(a + kG, 100).ok());
  EXPECT_TRUE(manager_->CheckRange(0x1234, 8).ok());
  for (auto [offset, bytes] : std::vector<std::pair<int64_t, int64_t>>{
           {0, kG + 101}, {kG, 101}, {kG + 100, 1}, {2 * kG - 1, 1}, {0, int64_t{1} << 62}}) {
    absl::Status s = manager_->CheckRange(a + offset, bytes);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << offset << " " << bytes << ": " << s;
  }
  EXPECT_THAT(manager_->CheckRange(a, kG + 101).message(), HasSubstr("past the end"));
  // Freed into the reuse cache: still mapped, no longer the program's.
  DeviceAddress b = *manager_->Allocate(kG);
  ASSERT_TRUE(manager_->Free(b).ok());
  EXPECT_GT(manager_->Stats().cached_bytes, 0);
  absl::Status freed = manager_->CheckRange(b + 10, 10);
  EXPECT_TRUE(absl::IsInvalidArgument(freed)) << freed;
  EXPECT_THAT(freed.message(), HasSubstr("freed"));
  // Handed out again, it is a live allocation.
  ASSERT_EQ(*manager_->Allocate(kG), b);
  EXPECT_TRUE(manager_->CheckRange(b + 10, 10).ok());
  ASSERT_TRUE(manager_->Free(a).ok());
  ASSERT_TRUE(manager_->Free(b).ok());
}

TEST_F(ResidencyTest, CheckRangeRejectsAFreedAllocationWhoseWorkIsQueued) {
  Init(4 * kG, std::nullopt, FakeDevice::Mode::kManual);
  DeviceAddress a = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(a, kG, 1).ok());  // queued, not run
  ASSERT_TRUE(manager_->Free(a).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(manager_->CheckRange(a, 1)));
  device_->RunPending();
  ASSERT_TRUE(manager_->Poll().ok());
  EXPECT_TRUE(manager_->CheckRange(a, 1).ok());  // given back: not the manager's any more
}

TEST_F(ResidencyTest, PinnedHostAllocationFailureLeavesDataResident) {
  Init(kG);
  DeviceAddress a = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(a, kG, 0x11).ok());
  device_->FailAllocHostAfter(0);
  absl::StatusOr<DeviceAddress> b = manager_->Allocate(kG);
  ASSERT_TRUE(absl::IsResourceExhausted(b.status())) << b.status();
  EXPECT_EQ(StateOf(a), ResidencyState::kResident);
  EXPECT_TRUE(Holds(a, kG, 0x11));
  b = manager_->Allocate(kG);  // pinning works again
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE(Holds(a, kG, 0x11));
  ASSERT_TRUE(manager_->Free(a).ok());
  ASSERT_TRUE(manager_->Free(*b).ok());
}

TEST_F(ResidencyTest, DeviceOutOfMemoryAtCreateIsResourceExhausted) {
  Init(4 * kG);
  device_->FailCreatePhysicalAfter(0);
  absl::StatusOr<DeviceAddress> a = manager_->Allocate(kG);
  ASSERT_TRUE(absl::IsResourceExhausted(a.status())) << a.status();
  EXPECT_EQ(manager_->Stats().out_of_memory, 1);
  EXPECT_EQ(manager_->Stats().device_bytes, 0);
  a = manager_->Allocate(kG);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(manager_->Free(*a).ok());
}

TEST_F(ResidencyTest, DeviceOutOfMemoryDuringSwapInKeepsTheHostCopy) {
  Init(kG);
  DeviceAddress a = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(a, kG, 0x21).ok());
  DeviceAddress b = *manager_->Allocate(kG);  // a -> host
  ASSERT_TRUE(Fill(b, kG, 0x22).ok());
  device_->FailCreatePhysicalAfter(0);
  absl::StatusOr<OpTicket> t = manager_->BeforeOp(stream_, {{a, kG}});
  ASSERT_TRUE(absl::IsResourceExhausted(t.status())) << t.status();
  EXPECT_EQ(StateOf(a), ResidencyState::kOnHost);
  EXPECT_TRUE(Holds(a, kG, 0x21));  // retried: works now
  EXPECT_TRUE(Holds(b, kG, 0x22));
  ASSERT_TRUE(manager_->Free(a).ok());
  ASSERT_TRUE(manager_->Free(b).ok());
}

TEST_F(ResidencyTest, FreeOfSwappedOutAllocation) {
  Init(kG);
  DeviceAddress a = *manager_->Allocate(kG);
  DeviceAddress b = *manager_->Allocate(kG);  // a -> host
  EXPECT_EQ(StateOf(a), ResidencyState::kOnHost);
  EXPECT_EQ(manager_->Stats().host_bytes, kG);
  ASSERT_TRUE(manager_->Free(a).ok());
  EXPECT_EQ(manager_->Stats().host_bytes, 0);
  EXPECT_FALSE(manager_->Lookup(a).has_value());
  EXPECT_EQ(device_->physical_bytes(), kG);
  ASSERT_TRUE(manager_->Free(b).ok());
}

TEST_F(ResidencyTest, FreeWaitsForQueuedWork) {
  Init(2 * kG, std::nullopt, FakeDevice::Mode::kManual);
  DeviceAddress a = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(a, kG, 1).ok());  // queued, not run
  ASSERT_TRUE(manager_->Free(a).ok());
  EXPECT_EQ(device_->physical_bytes(), kG);  // still in use by the queued kernel
  EXPECT_EQ(manager_->Stats().device_bytes, kG);
  device_->RunPending();
  ASSERT_TRUE(manager_->Poll().ok());
  EXPECT_EQ(device_->physical_bytes(), 0);
  EXPECT_EQ(manager_->Stats().device_bytes, 0);
}

TEST_F(ResidencyTest, EvictionWaitsForQueuedWorkOnEveryStream) {
  Init(2 * kG, std::nullopt, FakeDevice::Mode::kManual);
  StreamHandle other = *device_->CreateStream();
  DeviceAddress a = *manager_->Allocate(kG);
  DeviceAddress b = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(a, kG, 3).ok());
  // A second stream reads a too (queued, not run).
  auto t = manager_->BeforeOp(other, {{a, kG}});
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(device_->Launch(other, {{a, kG}}, [](FakeDevice::Memory&) {}).ok());
  ASSERT_TRUE(manager_->AfterOp(*std::move(t)).ok());
  ASSERT_TRUE(Fill(b, kG, 4).ok());
  DeviceAddress c = *manager_->Allocate(kG);  // evicts a: must wait for both streams
  EXPECT_EQ(StateOf(a), ResidencyState::kOnHost);
  EXPECT_TRUE(Holds(a, kG, 3));
  for (DeviceAddress x : {a, b, c}) ASSERT_TRUE(manager_->Free(x).ok());
  device_->RunPending();
  ASSERT_TRUE(manager_->Drain().ok());
}

TEST_F(ResidencyTest, RangesInsideAndAcrossAllocations) {
  Init(4 * kG);
  DeviceAddress a = *manager_->Allocate(kG);
  DeviceAddress b = *manager_->Allocate(kG);
  auto t = manager_->BeforeOp(stream_, {{a + 100, 10}, {0x1234, 8}});  // inside a; not ours
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->allocations().size(), 1u);
  ASSERT_TRUE(manager_->AfterOp(*std::move(t)).ok());
  const int64_t span = static_cast<int64_t>(b - a) + 1;
  t = manager_->BeforeOp(stream_, {{a, span}});  // spans a, the gap and b
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->allocations().size(), 2u);
  ASSERT_TRUE(manager_->AfterOp(*std::move(t)).ok());
  EXPECT_EQ(manager_->Lookup(a + 100)->id, manager_->Lookup(a)->id);
  EXPECT_EQ(manager_->Lookup(a)->use_count, 2u);
  EXPECT_EQ(manager_->Lookup(a)->first_use_op, 1u);
  EXPECT_EQ(manager_->Lookup(b)->first_use_op, 2u);
  ASSERT_TRUE(manager_->Free(a).ok());
  ASSERT_TRUE(manager_->Free(b).ok());
}

TEST_F(ResidencyTest, FreeDuringAnOpIsDeferredUntilAfterOp) {
  Init(2 * kG);
  DeviceAddress a = *manager_->Allocate(kG);
  auto t = manager_->BeforeOp(stream_, {{a, kG}});
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(manager_->Free(a).ok());
  EXPECT_TRUE(manager_->Lookup(a).has_value());
  ASSERT_TRUE(manager_->AfterOp(*std::move(t)).ok());
  EXPECT_FALSE(manager_->Lookup(a).has_value());
}

TEST_F(ResidencyTest, PinnedWorkingSetLargerThanTheLimit) {
  Init(2 * kG);
  DeviceAddress a = *manager_->Allocate(kG);
  DeviceAddress b = *manager_->Allocate(kG);
  DeviceAddress c = *manager_->Allocate(kG);  // a -> host
  absl::StatusOr<OpTicket> t = manager_->BeforeOp(stream_, {{a, kG}, {b, kG}, {c, kG}});
  ASSERT_TRUE(absl::IsResourceExhausted(t.status())) << t.status();
  // Nothing stays pinned: a later op works.
  EXPECT_TRUE(ReadBack(a, kG).ok());
  for (DeviceAddress x : {a, b, c}) ASSERT_TRUE(manager_->Free(x).ok());
}

TEST_F(ResidencyTest, ExternalChargesCountAgainstTheLimit) {
  Init(2 * kG);
  DeviceAddress a = *manager_->Allocate(kG);
  ASSERT_TRUE(manager_->ChargeExternal(kG).ok());
  ASSERT_TRUE(manager_->ChargeExternal(1000).ok());  // evicts a
  EXPECT_EQ(StateOf(a), ResidencyState::kOnHost);
  EXPECT_TRUE(absl::IsResourceExhausted(manager_->ChargeExternal(kG)));
  manager_->UnchargeExternal(kG);
  manager_->UnchargeExternal(1000);
  EXPECT_EQ(manager_->Stats().device_bytes, 0);
  ASSERT_TRUE(manager_->Free(a).ok());
}

TEST_F(ResidencyTest, ObserverSeesSwaps) {
  Init(kG);
  DeviceAddress a = *manager_->Allocate(kG);
  DeviceAddress b = *manager_->Allocate(kG);
  ASSERT_TRUE(ReadBack(a, kG).ok());
  using K = SwapRecord::Kind;
  EXPECT_EQ(observer_.swaps,
            (std::vector<K>{K::kOutStart, K::kOutEnd, K::kOutStart, K::kOutEnd, K::kInStart}));
  ASSERT_TRUE(manager_->Poll().ok());
  EXPECT_EQ(observer_.swaps.back(), K::kInEnd);
  ASSERT_TRUE(manager_->Free(a).ok());
  ASSERT_TRUE(manager_->Free(b).ok());
}

// A buffer freed after its swap-in completed but before any poll saw it still gets its end (the
// trace otherwise shows fewer swap-ins than the summary counts).
TEST_F(ResidencyTest, ObserverSeesTheEndOfASwapInFreedBeforeAPoll) {
  Init(kG);
  DeviceAddress a = *manager_->Allocate(kG);
  DeviceAddress b = *manager_->Allocate(kG);
  ASSERT_TRUE(ReadBack(a, kG).ok());
  using K = SwapRecord::Kind;
  ASSERT_EQ(observer_.swaps.back(), K::kInStart);
  ASSERT_TRUE(manager_->Free(a).ok());
  EXPECT_EQ(observer_.swaps.back(), K::kInEnd);
  ASSERT_TRUE(manager_->Free(b).ok());
}

// ... and one freed while its swap-in copy is still queued gets it when the copy completes.
TEST_F(ResidencyTest, ObserverSeesTheEndOfASwapInFreedInFlight) {
  Init(kG, std::nullopt, FakeDevice::Mode::kManual);
  DeviceAddress a = *manager_->Allocate(kG);
  DeviceAddress b = *manager_->Allocate(kG);  // a -> host (waits for the copy)
  ASSERT_TRUE(Fill(a, kG, 1).ok());           // b -> host, a back in: queued, not run
  using K = SwapRecord::Kind;
  ASSERT_EQ(observer_.swaps.back(), K::kInStart);
  ASSERT_TRUE(manager_->Free(a).ok());
  EXPECT_EQ(observer_.swaps.back(), K::kInStart);  // nothing known complete yet
  device_->RunPending();
  ASSERT_TRUE(manager_->Poll().ok());
  EXPECT_EQ(observer_.swaps.back(), K::kInEnd);
  ASSERT_TRUE(manager_->Free(b).ok());
}

TEST_F(ResidencyTest, DestroyingTheManagerWaitsForQueuedWork) {
  Init(2 * kG, std::nullopt, FakeDevice::Mode::kManual);
  DeviceAddress a = *manager_->Allocate(kG);
  DeviceAddress b = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(a, kG, 1).ok());  // queued, not run
  ASSERT_TRUE(Fill(b, kG, 2).ok());
  DeviceAddress c = *manager_->Allocate(kG);  // a -> host (waits for its kernel)
  ASSERT_TRUE(Fill(c, kG, 3).ok());
  EXPECT_GT(device_->queued_commands(), 0);
  manager_.reset();  // TearDown checks: no violation, nothing left mapped or allocated
  EXPECT_EQ(device_->host_bytes(), 0);
}

TEST_F(ResidencyTest, ReuseCacheServesTheSameSizeWithoutADeviceCall) {
  reuse_cache_bytes_ = 4 * kG;
  Init(8 * kG);
  DeviceAddress a = *manager_->Allocate(2 * kG);
  ASSERT_TRUE(Fill(a, 2 * kG, 1).ok());
  ASSERT_TRUE(manager_->Free(a).ok());
  EXPECT_EQ(device_->physical_bytes(), 2 * kG);  // kept mapped
  EXPECT_EQ(manager_->Stats().cached_bytes, 2 * kG);
  const int64_t creates = device_->create_physical_calls();
  const int64_t queued = device_->queued_commands();
  DeviceAddress b = *manager_->Allocate(2 * kG - 5);  // same rounded size
  EXPECT_EQ(b, a);  // the same reservation: no ReserveAddress either
  EXPECT_EQ(device_->create_physical_calls(), creates);
  EXPECT_EQ(device_->queued_commands(), queued);
  ResidencyStats s = manager_->Stats();
  EXPECT_EQ(s.reuse_hits, 1);
  EXPECT_EQ(s.reuse_misses, 1);
  EXPECT_EQ(s.cached_bytes, 0);
  EXPECT_EQ(s.device_bytes, 2 * kG);
  ASSERT_TRUE(Fill(b, 2 * kG - 5, 7).ok());
  EXPECT_TRUE(Holds(b, 2 * kG - 5, 7));
  // Another size is a miss.
  DeviceAddress c = *manager_->Allocate(kG);
  EXPECT_NE(c, a);
  EXPECT_EQ(manager_->Stats().reuse_misses, 2);
  ASSERT_TRUE(manager_->Free(b).ok());
  ASSERT_TRUE(manager_->Free(c).ok());
  // TearDown: the destructor releases the cache.
}

TEST_F(ResidencyTest, ReuseCacheNeverHandsOutMemoryWithPendingWork) {
  reuse_cache_bytes_ = 4 * kG;
  Init(8 * kG, std::nullopt, FakeDevice::Mode::kManual);
  DeviceAddress a = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(a, kG, 1).ok());  // queued, not run
  ASSERT_TRUE(manager_->Free(a).ok());
  EXPECT_EQ(manager_->Stats().cached_bytes, kG);
  DeviceAddress b = *manager_->Allocate(kG);
  EXPECT_NE(b, a);  // a's last use is still queued
  EXPECT_EQ(manager_->Stats().reuse_hits, 0);
  device_->RunPending();
  DeviceAddress c = *manager_->Allocate(kG);
  EXPECT_EQ(c, a);
  EXPECT_EQ(manager_->Stats().reuse_hits, 1);
  ASSERT_TRUE(Fill(c, kG, 2).ok());
  EXPECT_TRUE(Holds(c, kG, 2));
  ASSERT_TRUE(manager_->Free(b).ok());
  ASSERT_TRUE(manager_->Free(c).ok());
}

// Note [Reuse on the allocating stream]: a stream-ordered allocation on the stream the old
// owner's work is queued on takes its memory at once; its own work runs after the old owner's.
TEST_F(ResidencyTest, ReuseCacheHandsMemoryQueuedOnAStreamToAnAllocationOrderedOnIt) {
  reuse_cache_bytes_ = 4 * kG;
  Init(8 * kG, std::nullopt, FakeDevice::Mode::kManual);
  DeviceAddress a = *manager_->Allocate(kG, stream_);
  ASSERT_TRUE(Fill(a, kG, 1).ok());  // queued, not run
  ASSERT_TRUE(manager_->Free(a).ok());
  const int64_t creates = device_->create_physical_calls();
  DeviceAddress b = *manager_->Allocate(kG, stream_);
  EXPECT_EQ(b, a);
  EXPECT_EQ(device_->create_physical_calls(), creates);
  ResidencyStats s = manager_->Stats();
  EXPECT_EQ(s.reuse_hits, 1);
  EXPECT_EQ(s.reuse_ordered_hits, 1);
  EXPECT_EQ(s.cached_bytes, 0);
  ASSERT_TRUE(Fill(b, kG, 2).ok());  // queued behind a's
  EXPECT_TRUE(Holds(b, kG, 2));      // runs both, in order
  ASSERT_TRUE(manager_->Free(b).ok());
}

TEST_F(ResidencyTest, ReuseCacheKeepsMemoryQueuedOnAnotherStreamFromAnOrderedAllocation) {
  reuse_cache_bytes_ = 4 * kG;
  Init(8 * kG, std::nullopt, FakeDevice::Mode::kManual);
  const StreamHandle other = *device_->CreateStream();
  DeviceAddress a = *manager_->Allocate(kG, stream_);
  ASSERT_TRUE(Fill(a, kG, 1).ok());  // queued on stream_
  ASSERT_TRUE(manager_->Free(a).ok());
  DeviceAddress b = *manager_->Allocate(kG, other);
  DeviceAddress c = *manager_->Allocate(kG);  // not stream-ordered
  EXPECT_NE(b, a);
  EXPECT_NE(c, a);
  // Used on two streams: an allocation on either must wait for both.
  DeviceAddress d = *manager_->Allocate(2 * kG, stream_);
  ASSERT_TRUE(Fill(d, 2 * kG, 3).ok());
  ASSERT_TRUE(Fill(d, 2 * kG, 4, Mode::kWrite, other).ok());
  ASSERT_TRUE(manager_->Free(d).ok());
  DeviceAddress e = *manager_->Allocate(2 * kG, stream_);
  EXPECT_NE(e, d);
  ResidencyStats s = manager_->Stats();
  EXPECT_EQ(s.reuse_hits, 0);
  EXPECT_EQ(s.reuse_ordered_hits, 0);
  device_->RunPending();
  DeviceAddress f = *manager_->Allocate(kG, other);  // a's work is done: any stream may have it
  EXPECT_EQ(f, a);
  EXPECT_EQ(manager_->Stats().reuse_ordered_hits, 0);
  for (DeviceAddress x : {b, c, e, f}) ASSERT_TRUE(manager_->Free(x).ok());
}

// The manager's own work on memory reused on its stream waits for the old owner's: evicting it
// before the new owner's first op copies and unmaps only after the old owner's kernel ran (the
// fake device records a violation for an Unmap under a queued command).
TEST_F(ResidencyTest, EvictingMemoryReusedOnItsStreamWaitsForTheOldOwnersWork) {
  reuse_cache_bytes_ = 2 * kG;
  Init(2 * kG, std::nullopt, FakeDevice::Mode::kManual);
  DeviceAddress a = *manager_->Allocate(kG, stream_);
  ASSERT_TRUE(Fill(a, kG, 1).ok());  // queued, not run
  ASSERT_TRUE(manager_->Free(a).ok());
  DeviceAddress b = *manager_->Allocate(kG, stream_);
  ASSERT_EQ(b, a);
  ASSERT_EQ(manager_->Stats().reuse_ordered_hits, 1);
  DeviceAddress c = *manager_->Allocate(2 * kG);  // b must go
  EXPECT_EQ(StateOf(b), ResidencyState::kOnHost);
  EXPECT_THAT(device_->violations(), ::testing::IsEmpty());
  ASSERT_TRUE(manager_->Free(c).ok());
  ASSERT_TRUE(Fill(b, kG, 5).ok());
  EXPECT_TRUE(Holds(b, kG, 5));
  ASSERT_TRUE(manager_->Free(b).ok());
  device_->RunPending();
  ASSERT_TRUE(manager_->Drain().ok());
}

TEST_F(ResidencyTest, ReuseCacheIsGivenBackBeforeAnySwapOut) {
  reuse_cache_bytes_ = 3 * kG;
  Init(3 * kG);
  DeviceAddress x = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(x, kG, 1).ok());
  DeviceAddress y = *manager_->Allocate(2 * kG);
  ASSERT_TRUE(Fill(y, 2 * kG, 2).ok());
  ASSERT_TRUE(manager_->Free(y).ok());  // cached: the limit is full
  EXPECT_EQ(manager_->Stats().device_bytes, 3 * kG);
  DeviceAddress z = *manager_->Allocate(kG);  // another size: needs room
  EXPECT_EQ(StateOf(x), ResidencyState::kResident);
  ResidencyStats s = manager_->Stats();
  EXPECT_EQ(s.swap_outs, 0);
  EXPECT_EQ(s.out_of_memory, 0);
  EXPECT_EQ(s.cached_bytes, 0);
  EXPECT_EQ(s.device_bytes, 2 * kG);
  EXPECT_TRUE(Holds(x, kG, 1));
  ASSERT_TRUE(manager_->Free(x).ok());
  ASSERT_TRUE(manager_->Free(z).ok());
}

TEST_F(ResidencyTest, ReuseCacheWithPendingWorkIsWaitedForNotSwappedAround) {
  reuse_cache_bytes_ = 2 * kG;
  Init(2 * kG, std::nullopt, FakeDevice::Mode::kManual);
  DeviceAddress x = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(x, kG, 1).ok());
  DeviceAddress a = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(a, kG, 2).ok());  // queued, not run
  ASSERT_TRUE(manager_->Free(a).ok());
  DeviceAddress y = *manager_->Allocate(2 * kG);  // x must go; a's chunk waits for its kernel
  ResidencyStats s = manager_->Stats();
  EXPECT_EQ(s.swap_outs, 1);  // x only, as without a cache
  EXPECT_EQ(s.out_of_memory, 0);
  EXPECT_LE(observer_.max_device, 2 * kG);
  ASSERT_TRUE(manager_->Free(y).ok());
  EXPECT_TRUE(Holds(x, kG, 1));
  ASSERT_TRUE(manager_->Free(x).ok());
}

// Note [Spare chunks]: under demand swapping each eviction's chunk, once its copy completed,
// serves the next mapping of its size: the swaps create no chunk, and every byte survives.
TEST_F(ResidencyTest, ASwappedOutChunkServesTheNextMappingOfItsSize) {
  reuse_cache_bytes_ = 2 * kG;
  Init(2 * kG);
  DeviceAddress a = *manager_->Allocate(kG);
  DeviceAddress b = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(a, kG, 1).ok());
  ASSERT_TRUE(Fill(b, kG, 2).ok());
  EXPECT_EQ(device_->create_physical_calls(), 2);
  DeviceAddress c = *manager_->Allocate(kG);  // a goes out; its chunk is c's
  ASSERT_TRUE(Fill(c, kG, 3).ok());
  EXPECT_TRUE(Holds(a, kG, 1));  // b goes out; its chunk brings a back
  EXPECT_TRUE(Holds(b, kG, 2));  // c goes out
  EXPECT_TRUE(Holds(c, kG, 3));  // a goes out
  ResidencyStats s = manager_->Stats();
  EXPECT_EQ(s.swap_outs, 4);
  EXPECT_EQ(s.swap_ins, 3);
  EXPECT_EQ(s.chunk_reuses, 4);
  EXPECT_EQ(device_->create_physical_calls(), 2);
  EXPECT_LE(observer_.max_device, 2 * kG);
  EXPECT_LE(device_->physical_bytes(), 2 * kG);
  for (DeviceAddress x : {a, b, c}) ASSERT_TRUE(manager_->Free(x).ok());
}

// Note [Retained chunks]: a finished swap-out keeps its chunk mapped until the room is taken; a
// touch before then makes no copy, and taking the room evicts nothing more.
TEST_F(ResidencyTest, AFinishedSwapOutComesBackWithoutACopyUntilItsRoomIsTaken) {
  reuse_cache_bytes_ = 4 * kG;
  Init(4 * kG);
  DeviceAddress a = *manager_->Allocate(kG);
  DeviceAddress b = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(a, kG, 1).ok());
  ASSERT_TRUE(Fill(b, kG, 2).ok());
  ASSERT_TRUE(manager_->Offload(a).ok());
  ASSERT_TRUE(manager_->Poll().ok());
  ASSERT_EQ(StateOf(a), ResidencyState::kOnHost);
  EXPECT_EQ(manager_->Stats().cached_bytes, kG);  // free to the program
  EXPECT_EQ(device_->mapped_bytes(), 2 * kG);
  EXPECT_TRUE(Holds(a, kG, 1));
  ResidencyStats s = manager_->Stats();
  EXPECT_EQ(s.swap_ins, 0);
  EXPECT_EQ(s.retained_hits, 1);
  EXPECT_EQ(s.host_bytes, kG);  // the host copy stays, current (Note [Current host copies])
  EXPECT_EQ(s.cached_bytes, 0);

  ASSERT_TRUE(manager_->Offload(a).ok());
  ASSERT_TRUE(manager_->Poll().ok());
  DeviceAddress c = *manager_->Allocate(3 * kG);  // takes a's room; b stays
  EXPECT_EQ(StateOf(b), ResidencyState::kResident);
  EXPECT_EQ(manager_->Stats().swap_outs, 2);
  EXPECT_EQ(manager_->Stats().current_swap_outs, 1);  // nothing read it since: no copy
  EXPECT_EQ(manager_->Stats().bytes_swapped_out, kG);
  EXPECT_EQ(device_->mapped_bytes(), 4 * kG);
  ASSERT_TRUE(Fill(c, 3 * kG, 3).ok());
  ASSERT_TRUE(manager_->Free(c).ok());
  EXPECT_TRUE(Holds(a, kG, 1));  // copied back now
  s = manager_->Stats();
  EXPECT_EQ(s.swap_ins, 1);
  EXPECT_EQ(s.retained_hits, 1);
  EXPECT_TRUE(Holds(b, kG, 2));
  EXPECT_LE(observer_.max_device, 4 * kG);
  for (DeviceAddress x : {a, b}) ASSERT_TRUE(manager_->Free(x).ok());
}

// A prefetch of an allocation whose chunk is retained makes it resident with no copy.
TEST_F(ResidencyTest, APrefetchFindsTheRetainedChunk) {
  reuse_cache_bytes_ = 4 * kG;
  Init(4 * kG);
  DeviceAddress a = *manager_->Allocate(2 * kG);
  ASSERT_TRUE(Fill(a, 2 * kG, 5).ok());
  ASSERT_TRUE(manager_->Offload(a).ok());
  ASSERT_TRUE(manager_->Poll().ok());
  ASSERT_EQ(StateOf(a), ResidencyState::kOnHost);
  EXPECT_EQ(*manager_->Prefetch(a), true);
  EXPECT_EQ(StateOf(a), ResidencyState::kResident);
  EXPECT_EQ(manager_->Stats().swap_ins, 0);
  EXPECT_EQ(manager_->Stats().retained_hits, 1);
  EXPECT_TRUE(Holds(a, 2 * kG, 5));
  ASSERT_TRUE(manager_->Free(a).ok());
}

// Note [Polling in stream order]: with five swap-outs queued and none run, a poll asks the
// device about the first only; once they ran, it finds all five complete.
TEST(ResidencyPollTest, APollQueriesAStreamOnlyUpToItsFirstPendingCopy) {
  FakeDevice::Options o;
  o.mode = FakeDevice::Mode::kManual;
  o.granularity = kG;
  o.capacity = 16 * kG;
  FakeDevice fake(o);
  TimedDevice timed(fake);
  ResidencyOptions r;
  r.memory_limit = 16 * kG;
  r.min_swap_bytes = kG;
  r.reuse_cache_bytes = 0;
  std::unique_ptr<ResidencyManager> manager = *ResidencyManager::Create(timed, r);
  std::vector<DeviceAddress> xs;
  for (int i = 0; i < 5; ++i) xs.push_back(*manager->Allocate(kG));
  for (DeviceAddress x : xs) ASSERT_TRUE(manager->Offload(x).ok());
  const int64_t before = timed.Times()[DeviceCallKind::kEvent].calls;
  ASSERT_TRUE(manager->Poll().ok());
  EXPECT_EQ(timed.Times()[DeviceCallKind::kEvent].calls - before, 1);
  for (DeviceAddress x : xs) EXPECT_EQ(manager->Lookup(x)->state, ResidencyState::kSwappingOut);
  fake.RunPending();
  ASSERT_TRUE(manager->Poll().ok());
  for (DeviceAddress x : xs) EXPECT_EQ(manager->Lookup(x)->state, ResidencyState::kOnHost);
  for (DeviceAddress x : xs) ASSERT_TRUE(manager->Free(x).ok());
  manager.reset();
  EXPECT_THAT(fake.violations(), IsEmpty());
  EXPECT_EQ(fake.physical_bytes(), 0);
}

// A freed allocation whose chunk was retained gives it back with the rest.
TEST_F(ResidencyTest, FreeingARetainedAllocationReleasesItsChunk) {
  reuse_cache_bytes_ = 4 * kG;
  Init(4 * kG);
  DeviceAddress a = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(a, kG, 1).ok());
  ASSERT_TRUE(manager_->Offload(a).ok());
  ASSERT_TRUE(manager_->Poll().ok());
  ASSERT_EQ(StateOf(a), ResidencyState::kOnHost);
  ASSERT_TRUE(manager_->Free(a).ok());
  EXPECT_EQ(manager_->Stats().host_bytes, 0);
  DeviceAddress b = *manager_->Allocate(4 * kG);  // the whole limit: nothing else is held
  ASSERT_TRUE(Fill(b, 4 * kG, 2).ok());
  EXPECT_EQ(manager_->Stats().swap_outs, 1);
  ASSERT_TRUE(manager_->Free(b).ok());
}

// A spare of another size, or room asked for something that is no chunk (a small-allocation
// slab), releases spares before anything is evicted: spares never cost a swap.
TEST_F(ResidencyTest, SparesOfAnotherSizeAreReleasedBeforeAnyEviction) {
  reuse_cache_bytes_ = 3 * kG;
  Init(3 * kG);
  DeviceAddress a = *manager_->Allocate(kG);
  DeviceAddress b = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(a, kG, 1).ok());
  ASSERT_TRUE(Fill(b, kG, 2).ok());
  DeviceAddress c = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(c, kG, 3).ok());
  ASSERT_TRUE(manager_->Offload(a).ok());
  ASSERT_TRUE(manager_->Poll().ok());
  ASSERT_EQ(StateOf(a), ResidencyState::kOnHost);
  EXPECT_EQ(manager_->Stats().cached_bytes, kG);  // a's chunk, spare: free to the program
  EXPECT_EQ(manager_->Stats().device_bytes, 3 * kG);
  ASSERT_TRUE(manager_->Offload(b).ok());
  ASSERT_TRUE(manager_->Poll().ok());
  EXPECT_EQ(manager_->Stats().cached_bytes, 2 * kG);
  DeviceAddress d = *manager_->Allocate(2 * kG);  // both spares released, c stays
  EXPECT_EQ(StateOf(c), ResidencyState::kResident);
  EXPECT_EQ(manager_->Stats().swap_outs, 2);
  EXPECT_EQ(manager_->Stats().chunk_reuses, 0);
  ASSERT_TRUE(manager_->Free(d).ok());  // into the reuse cache
  ASSERT_TRUE(manager_->Offload(c).ok());
  ASSERT_TRUE(manager_->Poll().ok());
  ASSERT_TRUE(manager_->ChargeExternal(2 * kG).ok());  // spare and cache go, nothing is evicted
  EXPECT_EQ(manager_->Stats().swap_outs, 3);
  manager_->UnchargeExternal(2 * kG);
  EXPECT_TRUE(Holds(a, kG, 1));
  EXPECT_TRUE(Holds(b, kG, 2));
  EXPECT_TRUE(Holds(c, kG, 3));
  EXPECT_LE(observer_.max_device, 3 * kG);
  for (DeviceAddress x : {a, b, c}) ASSERT_TRUE(manager_->Free(x).ok());
}

TEST_F(ResidencyTest, ReuseCacheIsBounded) {
  reuse_cache_bytes_ = 2 * kG;
  Init(8 * kG);
  std::vector<DeviceAddress> xs;
  for (int i = 0; i < 4; ++i) xs.push_back(*manager_->Allocate(kG));
  for (DeviceAddress x : xs) ASSERT_TRUE(manager_->Free(x).ok());
  EXPECT_EQ(manager_->Stats().cached_bytes, 2 * kG);
  EXPECT_EQ(device_->physical_bytes(), 2 * kG);
}

// The same workload with and without the cache (and the retained chunks it turns on): the same
// swaps, no new failures, same data.
TEST_F(ResidencyTest, ReuseCacheCausesNoExtraSwapsOrFailures) {
  for (FakeDevice::Mode mode : {FakeDevice::Mode::kImmediate, FakeDevice::Mode::kManual}) {
    ResidencyStats stats[2];
    for (int with_cache = 0; with_cache < 2; ++with_cache) {
      reuse_cache_bytes_ = with_cache ? 6 * kG : 0;
      Init(6 * kG, std::nullopt, mode);
      std::vector<std::pair<DeviceAddress, int64_t>> live;
      uint32_t rng = 12345;
      for (int step = 0; step < 300; ++step) {
        rng = rng * 1103515245 + 12345;
        const int pick = static_cast<int>((rng >> 16) % 8);
        if (pick < 4 || live.empty()) {
          const int64_t bytes = (1 + pick % 3) * kG;
          absl::StatusOr<DeviceAddress> a = manager_->Allocate(bytes);
          if (!a.ok()) continue;
          ASSERT_TRUE(Fill(*a, bytes, static_cast<uint8_t>(step)).ok());
          live.emplace_back(*a, bytes);
          if (live.size() > 4) {
            ASSERT_TRUE(manager_->Free(live.front().first).ok());
            live.erase(live.begin());
          }
        } else if (pick < 6) {
          const size_t i = (rng >> 8) % live.size();
          ASSERT_TRUE(manager_->Free(live[i].first).ok());
          live.erase(live.begin() + static_cast<ptrdiff_t>(i));
        } else {
          const size_t i = (rng >> 8) % live.size();
          ASSERT_TRUE(Fill(live[i].first, live[i].second, static_cast<uint8_t>(step)).ok());
          EXPECT_TRUE(Holds(live[i].first, live[i].second, static_cast<uint8_t>(step)));
        }
      }
      stats[with_cache] = manager_->Stats();
      for (auto& [a, bytes] : live) ASSERT_TRUE(manager_->Free(a).ok());
      manager_.reset();
      EXPECT_THAT(device_->violations(), IsEmpty());
      EXPECT_EQ(device_->physical_bytes(), 0);
    }
    EXPECT_GT(stats[0].swap_outs, 0);
    EXPECT_EQ(stats[1].swap_outs, stats[0].swap_outs);
    // Note [Retained chunks] (on with the cache): a swap-in without it is a swap-in with it, or
    // finds its chunk still mapped and copies nothing.
    EXPECT_EQ(stats[0].retained_hits, 0);
    EXPECT_EQ(stats[1].swap_ins + stats[1].retained_hits, stats[0].swap_ins);
    EXPECT_EQ(stats[1].out_of_memory, stats[0].out_of_memory);
    EXPECT_GT(stats[1].reuse_hits, 0);
    EXPECT_EQ(stats[0].reuse_hits, 0);
  }
}

// Note [Opaque calls]: LiveRanges names every live allocation whole, swapped out or not, and
// what they need mapped at once; a freed one is gone.
TEST_F(ResidencyTest, LiveRangesNameEveryLiveAllocation) {
  Init(4 * kG);
  DeviceAddress a = *manager_->Allocate(2 * kG);
  DeviceAddress b = *manager_->Allocate(2 * kG);
  DeviceAddress c = *manager_->Allocate(kG);  // evicts a
  ASSERT_EQ(StateOf(a), ResidencyState::kOnHost);
  int64_t mapped = 0;
  std::vector<AccessRange> ranges = manager_->LiveRanges(&mapped);
  ASSERT_EQ(ranges.size(), 3u);
  std::sort(ranges.begin(), ranges.end(),
            [](const AccessRange& x, const AccessRange& y) { return x.address < y.address; });
  std::vector<DeviceAddress> expected = {a, b, c};
  std::sort(expected.begin(), expected.end());
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(ranges[i].address, expected[i]);
    EXPECT_EQ(ranges[i].bytes, expected[i] == c ? kG : 2 * kG);
    EXPECT_EQ(ranges[i].mode, AccessRange::Mode::kReadWrite);
  }
  EXPECT_EQ(mapped, 5 * kG);
  ASSERT_TRUE(manager_->Free(b).ok());
  EXPECT_EQ(manager_->LiveRanges().size(), 2u);
  ASSERT_TRUE(manager_->Free(a).ok());
  ASSERT_TRUE(manager_->Free(c).ok());
}

}  // namespace
}  // namespace pooch
