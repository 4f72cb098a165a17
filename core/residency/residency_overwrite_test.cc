// Note [Overwritten allocations] (residency.cc): a swapped-out allocation an op writes whole
// comes back without a copy, and keeps its data when the op does not run.
#include <cstdint>
#include <vector>

#include "core/testing/fake_device.h"
#include "core/residency/residency.h"
#include "core/residency/residency_testutil.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

constexpr int64_t kG = ::pooch::testing::ResidencyFixture::kG;

class ResidencyOverwriteTest : public ::pooch::testing::ResidencyFixture {
 protected:
  // A device limit of `limit` bytes; allocation `a_` (2 granules) holds a pattern and is swapped
  // out by `b_` (2 granules).
  void SetUpSwappedOut(int64_t limit) {
    Start(FakeDevice::Options(), Options(limit));
    a_ = *manager_->Allocate(2 * kG);
    pattern_ = Pattern(2 * kG);
    ASSERT_TRUE(device_->Write(a_, pattern_.data(), 2 * kG).ok());
    b_ = *manager_->Allocate(2 * kG);
    const std::vector<uint8_t> zeros(2 * kG, 0);
    ASSERT_TRUE(device_->Write(b_, zeros.data(), 2 * kG).ok());
    ASSERT_EQ(StateOf(a_), ResidencyState::kOnHost);
    ASSERT_EQ(manager_->Stats().swap_outs, 1);
  }

  // An op over `ranges` that writes `fill` over [address, address + bytes); `ran` is what the
  // call returned (false: it failed and wrote nothing).
  absl::Status Op(std::vector<AccessRange> ranges, DeviceAddress address, int64_t bytes,
                  uint8_t fill, bool ran = true) {
    absl::StatusOr<OpTicket> t = manager_->BeforeOp(stream_, ranges);
    if (!t.ok()) return t.status();
    absl::Status st;
    if (ran) {
      st = device_->Launch(stream_, {{address, bytes}}, [=](FakeDevice::Memory& m) {
        std::vector<uint8_t> data(static_cast<size_t>(bytes), fill);
        m.Write(address, data.data(), bytes).IgnoreError();
      });
    }
    st.Update(manager_->AfterOp(*std::move(t), ran));
    return st;
  }

  static AccessRange Overwrite(DeviceAddress address, int64_t bytes) {
    AccessRange r{address, bytes, AccessRange::Mode::kWrite};
    r.overwritten = true;
    return r;
  }

  void TearDown() override {
    if (manager_ != nullptr) {
      EXPECT_TRUE(manager_->Free(a_).ok());
      EXPECT_TRUE(manager_->Free(b_).ok());
    }
    ResidencyFixture::TearDown();
  }

  DeviceAddress a_ = 0, b_ = 0;
  std::vector<uint8_t> pattern_;
};

TEST_F(ResidencyOverwriteTest, AnAllocationOverwrittenWholeComesBackWithoutACopy) {
  SetUpSwappedOut(2 * kG);
  ASSERT_TRUE(Op({Overwrite(a_, 2 * kG)}, a_, 2 * kG, 5).ok());
  ResidencyStats s = manager_->Stats();
  EXPECT_EQ(s.overwritten_ins, 1);
  EXPECT_EQ(s.swap_ins, 0);
  EXPECT_EQ(s.bytes_swapped_in, 0);
  EXPECT_EQ(s.swap_outs, 2);        // b_ made room
  EXPECT_EQ(s.host_bytes, 2 * kG);  // b_'s copy only: a_'s was given back
  EXPECT_TRUE(Holds(a_, 2 * kG, 5));
  // b_ comes back with its copy as before.
  EXPECT_TRUE(Holds(b_, 2 * kG, 0));
  EXPECT_EQ(manager_->Stats().swap_ins, 1);
}

// A call that returned an error wrote nothing: its allocation holds its old bytes.
TEST_F(ResidencyOverwriteTest, ACallThatFailedLeavesTheDataAsItWas) {
  SetUpSwappedOut(2 * kG);
  ASSERT_TRUE(Op({Overwrite(a_, 2 * kG)}, a_, 2 * kG, 5, /*ran=*/false).ok());
  EXPECT_EQ(manager_->Stats().overwritten_ins, 1);
  absl::StatusOr<std::vector<uint8_t>> back = ReadBack(a_, 2 * kG);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, pattern_);
  EXPECT_EQ(manager_->Stats().swap_ins, 1);  // the data's way back
}

// Only a whole overwrite through nothing but overwritten ranges skips the copy: part of the
// allocation, a read of it beside the write, or a write the hook does not know to be whole
// (a workspace) each swap it in, and the bytes the op did not write stay as they were.
TEST_F(ResidencyOverwriteTest, AnythingLessThanAWholeOverwriteIsSwappedIn) {
  SetUpSwappedOut(2 * kG);
  ASSERT_TRUE(Op({Overwrite(a_, kG)}, a_, kG, 5).ok());
  absl::StatusOr<std::vector<uint8_t>> back = ReadBack(a_, 2 * kG);
  ASSERT_TRUE(back.ok()) << back.status();
  std::vector<uint8_t> want = pattern_;
  std::fill(want.begin(), want.begin() + kG, 5);
  EXPECT_EQ(*back, want);
  EXPECT_EQ(manager_->Stats().overwritten_ins, 0);
  EXPECT_EQ(manager_->Stats().swap_ins, 1);

  // Each of these swaps a_ out (b_ touched) and in again (the op).
  const std::vector<std::vector<AccessRange>> partial = {
      {Overwrite(a_, 2 * kG), {a_ + kG, 16, AccessRange::Mode::kRead}},
      {{a_, 2 * kG, AccessRange::Mode::kWrite}},
      {Overwrite(a_ + 1, 2 * kG - 1)}};
  int64_t ins = 1;
  for (const std::vector<AccessRange>& ranges : partial) {
    ASSERT_TRUE(Holds(b_, 2 * kG, 0));
    ASSERT_EQ(StateOf(a_), ResidencyState::kOnHost);
    ++ins;  // b_
    ASSERT_TRUE(Op(ranges, a_ + 2 * kG - 8, 8, 9).ok());
    EXPECT_EQ(manager_->Stats().swap_ins, ++ins);
    EXPECT_EQ(manager_->Stats().overwritten_ins, 0);
    back = ReadBack(a_, 2 * kG);
    ASSERT_TRUE(back.ok()) << back.status();
    std::fill(want.end() - 8, want.end(), 9);
    EXPECT_EQ(*back, want);
  }
}

// BeforeOp maps the overwritten allocation, then finds no room for the op's other operand: the
// op fails, and the allocation it did not run on keeps its bytes.
TEST_F(ResidencyOverwriteTest, AnOpThatCannotStartLeavesTheDataAsItWas) {
  SetUpSwappedOut(3 * kG);
  DeviceAddress d = *manager_->Allocate(2 * kG);  // b_ goes to the host too
  ASSERT_EQ(StateOf(b_), ResidencyState::kOnHost);
  // a_ takes d's room; b_ then finds none (a_ is the op's).
  absl::Status s = Op({Overwrite(a_, 2 * kG), {b_, 16, AccessRange::Mode::kRead}}, a_, 2 * kG, 5);
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  EXPECT_EQ(manager_->Stats().overwritten_ins, 1);
  absl::StatusOr<std::vector<uint8_t>> back = ReadBack(a_, 2 * kG);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, pattern_);
  EXPECT_TRUE(manager_->Free(d).ok());
}

}  // namespace
}  // namespace pooch
