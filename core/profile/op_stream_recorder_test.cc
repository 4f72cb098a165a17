#include "core/profile/op_stream_recorder.h"

#include <optional>
#include <vector>

#include "core/model/candidates.h"
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
  bool extra_op = false;  // a kernel the loop launches in some iterations only

  Loop() { r.Alloc(kWeight, 8 << 20, true); }

  // Returns the steps of the iteration's events.
  void Iteration() {
    const uint64_t a = next_id++;
    const uint64_t tmp = next_id++;
    steps.push_back(r.Alloc(a, 4 << 20, true));
    steps.push_back(
        r.Op("cudnnConvolutionForward",
             std::vector<Access>{{kWeight, RecordedAccess::kRead}, {a, RecordedAccess::kWrite}}));
    if (extra_op) {
      steps.push_back(
          r.Op("cudaLaunchKernel", std::vector<Access>{{a, RecordedAccess::kReadWrite}}));
    }
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

// A Python loop (Note [Carried lifetimes] in iteration_tracker.h): the output and the loss are
// held by variables, so each iteration frees the previous iteration's after making its own.
TEST(OpStreamRecorderTest, CarriedTensorsBecomeAProfile) {
  OpStreamRecorder r({.marker = IterationMarker::kAuto, .profile_iterations = 2});
  constexpr uint64_t kWeight = 1;
  r.Alloc(kWeight, 8 << 20, true);
  uint64_t next_id = 100;
  std::optional<uint64_t> prev_out, prev_loss;
  bool ready = false;
  for (int i = 0; i < 8 && !ready; ++i) {
    std::vector<IterationTracker::Step> steps;
    const uint64_t out = next_id++;
    const uint64_t loss = next_id++;
    steps.push_back(r.Alloc(out, 4 << 20, true));
    steps.push_back(r.Op("forward", std::vector<Access>{{kWeight, RecordedAccess::kRead},
                                                        {out, RecordedAccess::kWrite}}));
    steps.push_back(r.Alloc(loss, 1 << 20, true));
    steps.push_back(r.Op(
        "loss", std::vector<Access>{{out, RecordedAccess::kRead}, {loss, RecordedAccess::kWrite}}));
    if (prev_loss) steps.push_back(*r.Free(*prev_loss));
    if (prev_out) steps.push_back(*r.Free(*prev_out));
    steps.push_back(r.Op("backward", std::vector<Access>{{out, RecordedAccess::kRead},
                                                         {loss, RecordedAccess::kRead},
                                                         {kWeight, RecordedAccess::kReadWrite}}));
    prev_out = out;
    prev_loss = loss;
    for (const IterationTracker::Step& s : steps) ready |= s.profile_ready;
  }
  ASSERT_TRUE(ready);
  EXPECT_GT(r.tracker().reference_carried(), 0u);
  OpStreamRecorder::Positions positions;
  absl::StatusOr<RecordedIteration> it = r.Reference(0, &positions);
  ASSERT_TRUE(it.ok()) << it.status();
  absl::StatusOr<BuiltProfile> built = BuildProfile(*it);
  ASSERT_TRUE(built.ok()) << built.status();
  // Whatever the rotation: the tensors the window frees but did not make are persistent ones
  // freed in it (allocated in the previous iteration), as many as the window makes and leaves
  // live at its end, and their sizes are known.
  int carried_in = 0, carried_out = 0;
  for (size_t t = 0; t < built->profile.tensors.size(); ++t) {
    const Tensor& tensor = built->profile.tensors[t];
    if (built->tensor_allocation[t] == kWeight || built->tensor_allocation[t] == kOtherAllocation) {
      continue;
    }
    if (tensor.alloc_before == kBeforeIteration) {
      ++carried_in;
      EXPECT_NE(tensor.free_after, kAfterIteration);
      EXPECT_GT(tensor.bytes, 0);
    } else if (tensor.free_after == kAfterIteration) {
      ++carried_out;
    }
  }
  EXPECT_GT(carried_in, 0);
  EXPECT_EQ(carried_in, carried_out);
  EXPECT_EQ(static_cast<size_t>(carried_out), r.tracker().reference_carried());
  // Each carried-in allocation has its successor: the allocation of its size that the window
  // makes and leaves live (Note [Carried slots] in core/exec/plan_actions.h).
  ASSERT_EQ(positions.carried.size(), static_cast<size_t>(carried_in));
  for (const auto& [allocation, position] : positions.carried) {
    int ordinal = -1;
    for (size_t k = 0; k < positions.managed_allocs.size(); ++k) {
      if (positions.managed_allocs[k] == position) ordinal = static_cast<int>(k);
    }
    ASSERT_GE(ordinal, 0) << allocation;
    TensorId in = -1, out = -1;
    for (size_t t = 0; t < built->profile.tensors.size(); ++t) {
      if (built->tensor_allocation[t] == allocation) in = static_cast<TensorId>(t);
      if (built->tensor_alloc_ordinal[t] == ordinal) out = static_cast<TensorId>(t);
    }
    ASSERT_GE(in, 0);
    ASSERT_GE(out, 0);
    EXPECT_EQ(built->profile.tensors[static_cast<size_t>(out)].free_after, kAfterIteration);
    EXPECT_EQ(built->profile.tensors[static_cast<size_t>(out)].bytes,
              built->profile.tensors[static_cast<size_t>(in)].bytes);
  }
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

// Note [Stable kernel accesses]: a kernel whose accesses were guessed from its parameter words
// writes the iteration's map `a` and has a stale word that points at one of two weights made
// before the loop, chosen per iteration by `stale`.
struct StaleWordLoop {
  OpStreamRecorder r{{.marker = IterationMarker::kAuto, .profile_iterations = 2}};
  static constexpr uint64_t kWeights[2] = {1, 2};
  uint64_t next_id = 100;

  StaleWordLoop() {
    for (uint64_t w : kWeights) r.Alloc(w, 8 << 20, true);
  }

  // Returns whether the iteration completed profiling (or a recorded iteration).
  bool Iteration(int stale) {
    const uint64_t a = next_id++;
    bool ready = r.Alloc(a, 4 << 20, true).profile_ready;
    const std::vector<Access> words = {{a, RecordedAccess::kReadWrite},
                                       {kWeights[stale], RecordedAccess::kReadWrite}};
    ready |= r.Op("reduce_kernel", words, /*replay_capable=*/false, /*exact_accesses=*/false)
                 .profile_ready;
    ready |= r.Op("cudnnSoftmaxForward", std::vector<Access>{{a, RecordedAccess::kRead}})
                 .profile_ready;
    ready |= r.Free(a)->profile_ready;
    return ready;
  }

  // Iterations with `stale` words until one completes profiling; false after `max`.
  bool UntilReady(const std::vector<int>& stale, int max = 4) {
    for (int i = 0; i < max; ++i) {
      if (Iteration(stale[static_cast<size_t>(i) % stale.size()])) return true;
    }
    return false;
  }

  // The allocations the profile's kernel op touches.
  std::vector<uint64_t> KernelAccesses(const RecordedIteration& it) {
    std::vector<uint64_t> touched;
    for (const RecordedAccess& a : it.ops[0].accesses) touched.push_back(a.allocation);
    return touched;
  }
};

TEST(OpStreamRecorderTest, AKernelWordThatPointsElsewhereInTheIterationBeforeIsLeftOut) {
  StaleWordLoop loop;
  ASSERT_TRUE(loop.UntilReady({0, 1}));
  absl::StatusOr<RecordedIteration> it = loop.r.Reference(0);
  ASSERT_TRUE(it.ok()) << it.status();
  ASSERT_EQ(it->ops.size(), 2u);
  // The map the kernel writes in both iterations stays; the weight its stale word hit is not
  // the one the iteration before hit.
  const uint64_t map = it->events[0].allocation;
  EXPECT_THAT(loop.KernelAccesses(*it), testing::ElementsAre(map));
  EXPECT_EQ(it->unstable_accesses, 1);
  EXPECT_TRUE(BuildProfile(*it).ok());
}

TEST(OpStreamRecorderTest, AKernelWordThatPointsAtTheSameTensorIsKept) {
  StaleWordLoop loop;
  ASSERT_TRUE(loop.UntilReady({1}));
  absl::StatusOr<RecordedIteration> it = loop.r.Reference(0);
  ASSERT_TRUE(it.ok()) << it.status();
  const uint64_t map = it->events[0].allocation;
  EXPECT_THAT(loop.KernelAccesses(*it), testing::ElementsAre(map, StaleWordLoop::kWeights[1]));
  EXPECT_EQ(it->unstable_accesses, 0);
}

// The swap-all pass's iteration (RecordNextIteration) is compared with the window it measures
// again.
TEST(OpStreamRecorderTest, ARecordedIterationKeepsTheKernelAccessesTheReferenceMade) {
  for (const int again : {0, 1}) {
    StaleWordLoop loop;
    ASSERT_TRUE(loop.UntilReady({0}));
    loop.r.RecordNextIteration();
    ASSERT_TRUE(loop.UntilReady({again}));
    absl::StatusOr<RecordedIteration> it = loop.r.Reference(0);
    ASSERT_TRUE(it.ok()) << it.status();
    const uint64_t map = it->events[0].allocation;
    if (again == 0) {
      EXPECT_THAT(loop.KernelAccesses(*it),
                  testing::ElementsAre(map, StaleWordLoop::kWeights[0]));
      EXPECT_EQ(it->unstable_accesses, 0);
    } else {
      EXPECT_THAT(loop.KernelAccesses(*it), testing::ElementsAre(map));
      EXPECT_EQ(it->unstable_accesses, 1);
    }
  }
}

// Exact accesses (a library call's) are never left out, whatever the iteration before touched.
TEST(OpStreamRecorderTest, ExactAccessesAreNeverLeftOut) {
  Loop loop;
  ASSERT_TRUE(loop.IterateUntilReady().has_value());
  absl::StatusOr<RecordedIteration> it = loop.r.Reference(0);
  ASSERT_TRUE(it.ok()) << it.status();
  EXPECT_EQ(it->unstable_accesses, 0);
  EXPECT_EQ(it->ops[0].accesses.size(), 2u);
}

// Note [Unmatched ops]: an op passed over in the recorded iteration is left out of the profile,
// whose positions are then the reference's.
TEST(OpStreamRecorderTest, AnOpPassedOverInTheRecordedIterationIsLeftOut) {
  Loop loop;
  ASSERT_TRUE(loop.IterateUntilReady().has_value());
  const auto [first, end] = loop.r.tracker().ReferenceWindow();
  loop.r.RecordNextIteration();
  loop.extra_op = true;
  ASSERT_TRUE(loop.IterateUntilReady().has_value());
  const auto [again_first, again_end] = loop.r.tracker().ReferenceWindow();
  EXPECT_EQ(again_end - again_first, end - first + 1);
  EXPECT_EQ(loop.r.tracker().ReferenceSkips().size(), 1u);
  EXPECT_EQ(loop.r.tracker().departures(), 0u);
  OpStreamRecorder::Positions positions;
  absl::StatusOr<RecordedIteration> it = loop.r.Reference(0, &positions);
  ASSERT_TRUE(it.ok()) << it.status();
  ASSERT_EQ(it->ops.size(), 3u);
  const std::vector<StreamEvent>& ref = loop.r.tracker().Reference();
  for (size_t i = 0; i < it->ops.size(); ++i) {
    EXPECT_NE(it->ops[i].name, "cudaLaunchKernel");
    const StreamEvent& e = ref[static_cast<size_t>(positions.ops[i])];
    EXPECT_EQ(e.kind, StreamEvent::Kind::kOp);
  }
  ASSERT_EQ(positions.managed_allocs.size(), 1u);
  EXPECT_EQ(ref[static_cast<size_t>(positions.managed_allocs[0])].kind, StreamEvent::Kind::kAlloc);
  // Positions are the reference's: strictly increasing and inside it.
  EXPECT_LT(positions.ops.back(), static_cast<int64_t>(ref.size()));
}

// Note [Unprofiled inputs]: each op learns when what it read outside the profile (allocations
// below POOCH_MIN_SWAP_BYTES) first changes: at a later op's write, or, for a free between two
// ops, at the earlier of them. A small input nothing changes, and managed inputs, set nothing.
TEST(OpStreamRecorderTest, OpsKnowWhenTheirUnprofiledInputsChange) {
  OpStreamRecorder r{{.marker = IterationMarker::kAuto, .profile_iterations = 2}};
  constexpr uint64_t kFilter = 1;  // small, allocated before the loop, never written
  constexpr uint64_t kWeight = 2;  // managed
  r.Alloc(kFilter, 4096, false);
  r.Alloc(kWeight, 4 << 20, true);
  uint64_t next = 100;
  std::optional<uint64_t> ready;
  for (int i = 0; i < 3 && !ready.has_value(); ++i) {
    const uint64_t routed = next++, scratch = next++, a = next++, b = next++;
    std::vector<IterationTracker::Step> steps;
    steps.push_back(r.Alloc(routed, 4096, false));
    steps.push_back(r.Alloc(scratch, 8192, false));
    steps.push_back(r.Alloc(a, 2 << 20, true));
    steps.push_back(r.Alloc(b, 2 << 20, true));
    // 0: a = routed x weight
    steps.push_back(r.Op("cublasSgemm_v2", std::vector<Access>{{routed, RecordedAccess::kRead},
                                                               {kWeight, RecordedAccess::kRead},
                                                               {a, RecordedAccess::kWrite}}));
    // 1: b = filter * scratch (scratch then overwritten by op 2)
    steps.push_back(
        r.Op("cudnnConvolutionForward", std::vector<Access>{{kFilter, RecordedAccess::kRead},
                                                            {scratch, RecordedAccess::kRead},
                                                            {b, RecordedAccess::kWrite}}));
    // 2: reads a, writes scratch
    steps.push_back(
        r.Op("cudnnSoftmaxForward",
             std::vector<Access>{{a, RecordedAccess::kRead}, {scratch, RecordedAccess::kWrite}}));
    // 3: reads a and b
    steps.push_back(r.Op("cudnnAddTensor", std::vector<Access>{{a, RecordedAccess::kRead},
                                                               {b, RecordedAccess::kReadWrite}}));
    steps.push_back(*r.Free(routed));  // between ops 3 and 4
    // 4: reads the filter only, in place on scratch
    steps.push_back(
        r.Op("cudnnActivationForward", std::vector<Access>{{kFilter, RecordedAccess::kRead},
                                                           {scratch, RecordedAccess::kReadWrite}}));
    steps.push_back(*r.Free(scratch));
    steps.push_back(*r.Free(a));
    steps.push_back(*r.Free(b));
    for (const IterationTracker::Step& s : steps) {
      if (s.profile_ready) ready = s.seq;
    }
  }
  ASSERT_TRUE(ready.has_value());
  absl::StatusOr<RecordedIteration> it = r.Reference(0);
  ASSERT_TRUE(it.ok()) << it.status();
  ASSERT_EQ(it->ops.size(), 5u);
  EXPECT_EQ(it->ops[0].unprofiled_inputs_until, 3);  // routed freed after op 3
  EXPECT_EQ(it->ops[1].unprofiled_inputs_until, 2);  // scratch written by op 2
  EXPECT_EQ(it->ops[2].unprofiled_inputs_until, -1);
  EXPECT_EQ(it->ops[3].unprofiled_inputs_until, -1);  // managed inputs only
  EXPECT_EQ(it->ops[4].unprofiled_inputs_until, 4);   // reads what it writes
  absl::StatusOr<BuiltProfile> built = BuildProfile(*it);
  ASSERT_TRUE(built.ok()) << built.status();
  EXPECT_EQ(built->profile.ops[0].unprofiled_inputs_until, 3);
}
// Note [Unprofiled inputs]: a batch normalisation writes its managed output and reads and writes its
// small running statistics. Its replay rebuilds the output and leaves the statistics alone, so
// neither its own update of them nor the next one ends its window; what it reads only (its
// scale) still does when an op writes it.
TEST(OpStreamRecorderTest, StatisticsAnOpUpdatesInPlaceDoNotEndItsReplayWindow) {
  OpStreamRecorder r{{.marker = IterationMarker::kAuto, .profile_iterations = 2}};
  constexpr uint64_t kStats = 1;  // small: running mean and variance
  constexpr uint64_t kScale = 2;  // small, written by the optimizer's op
  constexpr uint64_t kInput = 3;  // managed
  r.Alloc(kStats, 4096, false);
  r.Alloc(kScale, 4096, false);
  r.Alloc(kInput, 4 << 20, true);
  uint64_t next = 100;
  std::optional<uint64_t> ready;
  for (int i = 0; i < 3 && !ready.has_value(); ++i) {
    const uint64_t y = next++, z = next++;
    std::vector<IterationTracker::Step> steps;
    steps.push_back(r.Alloc(y, 2 << 20, true));
    // 0: y = batchnorm(input), running statistics updated in place
    steps.push_back(r.Op("cudnnBatchNormalizationForwardTraining",
                         std::vector<Access>{{kInput, RecordedAccess::kRead},
                                             {kScale, RecordedAccess::kRead},
                                             {kStats, RecordedAccess::kReadWrite},
                                             {y, RecordedAccess::kWrite}}));
    steps.push_back(r.Alloc(z, 2 << 20, true));
    // 1: z = relu(y)
    steps.push_back(
        r.Op("relu", std::vector<Access>{{y, RecordedAccess::kRead}, {z, RecordedAccess::kWrite}}));
    // 2: reads the statistics (an evaluation's copy of them)
    steps.push_back(r.Op("read_stats", std::vector<Access>{{z, RecordedAccess::kRead},
                                                           {kStats, RecordedAccess::kRead}}));
    // 3: the optimizer's update of the scale, in place
    steps.push_back(r.Op("update", std::vector<Access>{{z, RecordedAccess::kRead},
                                                       {kScale, RecordedAccess::kReadWrite}}));
    steps.push_back(*r.Free(y));
    steps.push_back(*r.Free(z));
    for (const IterationTracker::Step& s : steps) {
      if (s.profile_ready) ready = s.seq;
    }
  }
  ASSERT_TRUE(ready.has_value());
  absl::StatusOr<RecordedIteration> it = r.Reference(0);
  ASSERT_TRUE(it.ok()) << it.status();
  ASSERT_EQ(it->ops.size(), 4u);
  EXPECT_EQ(it->ops[0].unprofiled_inputs_until, 3);   // its scale, written by op 3
  EXPECT_EQ(it->ops[2].unprofiled_inputs_until, -1);  // statistics not written again
  EXPECT_EQ(it->ops[3].unprofiled_inputs_until, 3);   // no managed write: reads what it writes
}

// Note [Unprofiled inputs], end to end: convolution, batch normalisation (running statistics updated
// in place) and a ReLU whose input is freed at once; backward reads the ReLU's output and the
// convolution's. The ReLU's output is recomputable: its freed input is rebuilt by replaying the
// normalisation from the convolution's output, which backward keeps anyway.
TEST(OpStreamRecorderTest, AReluAfterBatchNormalisationIsRecomputable) {
  OpStreamRecorder r{{.marker = IterationMarker::kAuto, .profile_iterations = 2}};
  constexpr uint64_t kStats = 1;  // small
  constexpr uint64_t kInput = 2;  // managed, persistent
  r.Alloc(kStats, 4096, false);
  r.Alloc(kInput, 4 << 20, true);
  uint64_t next = 100;
  std::optional<uint64_t> ready;
  for (int i = 0; i < 3 && !ready.has_value(); ++i) {
    const uint64_t conv = next++, bn = next++, relu = next++, grad = next++, grad_in = next++;
    std::vector<IterationTracker::Step> steps;
    auto op = [&](const char* name, std::vector<Access> accesses) {
      steps.push_back(r.Op(name, accesses, /*replay_capable=*/true));
    };
    steps.push_back(r.Alloc(conv, 2 << 20, true));
    op("conv", {{kInput, RecordedAccess::kRead}, {conv, RecordedAccess::kWrite}});
    steps.push_back(r.Alloc(bn, 2 << 20, true));
    op("bn", {{conv, RecordedAccess::kRead},
              {kStats, RecordedAccess::kReadWrite},
              {bn, RecordedAccess::kWrite}});
    steps.push_back(r.Alloc(relu, 2 << 20, true));
    op("relu", {{bn, RecordedAccess::kRead}, {relu, RecordedAccess::kWrite}});
    steps.push_back(*r.Free(bn));
    op("pool", {{relu, RecordedAccess::kRead}});
    op("loss", {{kInput, RecordedAccess::kRead}});
    steps.push_back(r.Alloc(grad, 2 << 20, true));
    op("relu_backward", {{relu, RecordedAccess::kRead}, {grad, RecordedAccess::kWrite}});
    steps.push_back(r.Alloc(grad_in, 2 << 20, true));
    op("bn_backward", {{conv, RecordedAccess::kRead},
                       {grad, RecordedAccess::kRead},
                       {kStats, RecordedAccess::kRead},
                       {grad_in, RecordedAccess::kWrite}});
    for (uint64_t a : {relu, grad, conv, grad_in}) steps.push_back(*r.Free(a));
    for (const IterationTracker::Step& s : steps) {
      if (s.profile_ready) ready = s.seq;
    }
  }
  ASSERT_TRUE(ready.has_value());
  absl::StatusOr<RecordedIteration> it = r.Reference(0);
  ASSERT_TRUE(it.ok()) << it.status();
  absl::StatusOr<BuiltProfile> built = BuildProfile(*it);
  ASSERT_TRUE(built.ok()) << built.status();
  const Profile& p = built->profile;
  ASSERT_EQ(p.ops.size(), 7u);
  ASSERT_EQ(p.ops[2].name, "relu");
  const TensorId relu = p.ops[2].writes.at(0);
  bool found = false;
  for (const Candidate& c : FindCandidates(p, nullptr, 0, false, false)) {
    if (c.tensor != relu || c.open != 3) continue;
    found = true;
    EXPECT_EQ(c.close, 5);  // relu_backward
    EXPECT_EQ(c.producer, 2);
    EXPECT_TRUE(c.recomputable);
  }
  EXPECT_TRUE(found);
}

// Note [Unprofiled inputs]: a batch norm reads and writes its small running statistics besides
// writing its managed output; its replay (output written again from x, scale and bias) does not
// read them, so they end no replay window, theirs or a later op's. An op that reads and writes a
// small allocation and writes nothing managed still ends its own window.
TEST(OpStreamRecorderTest, ASmallAllocationAnOpWithAManagedOutputReadsAndWritesIsNoInput) {
  OpStreamRecorder r{{.marker = IterationMarker::kAuto, .profile_iterations = 2}};
  constexpr uint64_t kScale = 1;    // small, never written
  constexpr uint64_t kRunning = 2;  // small: the running statistics, read and written
  r.Alloc(kScale, 4096, false);
  r.Alloc(kRunning, 4096, false);
  uint64_t next = 100;
  std::optional<uint64_t> ready;
  for (int i = 0; i < 3 && !ready.has_value(); ++i) {
    const uint64_t x = next++, y = next++, counter = next++;
    std::vector<IterationTracker::Step> steps;
    steps.push_back(r.Alloc(x, 2 << 20, true));
    steps.push_back(r.Alloc(y, 2 << 20, true));
    steps.push_back(r.Alloc(counter, 256, false));
    // 0: x written
    steps.push_back(r.Op("cudaMemcpy", std::vector<Access>{{x, RecordedAccess::kWrite}}));
    // 1: y = bn(x, scale), running statistics updated in place
    steps.push_back(r.Op("cudnnBatchNormalizationForwardTraining",
                         std::vector<Access>{{x, RecordedAccess::kRead},
                                             {y, RecordedAccess::kWrite},
                                             {kScale, RecordedAccess::kRead},
                                             {kRunning, RecordedAccess::kReadWrite}}));
    // 2: in place on a small counter, reading y
    steps.push_back(r.Op(
        "cudaLaunchKernel",
        std::vector<Access>{{y, RecordedAccess::kRead}, {counter, RecordedAccess::kReadWrite}}));
    // 3: reads y
    steps.push_back(
        r.Op("cudnnActivationForward", std::vector<Access>{{y, RecordedAccess::kRead}}));
    steps.push_back(*r.Free(counter));
    steps.push_back(*r.Free(x));
    steps.push_back(*r.Free(y));
    for (const IterationTracker::Step& s : steps) {
      if (s.profile_ready) ready = s.seq;
    }
  }
  ASSERT_TRUE(ready.has_value());
  absl::StatusOr<RecordedIteration> it = r.Reference(0);
  ASSERT_TRUE(it.ok()) << it.status();
  ASSERT_EQ(it->ops.size(), 4u);
  EXPECT_EQ(it->ops[1].unprofiled_inputs_until, -1);  // the running statistics are no input
  EXPECT_EQ(it->ops[2].unprofiled_inputs_until, 2);   // reads what it writes, no managed output
  absl::StatusOr<BuiltProfile> built = BuildProfile(*it);
  ASSERT_TRUE(built.ok()) << built.status();
  EXPECT_EQ(built->profile.ops[1].unprofiled_inputs_until, -1);
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
