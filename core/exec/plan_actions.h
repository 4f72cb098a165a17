// plan_actions.h: a plan turned into what the plan executor does at each position of a followed
// iteration (Note [Carrying out the plan]).
//
// Note [Carrying out the plan]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A plan speaks of idle intervals of tensors and op indices of the reference iteration; a
// followed iteration is the same event sequence, so the plan becomes actions at positions
// (IterationTracker::Step::position) on *slots*: the i-th managed allocation of the reference is
// slot i (the tensor with tensor_alloc_ordinal i), and its address in the current iteration is
// learnt when the allocation at that position happens; a tensor that outlives iterations
// (weights, optimizer state) gets a slot after those, whose address the plan executor finds once
// among its live allocations (PlanActions::persistent) and keeps from iteration to iteration.
//   swap:  Offload after the op that opens the interval (the manager's swap-out waits for every
//          use queued so far); Prefetch before the op at which the simulated schedule issues its
//          swap-in (Plan::swap_ins, §4.3). Prefetch never evicts, so an early one that finds no
//          room is retried before each later op until the op that closes the interval, where
//          BeforeOp's demand swap-in (the safety net) takes over; one scheduled at the closing op
//          is issued with the op before it (Note [Prefetch at the closing op], plan_actions.cc). An interval that wraps is
//          offloaded after the tensor's last use and prefetched in the next iteration.
//   keep:  nothing (demand swapping may still evict it if the plan was wrong).
//   recompute: the producer's hook gives its replay recipe at the producer's position (RunOp,
//          PlanExecutor::OfferRecipe); after the op that opens the interval the tensor is dropped
//          (Recomputer::Drop), or swapped out when it cannot be (no recipe). The Recomputer
//          rebuilds it when an op next touches it: the op that closes the interval.
// Note [Carried slots]
// ~~~~~~~~~~~~~~~~~~~~
// With a reference whose lifetimes cross its boundary (Note [Carried
// lifetimes], iteration_tracker.h), a tensor freed in the iteration but made in the one before
// is a persistent tensor of the profile whose allocation changes every iteration: it is the
// allocation that its successor (the reference's allocation one period later, still live at the
// end) got in the previous iteration, so its slot takes that address at each iteration start.
// The planner never recomputes it (no op of the window writes it: it has no producer), and its
// idle intervals lie inside the window; an address that is not known (after a departure) means
// no action, and a wrong one costs time only (above).
// Actions touch only allocations the manager knows, through calls that never lose data, so a
// wrong address (an allocation freed and its address reused) costs time, never results; and
// a departed iteration has no positions, so no actions.
//
// Note [Diverged iterations]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// The tracker follows an iteration by its events' kinds and sizes, so a network that picks
// among same-sized weights (a mixture of experts' routing) follows the reference while it
// touches other weights: the plan then swaps in the reference's experts for nothing, and the
// chosen ones come by demand. At each position the actions keep which allocations older than
// the iteration the reference's op touched (`persistent_touched`: weights, optimizer state);
// an op that touches another allocation made before the previous iteration began (one made in
// it may be a carried successor, Note [Carried slots]) has diverged, and the plan's actions stop
// until the next iteration starts. Only ops whose accesses are exact count: a kernel's are its
// scanned parameter words, which may hold stale pointers (Note [Event signatures] in
// core/profile/op_stream_recorder.cc). Demand swapping and the pilot model (Note [Pilot model]) run
// the rest, as for a departed iteration. The plan itself stays: the next iteration may be the
// reference's shape again.
//
// Thread safety: plain data and a pure function; the plan executor guards its copy.
#ifndef POOCH_CORE_EXEC_PLAN_ACTIONS_H_
#define POOCH_CORE_EXEC_PLAN_ACTIONS_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "core/device/device.h"
#include "core/plan/plan.h"
#include "core/profile/op_stream_recorder.h"
#include "core/profile/profile_builder.h"
#include "core/residency/residency.h"

