// MakePlan: policy names, dispatch, and what every policy's result gets (plan.h).
#include "core/plan/plan.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/plan/plan_internal.h"

namespace pooch {

const char* PolicyName(Policy policy) {
  switch (policy) {
    case Policy::kInCore:
      return "in-core";
    case Policy::kSwapAllNoSched:
      return "swap-all-nosched";
    case Policy::kSwapAll:
      return "swap-all";
    case Policy::kSwapOpt:
      return "swap-opt";
    case Policy::kPooch:
      return "pooch";
    case Policy::kSuperNeurons:
      return "superneurons";
    case Policy::kCheckpoint:
      return "checkpoint";
    case Policy::kOptimal:
      return "optimal";
  }
  return "?";
}

std::vector<Policy> AllPolicies() {
  return {Policy::kInCore, Policy::kSwapAllNoSched, Policy::kSwapAll,    Policy::kSwapOpt,
          Policy::kPooch,  Policy::kSuperNeurons,   Policy::kCheckpoint, Policy::kOptimal};
}

absl::StatusOr<Policy> ParsePolicy(absl::string_view name) {
  std::vector<std::string> names;
  for (Policy policy : AllPolicies()) {
    if (name == PolicyName(policy)) return policy;
    names.push_back(PolicyName(policy));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown policy '", name, "' (use one of ", absl::StrJoin(names, ", "), ")"));
}


Plan PlanContext::Uniform(Decision decision, SwapInSchedule schedule) const {
  Plan plan;
  plan.decisions.assign(candidates().size(), decision);
  plan.schedule = schedule;
  return plan;
}

const SimResult& PlanContext::Evaluate(const Plan& plan, bool allow_overflow) {
  ++simulations_;
  SimOptions options;
  options.record = false;
  options.allow_overflow = allow_overflow;
  return sim_.Run(plan, options);
}

const SimResult& PlanContext::Record(const Plan& plan) {
  ++simulations_;
  return sim_.Run(plan, SimOptions{});
}


absl::StatusOr<PlanResult> MakePlan(const Profile& profile, const MachineModel& machine,
                                    Policy policy, const PlanOptions& options) {
  if (absl::Status valid = profile.Validate(); !valid.ok()) return valid;
  PlanContext ctx(profile, machine, options);
  absl::StatusOr<Plan> plan;
  switch (policy) {
    case Policy::kInCore:
      plan = PlanInCore(ctx);
      break;
    case Policy::kSwapAllNoSched:
      plan = PlanSwapAll(ctx, SwapInSchedule::kWithPreviousOp);
      break;
    case Policy::kSwapAll:
      plan = PlanSwapAll(ctx, SwapInSchedule::kWhenMemoryAllows);
      break;
    case Policy::kSwapOpt:
      plan = PlanSwapOpt(ctx);
      break;
    case Policy::kPooch:
      plan = PlanPooch(ctx);
      break;
    case Policy::kSuperNeurons:
      plan = PlanSuperNeurons(ctx);
      break;
    case Policy::kCheckpoint:
      plan = PlanCheckpoint(ctx);
      break;
    case Policy::kOptimal:
      plan = PlanOptimal(ctx);
      break;
  }
  if (!plan.ok()) return plan.status();
  PlanResult result;
  result.plan = *std::move(plan);
  result.plan.policy = PolicyName(policy);
  result.sim = ctx.Record(result.plan);
  if (!result.sim.feasible) {
    // Every policy checks feasibility itself; this is a planner bug, not a user error.
    return absl::InternalError(
        absl::StrCat(PolicyName(policy), ": chose an infeasible plan: ", result.sim.failure));
  }
  result.plan.swap_ins = result.sim.swap_ins;
  result.candidates = ctx.candidates();
  result.simulations = ctx.simulations();
  return result;
}

}  // namespace pooch
