// Internals shared by the policy files (plan_*.cc) and their tests. Not part of the planner's
// public API (plan.h).
//
// Thread safety: a PlanContext is used by one thread.
#ifndef POOCH_CORE_PLAN_PLAN_INTERNAL_H_
#define POOCH_CORE_PLAN_PLAN_INTERNAL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/model/model.h"
#include "core/plan/plan.h"
#include "core/sim/sim.h"

namespace pooch {

// What a policy works with: the profile, the machine, one reusable Simulator, the candidates.
class PlanContext {
 public:
  // `long_only`: offer only intervals long enough to hide their copies (Note [Short intervals]);
  // `short_recomputable`: and, with it, the short ones cheaper to rebuild than to move
  // (Candidate::recompute_only), for the policies that recompute.
  PlanContext(const Profile& profile, const MachineModel& machine, const PlanOptions& options,
              bool long_only = true, bool short_recomputable = false)
      : profile_(profile),
        machine_(machine),
        options_(options),
        sim_(profile, machine,
             {.min_bytes = options.min_candidate_bytes,
              .long_only = long_only,
              .short_recomputable = long_only && short_recomputable}) {}

  const Profile& profile() const { return profile_; }
  const MachineModel& machine() const { return machine_; }
  const PlanOptions& options() const { return options_; }
  const std::vector<Candidate>& candidates() const { return sim_.candidates(); }

  // A plan sized for the profile with every candidate set to `decision`, except that a
  // recompute_only candidate is kept rather than swapped.
  Plan Uniform(Decision decision, SwapInSchedule schedule) const;
  // The decisions a policy may give candidate `c`: keep, swap unless recompute_only, recompute
  // when recomputable.
  std::vector<Decision> Choices(CandidateId c) const;

  // Fast simulation (no timeline). The reference is valid until the next simulation.
  const SimResult& Evaluate(const Plan& plan, bool allow_overflow = false);
  // Simulation with the timeline recorded.
  const SimResult& Record(const Plan& plan);

  int64_t simulations() const { return simulations_; }

 private:
  const Profile& profile_;
  const MachineModel& machine_;
  const PlanOptions& options_;
  Simulator sim_;
  int64_t simulations_ = 0;
};

// PoocH §4.4.2, Figure 11: from a recorded swap-all simulation, the intervals whose swap-out
// (L_O) or swap-in (L_I) is not hidden by computation: the copy is in flight while the compute
// engine is idle (Note [Overhead maps] in plan_swap.cc). Candidate ids, ascending.
struct OverheadMaps {
  std::vector<CandidateId> swap_out;  // L_O
  std::vector<CandidateId> swap_in;   // L_I
};
OverheadMaps FindOverheadMaps(const SimResult& recorded);

// The policies. Each returns a plan the simulator calls feasible, or FailedPrecondition.
absl::StatusOr<Plan> PlanInCore(PlanContext& ctx);
absl::StatusOr<Plan> PlanSwapAll(PlanContext& ctx, SwapInSchedule schedule);
absl::StatusOr<Plan> PlanSwapOpt(PlanContext& ctx);
absl::StatusOr<Plan> PlanPooch(PlanContext& ctx);
absl::StatusOr<Plan> PlanSuperNeurons(PlanContext& ctx);
absl::StatusOr<Plan> PlanCheckpoint(PlanContext& ctx);
absl::StatusOr<Plan> PlanOptimal(PlanContext& ctx);

// PoocH §4.4.3 applied to `start` (a feasible keep/swap plan): its swapped intervals are switched
// to recompute one at a time by r(X). Exposed so tests can run step 2 on chosen inputs.
Plan RecomputeStep(PlanContext& ctx, Plan start);

// Ours, beyond the paper: a budgeted local search after §4.4.3 (Note [Refinement after §4.4.3]
// in plan_pooch.cc). Takes and returns a feasible plan; the result is never slower. Without
// `recompute_only_too` it leaves the recompute_only candidates as they are (Note [Short
// recomputations] in plan_pooch.cc).
Plan RefineStep(PlanContext& ctx, Plan start, bool recompute_only_too = true);

}  // namespace pooch

#endif  // POOCH_CORE_PLAN_PLAN_INTERNAL_H_
