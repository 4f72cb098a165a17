// Note [Current host copies] (residency_swap.cc): a swap-out of an allocation that no op wrote
// since its swap-in copies nothing, and any write, or anything that may be one, makes the next
// swap-out copy again.
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "core/testing/fake_device.h"
#include "core/residency/residency.h"
#include "core/residency/residency_testutil.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

constexpr int64_t kG = ::pooch::testing::ResidencyFixture::kG;

// The swap-outs' ends as the trace sees them: copied or not.
class OutObserver : public ResidencyObserver {
 public:
  void OnSwap(const SwapRecord& r) override {
    if (r.kind == SwapRecord::Kind::kOutEnd) out_copied.push_back(r.copied);
  }
  void OnMemory(int64_t, int64_t, absl::Time) override {}
  std::vector<bool> out_copied;
};

class ResidencyCurrentTest : public ::pooch::testing::ResidencyFixture {
 protected:
  // A device of `limit` bytes, no reuse cache (so no retained chunks: every swap-in copies), and
  // allocation a_ (2 granules) holding a pattern, swapped out once and read back in once.
  void SetUpReadBackIn(int64_t limit, std::optional<int64_t> host_limit = std::nullopt,
                       FakeDevice::Mode mode = FakeDevice::Mode::kImmediate) {
    FakeDevice::Options o;
    o.mode = mode;
    Start(o, Options(limit, host_limit), &observer_);
    a_ = *manager_->Allocate(2 * kG);
    pattern_ = Pattern(2 * kG);
    ASSERT_TRUE(Op({{a_, 2 * kG, Mode::kWrite}}, pattern_).ok());
    ASSERT_TRUE(SwapOut(a_).ok());
    ASSERT_EQ(manager_->Stats().bytes_swapped_out, 2 * kG);
    ASSERT_EQ(Contents(a_), pattern_);  // swapped in by a read
    ASSERT_EQ(manager_->Stats().swap_ins, 1);
  }

  // An op over `ranges` that writes `data` at ranges[0]'s address (nothing when empty).
  absl::Status Op(std::vector<AccessRange> ranges, const std::vector<uint8_t>& data) {
    absl::StatusOr<OpTicket> t = manager_->BeforeOp(stream_, ranges);
    if (!t.ok()) return t.status();
    const DeviceAddress at = ranges[0].address;
    const std::vector<uint8_t> copy = data;
    absl::Status st = device_->Launch(
        stream_, {{at, static_cast<int64_t>(data.size())}}, [=](FakeDevice::Memory& m) {
          if (!copy.empty()) {
            m.Write(at, copy.data(), static_cast<int64_t>(copy.size())).IgnoreError();
          }
        });
    st.Update(manager_->AfterOp(*std::move(t)));
    return st;
  }

  // Swaps `address` out through the plan's path and waits until it is on the host.
  absl::Status SwapOut(DeviceAddress address) {
    if (absl::Status s = manager_->Offload(address); !s.ok()) return s;
    device_->RunPending();
    if (absl::Status s = manager_->Drain(); !s.ok()) return s;
    return StateOf(address) == ResidencyState::kOnHost ? absl::OkStatus()
                                                       : absl::InternalError("not swapped out");
  }

  std::vector<uint8_t> Contents(DeviceAddress address) {
    absl::StatusOr<std::vector<uint8_t>> back = ReadBack(address, 2 * kG);
    EXPECT_TRUE(back.ok()) << back.status();
    return back.ok() ? *back : std::vector<uint8_t>();
  }

  void TearDown() override {
    if (manager_ != nullptr) {
      device_->RunPending();
      EXPECT_TRUE(manager_->Free(a_).ok());
      EXPECT_TRUE(manager_->Drain().ok());
      EXPECT_EQ(manager_->Stats().host_bytes, 0);  // a free gives the kept copy back
    }
    ResidencyFixture::TearDown();
  }

  OutObserver observer_;
  DeviceAddress a_ = 0;
  std::vector<uint8_t> pattern_;
};

