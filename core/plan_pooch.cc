// pooch: PoocH §4.4, swap-opt followed by the swap -> recompute step (§4.4.3).
//
// Note [Recompute step]
// ~~~~~~~~~~~~~~~~~~~~~
// The paper's steps, on the maps L that step 1 left swapped:
//   2. for each X in L, r(X) = recompute_overhead(X) / swap_overhead(X), both by simulation
//      with the other maps as they are now:
//        swap_overhead(X)      = T(X swapped) - T(X kept)
//        recompute_overhead(X) = T(X recomputed) - T(X kept)
//      "X kept" is priced with SimOptions::allow_overflow: it is a reference point, not a plan,
//      and may not fit.
//   3. every X with r(X) >= 1 leaves L and stays swapped;
//   4. the X with the smallest r(X) < 1 leaves L and is recomputed;
//   5. repeat from 2 until L is empty.
// Two details the paper leaves open: when swap_overhead(X) is zero, r(X) is -inf if recomputing
// is strictly faster and +inf otherwise; and a recomputation that would not fit is not taken: X
// stays swapped and the next smallest r(X) < 1 is tried. Maps whose producer cannot be replayed
// never enter L. O(|L|^2) simulations.
//
// Note [PoocH fallback]
// ~~~~~~~~~~~~~~~~~~~~~
// PoocH starts from swap-all, "the safest classification". When even swap-all does not fit (a
// swap-in needs memory that recomputation would not), the paper has no answer; we start instead
// from the best feasible of {every replayable map recomputed and the rest swapped, checkpoint}
// and improve it greedily: from the output layer, each map is tried as keep, then swap, then
// recompute, and the change is kept when the plan fits and is faster.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/plan_internal.h"

namespace pooch {

Plan RecomputeStep(PlanContext& ctx, Plan plan) {
  std::vector<TensorId> l;
  for (const FeatureMapInfo& f : ctx.candidates()) {
    if (f.recomputable && plan.decisions[f.tensor] == Decision::kSwap) l.push_back(f.tensor);
  }
  double t_cur = ctx.Evaluate(plan).iteration_us;
  struct Ratio {
    TensorId tensor;
    double r;
    double t_rec;
    bool fits;
  };
  std::vector<Ratio> ratios;
  while (!l.empty()) {
    ratios.clear();
    for (TensorId x : l) {
      plan.decisions[x] = Decision::kKeep;
      const double t_keep = ctx.Evaluate(plan, /*allow_overflow=*/true).iteration_us;
      plan.decisions[x] = Decision::kRecompute;
      const SimResult& rec = ctx.Evaluate(plan, /*allow_overflow=*/true);
      const double t_rec = rec.iteration_us;
      const bool fits = rec.feasible;
      plan.decisions[x] = Decision::kSwap;
      const double swap_overhead = t_cur - t_keep;
      const double recompute_overhead = t_rec - t_keep;
      const double eps = 1e-9 * std::max(1.0, t_cur);
      double r;
      if (swap_overhead > eps) {
        r = recompute_overhead / swap_overhead;
      } else {
        r = recompute_overhead < swap_overhead - eps ? -std::numeric_limits<double>::infinity()
                                                     : std::numeric_limits<double>::infinity();
      }
      ratios.push_back({x, r, t_rec, fits});
    }
    std::sort(ratios.begin(), ratios.end(), [](const Ratio& a, const Ratio& b) {
      return a.r != b.r ? a.r < b.r : a.t_rec < b.t_rec;
    });
    l.clear();
    bool chosen = false;
    for (const Ratio& x : ratios) {
      if (x.r >= 1.0) break;  // step 3: stays swapped
      if (!chosen && x.fits) {
        plan.decisions[x.tensor] = Decision::kRecompute;  // step 4
        t_cur = x.t_rec;
        chosen = true;
      } else if (chosen) {
        l.push_back(x.tensor);  // still r < 1: re-evaluated next round
      }
      // r < 1 but does not fit, before the choice: stays swapped (Note [Recompute step]).
    }
  }
  return plan;
}

namespace {

// Note [PoocH fallback].
absl::StatusOr<Plan> Fallback(PlanContext& ctx, const std::string& why) {
  Plan best;
  double best_us = std::numeric_limits<double>::infinity();
  Plan recompute = ctx.Uniform(Decision::kSwap, SwapInSchedule::kWhenMemoryAllows);
  for (const FeatureMapInfo& f : ctx.candidates()) {
    if (f.recomputable) recompute.decisions[f.tensor] = Decision::kRecompute;
  }
  std::vector<Plan> starts = {recompute};
  if (absl::StatusOr<Plan> checkpoint = PlanCheckpoint(ctx); checkpoint.ok()) {
    checkpoint->schedule = SwapInSchedule::kWhenMemoryAllows;
    starts.push_back(*checkpoint);
  }
  for (const Plan& start : starts) {
    const SimResult& r = ctx.Evaluate(start);
    if (r.feasible && r.iteration_us < best_us) {
      best_us = r.iteration_us;
      best = start;
    }
  }
  if (std::isinf(best_us)) {
    return absl::FailedPreconditionError(
        absl::StrCat("pooch: no feasible plan: ", why,
                     "; recomputing every replayable map does not fit "
                     "either: ",
                     ctx.Evaluate(recompute).failure));
  }
  const std::vector<FeatureMapInfo>& cands = ctx.candidates();
  for (auto it = cands.rbegin(); it != cands.rend(); ++it) {
    for (Decision d : {Decision::kKeep, Decision::kSwap, Decision::kRecompute}) {
      if (d == best.decisions[it->tensor]) continue;
      if (d == Decision::kRecompute && !it->recomputable) continue;
      Plan plan = best;
      plan.decisions[it->tensor] = d;
      const SimResult& r = ctx.Evaluate(plan);
      if (r.feasible && r.iteration_us < best_us) {
        best_us = r.iteration_us;
        best = std::move(plan);
      }
    }
  }
  return best;
}

}  // namespace

absl::StatusOr<Plan> PlanPooch(PlanContext& ctx) {
  absl::StatusOr<Plan> step1 = PlanSwapOpt(ctx);
  if (!step1.ok()) return Fallback(ctx, std::string(step1.status().message()));
  return RecomputeStep(ctx, *std::move(step1));
}

}  // namespace pooch
