// The planner: decides for every idle interval of every tensor (Note [Idle intervals] in
// core/model/candidates.cc) whether to keep it on the device, swap it, or drop and recompute it.
//
//   absl::StatusOr<pooch::PlanResult> r = pooch::MakePlan(profile, machine, pooch::Policy::kPooch);
//   if (!r.ok()) { /* FailedPrecondition: no feasible plan, with the reason */ }
//   r->plan.decisions ...; r->sim.iteration_us ...;
//
// Policies (PoocH §4.4, §5.1, §5.2; each is a design note in its plan_*.cc file):
//   in-core            everything kept (fails when the iteration does not fit)
//   swap-all-nosched   every feature map swapped; swap-in with the previous op
//   swap-all           every feature map swapped; swap-in as early as memory allows (§4.3)
//   swap-opt           §4.4.2 only: keep/swap search from swap-all (plan_swap.cc)
//   pooch              swap-opt, then §4.4.3: swap -> recompute by r(X), then a bounded local
//                      search beyond the paper (plan_pooch.cc, Note [Refinement after §4.4.3])
//   superneurons       keep from the output layer while it fits; conv outputs swapped, others
//                      recomputed; swap-in with the preceding conv (plan_superneurons.cc)
//   checkpoint         recompute-all with sqrt(n) checkpoints, Chen et al. 2016
//   optimal            exhaustive search over keep/swap/recompute; small graphs only
//
// Every policy returns only plans the simulator calls feasible (PlanResult::sim is that
// simulation, PlanResult::plan.swap_ins its derived swap-in schedule). When it finds none it
// returns FailedPrecondition with one line saying why. A profile that fails Validate() gives
// InvalidArgument.
//
// Thread safety: MakePlan is reentrant; it shares no state between calls.
#ifndef POOCH_CORE_PLAN_PLAN_H_
#define POOCH_CORE_PLAN_PLAN_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/model/model.h"
#include "core/sim/sim.h"

namespace pooch {

enum class Policy {
  kInCore,
  kSwapAllNoSched,
  kSwapAll,
  kSwapOpt,
  kPooch,
  kSuperNeurons,
  kCheckpoint,
  kOptimal,
};

// "in-core", "swap-all-nosched", "swap-all", "swap-opt", "pooch", "superneurons", "checkpoint",
// "optimal". ParsePolicy accepts exactly these names (InvalidArgument listing them otherwise).
const char* PolicyName(Policy policy);
absl::StatusOr<Policy> ParsePolicy(absl::string_view name);
std::vector<Policy> AllPolicies();  // in the order above

struct PlanOptions {
  // Tensors smaller than this are kept, never planned (Note [Intervals that matter] in
  // core/model/candidates.cc); the runtime passes its POOCH_MIN_SWAP_BYTES.
  int64_t min_candidate_bytes = kDefaultMinCandidateBytes;
  // Plan first over the intervals long enough to hide their copies, and over the short ones too
  // only when that finds no plan (Note [Short intervals] in plan.cc). False: over all at once
  // (the run-time swap-all profiling pass, which measures every copy it can).
  bool long_intervals_first = true;
  // PoocH §4.4.2 brute-forces keep/swap over L_I. Beyond this many maps the extra ones (those
  // whose swap-in stalls least) are decided greedily instead: Note [Bounded brute force].
  // Larger limits cost exponentially more simulations for plans that rarely differ
  // (docs/measurements.md, "Planner").
  int brute_force_limit = 6;
  // PoocH §4.4.3 prices every swapped interval again after each swap -> recompute choice; we
  // make ceil(|L| / recompute_rounds) choices per pricing, each checked by simulation (Note
  // [Recompute rounds] in plan_pooch.cc). 0: the paper's step exactly, O(|L|^2) simulations.
  int recompute_rounds = 8;
  // optimal refuses (InvalidArgument) profiles with more swap/recompute candidates than this:
  // 3^12 = 531441 simulations (about a second on small graphs) when no pruning applies; 3^16
  // would take minutes.
  int optimal_max_maps = 12;
  // pooch's refinement after §4.4.3 (Note [Refinement after §4.4.3] in plan_pooch.cc) stops
  // after about this many simulations; 0 gives the paper's method alone. `pooch run` and `pooch
  // plan` use the same budget, so `pooch plan` reproduces a run's plan. A run plans once per
  // profile (and per re-plan, Note [Headroom] in core/exec/plan_life.h) and then trains for
  // hours; the budget is what issue 12's 0.3 s of CPU for the whole planner on 3D ResNeXt-101
  // b256 allows (scripts/bench_plan.sh), and past it the predicted time hardly improves
  // (docs/measurements.md, "Planner"). On plan_test.cc's random graphs of at most 10 maps the step
  // ends long before the budget.
  int refine_simulations = 2000;
};

struct PlanResult {
  Plan plan;  // plan.policy = PolicyName(policy); plan.swap_ins filled from sim
  // What plan.decisions are indexed by: the intervals that matter on `machine` (FindCandidates).
  std::vector<Candidate> candidates;
  SimResult sim;            // the simulation of `plan` (with the timeline recorded)
  int64_t simulations = 0;  // how many times the planner ran the simulator
};

absl::StatusOr<PlanResult> MakePlan(const Profile& profile, const MachineModel& machine,
                                    Policy policy, const PlanOptions& options = {});

}  // namespace pooch

#endif  // POOCH_CORE_PLAN_PLAN_H_