namespace pooch {

struct PlanActions {
  struct Prefetch {
    int slot = 0;
    CandidateId candidate = 0;  // done once per iteration (PlanActions::prefetched)
  };
  absl::flat_hash_map<int64_t, std::vector<Prefetch>> prefetch_before;  // op position -> ...
  absl::flat_hash_map<int64_t, std::vector<int>> offload_after;         // op position -> slots
  absl::flat_hash_map<int64_t, std::vector<int>> drop_after;            // op position -> slots
  struct Record {
    int slot = 0;
    double profiled_us = 0;
  };
  absl::flat_hash_map<int64_t, Record> record_at;  // producer's position -> what it makes
  absl::flat_hash_map<int64_t, int> slot_at;       // managed allocation's position -> slot
  // Note [Diverged iterations]: op position -> the recorder's ids of the allocations older than
  // the reference iteration that its op touched (sorted).
  absl::flat_hash_map<int64_t, std::vector<uint64_t>> persistent_touched;
  // Note [Left-out accesses] (plan_executor.cc): op position -> the slots of the allocations made
  // in the reference that its op touched (sorted); slots below `made_slots` are those.
  absl::flat_hash_map<int64_t, std::vector<int>> made_touched;
  int made_slots = 0;
  // Note [Left-out accesses]: the addresses the plan swapped out whose prefetch it has not yet
  // tried (across iteration starts: an interval may wrap).
  absl::flat_hash_set<DeviceAddress> held_out;
  bool diverged = false;  // in this iteration (StartIteration clears it)
  // Slots of tensors that outlive iterations, by the recorder's allocation id; the plan executor
  // resolves their addresses into `fixed` when the actions are made.
  struct Persistent {
    int slot = 0;
    uint64_t allocation = 0;
  };
  std::vector<Persistent> persistent;
  // Note [Carried slots]: a tensor the iteration frees but the one before it made (a loss held
  // across the loop) is, in each iteration, the allocation its successor slot got in the
  // previous one. `successor_allocation`: the recorder's id of the successor in the reference,
  // the tensor when the actions are made (the plan executor resolves it as it does `persistent`).
  struct Carried {
    int slot = 0;
    int successor = 0;
    uint64_t successor_allocation = 0;
  };
  std::vector<Carried> carried;
  absl::flat_hash_map<int, DeviceAddress> fixed;    // slot -> address kept across iterations
  std::vector<DeviceAddress> address;               // slot -> address in this iteration; 0: none
  absl::flat_hash_map<DeviceAddress, int> slot_of;  // the inverse, for frees
  std::vector<bool> prefetched;  // per candidate: its prefetch was issued in this iteration
  int swapped = 0;               // intervals the plan swaps
  int recomputed = 0;            // intervals the plan recomputes
  // Counted across plans (the plan executor carries them from one plan's actions to the next).
  int64_t drop_fallbacks = 0;       // planned drops that swapped out instead (no recipe, pinned)
  int64_t prefetch_no_room = 0;     // prefetch attempts that found no room
  int64_t diverged_iterations = 0;  // Note [Diverged iterations]
  int64_t left_out_swap_ins = 0;    // Note [Left-out accesses]
  int64_t sent_back = 0;            // held-out allocations a left-out access touched, swapped
                                    // out again after their op
  ResidencyStats at_start;          // the manager's counts when the first plan began

  // A new iteration (or a departure): forgets this iteration's addresses and prefetches and
  // puts back the fixed ones; a carried slot takes its successor's address (or keeps its own
  // while the successor has none, as when the actions were just made).
  void StartIteration();
};

// The actions that carry out `plan` of `built` (the reference iteration, whose events were at
// `positions`). The counters across plans are left at zero; `fixed` is left empty.
PlanActions MakePlanActions(const BuiltProfile& built, const OpStreamRecorder::Positions& positions,
                            const PlanResult& plan);

}  // namespace pooch

#endif  // POOCH_CORE_EXEC_PLAN_ACTIONS_H_
