#include "core/profile/profile_builder.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/model/candidates.h"
#include "core/model/profile_testutil.h"
#include "core/plan/plan.h"
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

// The (open, close) of tensor t's idle intervals that do not wrap, in order.
std::vector<std::pair<OpIndex, OpIndex>> IntervalsOf(const std::vector<Candidate>& cands,
                                                     TensorId t) {
  std::vector<std::pair<OpIndex, OpIndex>> out;
  for (const Candidate& c : cands) {
    if (c.tensor == t && !c.wraps) out.emplace_back(c.open, c.close);
  }
  return out;
}

bool HasWrap(const std::vector<Candidate>& cands, TensorId t) {
  return std::any_of(cands.begin(), cands.end(),
                     [&](const Candidate& c) { return c.tensor == t && c.wraps; });
}

const Candidate* Find(const std::vector<Candidate>& cands, TensorId t, OpIndex open) {
  for (const Candidate& c : cands) {
    if (c.tensor == t && c.open == open && !c.wraps) return &c;
  }
  return nullptr;
}

int64_t Peak(const Profile& p) {
  const std::vector<int64_t> bytes = InCoreBytesPerOp(p);
  return *std::max_element(bytes.begin(), bytes.end());
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
  }
  // "other": persistent and untouched, so it has no idle interval to plan (no use at all).
  const TensorId other = Of(b, kOtherAllocation);
  EXPECT_EQ(p.tensors[other].name, "other");
  EXPECT_EQ(p.tensors[other].bytes, 3 << 20);
  EXPECT_EQ(p.tensors[other].alloc_before, kBeforeIteration);
  for (const Candidate& c : FindCandidates(p)) EXPECT_NE(c.tensor, other);

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

// Phases are labels from memory alone (LabelPhasesByPeak): the in-core peak is the last layer's
// ReLU backward, which allocates dy[2] while every map is still held; it and everything before
// it is forward, the rest backward (the SGD updates included: nothing is kOther any more).
TEST(ProfileBuilderTest, ConvNetPhasesByPeak) {
  ConvNetIds k;
  const BuiltProfile b = Build(ConvNet(3, 1 << 20, &k));
  const Profile& p = b.profile;
  const std::vector<int64_t> bytes = InCoreBytesPerOp(p);
  ASSERT_EQ(std::max_element(bytes.begin(), bytes.end()) - bytes.begin(), k.relu_back_op[2]);
  for (OpIndex i = 0; i < static_cast<OpIndex>(p.ops.size()); ++i) {
    const Phase want = i <= k.relu_back_op[2] ? Phase::kForward : Phase::kBackward;
    EXPECT_EQ(p.ops[i].phase, want) << i << " " << p.ops[i].name;
  }
}

