#include "core/profile/profile_builder.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/plan/plan.h"
#include "core/model/profile_testutil.h"
#include "core/profile/profile_builder_testutil.h"
#include "core/sim/sim.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

using ::pooch::testing::ConvNet;
using ::pooch::testing::ConvNetIds;
using ::pooch::testing::Recorder;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

// The tensor that allocation `a` became (the last one, should the id be reused).
TensorId Of(const BuiltProfile& b, uint64_t a) {
  for (TensorId t = static_cast<TensorId>(b.tensor_allocation.size()) - 1; t >= 0; --t) {
    if (b.tensor_allocation[t] == a) return t;
  }
  ADD_FAILURE() << "no tensor for allocation " << a;
  return 0;
}

BuiltProfile Build(const RecordedIteration& it, const ProfileBuildOptions& o = {}) {
  absl::StatusOr<BuiltProfile> b = BuildProfile(it, o);
  EXPECT_TRUE(b.ok()) << b.status();
  return b.ok() ? *std::move(b) : BuiltProfile{};
}

TEST(ProfileBuilderTest, OpKindFromApiName) {
  EXPECT_EQ(OpKindFromApiName("cudnnConvolutionForward"), OpKind::kConv);
  EXPECT_EQ(OpKindFromApiName("cudnnConvolutionBackwardFilter"), OpKind::kConv);
  EXPECT_EQ(OpKindFromApiName("cudnnBatchNormalizationForwardTraining"), OpKind::kBatchNorm);
  EXPECT_EQ(OpKindFromApiName("cudnnActivationBackward"), OpKind::kActivation);
  EXPECT_EQ(OpKindFromApiName("cudnnPoolingForward"), OpKind::kPool);
  EXPECT_EQ(OpKindFromApiName("cublasSgemm_v2"), OpKind::kFullyConnected);
  EXPECT_EQ(OpKindFromApiName("cublasGemmEx"), OpKind::kFullyConnected);
  EXPECT_EQ(OpKindFromApiName("cublasSgemmStridedBatched"), OpKind::kFullyConnected);
  EXPECT_EQ(OpKindFromApiName("cublasSaxpy_v2"), OpKind::kOther);
  EXPECT_EQ(OpKindFromApiName("cudnnAddTensor"), OpKind::kAdd);
  EXPECT_EQ(OpKindFromApiName("cudnnOpTensor"), OpKind::kAdd);
  EXPECT_EQ(OpKindFromApiName("cudnnSoftmaxForward"), OpKind::kSoftmax);
  EXPECT_EQ(OpKindFromApiName("cudaMemcpyAsync"), OpKind::kCopy);
  EXPECT_EQ(OpKindFromApiName("cuMemsetD32Async"), OpKind::kCopy);
  EXPECT_EQ(OpKindFromApiName("cuLaunchKernel"), OpKind::kOther);
}

