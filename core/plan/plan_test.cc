#include "core/plan/plan.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/model/profile_testutil.h"
#include "core/plan/plan_internal.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

using ::pooch::testing::ProfileBuilder;
using ::pooch::testing::RandomProfile;
using ::pooch::testing::RandomProfileOptions;
using ::pooch::testing::TestMachine;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// RandomProfile's weights and weight gradients are 4 KiB, its activations at least 64 KiB: with
// this threshold the candidates are the activations' and their gradients' intervals, as few as
// `optimal` can search exhaustively on small graphs (the 1 MiB default would drop most maps).
constexpr int64_t kRandomMinBytes = 8 << 10;

PlanOptions RandomOptions() {
  PlanOptions o;
  o.min_candidate_bytes = kRandomMinBytes;
  return o;
}

// The in-core peak: a keep-everything simulation on a machine so large that nothing is a
// candidate (Note [Intervals that matter]), so the empty plan keeps everything.
int64_t InCorePeak(const Profile& p) {
  const SimResult r = Simulate(p, TestMachine(int64_t{1} << 40), Plan{});
  EXPECT_TRUE(r.feasible) << r.failure;
  return r.peak_bytes;
}

// PoocH Figure 11: eight layers; the forward of layers 0-4 is long and hides their swap-outs,
// layers 5-7 are short so their swap-outs queue up past the end of forward; in backward the
// swap-ins of 7, 6 and 4 are longer than the computation they overlap, 5's is short. A loss op
// of zero duration sits between forward and backward: without an op between f7 (which reads m7)
// and b7 (which reads it again) m7 would have no idle interval (Note [Idle intervals]); taking
// no time, it leaves the paper's timeline unchanged.
struct Figure11 {
  Profile profile;
  std::vector<TensorId> map;  // map[i]: the feature map of layer i (its input)
};

Figure11 MakeFigure11() {
  const double forward_us[8] = {10, 10, 10, 10, 10, 2, 2, 2};
  const double backward_us[8] = {10, 10, 10, 10, 10, 2, 2, 2};
  const double swap_out_us[8] = {5, 5, 5, 5, 5, 8, 8, 8};
  const double swap_in_us[8] = {2, 2, 2, 2, 10, 2, 8, 8};
  ProfileBuilder b("figure11");
  Figure11 f;
  for (int i = 0; i <= 8; ++i) f.map.push_back(b.Tensor(absl::StrCat("m", i), 1000));
  b.MarkInput(f.map[0]);
  // Gradients are small, so that memory never delays a swap-in at the capacity the test uses.
  std::vector<TensorId> grad;
  for (int i = 0; i <= 8; ++i) grad.push_back(b.Tensor(absl::StrCat("g", i), 10));
  for (int i = 0; i < 8; ++i) {
    b.Op(absl::StrCat("f", i), OpKind::kConv, Phase::kForward, forward_us[i], {f.map[i]},
         {f.map[i + 1]});
  }
  b.Op("loss", OpKind::kLoss, Phase::kForward, 0, {f.map[8]}, {grad[8]});
  for (int i = 7; i >= 0; --i) {
    b.Op(absl::StrCat("b", i), OpKind::kConv, Phase::kBackward, backward_us[i],
         {f.map[i], grad[i + 1]}, {grad[i]});
  }
  f.profile = b.Finish();
  for (int i = 0; i < 8; ++i) {
    f.profile.tensors[f.map[i]].swap_out_us = swap_out_us[i];
    f.profile.tensors[f.map[i]].swap_in_us = swap_in_us[i];
  }
  f.map.pop_back();
  return f;
}