// The candidates are the tensors' idle intervals (Note [Idle intervals] in candidates.cc), read
// off the recorded accesses.
TEST(ProfileBuilderTest, ConvNetCandidates) {
  ConvNetIds k;
  const BuiltProfile b = Build(ConvNet(3, 1 << 20, &k));
  const Profile& p = b.profile;
  const std::vector<Candidate> cands = FindCandidates(p);
  using I = std::pair<OpIndex, OpIndex>;
  const OpIndex gemm_forward = k.softmax_op - 1;
  const OpIndex gemm_filter = k.turn_op + 2;  // reads a[2] for the fc weight's gradient
  // Every forward map is idle from its last forward use to its first backward use; a[0] and
  // a[1] also between the next layer's filter gradient and their own ReLU backward (the data
  // gradient runs in between).
  EXPECT_THAT(IntervalsOf(cands, Of(b, k.x)), ElementsAre(I(k.conv_op[0], k.filter_op[0])));
  for (int i = 0; i < 3; ++i) {
    EXPECT_THAT(IntervalsOf(cands, Of(b, k.y[i])), ElementsAre(I(k.relu_op[i], k.relu_back_op[i])))
        << i;
  }
  for (int i = 0; i < 2; ++i) {
    EXPECT_THAT(IntervalsOf(cands, Of(b, k.a[i])),
                ElementsAre(I(k.conv_op[i + 1], k.filter_op[i + 1]),
                            I(k.filter_op[i + 1], k.relu_back_op[i])))
        << i;
  }
  EXPECT_THAT(IntervalsOf(cands, Of(b, k.a[2])), ElementsAre(I(gemm_forward, gemm_filter)));
  // Used by adjacent ops only: nothing to gain. (prob, read right after softmax by softmax
  // backward, was a "feature map" under the old rule, which keyed on the API name.)
  for (uint64_t a : {k.logits, k.prob, k.dlogits}) {
    EXPECT_THAT(IntervalsOf(cands, Of(b, a)), ::testing::IsEmpty()) << a;
  }
  // Gradients are consumed by the next op, except the last layer's: the fc weight gradient runs
  // between the op that writes da[2] and the ReLU backward that reads it.
  for (int i = 0; i < 3; ++i) {
    EXPECT_THAT(IntervalsOf(cands, Of(b, k.dy[i])), ::testing::IsEmpty()) << i;
  }
  for (int i = 0; i < 2; ++i) {
    EXPECT_THAT(IntervalsOf(cands, Of(b, k.da[i])), ::testing::IsEmpty()) << i;
  }
  EXPECT_THAT(IntervalsOf(cands, Of(b, k.da[2])), ElementsAre(I(k.turn_op + 1, k.relu_back_op[2])));
  // Parameters exist the whole iteration: each has the interval that wraps from its SGD update
  // to its next forward use, and w[0] is idle from its forward use to its update.
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(HasWrap(cands, Of(b, k.w[i]))) << i;
    EXPECT_TRUE(HasWrap(cands, Of(b, k.dw[i]))) << i;
  }
  EXPECT_THAT(IntervalsOf(cands, Of(b, k.w[0])), ElementsAre(I(k.conv_op[0], k.first_update_op)));
  for (const Candidate& c : cands) {
    if (c.wraps) {
      EXPECT_FALSE(c.recomputable) << c.tensor;
    }
  }
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

  // Op::replayable is what the interposer can replay: every conv and ReLU is, although the SGD
  // update later writes the weights the convolutions read (there is no iteration-wide horizon
  // any more: whether a replay reads unchanged inputs is decided per interval, Note [Sound
  // replays] in candidates.cc); the input copy is not replay-capable.
  EXPECT_FALSE(p.ops[k.copy_op].replayable);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(p.ops[k.conv_op[i]].replayable) << i;
    EXPECT_TRUE(p.ops[k.relu_op[i]].replayable) << i;
  }
  EXPECT_TRUE(p.ops[k.softmax_op - 1].replayable);  // the gemm reads wfc, updated at the end
  // What the planner makes of it: a conv output's and a relu output's intervals close before the
  // update writes the weight, so they are recomputable; the copied-in input is not.
  const std::vector<Candidate> cands = FindCandidates(p);
  for (int i = 0; i < 3; ++i) {
    const Candidate* y = Find(cands, Of(b, k.y[i]), k.relu_op[i]);
    ASSERT_NE(y, nullptr) << i;
    EXPECT_EQ(y->producer, k.conv_op[i]);
    EXPECT_TRUE(y->recomputable) << i;
  }
  const Candidate* a1 = Find(cands, Of(b, k.a[1]), k.filter_op[2]);
  ASSERT_NE(a1, nullptr);
  EXPECT_EQ(a1->producer, k.relu_op[1]);
  EXPECT_TRUE(a1->recomputable);
  const Candidate* x = Find(cands, Of(b, k.x), k.conv_op[0]);
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->producer, k.copy_op);
  EXPECT_FALSE(x->recomputable);
}

