#include "core/profile/op_stream_recorder.h"

#include <optional>
#include <vector>

#include "core/profile/profile_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

using Access = OpStreamRecorder::Access;

// One training step as the interposer sees it: a feature map `a` (managed) written in forward
// and read in backward, a small temporary, and a weight `w` allocated before the loop.
struct Loop {
  OpStreamRecorder r{{.marker = IterationMarker::kAuto, .profile_iterations = 2}};
  uint64_t next_id = 100;
  static constexpr uint64_t kWeight = 1;
  std::vector<IterationTracker::Step> steps;

  Loop() { r.Alloc(kWeight, 8 << 20, true); }

  // Returns the steps of the iteration's events.
  void Iteration() {
    const uint64_t a = next_id++;
    const uint64_t tmp = next_id++;
    steps.push_back(r.Alloc(a, 4 << 20, true));
    steps.push_back(
        r.Op("cudnnConvolutionForward",
             std::vector<Access>{{kWeight, RecordedAccess::kRead}, {a, RecordedAccess::kWrite}}));
    steps.push_back(r.Alloc(tmp, 4096, false));
    steps.push_back(
        r.Op("cudnnSoftmaxForward",
             std::vector<Access>{{a, RecordedAccess::kRead}, {tmp, RecordedAccess::kWrite}}));
    steps.push_back(*r.Free(tmp));
    steps.push_back(r.Op(
        "cudnnConvolutionBackwardFilter",
        std::vector<Access>{{a, RecordedAccess::kRead}, {kWeight, RecordedAccess::kReadWrite}}));
    steps.push_back(*r.Free(a));
  }

  // Runs iterations (at most `max`) until one reports profile_ready; returns that event's
  // sequence number, or nullopt.
  std::optional<uint64_t> IterateUntilReady(int max = 3) {
    for (int i = 0; i < max; ++i) {
      steps.clear();
      Iteration();
      for (const IterationTracker::Step& s : steps) {
        if (s.profile_ready) return s.seq;
      }
    }
    return std::nullopt;
  }
};

TEST(OpStreamRecorderTest, ReferenceIterationBecomesAProfile) {
  Loop loop;
  EXPECT_TRUE(absl::IsFailedPrecondition(loop.r.Reference(0).status()));
  ASSERT_TRUE(loop.IterateUntilReady().has_value());
  const auto [first, end] = loop.r.tracker().ReferenceWindow();
  ASSERT_EQ(end - first, 7u);  // 3 ops, 2 allocations, 2 frees
  for (uint64_t seq = first; seq < end; ++seq) loop.r.SetDuration(seq, 10.0 + seq);

  OpStreamRecorder::Positions positions;
  absl::StatusOr<RecordedIteration> it = loop.r.Reference(/*other_bytes=*/4096, &positions);
  ASSERT_TRUE(it.ok()) << it.status();
  // Positions index the reference: each op's position holds an op event, the allocation's an
  // allocation of the feature map's size.
  ASSERT_EQ(positions.ops.size(), 3u);
  ASSERT_EQ(positions.managed_allocs.size(), 1u);
  const std::vector<StreamEvent>& ref = loop.r.tracker().Reference();
  for (int64_t p : positions.ops)
    EXPECT_EQ(ref[static_cast<size_t>(p)].kind, StreamEvent::Kind::kOp);
  EXPECT_EQ(ref[static_cast<size_t>(positions.managed_allocs[0])].kind, StreamEvent::Kind::kAlloc);
  ASSERT_EQ(it->ops.size(), 3u);
  // The window may be a rotation of the loop body; its op names are the loop's.
  std::vector<std::string> names;
  for (const RecordedOp& op : it->ops) {
    names.push_back(op.name);
    EXPECT_GT(op.duration_us, 10.0);
  }
  EXPECT_THAT(names,
              ::testing::UnorderedElementsAre("cudnnConvolutionForward", "cudnnSoftmaxForward",
                                              "cudnnConvolutionBackwardFilter"));
  // Only managed allocations appear: the feature map's alloc and free, and the weight as
  // persistent; the 4 KiB temporary shapes the signature only.
  int allocs = 0, frees = 0;
  for (const auto& e : it->events) {
    allocs += e.kind == RecordedIteration::Event::kAlloc;
    frees += e.kind == RecordedIteration::Event::kFree;
  }
  EXPECT_EQ(allocs, 1);
  EXPECT_EQ(frees, 1);
  ASSERT_EQ(it->persistent.size(), 1u);
  EXPECT_EQ(it->persistent[0].allocation, Loop::kWeight);
  EXPECT_EQ(it->persistent[0].bytes, 8 << 20);
  EXPECT_EQ(it->resident_other_bytes, 4096);

  absl::StatusOr<BuiltProfile> built = BuildProfile(*it);
  ASSERT_TRUE(built.ok()) << built.status();

  // After the reference, nothing more is kept, and dropping forgets what was.
  const size_t kept = loop.r.kept();
  loop.Iteration();
  EXPECT_EQ(loop.r.kept(), kept);
  loop.r.DropKept();
  EXPECT_EQ(loop.r.kept(), 0u);
  EXPECT_TRUE(absl::IsFailedPrecondition(loop.r.Reference(0).status()));
}