TEST(PlanTest, Figure11OverheadMaps) {
  const Figure11 f = MakeFigure11();
  ASSERT_TRUE(f.profile.Validate().ok()) << f.profile.Validate();
  // One byte below the in-core peak (at the loss, every map resident): every map's interval
  // spans the loss, so all eight matter by capacity; the swap-all plan holds far less, so memory
  // never delays a copy and the timeline is the paper's. The figure's point is the maps whose
  // copies are not hidden, so the short intervals stay in (long_only off).
  const MachineModel m = TestMachine(InCorePeak(f.profile) - 1);
  Simulator sim(f.profile, m, {.long_only = false});
  const std::vector<Candidate>& cands = sim.candidates();
  ASSERT_EQ(cands.size(), f.map.size());
  for (size_t i = 0; i < cands.size(); ++i) {
    EXPECT_EQ(cands[i].tensor, f.map[i]) << i;  // ordered by the op that opens them
    EXPECT_EQ(cands[i].open, static_cast<OpIndex>(i));
    EXPECT_EQ(cands[i].close, static_cast<OpIndex>(16 - i));  // b_i
  }
  Plan plan = KeepAllPlan(cands.size());
  for (Decision& d : plan.decisions) d = Decision::kSwap;
  const SimResult r = sim.Run(plan);
  ASSERT_TRUE(r.feasible) << r.failure;
  const OverheadMaps sets = FindOverheadMaps(r);
  auto tensors = [&](const std::vector<CandidateId>& ids) {
    std::vector<TensorId> out;
    for (CandidateId c : ids) out.push_back(cands[c].tensor);
    return out;
  };
  const std::vector<TensorId>& l = f.map;
  EXPECT_THAT(tensors(sets.swap_out), ElementsAre(l[5], l[6], l[7]));  // L_O = {5, 6, 7}
  EXPECT_THAT(tensors(sets.swap_in), ElementsAre(l[4], l[6], l[7]));   // L_I = {4, 6, 7}
}

TEST(PlanTest, PolicyNamesRoundTrip) {
  for (Policy p : AllPolicies()) {
    absl::StatusOr<Policy> parsed = ParsePolicy(PolicyName(p));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, p);
  }
  absl::StatusOr<Policy> bad = ParsePolicy("pooh");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("superneurons"));
}

TEST(PlanTest, InvalidProfileIsInvalidArgument) {
  Profile p = RandomProfile(1);
  p.ops[2].reads.push_back(12345);
  EXPECT_EQ(MakePlan(p, TestMachine(1 << 30), Policy::kPooch).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(PlanTest, InCoreSaysHowMuchItNeeds) {
  const Profile p = RandomProfile(2);
  absl::StatusOr<PlanResult> r = MakePlan(p, TestMachine(1000), Policy::kInCore);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("in-core needs"));
  EXPECT_THAT(r.status().message(), HasSubstr("capacity 1000 B"));
  absl::StatusOr<PlanResult> ok = MakePlan(p, TestMachine(int64_t{1} << 40), Policy::kInCore);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_TRUE(ok->sim.feasible);
}

TEST(PlanTest, OptimalRefusesLargeGraphs) {
  const Profile p = RandomProfile(3, {.min_layers = 30, .max_layers = 30});
  const MachineModel m = TestMachine(1 << 20);
  ASSERT_GT(FindCandidates(p, &m, kRandomMinBytes).size(),
            static_cast<size_t>(PlanOptions{}.optimal_max_maps));
  absl::StatusOr<PlanResult> r = MakePlan(p, m, Policy::kOptimal, RandomOptions());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("too large"));
}

// The plan is indexed by the candidates PlanResult carries, which are the intervals that matter
// on the machine with the options' threshold.
TEST(PlanTest, ResultCarriesTheCandidatesItsDecisionsIndex) {
  const Profile p = RandomProfile(12, {.min_layers = 6, .max_layers = 6});
  const MachineModel m = TestMachine(InCorePeak(p) * 7 / 10);
  for (int64_t min_bytes : {int64_t{0}, kRandomMinBytes, int64_t{1} << 20}) {
    PlanOptions o;
    o.min_candidate_bytes = min_bytes;
    absl::StatusOr<PlanResult> r = MakePlan(p, m, Policy::kSwapAll, o);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->candidates, FindCandidates(p, &m, min_bytes)) << min_bytes;
    EXPECT_EQ(r->plan.decisions.size(), r->candidates.size()) << min_bytes;
    for (const Plan::SwapIn& s : r->plan.swap_ins) {
      ASSERT_GE(s.candidate, 0);
      ASSERT_LT(static_cast<size_t>(s.candidate), r->candidates.size());
      EXPECT_EQ(r->plan.decisions[s.candidate], Decision::kSwap);
    }
  }
}

