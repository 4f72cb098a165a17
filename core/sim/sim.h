// The timeline and memory simulator (PoocH §4.1.2, §4.3).
//
// Given a Profile (one training iteration), a MachineModel and a Plan (keep / swap / recompute for
// every idle interval of a tensor), Simulate() predicts the iteration time, the peak device memory
// and whether the plan fits, and optionally records the whole timeline. The planner (plan.h) calls
// it thousands of times per plan, so it is built to be cheap: a Simulator object owns every buffer
// and reuses it between runs, and SimOptions::record can skip the timeline.
//
//   pooch::Simulator sim(profile, machine);        // REQUIRES: profile.Validate().ok()
//   const pooch::SimResult& r = sim.Run(plan);      // valid until the next Run
//   if (!r.feasible) std::cerr << r.failure << "\n";
//
// The rules the simulator follows are the design notes at the top of sim.cc:
//   Note [Engines]               one compute engine, a D2H and an H2D copy engine (one shared
//                                engine when !machine.duplex); FIFO each.
//   Note [Idle intervals]        (candidates.cc) what may leave the device, from when to when.
//   Note [Swap-out]              starts after the interval opens; memory freed when done.
//   Note [Swap-in scheduling]    kWithPreviousOp, kWithPreviousConv, kWhenMemoryAllows.
//   Note [Swap-in after swap-out] a swap-in never starts before its swap-out completed.
//   Note [Recomputation]         replaying the producer; recursive needs; transient memory.
//   Note [Memory accounting]     what is held when; waiting for swap-out frees; overflow.
//
// Thread safety: a Simulator is not thread-safe; use one per thread. Simulate() is reentrant.
#ifndef POOCH_CORE_SIM_SIM_H_
#define POOCH_CORE_SIM_SIM_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/model/candidates.h"
#include "core/model/model.h"

namespace pooch {

// One interval of work on an engine.
struct SimEvent {
  enum class Kind {
    kCompute,    // ops[op] on the compute engine
    kRecompute,  // ops[op] (the producer of `tensor`) replayed on the compute engine, before
                 // ops[before_op] which needed `tensor`
    kSwapOut,    // `tensor` copied device to host; issued when ops[op] (the use opening its
                 // interval) ended
    kSwapIn,     // `tensor` copied host to device; issued when ops[op] became the next op
  };
  Kind kind = Kind::kCompute;
  OpIndex op = 0;
  TensorId tensor = -1;    // -1 for kCompute
  OpIndex before_op = -1;  // kRecompute only
  double start_us = 0;
  double end_us = 0;
  // The interval swapped or recomputed; -1 for kCompute and for a kRecompute that rebuilds a
  // freed intermediate another replay reads (Note [Recomputation]).
  CandidateId candidate = -1;
};

// Device memory in use from t_us on (until the next sample).
struct MemorySample {
  double t_us = 0;
  int64_t bytes = 0;
};

struct SimOptions {
  // Record SimResult::events and SimResult::memory. The planner's inner loop turns this off.
  bool record = true;
  // Do not stop at the first allocation that exceeds capacity: let memory overflow, keep going
  // and predict the time anyway (feasible is still false and failure names the first overflow).
  // The planner uses it to price "what if this map were kept" (PoocH §4.4.3, r(X)).
  bool allow_overflow = false;
};

struct SimResult {
  bool feasible = false;
  // Empty when feasible; otherwise one line, e.g.
  //   "op 412 (res4b.conv2 backward): allocating 96.0 MiB exceeds capacity 16.0 GiB by 1.2 GiB"
  //   "swap-in of res3a.out at op 300 (res3a backward) exceeds capacity 16.0 GiB by 310.0 MiB"
  std::string failure;
  OpIndex failed_at = -1;  // the op at (or before) which the plan failed; -1 when feasible

  double iteration_us = 0;    // until every engine is idle
  // Busy time of the compute engine: the ops (a program's copy for its bytes' time: Note [Program
  // copies]) plus recomputation.
  double compute_us = 0;
  double recompute_us = 0;    // of which recomputation
  double forward_end_us = 0;  // end of the last forward-phase op
  int64_t peak_bytes = 0;
  int64_t swapped_out_bytes = 0;
  int64_t swapped_in_bytes = 0;
  int32_t recomputed_ops = 0;  // number of replays

  // The swap-in schedule the simulator derived, in issue order (what Plan::swap_ins holds).
  std::vector<Plan::SwapIn> swap_ins;

  // Recorded only with SimOptions::record. Events are in issue order per engine; memory samples
  // are in time order, one per change.
  std::vector<SimEvent> events;
  std::vector<MemorySample> memory;
};

// Which idle intervals a Simulator offers (FindCandidates, Note [Intervals that matter]).
struct CandidateFilter {
  // Only the intervals that matter on the machine (over its memory in-core, long enough to hide
  // their copies). Tests of the copy rules on an ample machine turn it off to see every interval.
  bool matter_only = true;
  int64_t min_bytes = 0;  // tensors smaller than this are not candidates
  bool long_only = true;  // only intervals long enough to hide their own copies
  // With long_only, the short recomputable intervals that are cheaper to rebuild than to move
  // too (Candidate::recompute_only): for the policies that recompute.
  bool short_recomputable = false;
};

class Simulator {
 public:
  // REQUIRES: profile.Validate().ok(). Both are referenced, not copied, and must outlive this.
  // The candidates are FindCandidates(profile, &machine (or none when !filter.matter_only),
  // filter.min_bytes, filter.long_only, filter.short_recomputable).
  Simulator(const Profile& profile, const MachineModel& machine, CandidateFilter filter = {});
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  // Simulates one iteration under `plan`. A plan that is malformed for this profile (wrong
  // decisions size, recompute of an interval that cannot be replayed) gives feasible=false with the
  // reason. The reference stays valid until the next Run.
  const SimResult& Run(const Plan& plan, const SimOptions& options = {});

  // The idle intervals this machine's plans decide over (FindCandidates with the machine's
  // memory: Note [Intervals that matter] in core/model/candidates.cc).
  const std::vector<Candidate>& candidates() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One-shot convenience wrapper around Simulator.
// REQUIRES: profile.Validate().ok().
SimResult Simulate(const Profile& profile, const MachineModel& machine, const Plan& plan,
                   const SimOptions& options = {}, CandidateFilter filter = {});

}  // namespace pooch

#endif  // POOCH_CORE_SIM_SIM_H_
