// candidates.h: what the simulator and every planner derive from a profile before any plan
// exists: the swap/recompute candidates (Note [Feature map uses] in candidates.cc), each
// tensor's copy durations, and the in-core plan.
//
// Thread safety: plain functions, reentrant.
#ifndef POOCH_CORE_MODEL_CANDIDATES_H_
#define POOCH_CORE_MODEL_CANDIDATES_H_

#include <vector>

#include "core/model/model.h"

namespace pooch {

// Static facts about one swap/recompute candidate, derived from the profile alone
// (Note [Feature map uses]).
struct FeatureMapInfo {
  TensorId tensor = 0;
  // The forward op that wrote it (-1 when none: an input that existed before the iteration).
  OpIndex producer = -1;
  OpIndex last_forward_use = -1;       // last forward-phase op reading or writing it
  std::vector<OpIndex> backward_uses;  // ops after last_forward_use reading or writing it
  // Its producer can be replayed (replayable, the only forward writer, does not read its own
  // output). Whether every input is still available at replay time depends on the plan and is
  // checked by the simulator.
  bool recomputable = false;
};

// The feature maps a plan may swap or recompute: tensors flagged feature_map that have a forward
// use and at least one use after it. Ordered by last_forward_use, then by id (so "from the
// output layer" is reverse order).
std::vector<FeatureMapInfo> FindCandidates(const Profile& profile);

// Copy durations the simulator uses for a tensor: the profile's measured value when >= 0, else
// bytes / bandwidth + latency.
double SwapOutUs(const Tensor& tensor, const MachineModel& machine);
double SwapInUs(const Tensor& tensor, const MachineModel& machine);

// How a plan decides over the candidates: the keep/swap/recompute split that `pooch plan`, the
// plan's JSON and the run-time summary show. A candidate beyond the plan's decisions is kept.
struct DecisionCounts {
  int keep = 0;
  int swap = 0;
  int recompute = 0;
};
// The decision of `tensor` in `plan` (kKeep when the plan has none for it).
Decision DecisionOf(const Plan& plan, TensorId tensor);
DecisionCounts CountDecisions(const Plan& plan, const std::vector<FeatureMapInfo>& candidates);

// A plan whose decisions are all kKeep (in-core), sized for `profile`.
Plan KeepAllPlan(const Profile& profile);

}  // namespace pooch

#endif  // POOCH_CORE_MODEL_CANDIDATES_H_