// A ReLU output x (4 MiB) written at op 0, read again at op 2; op 1 needs a 4 MiB workspace and
// lasts 100 us, while x's copy out and back takes about 526 us: swapping x cannot pay, and the
// iteration fits only without x during op 1. Replaying the ReLU takes 10 us.
struct ShortRecompute {
  Profile profile;
  TensorId x;
};

ShortRecompute MakeShortRecompute() {
  ProfileBuilder b("short-recompute");
  const TensorId a = b.Tensor("a", 64 << 10, /*persistent=*/true);
  const TensorId x = b.Tensor("x", 4 << 20);
  b.Op("relu", OpKind::kActivation, Phase::kForward, 10, {a}, {x});
  b.Op("big", OpKind::kConv, Phase::kForward, 100, {}, {}, /*workspace=*/4 << 20);
  b.Op("use", OpKind::kConv, Phase::kForward, 10, {x}, {});
  return {b.Finish(), x};
}

TEST(PlanTest, ShortRecomputableIntervalIsOfferedAndChosenWhereSwappingCannotPay) {
  const ShortRecompute s = MakeShortRecompute();
  const MachineModel m = TestMachine((4 << 20) + (256 << 10));
  for (Policy policy : {Policy::kPooch, Policy::kOptimal}) {
    absl::StatusOr<PlanResult> r = MakePlan(s.profile, m, policy);
    ASSERT_TRUE(r.ok()) << PolicyName(policy) << ": " << r.status();
    ASSERT_EQ(r->candidates.size(), 1u) << PolicyName(policy);
    EXPECT_EQ(r->candidates[0].tensor, s.x);
    // optimal searches over every interval when they are few (Note [Exhaustive search]).
    EXPECT_EQ(r->candidates[0].recompute_only, policy == Policy::kPooch);
    EXPECT_THAT(r->plan.decisions, ElementsAre(Decision::kRecompute)) << PolicyName(policy);
    EXPECT_DOUBLE_EQ(r->sim.iteration_us, 130) << PolicyName(policy);  // one 10 us replay
  }
  // The swapping policies are offered the long intervals only, find none that fits, and swap
  // the short one, stalling on its copies (Note [Short intervals]).
  absl::StatusOr<PlanResult> swapped = MakePlan(s.profile, m, Policy::kSwapOpt);
  ASSERT_TRUE(swapped.ok()) << swapped.status();
  ASSERT_EQ(swapped->candidates.size(), 1u);
  EXPECT_FALSE(swapped->candidates[0].recompute_only);
  EXPECT_THAT(swapped->plan.decisions, ElementsAre(Decision::kSwap));
  EXPECT_GT(swapped->sim.iteration_us, 500);
}