// Formerly: ops whose inputs a later backward op writes were marked non-replayable for the whole
// iteration (the replay horizon). Now Op::replayable is only what the interposer can replay, and
// the later write makes exactly those intervals non-recomputable whose replay would come after
// it.
TEST(ProfileBuilderTest, InPlaceOpAndLaterWriteWithinBackward) {
  Recorder r;
  const uint64_t scale = r.Persistent(4096);
  const uint64_t t = r.Alloc(1 << 20);
  const uint64_t u = r.Alloc(1 << 20);
  const uint64_t v = r.Alloc(1 << 20);
  const uint64_t out = r.Alloc(1 << 20);
  r.Op("cudnnConvolutionForward", 10, {scale}, {t});            // 0
  r.Op("cudnnActivationForward", 10, {}, {}, {t});              // 1: in place
  r.Op("cudnnOpTensor", 10, {t, scale}, {u});                   // 2: reads scale
  r.Op("cudnnSoftmaxForward", 10, {}, {v});                     // 3
  r.Op("cudnnActivationBackward", 10, {t, u, v}, {}, {scale});  // 4: writes scale
  r.Op("cudnnSoftmaxBackward", 10, {v}, {});                    // 5
  r.Op("cudnnOpTensor", 10, {u}, {out});                        // 6
  r.Free(t);
  r.Free(u);
  r.Free(v);
  const BuiltProfile b = Build(r.iteration());
  const Profile& p = b.profile;
  const TensorId tt = Of(b, t), tu = Of(b, u), ts = Of(b, scale);
  EXPECT_THAT(p.ops[1].reads, ElementsAre(tt));
  EXPECT_THAT(p.ops[1].writes, ElementsAre(tt));
  for (OpIndex i = 0; i < 7; ++i) EXPECT_TRUE(p.ops[i].replayable) << i;
  const std::vector<Candidate> cands = FindCandidates(p);
  // t has two writers (op 0 and the in-place op 1): its interval is a candidate, to swap, but
  // no replay rebuilds it.
  const Candidate* ct = Find(cands, tt, 2);
  ASSERT_NE(ct, nullptr);
  EXPECT_EQ(ct->close, 4);
  EXPECT_EQ(ct->producer, -1);
  EXPECT_FALSE(ct->recomputable);
  // u = op 2 (t, scale). Replaying op 2 before op 4 reads the scale it read; before op 6 it
  // would read the scale op 4 wrote.
  const Candidate* u1 = Find(cands, tu, 2);
  const Candidate* u2 = Find(cands, tu, 4);
  ASSERT_NE(u1, nullptr);
  ASSERT_NE(u2, nullptr);
  EXPECT_EQ(u1->close, 4);
  EXPECT_EQ(u2->close, 6);
  EXPECT_EQ(u1->producer, 2);
  EXPECT_EQ(u2->producer, 2);
  EXPECT_TRUE(u1->recomputable);
  EXPECT_FALSE(u2->recomputable);
  // scale: written only at op 4, after the intervals it has before it: no producer.
  for (const Candidate& c : cands) {
    if (c.tensor == ts) {
      EXPECT_EQ(c.producer, -1);
    }
  }
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
  const SimResult s = Simulate(p, m, Plan{});  // keeps everything
  ASSERT_TRUE(s.feasible) << s.failure;
  EXPECT_EQ(s.peak_bytes, (1 << 20) + (64 << 20) + (8 << 20));
  EXPECT_EQ(Peak(p), s.peak_bytes);
}

// Note [Mapped bytes]: a tensor holds its size rounded up to the mapping granularity, and a
// swap copies its size. Two 1 MiB maps at 2 MiB granularity take 4 MiB, in the simulator and in
// the in-core curve; their copies take the time of 1 MiB each. "other" (whole slabs) is not
// rounded.
TEST(ProfileBuilderTest, TensorsHoldTheirSizeRoundedToTheGranularity) {
  Recorder r;
  const uint64_t w = r.Persistent(3 << 20);
  const uint64_t a = r.Alloc(1 << 20);
  const uint64_t b = r.Alloc((1 << 20) + 4);
  r.Op("cudnnActivationForward", 1, {w}, {a});  // 0
  r.Op("cudnnActivationForward", 1, {a}, {b});  // 1
  r.Op("cudnnActivationForward", 1, {a}, {b});  // 2
  r.iteration().resident_other_bytes = 3 << 20;
  const BuiltProfile one = Build(r.iteration());
  for (const Tensor& t : one.profile.tensors) EXPECT_EQ(t.device_bytes, 0) << t.name;
  const int64_t g = 2 << 20;
  const BuiltProfile built = Build(r.iteration(), {.granularity = g});
  const Profile& p = built.profile;
  EXPECT_EQ(p.tensors[Of(built, w)].bytes, 3 << 20);
  EXPECT_EQ(p.tensors[Of(built, w)].device_bytes, 4 << 20);
  EXPECT_EQ(p.tensors[Of(built, a)].bytes, 1 << 20);
  EXPECT_EQ(p.tensors[Of(built, a)].device_bytes, g);
  EXPECT_EQ(p.tensors[Of(built, b)].device_bytes, g);
  EXPECT_EQ(p.tensors[Of(built, kOtherAllocation)].device_bytes, 0);
  EXPECT_EQ(DeviceBytes(p.tensors[Of(built, kOtherAllocation)]), 3 << 20);
  const int64_t held = (4 << 20) + g + g + (3 << 20);
  EXPECT_EQ(Peak(p), held);
  EXPECT_EQ(Peak(one.profile), (3 << 20) + (1 << 20) + (1 << 20) + 4 + (3 << 20));
  MachineModel m = pooch::testing::TestMachine(int64_t{1} << 30);
  const SimResult s = Simulate(p, m, Plan{});
  ASSERT_TRUE(s.feasible) << s.failure;
  EXPECT_EQ(s.peak_bytes, held);
  EXPECT_EQ(SwapOutUs(p.tensors[Of(built, a)], m), SwapOutUs(one.profile.tensors[Of(one, a)], m));
  // A device that holds what the requested sizes add up to but not the mappings: no plan that
  // keeps everything fits.
  m.memory_bytes = Peak(one.profile);
  EXPECT_FALSE(Simulate(p, m, Plan{}).feasible);
  EXPECT_FALSE(BuildProfile(r.iteration(), {.granularity = 0}).ok());
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
  const uint64_t u = r.Alloc(1 << 20);
  r.Op("cudnnAddTensor", 1, {t}, {u});  // reads a fresh allocation
  r.Op("cudnnActivationForward", 1, {u}, {t});
  const BuiltProfile b = Build(r.iteration());
  EXPECT_TRUE(b.profile.ops[0].reads.empty());
  EXPECT_THAT(b.profile.ops[0].writes, ElementsAre(Of(b, u)));
  EXPECT_FALSE(b.profile.ops[0].replayable);
  EXPECT_TRUE(b.profile.ops[1].replayable);
}