TEST(ProfileBuilderTest, ConvNetTensorsAndLifetimes) {
  ConvNetIds k;
  const RecordedIteration it = ConvNet(3, 1 << 20, &k, /*other_bytes=*/3 << 20);
  const BuiltProfile b = Build(it);
  const Profile& p = b.profile;
  ASSERT_TRUE(p.Validate().ok());
  ASSERT_EQ(p.ops.size(), it.ops.size());
  int allocs = 0;
  for (const RecordedIteration::Event& e : it.events) {
    allocs += e.kind == RecordedIteration::Event::kAlloc;
  }
  // One tensor per persistent allocation, one for "other", one per allocation in the iteration.
  ASSERT_EQ(p.tensors.size(), it.persistent.size() + 1 + allocs);
  ASSERT_EQ(b.tensor_allocation.size(), p.tensors.size());
  ASSERT_EQ(b.tensor_alloc_ordinal.size(), p.tensors.size());

  // Persistent: before the iteration, never freed, ordinal -1.
  for (uint64_t w : k.w) {
    const Tensor& t = p.tensors[Of(b, w)];
    EXPECT_EQ(t.alloc_before, kBeforeIteration);
    EXPECT_EQ(t.free_after, kAfterIteration);
    EXPECT_EQ(t.bytes, 64 << 10);
    EXPECT_EQ(b.tensor_alloc_ordinal[t.id], -1);
    EXPECT_FALSE(t.feature_map);
  }
  // "other": persistent, untouched, never a feature map.
  const TensorId other = Of(b, kOtherAllocation);
  EXPECT_EQ(p.tensors[other].name, "other");
  EXPECT_EQ(p.tensors[other].bytes, 3 << 20);
  EXPECT_EQ(p.tensors[other].alloc_before, kBeforeIteration);
  EXPECT_FALSE(p.tensors[other].feature_map);

  // Ordinals follow the kAlloc events: x is the first allocation, y[0] the second.
  EXPECT_EQ(b.tensor_alloc_ordinal[Of(b, k.x)], 0);
  EXPECT_EQ(b.tensor_alloc_ordinal[Of(b, k.y[0])], 1);
  EXPECT_EQ(b.tensor_alloc_ordinal[Of(b, k.a[0])], 2);

  // Allocated before the op that follows the kAlloc, freed after the op before the kFree.
  const Tensor& x = p.tensors[Of(b, k.x)];
  EXPECT_EQ(x.alloc_before, k.copy_op);
  EXPECT_EQ(x.free_after, k.filter_op[0]);
  for (int i = 0; i < 3; ++i) {
    const Tensor& y = p.tensors[Of(b, k.y[i])];
    EXPECT_EQ(y.alloc_before, k.conv_op[i]) << i;
    EXPECT_EQ(y.free_after, k.relu_back_op[i]) << i;
    EXPECT_EQ(y.bytes, 1 << 20);
  }
  // The logits are freed right after softmax forward.
  const Tensor& logits = p.tensors[Of(b, k.logits)];
  EXPECT_EQ(logits.alloc_before, k.softmax_op - 1);
  EXPECT_EQ(logits.free_after, k.softmax_op);
}

TEST(ProfileBuilderTest, ConvNetPhasesAndFeatureMaps) {
  ConvNetIds k;
  const BuiltProfile b = Build(ConvNet(3, 1 << 20, &k));
  const Profile& p = b.profile;
  for (OpIndex i = 0; i < static_cast<OpIndex>(p.ops.size()); ++i) {
    // The turn is softmax backward; the SGD updates after the last feature-map use are kOther.
    const Phase want = i < k.turn_op           ? Phase::kForward
                       : i < k.first_update_op ? Phase::kBackward
                                               : Phase::kOther;
    EXPECT_EQ(p.ops[i].phase, want) << i << " " << p.ops[i].name;
  }
  EXPECT_EQ(k.first_update_op, k.filter_op[0] + 1);
  std::vector<TensorId> maps;
  for (const Tensor& t : p.tensors) {
    if (t.feature_map) maps.push_back(t.id);
  }
  EXPECT_THAT(maps,
              UnorderedElementsAre(Of(b, k.x), Of(b, k.y[0]), Of(b, k.a[0]), Of(b, k.y[1]),
                                   Of(b, k.a[1]), Of(b, k.y[2]), Of(b, k.a[2]), Of(b, k.prob)));
  // The planner sees the same maps as candidates (each has a forward and a backward use).
  EXPECT_EQ(FindCandidates(p).size(), maps.size());
  // Freed inside forward, and allocated at the turn: not feature maps.
  EXPECT_FALSE(p.tensors[Of(b, k.logits)].feature_map);
  EXPECT_FALSE(p.tensors[Of(b, k.dlogits)].feature_map);
}