// A ReLU launched as a kernel after a batch normalisation (tiny --own-kernels): the normalised
// map b is freed right after the ReLU reads it, and the convolution's output c stays for the
// normalisation's backward. During op 3 (100 us, an 8 MiB workspace) only two of the three
// 4 MiB maps fit, and moving one out and back takes about 526 us: the plan rebuilds the ReLU's
// output r before its backward by replaying the normalisation from c and then the ReLU (20 us),
// rather than c by the 200 us convolution.
TEST(PlanTest, AReluOutputIsRebuiltThroughItsFreedInputWhereSwappingCannotPay) {
  ProfileBuilder b("bn-relu");
  const TensorId a = b.Tensor("a", 64 << 10, /*persistent=*/true);
  const TensorId grad = b.Tensor("grad", 64 << 10, /*persistent=*/true);
  const TensorId c = b.Tensor("c", 4 << 20);
  const TensorId bn = b.Tensor("b", 4 << 20);
  const TensorId r = b.Tensor("r", 4 << 20);
  b.Op("conv", OpKind::kConv, Phase::kForward, 200, {a}, {c});
  b.Op("bn", OpKind::kOther, Phase::kForward, 10, {c}, {bn});
  b.Op("relu_kernel", OpKind::kActivation, Phase::kForward, 10, {bn}, {r});
  b.Op("big", OpKind::kConv, Phase::kForward, 100, {}, {}, /*workspace=*/8 << 20);
  b.Op("relu_backward", OpKind::kActivation, Phase::kBackward, 10, {r}, {grad});
  b.Op("bn_backward", OpKind::kOther, Phase::kBackward, 10, {c, grad}, {grad});
  const Profile p = b.Finish();
  ASSERT_EQ(p.tensors[bn].free_after, 2);
  const MachineModel m = TestMachine((8 << 20) + (4 << 20) + (256 << 10));
  absl::StatusOr<PlanResult> res = MakePlan(p, m, Policy::kPooch);
  ASSERT_TRUE(res.ok()) << res.status();
  ASSERT_TRUE(res->sim.feasible) << res->sim.failure;
  bool rebuilt = false;
  for (size_t i = 0; i < res->candidates.size(); ++i) {
    const Candidate& cand = res->candidates[i];
    if (cand.tensor == r) {
      EXPECT_EQ(cand.producer, 2);
      EXPECT_TRUE(cand.recomputable);
      rebuilt = res->plan.decisions[i] == Decision::kRecompute;
    }
    if (cand.tensor == c) {
      EXPECT_NE(res->plan.decisions[i], Decision::kRecompute);
    }
  }
  EXPECT_TRUE(rebuilt);
  EXPECT_EQ(res->sim.recomputed_ops, 2);  // the normalisation, then the ReLU
  EXPECT_DOUBLE_EQ(res->sim.iteration_us, 340 + 20);
}