// Note [Chains] (core/model/candidates.cc): a write the recorder marks whole (from the
// allocation's base, covering it) becomes Op::overwrites; a partial write, a read-write and a
// whole write by an op that also reads the map do not, since the op's result depends on what the
// map held before.
TEST(ProfileBuilderTest, WholeWritesAreOverwritesAndPartialOnesAreNot) {
  Recorder r;
  const uint64_t x = r.Persistent(1 << 20);
  const uint64_t t = r.Alloc(1 << 20);
  const int whole = r.Op("cudnnConvolutionForward", 1, {x}, {t});
  const int partial = r.Op("cudaMemsetAsync", 1, {}, {t});
  r.Op("cudnnAddTensor", 1, {x}, {}, {t});
  const int reads_too = r.Op("cudnnActivationForward", 1, {t}, {t});
  r.Op("cudnnSoftmaxForward", 1, {t}, {});
  r.iteration().ops[whole].accesses[1].whole = true;
  r.iteration().ops[reads_too].accesses[1].whole = true;
  const BuiltProfile b = Build(r.iteration());
  const Profile& p = b.profile;
  const TensorId tt = Of(b, t);
  EXPECT_THAT(p.ops[whole].writes, ElementsAre(tt));
  EXPECT_THAT(p.ops[whole].overwrites, ElementsAre(tt));
  EXPECT_THAT(p.ops[partial].writes, ElementsAre(tt));
  EXPECT_TRUE(p.ops[partial].overwrites.empty());
  EXPECT_THAT(p.ops[2].writes, ElementsAre(tt));
  EXPECT_TRUE(p.ops[2].overwrites.empty());
  EXPECT_THAT(p.ops[reads_too].writes, ElementsAre(tt));
  EXPECT_TRUE(p.ops[reads_too].overwrites.empty());
}

