// Tests of the replay check (core/recompute/replay_check.h, Note [Replay check]) through the
// Recomputer, over a ResidencyManager on a FakeDevice in manual mode: queued work runs only when
// a synchronisation depends on it, so a copy that is not ordered after the map's writer reads
// what was there before. A recipe writes out = in[0] + 1 over its output's first `written_`
// bytes; a replay can be made to change one byte (`corrupt_at_`) or to write nothing, as a
// kernel whose twin is not deterministic, or a recipe writing elsewhere, would.
#include "core/recompute/replay_check.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/recompute/recomputer.h"
#include "core/residency/residency.h"
#include "core/residency/residency_testutil.h"
#include "core/small_alloc/small_allocator.h"
#include "core/testing/fake_device.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

class ReplayCheckTest : public pooch::testing::ResidencyFixture {
 protected:
  void SetUp() override {
    FakeDevice::Options device;
    device.mode = FakeDevice::Mode::kManual;
    Start(device, Options(16 * kG));
    SmallAllocatorOptions small;
    small.max_bytes = kG;
    small_ = *SmallAllocator::Create(*device_, std::move(small));
    check_ = std::make_unique<ReplayCheck>(
        *device_, [this](const std::string& line) { lines_.push_back(line); });
    recomputer_ = std::make_unique<Recomputer>(*device_, *manager_, *small_, kG, nullptr,
                                               /*dtr=*/false, check_.get());
  }

  void TearDown() override {
    recomputer_.reset();
    check_.reset();
    small_.reset();
    ResidencyFixture::TearDown();
  }

  // A kernel recipe: out[0, written_) = in[0] + 1, but a replay changes the byte at
  // corrupt_at_ (when >= 0) or writes nothing at all (write_nothing_).
  ReplayRecipe Recipe(DeviceAddress in, DeviceAddress out) {
    ReplayRecipe r;
    r.name = "noisy_kernel";
    r.kernel = true;
    r.output = out;
    r.output_bytes = kG;
    r.inputs = {{in, kG, Mode::kRead}};
    r.issue = [this, in, out](uintptr_t stream, void*) {
      const bool replay = calls_++ > 0;
      if (replay && write_nothing_) return true;
      const int64_t written = written_;
      const int64_t corrupt = replay ? corrupt_at_ : -1;
      return device_
          ->Launch(stream, {{in, kG}, {out, kG}},
                   [=](FakeDevice::Memory& m) {
                     uint8_t first = 0;
                     m.Read(in, &first, 1).IgnoreError();
                     std::vector<uint8_t> data(static_cast<size_t>(written),
                                               static_cast<uint8_t>(first + 1));
                     if (corrupt >= 0) data[static_cast<size_t>(corrupt)] ^= 1;
                     m.Write(out, data.data(), written).IgnoreError();
                   })
          .ok();
    };
    return r;
  }

  // The program's op on stream_ (its use recorded by the manager), then its recipe offered.
  void Produce(DeviceAddress in, DeviceAddress out) {
    ReplayRecipe r = Recipe(in, out);
    absl::StatusOr<OpTicket> t =
        manager_->BeforeOp(stream_, {{in, kG, Mode::kRead}, {out, kG, Mode::kWrite}});
    ASSERT_TRUE(t.ok()) << t.status();
    ASSERT_TRUE(r.issue(stream_, nullptr));
    ASSERT_TRUE(manager_->AfterOp(*std::move(t)).ok());
    ASSERT_TRUE(recomputer_->Offer(std::move(r), 10.0));
  }

  // A chain's next link (Note [Chained recipes]): out += in[0] in place, offered after the
  // program's call as RunOp does.
  void AddInPlace(DeviceAddress in, DeviceAddress out) {
    ASSERT_TRUE(
        recomputer_
            ->BeforeProgramOp(stream_, {{out, kG, Mode::kReadWrite}, {in, kG, Mode::kRead}}, true)
            .ok());
    ReplayRecipe r;
    r.name = "add";
    r.output = out;
    r.output_bytes = kG;
    r.inputs = {{in, kG, Mode::kRead}, {out, kG, Mode::kRead}};
    r.issue = [this, in, out](uintptr_t stream, void*) {
      return device_
          ->Launch(stream, {{in, kG}, {out, kG}},
                   [=](FakeDevice::Memory& m) {
                     uint8_t add = 0;
                     m.Read(in, &add, 1).IgnoreError();
                     std::vector<uint8_t> data(kG);
                     m.Read(out, data.data(), kG).IgnoreError();
                     for (uint8_t& v : data) v = static_cast<uint8_t>(v + add);
                     m.Write(out, data.data(), kG).IgnoreError();
                   })
          .ok();
    };
    absl::StatusOr<OpTicket> t =
        manager_->BeforeOp(stream_, {{in, kG, Mode::kRead}, {out, kG, Mode::kReadWrite}});
    ASSERT_TRUE(t.ok()) << t.status();
    ASSERT_TRUE(r.issue(stream_, nullptr));
    ASSERT_TRUE(manager_->AfterOp(*std::move(t)).ok());
    ASSERT_TRUE(recomputer_->Offer(std::move(r), 1.0));
  }