TEST(PlanTest, CheckpointKeepsAboutSqrtN) {
  const Profile p =
      RandomProfile(4, {.min_layers = 25, .max_layers = 25, .replayable_probability = 1});
  // Below the in-core peak, so that the iteration's intervals matter (on a machine where
  // everything fits there would be nothing to checkpoint).
  const MachineModel m = TestMachine(InCorePeak(p) * 9 / 10);
  absl::StatusOr<PlanResult> r = MakePlan(p, m, Policy::kCheckpoint, RandomOptions());
  ASSERT_TRUE(r.ok()) << r.status();
  const std::vector<Candidate>& cands = r->candidates;
  ASSERT_GE(cands.size(), 16u);  // enough for sqrt(n) to be well below n
  ASSERT_EQ(r->plan.decisions.size(), cands.size());
  int keep = 0, recompute = 0;
  for (CandidateId c = 0; c < static_cast<CandidateId>(cands.size()); ++c) {
    keep += r->plan.decisions[c] == Decision::kKeep;
    recompute += r->plan.decisions[c] == Decision::kRecompute;
  }
  const double sqrt_n = std::sqrt(static_cast<double>(cands.size()));
  EXPECT_LE(keep, sqrt_n + 2) << cands.size() << " candidates";
  EXPECT_GT(recompute, 0);
  EXPECT_GT(r->sim.recompute_us, 0);
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// Random small graphs with a capacity below in-core's peak. For each: every policy returns a
// feasible plan or a FailedPrecondition with a reason; no policy that schedules swap-ins when
// memory allows beats optimal; pooch succeeds whenever optimal does, within 10 % of it.
TEST(PlanTest, PoliciesAgainstOptimalOnRandomSmallGraphs) {
  std::mt19937_64 rng(7);
  RandomProfileOptions options;
  options.min_layers = 3;
  options.max_layers = 9;
  int compared = 0;
  double worst_gap = 0, sum_gap = 0;
  uint64_t worst_seed = 0;
  int pooch_missed = 0;
  int over_5 = 0, over_10 = 0;
  int superneurons_failed = 0;
  const auto start = std::chrono::steady_clock::now();
  const PlanOptions o = RandomOptions();
  for (uint64_t seed = 1000; compared < 120 && seed < 3000; ++seed) {
    const Profile p = RandomProfile(seed, options);
    const int64_t in_core = InCorePeak(p);
    const double fraction = std::uniform_real_distribution<double>(0.4, 0.97)(rng);
    const MachineModel m = TestMachine(static_cast<int64_t>(in_core * fraction), rng() % 4 != 0);
    // Small enough for optimal over every interval too (Note [Short intervals]: a policy may
    // plan over those when the long ones give no plan).
    if (FindCandidates(p, &m, kRandomMinBytes, /*long_only=*/false).size() > 10) continue;
    absl::StatusOr<PlanResult> optimal = MakePlan(p, m, Policy::kOptimal, o);
    ASSERT_TRUE(optimal.ok() || optimal.status().code() == absl::StatusCode::kFailedPrecondition)
        << optimal.status();
    for (Policy policy : AllPolicies()) {
      absl::StatusOr<PlanResult> r = MakePlan(p, m, policy, o);
      if (!r.ok()) {
        ASSERT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition)
            << PolicyName(policy) << " seed " << seed << ": " << r.status();
        EXPECT_FALSE(r.status().message().empty());
        if (policy == Policy::kSuperNeurons && optimal.ok()) ++superneurons_failed;
        continue;
      }
      // The returned plan, simulated afresh, fits.
      const bool recomputes = policy == Policy::kPooch || policy == Policy::kOptimal;
      const bool long_only =
          r->candidates == FindCandidates(p, &m, kRandomMinBytes, /*long_only=*/true, recomputes);
      const SimResult again = Simulate(
          p, m, r->plan, {},
          {.min_bytes = kRandomMinBytes, .long_only = long_only, .short_recomputable = recomputes});
      ASSERT_TRUE(again.feasible) << PolicyName(policy) << " seed " << seed << ": "
                                  << again.failure;
      EXPECT_LE(again.peak_bytes, m.memory_bytes);
      EXPECT_EQ(again.iteration_us, r->sim.iteration_us);
      ASSERT_TRUE(optimal.ok()) << PolicyName(policy) << " found a plan optimal missed, seed "
                                << seed;
      if (r->plan.schedule == SwapInSchedule::kWhenMemoryAllows) {
        EXPECT_GE(r->sim.iteration_us, optimal->sim.iteration_us * (1 - 1e-9))
            << PolicyName(policy) << " beats optimal, seed " << seed;
      }
    }
    if (!optimal.ok()) continue;
    absl::StatusOr<PlanResult> pooch = MakePlan(p, m, Policy::kPooch, o);
    if (!pooch.ok()) {
      ++pooch_missed;
      ADD_FAILURE() << "pooch found no plan where optimal did, seed " << seed << ": "
                    << pooch.status();
      continue;
    }
    const double gap = pooch->sim.iteration_us / optimal->sim.iteration_us - 1;
    over_5 += gap > 0.05;
    over_10 += gap > 0.10;
    if (gap > worst_gap) {
      worst_gap = gap;
      worst_seed = seed;
    }
    sum_gap += gap;
    ++compared;
  }
  std::printf(
      "pooch vs optimal on %d random graphs: worst gap %.2f%% (seed %llu), mean gap %.3f%%, "
      "%d above 5%%, %d above 10%%; pooch missed %d; superneurons failed on %d solvable graphs; "
      "%.1f s\n",
      compared, 100 * worst_gap, static_cast<unsigned long long>(worst_seed),
      compared ? 100 * sum_gap / compared : 0.0, over_5, over_10, pooch_missed, superneurons_failed,
      Seconds(start));
  EXPECT_GE(compared, 100);
  EXPECT_LE(worst_gap, 0.10) << "worst seed " << worst_seed;
}

// The refinement after §4.4.3 (ours, Note [Refinement after §4.4.3]) only ever takes feasible,
// faster plans: pooch is never slower than the paper's method alone (refine_simulations = 0),
// and somewhere it is faster.
TEST(PlanTest, RefinementNeverSlowerThanThePapersMethod) {
  PlanOptions paper = RandomOptions();
  paper.refine_simulations = 0;
  int faster = 0;
  for (uint64_t seed = 1100; seed < 1180; ++seed) {
    const Profile p = RandomProfile(seed, {.min_layers = 3, .max_layers = 9});
    const int64_t in_core = InCorePeak(p);
    for (double fraction : {0.5, 0.7, 0.9}) {
      const MachineModel m = TestMachine(static_cast<int64_t>(in_core * fraction));
      absl::StatusOr<PlanResult> base = MakePlan(p, m, Policy::kPooch, paper);
      absl::StatusOr<PlanResult> refined = MakePlan(p, m, Policy::kPooch, RandomOptions());
      ASSERT_EQ(base.ok(), refined.ok()) << "seed " << seed;
      if (!base.ok()) continue;
      EXPECT_LE(refined->sim.iteration_us, base->sim.iteration_us) << "seed " << seed;
      faster += refined->sim.iteration_us < base->sim.iteration_us;
    }
  }
  EXPECT_GT(faster, 0);
}

