// pooch: PoocH §4.4, swap-opt followed by the swap -> recompute step (§4.4.3), then our
// bounded refinement (Note [Refinement after §4.4.3]).
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
// Note [Recompute rounds]
// ~~~~~~~~~~~~~~~~~~~~~~~
// Step 2 prices every X left in L after every choice, which is what makes planning slow: with
// intervals as candidates, L holds 153 intervals on 3D ResNeXt-101 at batch 256, and the step took
// 17 566 simulations (1.5 s). So we price L once per *round* and make up to
// k = ceil(|L| / PlanOptions::recompute_rounds) choices from one pricing: the first is the
// paper's (smallest fresh r(X) < 1 that fits); each next one, in the order of the round's r(X),
// is simulated and taken only when it fits and is faster than the plan so far, which is r(X) < 1
// priced fresh (r(X) < 1 exactly when recomputing X is faster than swapping it, both priced
// against the same "X kept"). An X found slower or not fitting stays swapped and leaves L, as
// steps 3 and 4 would have it; the X not reached go on to the next round. With k = 1 (and with
// recompute_rounds = 0) this is the paper's step exactly. With 8 rounds, and the refinement
// after it (Note [Refinement after §4.4.3]), the final plans' predicted times moved by -1.2 % to
// +0.9 % on the zoo networks and the profiles of docs/reproduction.md section 6, and the step
// took about 1200 simulations on the ResNeXt. A lazy variant (ratios in a heap, re-priced only
// when they come up) cost +3.9 % on the ResNeXt and was dropped.
//
// Note [PoocH fallback]
// ~~~~~~~~~~~~~~~~~~~~~
// PoocH starts from swap-all, "the safest classification". When even swap-all does not fit (a
// swap-in needs memory that recomputation would not), the paper has no answer; we start instead
// from the best feasible of {every replayable map recomputed and the rest swapped, checkpoint}
// and improve it greedily: from the output layer, each map is tried as keep, then swap, then
// recompute, and the change is kept when the plan fits and is faster.
//
// Note [Short recomputations]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The short intervals offered for recomputation only (Candidate::recompute_only, Note
// [Intervals that matter] in core/model/candidates.cc) have no place in the paper's search,
// which starts from every map swapped and recomputes only maps it swapped. So pooch first plans
// as the paper does with those intervals kept throughout, the refinement leaving them alone: the
// plan it made before they were offered (when swap-all fits; Note [PoocH fallback] starts with
// every recomputable interval recomputed, those included). Then it runs the refinement again from
// that plan, with a budget of its own, over every map, those intervals included: recomputing one
// frees memory during its interval, which the keep scan and the single and pair changes can use to
// keep a swapped map or issue a swap-in earlier; or it finds nothing and the plan stays as it was.
// (Starting a second search from swap-all with them recomputed found plans as good or worse on
// the zoo networks and a U-Net profile, at two to four times the planning time: recomputing
// every short interval makes chains of hundreds of replays before one op.)
//
// Note [Refinement after §4.4.3]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// This step is ours; it goes beyond the paper. PoocH decides keep/swap first (§4.4.2) and only
// then turns swaps into recomputations (§4.4.3), so memory that a recomputation frees is never
// used to keep more maps, and a map whose swap is hidden (r(X) = +inf) is never recomputed to
// make room for another. Against the exhaustive search on random graphs of at most 10 maps that
// cost up to 15 % (plan_test.cc, seeds 1097, 1161, 1223: optimal swaps or recomputes one map
// more so that another can stay on the device). So after §4.4.3 we run rounds of:
//   1. the paper's own steps again, with the recomputations fixed: each swapped map, from the
//      output layer backwards, is switched to keep when that fits and is faster (the §4.4.2
//      scan, which freed memory may now allow); if any was, §4.4.3 on the maps still swapped;
//   2. otherwise local search, from the output layer backwards: one sweep over every change of
//      one map's decision, taking each that fits and is faster as it goes; if it took none,
//      every change of two maps' decisions together (seed 1161 needs keep -> swap on one with
//      swap -> recompute on another; neither is faster alone), the first that fits and is
//      faster taken. Then a new round starts. (A new round after each single change would
//      re-try the keep scan and every map before it each time; the sweep reaches better plans
//      on the same budget.)
// It ends when a round finds nothing or after PlanOptions::refine_simulations simulations
// (checked before every simulation except inside a step-1 §4.4.3, which is O(|L|^2) on the few
// maps still swapped), and at once when the plan already runs the ops back to back. Every plan
// taken was simulated feasible and faster, so pooch is never slower than the paper's method.
// swap-opt (Figure 15's §4.4.2 bar) does not run it. With the budget at 0 pooch is exactly
// swap-opt + §4.4.3.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/plan/plan_internal.h"

