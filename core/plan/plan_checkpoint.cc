// checkpoint: recompute-all with sqrt(n) segments (Chen et al. 2016, "Training deep nets with
// sublinear memory cost").
//
// Note [Checkpointing]
// ~~~~~~~~~~~~~~~~~~~~
// The n candidates, in forward order, are cut into segments of k = ceil(sqrt(n)); the last map of
// each segment is kept as a checkpoint and the others are dropped. In backward, the first need of
// a dropped map replays its producer, which needs the previous map, and so on back to the
// checkpoint (Note [Recomputation] in sim.cc): the segment is recomputed once and held until its
// last use, as in Chen et al. Maps that cannot be recomputed are kept. No swapping.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/plan/plan_internal.h"

namespace pooch {

absl::StatusOr<Plan> PlanCheckpoint(PlanContext& ctx) {
  Plan plan = KeepAllPlan(ctx.candidates().size());
  plan.schedule = SwapInSchedule::kWhenMemoryAllows;
  const std::vector<Candidate>& cands = ctx.candidates();
  const size_t n = cands.size();
  const size_t k = std::max<size_t>(1, static_cast<size_t>(std::ceil(std::sqrt(double(n)))));
  for (size_t i = 0; i < n; ++i) {
    const bool checkpoint = i % k == k - 1;
    if (!checkpoint && cands[i].recomputable) {
      plan.decisions[i] = Decision::kRecompute;
    }
  }
  const SimResult& r = ctx.Evaluate(plan);
  if (!r.feasible) return absl::FailedPreconditionError(absl::StrCat("checkpoint: ", r.failure));
  return plan;
}

}  // namespace pooch