// Note [Recompute rounds]: with one choice per pricing the step is the paper's (the same plan as
// recompute_rounds = 0); with many choices per pricing every choice is still checked, so the
// result fits and is never slower than the keep/swap plan it starts from (one round: every
// choice from the first pricing, the farthest from the paper). On random graphs of
// 20-40 layers of short ops, where L is long (10-20 recomputed intervals).
TEST(PlanTest, RecomputeRoundsKeepThePapersChoicesAndNeverSlowDown) {
  int rounds_changed_plan = 0, compared = 0;
  for (uint64_t seed = 1300; seed < 1420; ++seed) {
    // Short ops, so that recomputing often beats swapping and L is long.
    const Profile p =
        RandomProfile(seed, {.min_layers = 20, .max_layers = 40, .min_us = 1, .max_us = 20});
    const MachineModel m = TestMachine(InCorePeak(p) / 2);
    PlanOptions exact = RandomOptions(), one = RandomOptions(), few = RandomOptions();
    exact.recompute_rounds = 0;
    one.recompute_rounds = 1 << 20;  // ceil(|L| / rounds) = 1
    few.recompute_rounds = 1;        // every choice from one pricing
    PlanContext ctx_exact(p, m, exact), ctx_one(p, m, one), ctx_few(p, m, few);
    absl::StatusOr<Plan> start = PlanSwapOpt(ctx_exact);
    if (!start.ok()) continue;
    ++compared;
    const Plan a = RecomputeStep(ctx_exact, *start);
    const Plan b = RecomputeStep(ctx_one, *start);
    EXPECT_EQ(a.decisions, b.decisions) << "seed " << seed;
    const Plan c = RecomputeStep(ctx_few, *start);
    const SimResult& before = ctx_few.Evaluate(*start);
    const double start_us = before.iteration_us;
    const SimResult& after = ctx_few.Evaluate(c);
    EXPECT_TRUE(after.feasible) << "seed " << seed << ": " << after.failure;
    EXPECT_LE(after.iteration_us, start_us) << "seed " << seed;
    rounds_changed_plan += c.decisions != a.decisions;
  }
  EXPECT_GE(compared, 20);
  EXPECT_GT(rounds_changed_plan, 0);  // the checked choices were exercised
  std::printf("recompute rounds: one round chose differently from the paper's step on %d of %d\n",
              rounds_changed_plan, compared);
}