namespace pooch {

Plan RecomputeStep(PlanContext& ctx, Plan plan) {
  std::vector<CandidateId> l;
  const std::vector<Candidate>& cands = ctx.candidates();
  for (CandidateId c = 0; c < static_cast<CandidateId>(cands.size()); ++c) {
    if (cands[c].recomputable && plan.decisions[c] == Decision::kSwap) l.push_back(c);
  }
  // Note [Recompute rounds]: choices per pricing.
  const int rounds = ctx.options().recompute_rounds;
  const size_t per_round =
      rounds <= 0 ? 1 : std::max<size_t>(1, (l.size() + rounds - 1) / static_cast<size_t>(rounds));
  double t_cur = ctx.Evaluate(plan).iteration_us;
  auto faster = [&](double t) { return t < t_cur - 1e-9 * std::max(1.0, t_cur); };
  struct Ratio {
    CandidateId candidate;
    double r;
    double t_rec;
    bool fits;
  };
  std::vector<Ratio> ratios;
  while (!l.empty()) {
    ratios.clear();
    for (CandidateId x : l) {
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
    size_t chosen = 0;
    for (const Ratio& x : ratios) {
      if (x.r >= 1.0) break;  // step 3: stays swapped
      if (chosen == per_round) {
        l.push_back(x.candidate);  // still r < 1: priced again next round
      } else if (chosen == 0) {
        if (x.fits) {  // step 4, on fresh prices
          plan.decisions[x.candidate] = Decision::kRecompute;
          t_cur = x.t_rec;
          ++chosen;
        }
        // r < 1 but does not fit, before the first choice: stays swapped.
      } else {
        // A further choice from the same pricing, checked fresh (Note [Recompute rounds]).
        plan.decisions[x.candidate] = Decision::kRecompute;
        const SimResult& r = ctx.Evaluate(plan);
        if (r.feasible && faster(r.iteration_us)) {
          t_cur = r.iteration_us;
          ++chosen;
        } else {
          plan.decisions[x.candidate] = Decision::kSwap;
        }
      }
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
  const std::vector<Candidate>& cands = ctx.candidates();
  for (size_t c = 0; c < cands.size(); ++c) {
    if (cands[c].recomputable) recompute.decisions[c] = Decision::kRecompute;
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
  for (size_t c = cands.size(); c-- > 0;) {
    for (Decision d : ctx.Choices(static_cast<CandidateId>(c))) {
      if (d == best.decisions[c]) continue;
      Plan plan = best;
      plan.decisions[c] = d;
      const SimResult& r = ctx.Evaluate(plan);
      if (r.feasible && r.iteration_us < best_us) {
        best_us = r.iteration_us;
        best = std::move(plan);
      }
    }
  }
  return best;
}

// The rounds of Note [Refinement after §4.4.3] on one plan: the plan taken so far, its time and
// the simulation budget.
class Refinement {
 public:
  // `budget_end`: the simulation count at which it stops.
  // `recompute_only_too`: whether the recompute_only candidates are among the maps it changes.
  Refinement(PlanContext& ctx, Plan plan, double plan_us, int64_t budget_end,
             bool recompute_only_too)
      : ctx_(ctx), plan_(std::move(plan)), best_us_(plan_us), budget_end_(budget_end) {
    // From the output layer backwards, as the paper's scans go (candidates are ordered by the op
    // that opens them).
    const std::vector<Candidate>& cands = ctx.candidates();
    for (size_t c = cands.size(); c-- > 0;) {
      if (recompute_only_too || !cands[c].recompute_only) {
        maps_.push_back(static_cast<CandidateId>(c));
      }
    }
  }

  // Rounds until one finds nothing or the budget is spent.
  Plan Run() && {
    bool improved = true;
    while (improved && !Spent()) {
      if (KeepScan()) {
        RecomputeAgain();
        continue;
      }
      improved = SingleChanges() || PairChanges();
    }
    return std::move(plan_);
  }

 private:
  bool Spent() const { return ctx_.simulations() >= budget_end_; }

  // Feasible and faster by more than a rounding error: then it becomes the plan.
  bool Better(const Plan& candidate) {
    const SimResult& r = ctx_.Evaluate(candidate);
    if (!r.feasible || r.iteration_us >= best_us_ * (1 - 1e-12)) return false;
    best_us_ = r.iteration_us;
    return true;
  }

  std::vector<Decision> Choices(CandidateId c) const { return ctx_.Choices(c); }

  // Step 1: the §4.4.2 keep scan over the swapped maps. True when it kept any.
  bool KeepScan() {
    bool kept = false;
    for (CandidateId f : maps_) {
      if (Spent()) break;
      if (plan_.decisions[f] != Decision::kSwap) continue;
      plan_.decisions[f] = Decision::kKeep;
      if (Better(plan_)) {
        kept = true;
      } else {
        plan_.decisions[f] = Decision::kSwap;
      }
    }
    return kept;
  }

  // Step 1, then §4.4.3 again. RecomputeStep only takes feasible, faster plans; checked anyway,
  // as pooch must never return a plan worse than the one it refines.
  void RecomputeAgain() {
    Plan recomputed = RecomputeStep(ctx_, plan_);
    const SimResult& r = ctx_.Evaluate(recomputed);
    if (r.feasible && r.iteration_us <= best_us_) {
      best_us_ = r.iteration_us;
      plan_ = std::move(recomputed);
    }
  }

  // Step 2a: single changes, one sweep that takes every one found faster. True when it took any.
  bool SingleChanges() {
    bool improved = false;
    for (CandidateId f : maps_) {
      const Decision was = plan_.decisions[f];
      for (Decision d : Choices(f)) {
        if (d == was || Spent()) continue;
        // Step 1 tried swap -> keep on this plan, unless an earlier change of this sweep
        // freed the memory.
        if (was == Decision::kSwap && d == Decision::kKeep && !improved) continue;
        plan_.decisions[f] = d;
        if (Better(plan_)) {
          improved = true;
          break;
        }
        plan_.decisions[f] = was;
      }
    }
    return improved;
  }

  // Step 2b: pairs of changes, any decisions (seed 1161 of plan_test.cc needs keep -> swap on
  // one map with swap -> recompute on another, neither faster alone); the first found faster
  // is taken. False when none is, or the budget ran out first (the plan then unchanged).
  bool PairChanges() {
    for (size_t i = 0; i < maps_.size(); ++i) {
      for (size_t j = i + 1; j < maps_.size(); ++j) {
        const CandidateId a = maps_[i];
        const CandidateId b = maps_[j];
        const Decision a_was = plan_.decisions[a];
        const Decision b_was = plan_.decisions[b];
        for (Decision da : Choices(a)) {
          if (da == a_was) continue;
          for (Decision db : Choices(b)) {
            if (db == b_was) continue;
            if (Spent()) {
              plan_.decisions[a] = a_was;
              plan_.decisions[b] = b_was;
              return false;
            }
            plan_.decisions[a] = da;
            plan_.decisions[b] = db;
            if (Better(plan_)) return true;
          }
        }
        plan_.decisions[a] = a_was;
        plan_.decisions[b] = b_was;
      }
    }
    return false;
  }

  PlanContext& ctx_;
  Plan plan_;
  double best_us_;
  const int64_t budget_end_;
  std::vector<CandidateId> maps_;
};

}  // namespace

Plan RefineStep(PlanContext& ctx, Plan plan, bool recompute_only_too) {
  if (ctx.options().refine_simulations <= 0) return plan;  // the paper's method alone
  const int64_t budget_end = ctx.simulations() + ctx.options().refine_simulations;
  const SimResult& start = ctx.Evaluate(plan);
  if (!start.feasible) return plan;  // not ours to repair; callers pass feasible plans
  const double start_us = start.iteration_us;
  // No plan beats the ops back to back (Note [Swap-opt search]); there is nothing to refine.
  if (start_us <= BackToBackUs(ctx.profile(), ctx.machine()) * (1 + 1e-12)) return plan;
  return Refinement(ctx, std::move(plan), start_us, budget_end, recompute_only_too).Run();
}

absl::StatusOr<Plan> PlanPooch(PlanContext& ctx) {
  // Note [Short recomputations]: the paper's method, the recompute_only intervals kept.
  absl::StatusOr<Plan> step1 = PlanSwapOpt(ctx);
  absl::StatusOr<Plan> plan = step1.ok() ? RefineStep(ctx, RecomputeStep(ctx, *std::move(step1)),
                                                      /*recompute_only_too=*/false)
                                         : Fallback(ctx, std::string(step1.status().message()));
  const std::vector<Candidate>& cands = ctx.candidates();
  if (!plan.ok() || std::none_of(cands.begin(), cands.end(),
                                 [](const Candidate& c) { return c.recompute_only; })) {
    return plan;
  }
  // Then the refinement again, with them.
  return RefineStep(ctx, *std::move(plan));
}

}  // namespace pooch
