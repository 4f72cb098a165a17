// MakePlan: policy names, dispatch, and what every policy's result gets (plan.h).
#include "core/plan/plan.h"

#include <algorithm>
#include <memory>
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
  for (size_t c = 0; c < candidates().size(); ++c) {
    if (decision == Decision::kSwap && candidates()[c].recompute_only) {
      plan.decisions[c] = Decision::kKeep;
    }
  }
  plan.schedule = schedule;
  return plan;
}

std::vector<Decision> PlanContext::Choices(CandidateId c) const {
  const Candidate& k = candidates()[static_cast<size_t>(c)];
  std::vector<Decision> d = {Decision::kKeep};
  if (!k.recompute_only) d.push_back(Decision::kSwap);
  if (k.recomputable) d.push_back(Decision::kRecompute);
  return d;
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

namespace {

absl::StatusOr<Plan> RunPolicy(PlanContext& ctx, Policy policy) {
  switch (policy) {
    case Policy::kInCore:
      return PlanInCore(ctx);
    case Policy::kSwapAllNoSched:
      return PlanSwapAll(ctx, SwapInSchedule::kWithPreviousOp);
    case Policy::kSwapAll:
      return PlanSwapAll(ctx, SwapInSchedule::kWhenMemoryAllows);
    case Policy::kSwapOpt:
      return PlanSwapOpt(ctx);
    case Policy::kPooch:
      return PlanPooch(ctx);
    case Policy::kSuperNeurons:
      return PlanSuperNeurons(ctx);
    case Policy::kCheckpoint:
      return PlanCheckpoint(ctx);
    case Policy::kOptimal:
      return PlanOptimal(ctx);
  }
  return absl::InternalError("unknown policy");
}

}  // namespace

// Note [Short intervals]
// ~~~~~~~~~~~~~~~~~~~~~~
// A policy first plans over the intervals long enough to hide their own copies (and pooch and
// optimal over the short ones cheaper to rebuild than to move: Note [Intervals that matter] in
// core/model/candidates.cc). When it finds no feasible plan there,
// it plans again over every interval that matters by capacity, short ones included: swapping a
// short interval stalls the computation, but a plan that stalls still beats demand swapping, and
// some iterations (small networks at a small fraction of their peak) fit only that way (the
// short intervals the first attempt offered for recomputation only may then be swapped). The
// result says which candidates it decided over (PlanResult::candidates), and counts the
// simulations of both attempts.
absl::StatusOr<PlanResult> MakePlan(const Profile& profile, const MachineModel& machine,
                                    Policy policy, const PlanOptions& options) {
  if (absl::Status valid = profile.Validate(); !valid.ok()) return valid;
  // Only the policies that search over recomputation are offered the short intervals that only
  // recomputation can use (Note [Intervals that matter]); the baselines plan as published.
  const bool short_recomputable = policy == Policy::kPooch || policy == Policy::kOptimal;
  auto ctx = std::make_unique<PlanContext>(
      profile, machine, options, /*long_only=*/options.long_intervals_first, short_recomputable);
  if (policy == Policy::kOptimal && options.long_intervals_first) {
    // Note [Exhaustive search]: every interval at once when they are few enough.
    auto all = std::make_unique<PlanContext>(profile, machine, options, /*long_only=*/false);
    if (static_cast<int>(all->candidates().size()) <= options.optimal_max_maps) {
      ctx = std::move(all);
    }
  }
  if (policy == Policy::kOptimal && options.long_intervals_first) {
    // Note [Exhaustive search]: every interval at once when they are few enough.
    auto all = std::make_unique<PlanContext>(profile, machine, options, /*long_only=*/false);
    if (static_cast<int>(all->candidates().size()) <= options.optimal_max_maps) {
      ctx = std::move(all);
    }
  }
  absl::StatusOr<Plan> plan = RunPolicy(*ctx, policy);
  int64_t earlier_simulations = 0;
  if (!plan.ok() && plan.status().code() == absl::StatusCode::kFailedPrecondition &&
      options.long_intervals_first) {
    earlier_simulations = ctx->simulations();
    auto all = std::make_unique<PlanContext>(profile, machine, options, /*long_only=*/false);
    // Unless the first attempt already had every interval, and could swap each.
    const std::vector<Candidate>& first = ctx->candidates();
    if (all->candidates().size() != first.size() ||
        std::any_of(first.begin(), first.end(),
                    [](const Candidate& c) { return c.recompute_only; })) {
      absl::StatusOr<Plan> retry = RunPolicy(*all, policy);
      if (retry.ok()) {
        plan = std::move(retry);
        ctx = std::move(all);
      } else {
        earlier_simulations += all->simulations();
      }
    }
  }
  if (!plan.ok()) return plan.status();
  PlanResult result;
  result.plan = *std::move(plan);
  result.plan.policy = PolicyName(policy);
  result.sim = ctx->Record(result.plan);
  if (!result.sim.feasible) {
    // Every policy checks feasibility itself; this is a planner bug, not a user error.
    return absl::InternalError(
        absl::StrCat(PolicyName(policy), ": chose an infeasible plan: ", result.sim.failure));
  }
  result.plan.swap_ins = result.sim.swap_ins;
  result.candidates = ctx->candidates();
  result.simulations = earlier_simulations + ctx->simulations();
  return result;
}

}  // namespace pooch