// SuperNeurons issues swap-ins with the preceding convolution whatever the memory: with the
// smallest capacity at which swap-all fits, that overflows where pooch still finds a plan, and
// the reason names the swap-in (as at batch 640, §5.2).
TEST(PlanTest, SuperNeuronsReportsSwapInOverflow) {
  int overflowed = 0;
  for (uint64_t seed = 5000; seed < 5030; ++seed) {
    const Profile p =
        RandomProfile(seed, {.min_layers = 8, .max_layers = 12, .replayable_probability = 0});
    // Swap every interval that matters at `capacity` (which ones do depends on the capacity).
    auto swap_all_fits = [&](int64_t capacity) {
      const MachineModel m = TestMachine(capacity);
      Plan all = KeepAllPlan(FindCandidates(p, &m, kRandomMinBytes).size());
      for (Decision& d : all.decisions) d = Decision::kSwap;
      return Simulate(p, m, all, {}, {.min_bytes = kRandomMinBytes}).feasible;
    };
    // The smallest capacity that swap-all fits in, by bisection. Feasibility need not be
    // monotone in the capacity (fewer intervals matter on a larger device), but bisection
    // always ends on a capacity at which it fits (hi only ever takes such values).
    int64_t lo = 1, hi = int64_t{1} << 40;
    ASSERT_TRUE(swap_all_fits(hi));
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (swap_all_fits(mid)) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    const MachineModel m = TestMachine(lo);
    absl::StatusOr<PlanResult> sn = MakePlan(p, m, Policy::kSuperNeurons, RandomOptions());
    ASSERT_TRUE(MakePlan(p, m, Policy::kPooch, RandomOptions()).ok()) << "seed " << seed;
    if (sn.ok()) continue;
    EXPECT_EQ(sn.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(sn.status().message(), HasSubstr("exceeds capacity"));
    if (absl::StrContains(sn.status().message(), "superneurons: swap-in of")) ++overflowed;
  }
  EXPECT_GT(overflowed, 0);
}

// Note [SuperNeurons rule]: y is a convolution's output with its bias added in place (a chain
// conv, bias: its last link is an addition), z a ReLU's output; both must leave the device
// during op 3's 8 MiB workspace. SuperNeurons swaps y, as the convolution's output it is, and
// recomputes z. Asked of the chain's last link, y would be recomputed.
TEST(PlanTest, SuperNeuronsSwapsAConvolutionOutputWhoseBiasWasAddedInPlace) {
  ProfileBuilder b("conv-bias");
  const TensorId in = b.Tensor("in", 64 << 10, /*persistent=*/true);
  const TensorId w = b.Tensor("w", 64 << 10, /*persistent=*/true);
  const TensorId bias = b.Tensor("bias", 64 << 10, /*persistent=*/true);
  const TensorId y = b.Tensor("y", 4 << 20);
  const TensorId z = b.Tensor("z", 4 << 20);
  const OpIndex conv = b.Op("conv", OpKind::kConv, Phase::kForward, 10, {in, w}, {y});  // 0
  b.op(conv).overwrites = {y};
  b.Op("bias", OpKind::kAdd, Phase::kForward, 1, {bias, y}, {y});       // 1
  b.Op("relu", OpKind::kActivation, Phase::kForward, 1, {y}, {z});      // 2
  b.Op("big", OpKind::kOther, Phase::kForward, 2000, {}, {}, 8 << 20);  // 3
  b.Op("small", OpKind::kConv, Phase::kBackward, 10, {}, {});           // 4
  b.Op("back", OpKind::kConv, Phase::kBackward, 10, {y, z}, {});        // 5
  const Profile p = b.Finish();
  ASSERT_TRUE(p.Validate().ok()) << p.Validate();
  const MachineModel m = TestMachine((8 << 20) + (512 << 10));
  absl::StatusOr<PlanResult> r = MakePlan(p, m, Policy::kSuperNeurons);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->candidates.size(), 2u);
  for (size_t c = 0; c < r->candidates.size(); ++c) {
    const TensorId t = r->candidates[c].tensor;
    EXPECT_TRUE(r->candidates[c].recomputable) << p.tensors[t].name;
    EXPECT_EQ(r->plan.decisions[c], t == y ? Decision::kSwap : Decision::kRecompute)
        << p.tensors[t].name;
  }
}

// Planning time on a large random iteration (hundreds of layers). Printed, loosely bounded.
TEST(PlanTest, PlanningLargeGraphsIsFast) {
  const Profile p = RandomProfile(9, {.min_layers = 400, .max_layers = 400});
  const MachineModel m = TestMachine(InCorePeak(p) / 3);
  for (Policy policy : {Policy::kSwapAll, Policy::kSwapOpt, Policy::kPooch, Policy::kSuperNeurons,
                        Policy::kCheckpoint}) {
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<PlanResult> r = MakePlan(p, m, policy, RandomOptions());
    const double s = Seconds(start);
    std::printf("%-13s %zu ops, %zu candidates: %.3f s, %lld simulations, %s\n", PolicyName(policy),
                p.ops.size(), r.ok() ? r->candidates.size() : size_t{0}, s,
                static_cast<long long>(r.ok() ? r->simulations : 0),
                r.ok() ? absl::StrCat(r->sim.iteration_us, " us").c_str()
                       : std::string(r.status().message()).c_str());
    EXPECT_LT(s, 60);
  }
}

}  // namespace
}  // namespace pooch