TEST_F(ResidencyCurrentTest, ASwapOutAfterOnlyReadsCopiesNothing) {
  SetUpReadBackIn(4 * kG);
  EXPECT_EQ(manager_->Stats().host_bytes, 2 * kG);  // kept, current
  ASSERT_TRUE(Op({{a_, 2 * kG, Mode::kRead}}, {}).ok());
  ASSERT_TRUE(SwapOut(a_).ok());
  ResidencyStats s = manager_->Stats();
  EXPECT_EQ(s.swap_outs, 2);
  EXPECT_EQ(s.current_swap_outs, 1);
  EXPECT_EQ(s.bytes_swapped_out, 2 * kG);  // the first one's only
  EXPECT_EQ(s.bytes_not_copied_out, 2 * kG);
  EXPECT_EQ(device_->mapped_bytes(), 0);
  EXPECT_EQ(Contents(a_), pattern_);
  // And again: in, out, in, with one copy out in all.
  ASSERT_TRUE(SwapOut(a_).ok());
  EXPECT_EQ(Contents(a_), pattern_);
  EXPECT_EQ(manager_->Stats().bytes_swapped_out, 2 * kG);
  EXPECT_EQ(manager_->Stats().current_swap_outs, 2);
  EXPECT_EQ(observer_.out_copied, (std::vector<bool>{true, false, false}));
}

// A write of any part, a range the hook could not tell (kReadWrite), and a write-only range
// each make the copy stale: the next swap-out copies, and the new bytes come back.
TEST_F(ResidencyCurrentTest, AnythingThatMayWriteMakesTheNextSwapOutCopy) {
  SetUpReadBackIn(4 * kG);
  std::vector<uint8_t> want = pattern_;
  int64_t copied = 2 * kG;
  uint8_t fill = 0x40;
  for (Mode mode : {Mode::kWrite, Mode::kReadWrite}) {
    for (int64_t offset : {int64_t{0}, 2 * kG - 16}) {
      const std::vector<uint8_t> bytes(16, ++fill);
      ASSERT_TRUE(Op({{a_ + static_cast<DeviceAddress>(offset), 16, mode}}, bytes).ok());
      std::copy(bytes.begin(), bytes.end(), want.begin() + offset);
      ASSERT_TRUE(SwapOut(a_).ok());
      copied += 2 * kG;
      EXPECT_EQ(manager_->Stats().bytes_swapped_out, copied);
      EXPECT_EQ(manager_->Stats().current_swap_outs, 0);
      EXPECT_EQ(Contents(a_), want);
    }
  }
}

// The op that brings the allocation back writes it: the swap-in made the copy current when it
// was queued, and the op, ordered after it, makes it stale again.
TEST_F(ResidencyCurrentTest, AWriteThatSwapsTheAllocationInMakesItStale) {
  SetUpReadBackIn(4 * kG);
  ASSERT_TRUE(SwapOut(a_).ok());  // current: no copy
  const std::vector<uint8_t> bytes(2 * kG, 0x5A);
  ASSERT_TRUE(Op({{a_, 2 * kG, Mode::kReadWrite}}, bytes).ok());
  ASSERT_TRUE(SwapOut(a_).ok());
  EXPECT_EQ(manager_->Stats().current_swap_outs, 1);
  EXPECT_EQ(manager_->Stats().bytes_swapped_out, 4 * kG);
  EXPECT_EQ(Contents(a_), bytes);
}

