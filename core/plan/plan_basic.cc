// The baseline policies: in-core, swap-all-nosched and swap-all (PoocH §5.1, §5.2).
#include <string>

#include "absl/strings/str_cat.h"
#include "core/base/units.h"
#include "core/plan/plan_internal.h"

namespace pooch {

absl::StatusOr<Plan> PlanInCore(PlanContext& ctx) {
  Plan plan = KeepAllPlan(ctx.candidates().size());
  if (ctx.Evaluate(plan).feasible) return plan;
  // Say how much it would need: simulate again letting memory overflow.
  const SimResult& over = ctx.Evaluate(plan, /*allow_overflow=*/true);
  return absl::FailedPreconditionError(absl::StrCat("in-core needs ", FormatBytes(over.peak_bytes),
                                                    ", capacity ",
                                                    FormatBytes(ctx.machine().memory_bytes)));
}

absl::StatusOr<Plan> PlanSwapAll(PlanContext& ctx, SwapInSchedule schedule) {
  Plan plan = ctx.Uniform(Decision::kSwap, schedule);
  const SimResult& sim = ctx.Evaluate(plan);
  if (sim.feasible) return plan;
  const char* name = schedule == SwapInSchedule::kWithPreviousOp ? "swap-all-nosched" : "swap-all";
  return absl::FailedPreconditionError(absl::StrCat(name, ": ", sim.failure));
}

}  // namespace pooch