  // Produces out from in (41), drops it, and reads it: the replay and its check.
  absl::Status DropAndRead(DeviceAddress* in, DeviceAddress* out) {
    *in = *manager_->Allocate(kG);
    *out = *manager_->Allocate(kG);
    if (absl::Status s = Fill(*in, kG, 41); !s.ok()) return s;
    Produce(*in, *out);
    EXPECT_TRUE(recomputer_->Drop(*out));
    return recomputer_->BeforeProgramOp(stream_, {{*out, kG, Mode::kRead}}, true);
  }

  ReplayCheck::Stats CheckStats() {
    return recomputer_->check_stats().value_or(ReplayCheck::Stats{});
  }

  std::unique_ptr<SmallAllocator> small_;
  std::unique_ptr<ReplayCheck> check_;
  std::unique_ptr<Recomputer> recomputer_;
  std::vector<std::string> lines_;
  int calls_ = 0;
  int64_t written_ = kG;
  int64_t corrupt_at_ = -1;
  bool write_nothing_ = false;
};

// The copy waits for the map's writer (queued, not run, when the drop comes): else it would hold
// the bytes from before, and the right replay would be a mismatch.
TEST_F(ReplayCheckTest, AReplayThatRebuildsTheMapPassesTheCheck) {
  DeviceAddress in = 0, out = 0;
  ASSERT_TRUE(DropAndRead(&in, &out).ok());
  EXPECT_TRUE(Holds(out, kG, 42));
  EXPECT_THAT(lines_, IsEmpty());
  const ReplayCheck::Stats st = CheckStats();
  EXPECT_EQ(st.checked, 1);
  EXPECT_EQ(st.checked_bytes, kG);
  EXPECT_EQ(st.unwritten_bytes, 0);
  EXPECT_EQ(st.unchecked, 0);
  EXPECT_EQ(st.peak_held_bytes, kG);
  EXPECT_EQ(recomputer_->stats().replays, 1);
  for (DeviceAddress a : {in, out}) ASSERT_TRUE(manager_->Free(a).ok());
}

TEST_F(ReplayCheckTest, AReplayThatChangesAByteIsOneLineAndAFailedReplay) {
  corrupt_at_ = 1000;
  DeviceAddress in = 0, out = 0;
  absl::Status s = DropAndRead(&in, &out);
  const std::string line = absl::StrFormat(
      "replay check: kernel noisy_kernel rebuilt the map at 0x%x (65536 bytes) with other bytes "
      "than were dropped: first at offset 1000 (0x2a dropped, 0x2b rebuilt)",
      out);
  EXPECT_THAT(lines_, ElementsAre(line));
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(s.message(), "pooch: " + line);
  EXPECT_EQ(CheckStats().checked, 0);
  EXPECT_EQ(recomputer_->stats().failures, 1);
  for (DeviceAddress a : {in, out}) ASSERT_TRUE(manager_->Free(a).ok());
}

// A chain is named link by link.
TEST_F(ReplayCheckTest, AChainIsNamedByItsLinks) {
  corrupt_at_ = 7;
  DeviceAddress in = *manager_->Allocate(kG), out = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(in, kG, 41).ok());
  Produce(in, out);     // 42
  AddInPlace(in, out);  // 83; the replay: (42 ^ 1) + 41 = 84 at byte 7
  ASSERT_TRUE(recomputer_->Drop(out));
  EXPECT_EQ(recomputer_->BeforeProgramOp(stream_, {{out, kG, Mode::kRead}}, true).code(),
            absl::StatusCode::kDataLoss);
  EXPECT_THAT(lines_, ElementsAre(absl::StrFormat(
                          "replay check: the chain kernel noisy_kernel > add rebuilt the map at "
                          "0x%x (65536 bytes) with other bytes than were dropped: first at offset "
                          "7 (0x53 dropped, 0x54 rebuilt)",
                          out)));
  for (DeviceAddress a : {in, out}) ASSERT_TRUE(manager_->Free(a).ok());
}

TEST_F(ReplayCheckTest, AReplayThatWritesNothingIsCaught) {
  write_nothing_ = true;
  DeviceAddress in = 0, out = 0;
  absl::Status s = DropAndRead(&in, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(lines_, ElementsAre(absl::StrFormat(
                          "replay check: kernel noisy_kernel wrote none of the map at 0x%x "
                          "(65536 bytes) it rebuilds: first at offset 0",
                          out)));
  for (DeviceAddress a : {in, out}) ASSERT_TRUE(manager_->Free(a).ok());
}

// Padding its first writer left unwritten (Note [First writers]) is not read by the program.
TEST_F(ReplayCheckTest, BytesNeitherWriterWroteAreCountedNotCaught) {
  written_ = kG - 100;
  DeviceAddress in = 0, out = 0;
  ASSERT_TRUE(DropAndRead(&in, &out).ok());
  EXPECT_THAT(lines_, IsEmpty());
  EXPECT_EQ(CheckStats().checked, 1);
  EXPECT_EQ(CheckStats().unwritten_bytes, 100);
  for (DeviceAddress a : {in, out}) ASSERT_TRUE(manager_->Free(a).ok());
}

}  // namespace
}  // namespace pooch