// Note [First writers]: a read and write of a fresh allocation starts its value (a kernel's
// written word, a blending GEMM's output); of a written one it is an in-place update; a plain
// read of a fresh one stays an uninitialised read, in the same op too.
TEST(ProfileBuilderTest, ReadWriteOfFreshAllocationStartsItsValue) {
  Recorder r;
  const uint64_t x = r.Persistent(1 << 20);
  const uint64_t y = r.Alloc(1 << 20);
  const uint64_t z = r.Alloc(1 << 20);
  const uint64_t w = r.Alloc(1 << 20);
  r.Op("relu_kernel", 1, {x}, {}, {y});  // 0: first writer of y
  r.Op("bias_kernel", 1, {}, {}, {y});   // 1: in place
  r.Op("add_kernel", 1, {z}, {}, {z});   // 2: reads z as well as writing it
  r.Op("copy_kernel", 1, {x}, {}, {w});  // 3: first writer of w
  r.Op("other", 100, {x}, {});           // 4
  r.Op("use", 1, {y, z, w}, {});         // 5
  const BuiltProfile b = Build(r.iteration());
  const Profile& p = b.profile;
  EXPECT_THAT(p.ops[0].reads, ElementsAre(Of(b, x)));
  EXPECT_THAT(p.ops[0].writes, ElementsAre(Of(b, y)));
  EXPECT_TRUE(p.ops[0].replayable);
  EXPECT_THAT(p.ops[1].reads, ElementsAre(Of(b, y)));
  EXPECT_THAT(p.ops[1].writes, ElementsAre(Of(b, y)));
  EXPECT_TRUE(p.ops[2].reads.empty());
  EXPECT_THAT(p.ops[2].writes, ElementsAre(Of(b, z)));
  EXPECT_FALSE(p.ops[2].replayable);
  EXPECT_TRUE(p.ops[3].replayable);
  // w's only writer is op 3, which read what is still there: its interval is recomputable; y
  // has two writers and is not.
  const std::vector<Candidate> cands = FindCandidates(p);
  const Candidate* cw = Find(cands, Of(b, w), 3);
  ASSERT_NE(cw, nullptr);
  EXPECT_EQ(cw->producer, 3);
  EXPECT_TRUE(cw->recomputable);
  const Candidate* cy = Find(cands, Of(b, y), 1);
  ASSERT_NE(cy, nullptr);
  EXPECT_FALSE(cy->recomputable);
}

// Note [Program copies]: what an op copies between host and device memory reaches the profile.
TEST(ProfileBuilderTest, HostCopiesReachTheProfile) {
  Recorder r;
  const uint64_t t = r.Alloc(1 << 20);
  const int upload = r.Op("cudaMemcpyAsync", 1, {}, {t});
  const int read_back = r.Op("cudaMemcpy", 1, {t}, {});
  r.iteration().ops[upload].copy.to_device = 1 << 20;
  r.iteration().ops[read_back].copy.to_host = 4;
  BuiltProfile b = Build(r.iteration());
  EXPECT_EQ(b.profile.ops[0].to_device_bytes, 1 << 20);
  EXPECT_EQ(b.profile.ops[0].to_host_bytes, 0);
  EXPECT_EQ(b.profile.ops[1].to_host_bytes, 4);
  EXPECT_EQ(b.profile.ops[1].to_device_bytes, 0);
  r.iteration().ops[read_back].copy.to_device = 4;
  EXPECT_THAT(BuildProfile(r.iteration()).status().message(),
              HasSubstr("ops[1]: copies 4 bytes to the host and 4 to the device"));
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
  const MachineModel unbounded = pooch::testing::TestMachine(int64_t{1} << 40);
  const SimResult in_core = Simulate(p, unbounded, Plan{});
  ASSERT_TRUE(in_core.feasible);
  const MachineModel tight = pooch::testing::TestMachine(in_core.peak_bytes * 8 / 10);
  // With the default 1 MiB threshold only the 4 MiB tensors' intervals are planned (as in
  // ConvNetCandidates), and of those only the ones spanning an op that holds more than the limit
  // in-core (Note [Intervals that matter]): x, the four conv outputs, each ReLU output's interval
  // across the turn, da[3]'s across the fc weight gradient, and a[2]'s across layer 3's data
  // gradient. The same intervals of a[0] and a[1] come later in backward, where memory is
  // plentiful.
  const size_t all = FindCandidates(p, &tight, kDefaultMinCandidateBytes, false).size();
  EXPECT_EQ(all, 11u);
  // Of those, the ones long enough to hide their copies on this machine come first (Note
  // [Short intervals]); a policy falls back to all of them when they give no plan.
  const size_t maps = FindCandidates(p, &tight, kDefaultMinCandidateBytes).size();
  EXPECT_GT(maps, 0u);
  EXPECT_LT(maps, all);
  EXPECT_EQ(FindCandidates(p, nullptr, kDefaultMinCandidateBytes).size(), 13u);
  // pooch and optimal are also offered the short intervals that are cheaper to recompute than to
  // move (Note [Short recomputations]); each of those is recomputable.
  const std::vector<Candidate> with_short =
      FindCandidates(p, &tight, kDefaultMinCandidateBytes, true, /*short_recomputable=*/true);
  EXPECT_GE(with_short.size(), maps);
  EXPECT_LE(with_short.size(), all);
  for (const Candidate& c : with_short) EXPECT_TRUE(!c.recompute_only || c.recomputable);
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
    const bool offers_short = policy == Policy::kPooch || policy == Policy::kOptimal;
    EXPECT_EQ(r->candidates.size(), offers_short ? with_short.size() : maps) << PolicyName(policy);
    EXPECT_LE(r->sim.peak_bytes, tight.memory_bytes) << PolicyName(policy);
    int moved = 0;
    for (Decision d : r->plan.decisions) moved += d != Decision::kKeep;
    EXPECT_GT(moved, 0) << PolicyName(policy);
  }
}