TEST(OpStreamRecorderTest, RecordNextIterationMeasuresTheReferenceAgain) {
  Loop loop;
  ASSERT_TRUE(loop.IterateUntilReady().has_value());
  const auto [first, end] = loop.r.tracker().ReferenceWindow();
  ASSERT_TRUE(loop.r.Reference(0).ok());
  loop.r.RecordNextIteration();
  EXPECT_EQ(loop.r.kept(), 0u);
  // The next iterations' events are kept until one has been followed from its start to its end.
  const std::optional<uint64_t> ready_seq = loop.IterateUntilReady();
  ASSERT_TRUE(ready_seq.has_value());
  const auto [again_first, again_end] = loop.r.tracker().ReferenceWindow();
  EXPECT_GE(again_first, end);
  EXPECT_EQ(again_end - again_first, end - first);
  EXPECT_EQ(*ready_seq + 1, again_end);
  for (uint64_t seq = again_first; seq < again_end; ++seq) loop.r.SetDuration(seq, 5.0);
  absl::StatusOr<RecordedIteration> it = loop.r.Reference(0);
  ASSERT_TRUE(it.ok()) << it.status();
  ASSERT_EQ(it->ops.size(), 3u);
  for (const RecordedOp& op : it->ops) EXPECT_EQ(op.duration_us, 5.0);
  // And then nothing more is kept.
  const size_t kept = loop.r.kept();
  loop.Iteration();
  EXPECT_EQ(loop.r.kept(), kept);
}

TEST(OpStreamRecorderTest, FollowingMatchesAndDeparts) {
  Loop loop;
  for (int i = 0; i < 3; ++i) loop.Iteration();
  ASSERT_EQ(loop.r.tracker().mode(), IterationTracker::Mode::kFollowing);
  loop.steps.clear();
  loop.Iteration();
  loop.Iteration();
  bool departed = false;
  for (const auto& s : loop.steps) departed |= s.departed;
  EXPECT_FALSE(departed);
  // A step with a different feature-map size departs.
  IterationTracker::Step s = loop.r.Alloc(999, 3 << 20, true);
  EXPECT_TRUE(s.departed || loop.r.tracker().mode() == IterationTracker::Mode::kDeparted);
  EXPECT_EQ(loop.r.tracker().departures(), 1u);
}

TEST(OpStreamRecorderTest, UnknownAllocationsAreIgnored) {
  OpStreamRecorder r({.marker = IterationMarker::kAuto, .profile_iterations = 2});
  EXPECT_FALSE(r.Free(42).has_value());  // not an event: nothing kept, no sequence number
  const auto op = r.Op("cublasSgemm_v2", std::vector<Access>{{42, RecordedAccess::kRead}});
  EXPECT_EQ(op.seq, 0u);
  EXPECT_EQ(r.kept(), 1u);
}

TEST(OpStreamRecorderTest, KeepsAtMostTheDetectionBound) {
  OpStreamRecorder r(
      {.marker = IterationMarker::kAuto, .profile_iterations = 2, .max_detect_events = 64});
  // Allocations that are never freed: no iteration is ever found.
  for (uint64_t i = 1; i <= 500; ++i) r.Alloc(i, 1 << 20, true);
  EXPECT_EQ(r.kept(), 64u);
  EXPECT_TRUE(absl::IsFailedPrecondition(r.Reference(0).status()));
}

}  // namespace
}  // namespace pooch
