// plan_counts.h: a plan as the summary at exit tells it (interpose/process/summary_words.h).
//
// Thread safety: a plain value.
#ifndef POOCH_CORE_EXEC_PLAN_COUNTS_H_
#define POOCH_CORE_EXEC_PLAN_COUNTS_H_

#include <string>

namespace pooch {

// The policy that made the plan, its decisions over the candidate intervals (as `pooch plan`
// counts them) and the iteration its simulation predicted.
struct PlanCounts {
  std::string policy;
  int keep = 0;
  int swap = 0;
  int recompute = 0;
  double predicted_iteration_ms = 0;
  bool feasible = false;
};

}  // namespace pooch

#endif  // POOCH_CORE_EXEC_PLAN_COUNTS_H_