// Issue 12, "What it must show", point 3. A small encoder-decoder recorded the way PyTorch runs
// it: the decoder upsamples with a transposed convolution, which cuDNN computes with
// cudnnConvolutionBackwardData *in forward*; the backward ops are PyTorch's generic kernels and
// cuDNN's backend API, whose names say nothing about direction. The old rule (the first op whose
// name contains "Backward" is the turn; feature maps are the tensors allocated before it) put the
// turn at the transposed convolution, so every decoder output was "allocated after the turn" and
// none could ever be swapped or recomputed. The decoder outputs hold most of the memory, so no
// plan over the old feature maps fits; with idle intervals they are candidates and pooch fits.
struct EncoderDecoder {
  RecordedIteration it;
  uint64_t x = 0, e1 = 0, e2 = 0;  // the input and the encoder's outputs
  std::vector<uint64_t> decoder;   // d[0] (transposed conv + skip) .. d[layers]
  int transposed_conv_op = -1, skip_add_op = -1, loss_op = -1, optimizer_op = -1;
};

EncoderDecoder MakeEncoderDecoder(int layers) {
  using ::pooch::testing::Recorder;
  constexpr int64_t kMiB = 1 << 20;
  const char* kElementwise =
      "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<"
      "at::native::threshold_kernel_impl<float>>(at::TensorIteratorBase&, float, float)>";
  const char* kVectorized =
      "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
      "at::detail::Array<char*, 3>>(int, at::native::CUDAFunctor_add<float>, "
      "at::detail::Array<char*, 3>)";
  const char* kBackend = "cudnnBackendExecute";
  Recorder r;
  EncoderDecoder k;
  const uint64_t w1 = r.Persistent(64 << 10), dw1 = r.Persistent(64 << 10);
  const uint64_t w2 = r.Persistent(64 << 10), dw2 = r.Persistent(64 << 10);
  const uint64_t wt = r.Persistent(64 << 10), dwt = r.Persistent(64 << 10);
  std::vector<uint64_t> w, dw;
  for (int j = 1; j <= layers; ++j) {
    w.push_back(r.Persistent(64 << 10));
    dw.push_back(r.Persistent(64 << 10));
  }
  const uint64_t labels = r.Persistent(4 * kMiB);

  // Forward.
  k.x = r.Alloc(2 * kMiB);
  r.Op("cudaMemcpyAsync", 120, {}, {k.x}, {}, /*replay_capable=*/false);
  k.e1 = r.Alloc(4 * kMiB);
  r.Op("cudnnConvolutionForward", 200, {k.x, w1}, {k.e1});
  k.e2 = r.Alloc(1 * kMiB);  // stride 2
  r.Op("cudnnConvolutionForward", 100, {k.e1, w2}, {k.e2});
  k.decoder.push_back(r.Alloc(4 * kMiB));
  k.transposed_conv_op = r.Op("cudnnConvolutionBackwardData", 200, {k.e2, wt}, {k.decoder[0]});
  k.skip_add_op = r.Op("cudnnAddTensor", 20, {k.e1}, {}, {k.decoder[0]});  // d0 += e1, in place
  for (int j = 1; j <= layers; ++j) {
    const uint64_t c = r.Alloc(4 * kMiB);
    r.Op("cudnnConvolutionForward", 200, {k.decoder[j - 1], w[j - 1]}, {c});
    k.decoder.push_back(r.Alloc(4 * kMiB));
    r.Op("cudnnActivationForward", 20, {c}, {k.decoder[j]});
    r.Free(c);  // ReLU's backward reads its output, not its input
  }
  const uint64_t loss = r.Alloc(4096);
  k.loss_op = r.Op(
      "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
      "at::native::MeanOps<float, float>, unsigned int, float, 4>>",
      30, {k.decoder[layers], labels}, {loss});

  // Backward: no name says so.
  const uint64_t dloss = r.Alloc(4096);
  r.Op(
      "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
      "at::detail::Array<char*, 1>>(int, at::native::FillFunctor<float>, "
      "at::detail::Array<char*, 1>)",
      2, {}, {dloss});
  r.Free(loss);
  uint64_t dd = r.Alloc(4 * kMiB);  // gradient of d[layers]
  r.Op(kElementwise, 30, {k.decoder[layers], labels, dloss}, {dd});
  r.Free(dloss);
  for (int j = layers; j >= 1; --j) {
    const uint64_t dc = r.Alloc(4 * kMiB);
    r.Op(kElementwise, 20, {k.decoder[j], dd}, {dc});  // ReLU backward
    r.Free(dd);
    r.Free(k.decoder[j]);
    dd = r.Alloc(4 * kMiB);
    r.Op(kBackend, 200, {dc, w[j - 1]}, {dd});                     // data gradient
    r.Op(kBackend, 200, {dc, k.decoder[j - 1]}, {}, {dw[j - 1]});  // filter gradient
    r.Free(dc);
  }
  r.Free(k.decoder[0]);
  // dd is now the gradient of d[0] = T(e2) + e1: it flows to e1 through the skip and to e2
  // through the transposed convolution (a plain convolution backward).
  const uint64_t de1 = r.Alloc(4 * kMiB);
  r.Op(kVectorized, 20, {dd}, {de1});
  const uint64_t de2 = r.Alloc(1 * kMiB);
  r.Op(kBackend, 100, {dd, wt}, {de2});
  r.Op(kBackend, 100, {dd, k.e2}, {}, {dwt});
  r.Free(dd);
  r.Op(kBackend, 100, {de2, w2}, {}, {de1});  // accumulates into e1's gradient
  r.Op(kBackend, 100, {de2, k.e1}, {}, {dw2});
  r.Free(de2);
  r.Free(k.e2);
  r.Op(kBackend, 200, {de1, k.x}, {}, {dw1});
  r.Free(de1);
  r.Free(k.e1);
  r.Free(k.x);
  // The optimizer step: one fused kernel over every parameter.
  std::vector<uint64_t> grads = {dw1, dw2, dwt}, params = {w1, w2, wt};
  grads.insert(grads.end(), dw.begin(), dw.end());
  params.insert(params.end(), w.begin(), w.end());
  k.optimizer_op = r.Op(
      "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<"
      "at::native::(anonymous namespace)::TensorListMetadata<4>>",
      40, grads, {}, params);
  k.it = r.iteration();
  return k;
}