// Queued reads on two streams: the swap-out that copies nothing still unmaps only after both
// ran (the fake device reports an unmap under queued work as a violation, checked at TearDown).
TEST_F(ResidencyCurrentTest, ASwapOutWithoutACopyWaitsForQueuedReadsOnEveryStream) {
  SetUpReadBackIn(4 * kG, std::nullopt, FakeDevice::Mode::kManual);
  const StreamHandle other = *device_->CreateStream();
  for (StreamHandle s : {stream_, other}) {
    absl::StatusOr<OpTicket> t = manager_->BeforeOp(s, {{a_, 2 * kG, Mode::kRead}});
    ASSERT_TRUE(t.ok()) << t.status();
    ASSERT_TRUE(device_->Launch(s, {{a_, 2 * kG}}, [](FakeDevice::Memory&) {}).ok());
    ASSERT_TRUE(manager_->AfterOp(*std::move(t)).ok());
  }
  ASSERT_TRUE(manager_->Offload(a_).ok());
  ASSERT_TRUE(manager_->Poll().ok());
  EXPECT_EQ(StateOf(a_), ResidencyState::kSwappingOut);  // the reads have not run
  EXPECT_EQ(device_->mapped_bytes(), 2 * kG);
  device_->RunPending();
  ASSERT_TRUE(manager_->Drain().ok());
  EXPECT_EQ(StateOf(a_), ResidencyState::kOnHost);
  EXPECT_EQ(manager_->Stats().current_swap_outs, 1);
  EXPECT_EQ(Contents(a_), pattern_);
}

// A touch while the swap-out waits cancels it, as it does a copy: the copy stays current.
TEST_F(ResidencyCurrentTest, ACancelledSwapOutKeepsTheCopyCurrent) {
  SetUpReadBackIn(4 * kG, std::nullopt, FakeDevice::Mode::kManual);
  absl::StatusOr<OpTicket> t = manager_->BeforeOp(stream_, {{a_, 2 * kG, Mode::kRead}});
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_TRUE(device_->Launch(stream_, {{a_, 2 * kG}}, [](FakeDevice::Memory&) {}).ok());
  ASSERT_TRUE(manager_->AfterOp(*std::move(t)).ok());
  ASSERT_TRUE(manager_->Offload(a_).ok());
  EXPECT_EQ(Contents(a_), pattern_);  // cancels, then runs everything
  EXPECT_EQ(manager_->Stats().cancelled_swap_outs, 1);
  ASSERT_TRUE(SwapOut(a_).ok());
  EXPECT_EQ(manager_->Stats().current_swap_outs, 2);
  EXPECT_EQ(manager_->Stats().bytes_swapped_out, 2 * kG);
  EXPECT_EQ(Contents(a_), pattern_);
}

// Kept copies hold pinned memory under the host limit: a swap-out that finds no room for its
// buffer takes a kept copy's, and the allocation it came from copies at its next swap-out.
TEST_F(ResidencyCurrentTest, AFullHostPoolGivesBackKeptCopiesFirst) {
  SetUpReadBackIn(4 * kG, /*host_limit=*/2 * kG);
  const DeviceAddress b = *manager_->Allocate(2 * kG);
  const std::vector<uint8_t> bytes(2 * kG, 0x33);
  ASSERT_TRUE(Op({{b, 2 * kG, Mode::kWrite}}, bytes).ok());
  ASSERT_TRUE(SwapOut(b).ok());  // a_'s kept copy made way
  EXPECT_EQ(manager_->Stats().bytes_swapped_out, 4 * kG);
  ASSERT_TRUE(manager_->Free(b).ok());
  ASSERT_TRUE(SwapOut(a_).ok());
  EXPECT_EQ(manager_->Stats().current_swap_outs, 0);
  EXPECT_EQ(manager_->Stats().bytes_swapped_out, 6 * kG);
  EXPECT_EQ(Contents(a_), pattern_);
}

// A dropped allocation's chunk is rebuilt by a replay's write: its old host copy is not current.
TEST_F(ResidencyCurrentTest, ADroppedAllocationIsNeverCurrent) {
  SetUpReadBackIn(4 * kG);
  ASSERT_TRUE(manager_->Drop(a_).ok());
  ASSERT_EQ(StateOf(a_), ResidencyState::kDropped);
  const std::vector<uint8_t> bytes(2 * kG, 0x77);
  ASSERT_TRUE(Op({{a_, 2 * kG, Mode::kWrite}}, bytes).ok());  // the replay
  ASSERT_TRUE(SwapOut(a_).ok());
  EXPECT_EQ(manager_->Stats().current_swap_outs, 0);
  EXPECT_EQ(Contents(a_), bytes);
}

}  // namespace
}  // namespace pooch