TEST(ProfileBuilderTest, ConvNetReadsWritesAndReplayable) {
  ConvNetIds k;
  const RecordedIteration it = ConvNet(3, 1 << 20, &k);
  const BuiltProfile b = Build(it);
  const Profile& p = b.profile;
  const Op& conv1 = p.ops[k.conv_op[1]];
  EXPECT_EQ(conv1.kind, OpKind::kConv);
  EXPECT_THAT(conv1.reads, ElementsAre(Of(b, k.a[0]), Of(b, k.w[1])));
  EXPECT_THAT(conv1.writes, ElementsAre(Of(b, k.y[1])));
  // The in-place SGD update reads and writes the weight.
  const Op& update = p.ops[k.first_update_op];
  EXPECT_THAT(update.reads, UnorderedElementsAre(Of(b, k.dw[0]), Of(b, k.w[0])));
  EXPECT_THAT(update.writes, ElementsAre(Of(b, k.w[0])));

  // Default horizon (end of backward): the weights are written only after it, so convolutions
  // replay; the input copy is not replay-capable.
  EXPECT_FALSE(p.ops[k.copy_op].replayable);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(p.ops[k.conv_op[i]].replayable) << i;
    EXPECT_TRUE(p.ops[k.relu_op[i]].replayable) << i;
  }
  // End of iteration: every op that reads a parameter the optimizer updates is not replayable.
  const BuiltProfile strict = Build(it, {.replay_horizon = ReplayHorizon::kEndOfIteration});
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(strict.profile.ops[k.conv_op[i]].replayable) << i;
    EXPECT_TRUE(strict.profile.ops[k.relu_op[i]].replayable) << i;
  }
  EXPECT_FALSE(strict.profile.ops[k.softmax_op - 1].replayable);  // the gemm reads wfc
  // What the planner makes of it: a relu output is recomputable, the copied-in input is not.
  int seen = 0;
  for (const FeatureMapInfo& f : FindCandidates(p)) {
    if (f.tensor == Of(b, k.a[1])) {
      EXPECT_TRUE(f.recomputable);
      ++seen;
    }
    if (f.tensor == Of(b, k.x)) {
      EXPECT_FALSE(f.recomputable);
      ++seen;
    }
  }
  EXPECT_EQ(seen, 2);
}

TEST(ProfileBuilderTest, InPlaceOpAndLaterWriteWithinBackward) {
  Recorder r;
  const uint64_t scale = r.Persistent(4096);
  const uint64_t t = r.Alloc(1 << 20);
  const uint64_t u = r.Alloc(1 << 20);
  r.Op("cudnnConvolutionForward", 10, {scale}, {t});         // 0
  r.Op("cudnnActivationForward", 10, {}, {}, {t});           // 1: in place
  r.Op("cudnnOpTensor", 10, {t, scale}, {u});                // 2: reads scale
  r.Op("cudnnActivationBackward", 10, {t, u}, {}, {scale});  // 3: writes scale
  r.Free(t);
  r.Free(u);
  const BuiltProfile b = Build(r.iteration());
  const Profile& p = b.profile;
  const TensorId tt = Of(b, t), ts = Of(b, scale);
  EXPECT_THAT(p.ops[1].reads, ElementsAre(tt));
  EXPECT_THAT(p.ops[1].writes, ElementsAre(tt));
  // In place: the op's own output does not count as a changed input.
  EXPECT_TRUE(p.ops[1].replayable);
  // Ops 0 and 2 read `scale`, which op 3 (backward, before the horizon) writes.
  EXPECT_FALSE(p.ops[0].replayable);
  EXPECT_FALSE(p.ops[2].replayable);
  EXPECT_TRUE(p.ops[3].replayable);
  EXPECT_EQ(p.ops[3].phase, Phase::kBackward);
  EXPECT_TRUE(p.tensors[tt].feature_map);
  EXPECT_FALSE(p.tensors[ts].feature_map);
  // The in-place writer is a second forward writer: the map is a candidate, not recomputable.
  const std::vector<FeatureMapInfo> cands = FindCandidates(p);
  ASSERT_EQ(cands.size(), 2u);
  for (const FeatureMapInfo& f : cands) EXPECT_FALSE(f.recomputable) << f.tensor;
}