TEST(ProfileBuilderTest, DecoderOutputsAreCandidatesWhateverTheApiNames) {
  constexpr int kLayers = 4;
  const EncoderDecoder k = MakeEncoderDecoder(kLayers);
  const BuiltProfile b = Build(k.it);
  const Profile& p = b.profile;
  ASSERT_TRUE(p.Validate().ok()) << p.Validate();
  const OpIndex n = static_cast<OpIndex>(p.ops.size());

  // The old rule's turn: the first op whose API name contains "Backward". It is the transposed
  // convolution, in forward; no backward op's name contains it (nor "backward").
  OpIndex old_turn = n;
  for (OpIndex i = 0; i < n; ++i) {
    if (absl::StrContains(p.ops[i].name, "Backward")) {
      old_turn = i;
      break;
    }
  }
  ASSERT_EQ(old_turn, k.transposed_conv_op);
  for (OpIndex i = k.loss_op + 1; i < n; ++i) {
    EXPECT_FALSE(absl::StrContains(absl::AsciiStrToLower(p.ops[i].name), "backward")) << i;
  }
  // The old rule's feature maps were the tensors allocated in the iteration before the turn:
  // the input and the encoder's outputs. Every decoder output is allocated at or after it.
  auto old_feature_map = [&](TensorId t) {
    return b.tensor_alloc_ordinal[t] >= 0 && p.tensors[t].alloc_before < old_turn;
  };
  std::vector<TensorId> old_maps;
  for (TensorId t = 0; t < static_cast<TensorId>(p.tensors.size()); ++t) {
    if (old_feature_map(t)) old_maps.push_back(t);
  }
  EXPECT_THAT(old_maps, UnorderedElementsAre(Of(b, k.x), Of(b, k.e1), Of(b, k.e2)));
  for (uint64_t d : k.decoder) {
    EXPECT_GE(p.tensors[Of(b, d)].alloc_before, old_turn) << d;
  }
  // Phases are labelled by the memory peak (in backward): the transposed convolution is forward.
  EXPECT_EQ(p.ops[k.transposed_conv_op].phase, Phase::kForward);
  EXPECT_EQ(p.ops[k.optimizer_op].phase, Phase::kBackward);

  // Every decoder output has an idle interval from its last forward use to its first backward
  // use.
  const std::vector<Candidate> all = FindCandidates(p, nullptr, kDefaultMinCandidateBytes);
  for (size_t j = 0; j < k.decoder.size(); ++j) {
    const TensorId d = Of(b, k.decoder[j]);
    OpIndex last_forward = -1, first_backward = -1;
    for (OpIndex i = 0; i < n; ++i) {
      const Op& op = p.ops[i];
      const bool uses = std::count(op.reads.begin(), op.reads.end(), d) +
                            std::count(op.writes.begin(), op.writes.end(), d) >
                        0;
      if (!uses) continue;
      if (i <= k.loss_op) last_forward = i;
      if (i > k.loss_op && first_backward < 0) first_backward = i;
    }
    ASSERT_GE(last_forward, 0) << j;
    ASSERT_GT(first_backward, 0) << j;
    const Candidate* last = nullptr;
    for (const Candidate& c : all) {
      if (c.tensor == d && !c.wraps && c.open == last_forward) last = &c;
    }
    ASSERT_NE(last, nullptr) << "decoder output " << j;
    EXPECT_EQ(last->close, first_backward) << j;
    // d[0] has two writers (the transposed convolution and the in-place skip addition): swap
    // only. The ReLU outputs are rebuilt by replaying conv and ReLU (the conv's input and
    // weight are unchanged until the interval closes).
    EXPECT_EQ(last->recomputable, j > 0) << j;
  }

  const int64_t peak = Peak(p);
  for (double fraction : {0.6, 0.4}) {
    SCOPED_TRACE(fraction);
    const MachineModel m =
        pooch::testing::TestMachine(static_cast<int64_t>(static_cast<double>(peak) * fraction));
    // Where the old rule found none: a plan over the old feature maps leaves every other tensor
    // where in-core has it, so at some op it holds more than the limit even if x, e1 and e2 were
    // off the device the whole time.
    const std::vector<int64_t> in_core = InCoreBytesPerOp(p);
    int64_t old_lower_bound = 0;
    for (OpIndex i = 0; i < n; ++i) {
      int64_t bytes = in_core[i];
      for (TensorId t : old_maps) {
        const Tensor& x = p.tensors[t];
        if (x.alloc_before <= i && (x.free_after == kAfterIteration || i <= x.free_after)) {
          bytes -= x.bytes;
        }
      }
      old_lower_bound = std::max(old_lower_bound, bytes);
    }
    EXPECT_GT(old_lower_bound, m.memory_bytes);

    absl::StatusOr<PlanResult> r = MakePlan(p, m, Policy::kPooch);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->sim.feasible);
    EXPECT_LE(r->sim.peak_bytes, m.memory_bytes);
    const DecisionCounts counts = CountDecisions(r->plan, r->candidates);
    EXPECT_GT(counts.swap + counts.recompute, 0);
    // And it moves decoder outputs, which the old rule could not.
    int decoder_moved = 0;
    for (CandidateId c = 0; c < static_cast<CandidateId>(r->candidates.size()); ++c) {
      const TensorId t = r->candidates[c].tensor;
      const bool decoder = std::any_of(k.decoder.begin(), k.decoder.end(),
                                       [&](uint64_t d) { return Of(b, d) == t; });
      decoder_moved += decoder && r->plan.decisions[c] != Decision::kKeep;
    }
    EXPECT_GT(decoder_moved, 0);
  }
}

}  // namespace
}  // namespace pooch
