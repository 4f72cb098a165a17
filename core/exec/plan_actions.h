// plan_actions.h: a plan turned into what the profiler does at each position of a followed
// iteration (Note [Carrying out the plan]).
//
// Note [Carrying out the plan]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A plan speaks of tensors and op indices of the reference iteration; a followed iteration is
// the same event sequence, so the plan becomes actions at positions (IterationTracker::Step::
// position): the i-th managed allocation of the reference is the tensor with
// tensor_alloc_ordinal i, and its address in the current iteration is learnt when the allocation
// at that position happens.
//   swap:  Offload after the op at the tensor's last forward use (the manager's swap-out
//          waits for every use queued so far); Prefetch before the op at which the simulated
//          schedule issues its swap-in (Plan::swap_ins, §4.3). Prefetch never evicts, so an
//          early one that finds no room is retried before each later op until the first
//          backward use, where BeforeOp's demand swap-in (the safety net) takes over.
//   keep:  nothing (demand swapping may still evict it if the plan was wrong).
//   recompute: the producer's hook gives its replay recipe at the producer's position (RunOp,
//          Profiler::OfferRecipe); after the last forward use the map is dropped
//          (Recomputer::Drop), or swapped out when it cannot be (no recipe). The Recomputer
//          rebuilds it when an op next touches it: its first backward use.
// Actions touch only allocations the manager knows, through calls that never lose data, so a
// wrong address (an allocation freed and its address reused) costs time, never results; and
// a departed iteration has no positions, so no actions.
//
// Thread safety: plain data and a pure function; the profiler guards its copy.
#ifndef POOCH_CORE_EXEC_PLAN_ACTIONS_H_
#define POOCH_CORE_EXEC_PLAN_ACTIONS_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/device/device.h"
#include "core/plan/plan.h"
#include "core/profile/op_stream_recorder.h"
#include "core/profile/profile_builder.h"
#include "core/residency/residency.h"

namespace pooch {

struct PlanActions {
  absl::flat_hash_map<int64_t, std::vector<int>> prefetch_before;  // op position -> ordinals
  absl::flat_hash_map<int64_t, std::vector<int>> offload_after;    // op position -> ordinals
  absl::flat_hash_map<int64_t, std::vector<int>> drop_after;       // op position -> ordinals
  struct Record {
    int ordinal = 0;
    double profiled_us = 0;
  };
  absl::flat_hash_map<int64_t, Record> record_at;  // producer's position -> what it makes
  absl::flat_hash_map<int64_t, int> ordinal_at;    // managed allocation's position -> ordinal
  std::vector<DeviceAddress> address;              // ordinal -> address in this iteration; 0: none
  absl::flat_hash_map<DeviceAddress, int> ordinal_of;  // the inverse, for frees
  int swapped = 0;                                     // maps the plan swaps
  int recomputed = 0;                                  // maps the plan recomputes
  // Counted across plans (the profiler carries them from one plan's actions to the next).
  int64_t drop_fallbacks = 0;    // planned drops that swapped out instead (no recipe, pinned)
  int64_t prefetch_no_room = 0;  // prefetch attempts that found no room
  ResidencyStats at_start;       // the manager's counts when the first plan began
};

// The actions that carry out `plan` of `built` (the reference iteration, whose events were at
// `positions`). The counters across plans are left at zero.
PlanActions MakePlanActions(const BuiltProfile& built, const OpStreamRecorder::Positions& positions,
                            const PlanResult& plan);

}  // namespace pooch

#endif  // POOCH_CORE_EXEC_PLAN_ACTIONS_H_