TEST(ProfileBuilderTest, UntouchedAllocationStillHoldsMemory) {
  Recorder r;
  const uint64_t a = r.Alloc(1 << 20);
  r.Op("cudaMemsetAsync", 1, {}, {a});  // 0
  const uint64_t big = r.Alloc(64 << 20);
  const uint64_t span = r.Alloc(8 << 20);
  r.Free(big);                                  // allocated and freed between ops 0 and 1
  r.Op("cudnnActivationForward", 1, {a}, {a});  // 1
  r.Op("cudnnActivationForward", 1, {a}, {a});  // 2
  r.Free(span);                                 // spans ops 1 and 2 untouched
  const uint64_t tail = r.Alloc(2 << 20);       // after the last op, never freed
  const BuiltProfile b = Build(r.iteration());
  const Profile& p = b.profile;
  const Tensor& tb = p.tensors[Of(b, big)];
  EXPECT_EQ(tb.alloc_before, 1);
  EXPECT_EQ(tb.free_after, 1);
  const Tensor& ts = p.tensors[Of(b, span)];
  EXPECT_EQ(ts.alloc_before, 1);
  EXPECT_EQ(ts.free_after, 2);
  const Tensor& tt = p.tensors[Of(b, tail)];
  EXPECT_EQ(tt.alloc_before, 2);
  EXPECT_EQ(tt.free_after, kAfterIteration);
  MachineModel m = pooch::testing::TestMachine(int64_t{1} << 30);
  const SimResult s = Simulate(p, m, KeepAllPlan(p));
  ASSERT_TRUE(s.feasible) << s.failure;
  EXPECT_EQ(s.peak_bytes, (1 << 20) + (64 << 20) + (8 << 20));
}

TEST(ProfileBuilderTest, FreeBeforeFirstOpAndReusedAllocationId) {
  RecordedIteration it;
  it.persistent.push_back({7, 4096});
  it.ops.resize(2);
  it.ops[0].name = "cudaMemsetAsync";
  it.ops[0].accesses = {{9, RecordedAccess::kWrite}};
  it.ops[1].name = "cudaMemsetAsync";
  it.ops[1].accesses = {{9, RecordedAccess::kWrite}};
  using E = RecordedIteration::Event;
  it.events = {{E::kFree, 0, 7, 0}, {E::kAlloc, 0, 9, 100}, {E::kOp, 0, 0, 0},
               {E::kFree, 0, 9, 0}, {E::kAlloc, 0, 9, 200}, {E::kOp, 1, 0, 0}};
  const BuiltProfile b = Build(it);
  const Profile& p = b.profile;
  ASSERT_EQ(p.tensors.size(), 3u);
  EXPECT_EQ(p.tensors[0].free_after, 0);  // freed before op 0: held during it
  EXPECT_EQ(p.tensors[1].bytes, 100);
  EXPECT_EQ(p.tensors[1].free_after, 0);
  EXPECT_EQ(p.tensors[2].bytes, 200);
  EXPECT_EQ(p.tensors[2].alloc_before, 1);
  EXPECT_EQ(b.tensor_alloc_ordinal[2], 1);
  EXPECT_THAT(p.ops[0].writes, ElementsAre(1));
  EXPECT_THAT(p.ops[1].writes, ElementsAre(2));
}

TEST(ProfileBuilderTest, ReadOfUninitialisedAllocationIsDroppedAndNotReplayable) {
  Recorder r;
  const uint64_t t = r.Alloc(1 << 20);
  r.Op("cudnnAddTensor", 1, {}, {}, {t});  // read-write of a fresh allocation
  r.Op("cudnnActivationForward", 1, {t}, {t});
  const BuiltProfile b = Build(r.iteration());
  EXPECT_TRUE(b.profile.ops[0].reads.empty());
  EXPECT_THAT(b.profile.ops[0].writes, ElementsAre(Of(b, t)));
  EXPECT_FALSE(b.profile.ops[0].replayable);
  EXPECT_TRUE(b.profile.ops[1].replayable);
}

