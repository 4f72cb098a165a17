// optimal: exhaustive search over keep / swap / recompute, for small graphs.
//
// Note [Exhaustive search]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// Every assignment of keep, swap or recompute (PlanContext::Choices: recompute only where the
// producer can be replayed, swap not for a recompute_only interval) to the candidates, with
// swap-ins scheduled when memory allows, is simulated; the fastest feasible wins (ties: the
// first found, keep before swap before recompute). That is up to 3^n simulations, so profiles
// with more than PlanOptions::optimal_max_maps candidates are refused (InvalidArgument). It
// searches over every interval that matters by capacity, short ones included, when they are at
// most that many (MakePlan), so that no policy beats it whichever intervals it was offered;
// otherwise over those pooch is offered first (Note [Short intervals] in plan.cc). Two
// prunings keep it exact:
//   - in-core, when it fits, is optimal: no plan is faster than the ops' total duration;
//   - a partial assignment whose lower bound (the ops' total duration plus one replay of every
//     distinct producer already set to recompute) is not below the best time found is cut.
#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/plan/plan_internal.h"

namespace pooch {
namespace {

struct Search {
  Search(PlanContext& c, const std::vector<Candidate>& f) : ctx(c), cands(f) {}
  PlanContext& ctx;
  const std::vector<Candidate>& cands;
  double compute_us = 0;
  Plan plan;
  Plan best;
  double best_us = std::numeric_limits<double>::infinity();
  std::vector<int> replays_of;  // per op: maps set to recompute whose producer it is

  void Visit(size_t i, double bound) {
    if (bound >= best_us * (1 - 1e-12)) return;
    if (i == cands.size()) {
      const SimResult& r = ctx.Evaluate(plan);
      if (r.feasible && r.iteration_us < best_us) {
        best_us = r.iteration_us;
        best = plan;
      }
      return;
    }
    const Candidate& f = cands[i];
    for (Decision d : ctx.Choices(static_cast<CandidateId>(i))) {
      double b = bound;
      if (d == Decision::kRecompute) {
        if (replays_of[f.producer]++ == 0) b += ctx.profile().ops[f.producer].duration_us;
      }
      plan.decisions[i] = d;
      Visit(i + 1, b);
      if (d == Decision::kRecompute) --replays_of[f.producer];
    }
    plan.decisions[i] = Decision::kKeep;
  }
};

}  // namespace

absl::StatusOr<Plan> PlanOptimal(PlanContext& ctx) {
  const std::vector<Candidate>& cands = ctx.candidates();
  if (static_cast<int>(cands.size()) > ctx.options().optimal_max_maps) {
    return absl::InvalidArgumentError(absl::StrCat("optimal: exhaustive search over ", cands.size(),
                                                   " idle intervals is too large (limit ",
                                                   ctx.options().optimal_max_maps, ")"));
  }
  Plan in_core = KeepAllPlan(cands.size());
  in_core.schedule = SwapInSchedule::kWhenMemoryAllows;
  if (ctx.Evaluate(in_core).feasible) return in_core;
  Search s(ctx, cands);
  s.compute_us = BackToBackUs(ctx.profile(), ctx.machine());
  s.plan = in_core;
  s.replays_of.assign(ctx.profile().ops.size(), 0);
  s.Visit(0, s.compute_us);
  if (std::isinf(s.best_us)) {
    const SimResult& r =
        ctx.Evaluate(ctx.Uniform(Decision::kSwap, SwapInSchedule::kWhenMemoryAllows));
    return absl::FailedPreconditionError(absl::StrCat(
        "optimal: no assignment of keep/swap/recompute fits (swap-all: ", r.failure, ")"));
  }
  return s.best;
}

}  // namespace pooch