TEST(ProfileBuilderTest, RejectsInconsistentRecordings) {
  EXPECT_THAT(BuildProfile(RecordedIteration{}).status().message(), HasSubstr("no ops"));
  {
    Recorder r;
    r.Op("cudnnActivationForward", 1, {42}, {});
    EXPECT_THAT(BuildProfile(r.iteration()).status().message(),
                HasSubstr("allocation 42 is neither persistent"));
  }
  {
    Recorder r;
    r.Op("a", 1, {}, {});
    r.Op("b", 1, {}, {});
    std::swap(r.iteration().events[0].op_index, r.iteration().events[1].op_index);
    EXPECT_THAT(BuildProfile(r.iteration()).status().message(), HasSubstr("expected op 0"));
  }
  {
    Recorder r;
    r.Op("a", 1, {}, {});
    r.iteration().ops.emplace_back();
    EXPECT_THAT(BuildProfile(r.iteration()).status().message(), HasSubstr("only 1 of 2 ops"));
  }
  {
    Recorder r;
    const uint64_t a = r.Alloc(10);
    r.iteration().events.push_back(r.iteration().events.back());
    r.Op("a", 1, {}, {a});
    EXPECT_THAT(BuildProfile(r.iteration()).status().message(),
                HasSubstr("allocated again before it was freed"));
  }
  {
    Recorder r;
    r.Op("a", 1, {}, {});
    r.Free(5);
    EXPECT_THAT(BuildProfile(r.iteration()).status().message(), HasSubstr("free of allocation 5"));
  }
  {
    Recorder r;
    r.Alloc(-1);
    r.Op("a", 1, {}, {});
    EXPECT_THAT(BuildProfile(r.iteration()).status().message(), HasSubstr("negative size"));
  }
  {
    Recorder r;
    r.Op("a", -1, {}, {});
    absl::Status s = BuildProfile(r.iteration()).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("ops[0].duration_us"));
  }
}

// A deeper net under a memory limit in-core does not meet: every policy but in-core plans it.
TEST(ProfileBuilderTest, EveryPolicyPlansABuiltProfileUnderATightLimit) {
  ConvNetIds k;
  const BuiltProfile b = Build(ConvNet(4, 4 << 20, &k, /*other_bytes=*/1 << 20));
  const Profile& p = b.profile;
  const size_t maps = FindCandidates(p).size();
  EXPECT_EQ(maps, 10u);  // x, 4 x (conv out, relu out), prob
  const MachineModel unbounded = pooch::testing::TestMachine(int64_t{1} << 40);
  const SimResult in_core = Simulate(p, unbounded, KeepAllPlan(p));
  ASSERT_TRUE(in_core.feasible);
  const MachineModel tight = pooch::testing::TestMachine(in_core.peak_bytes * 8 / 10);
  for (Policy policy : AllPolicies()) {
    absl::StatusOr<PlanResult> r = MakePlan(p, tight, policy);
    if (policy == Policy::kInCore) {
      EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
      continue;
    }
    if (policy == Policy::kOptimal && static_cast<int>(maps) > PlanOptions{}.optimal_max_maps) {
      continue;
    }
    ASSERT_TRUE(r.ok()) << PolicyName(policy) << ": " << r.status();
    EXPECT_LE(r->sim.peak_bytes, tight.memory_bytes) << PolicyName(policy);
    int moved = 0;
    for (Decision d : r->plan.decisions) moved += d != Decision::kKeep;
    EXPECT_GT(moved, 0) << PolicyName(policy);
  }
}

}  // namespace
}  // namespace pooch
