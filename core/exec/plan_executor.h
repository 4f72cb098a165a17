// plan_executor.h: the run-time plan executor. It profiles a program's first iterations and
// carries out the plan made from them (PoocH §4.2-4.3), over core's Device and ResidencyManager
// (no CUDA).
//
// Under a planned POOCH_POLICY, or whenever POOCH_PROFILE_OUT is set (WantedBy), the hooks report
// every op, allocation and free here. Iterations are found in the op stream
// (core/profile/iteration_tracker.h); while profiling, each op is bracketed with timing events on
// its stream. When the reference iteration is complete its events become a core Profile
// (core/profile/profile_builder.h), written to POOCH_PROFILE_OUT in the format `pooch plan
// --profile` reads, and planned with the requested policy against the memory limit (PlanLife,
// plan_life.h, holds which plan is current). Later iterations are followed against the
// reference; an iteration that departs from it is counted, and after POOCH_REPROFILE_AFTER
// departures the program is profiled again. Each plan is kept by its reference (Note [Plan
// cache]); an iteration that turns out to be a kept reference's switches to that plan where it
// departs (Note [Switching references]), and with an explicit marker a departed iteration is
// itself profiled and planned (Note [Departed references]). Both in
// core/profile/iteration_tracker.h.
//
// Under a planner policy the plan's swaps are then carried out in each followed iteration
// (Note [Carrying out the plan] in plan_actions.h); demand swapping stays underneath as the
// safety net. While no plan that moves anything is followed (a dynamic network's departed
// iterations, or a plan with nothing to do), the pilot model prefetches at each read-back what it
// predicts the next block touches (Note [Pilot model]). A map the plan recomputes is dropped after
// its last forward use and rebuilt by replay before its next use (core/recompute/recomputer.h); its
// producer's recipe is taken at its position. Each followed iteration is timed
// (core/measure/iteration_clock.h) for the measured choice between following the plan and
// setting it aside (Note [Measured choice]).
//
//   PlanExecutor executor(device, manager, small, config, trace, recomputer);
//   ProfiledOp op = executor.OpBegin("cudnnConvolutionForward", stream, ranges, true);
//   ... the real call ...
//   executor.OpRan(&op, stream);
//   ... the manager's AfterOp ...
//   executor.OpEnd(op, stream);
//
// Note [Op brackets]
// ~~~~~~~~~~~~~~~~~~
// A timed op's events bracket the real call alone: OpBegin records the start after the op's
// memory was made resident, OpRan the end as soon as the call returns, before the manager's
// AfterOp and the plan's drops and swap-outs (OpEnd). On a GPU an event's time is when the stream
// reaches it, so host work done before the end event is recorded counts as the op's time whenever
// the stream has run dry meanwhile: the swap-all pass's swap-outs, pinning new host buffers, made
// forward ops look hundreds of times slower, and the plan then believed compute hid any copy.
// simgpu's virtual clock does not advance with host work, so only a GPU shows it.
//
// Thread safety: every method may be called from any thread; one lock serialises the executor.
// The hooks of a program that runs ops from several threads at once interleave, and such a
// stream rarely repeats; it then stays in profiling, which costs events, never results. Lock
// order: the executor's lock, then the recomputer's, then the manager's.
#ifndef POOCH_CORE_EXEC_PLAN_EXECUTOR_H_
#define POOCH_CORE_EXEC_PLAN_EXECUTOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "core/config/config.h"
#include "core/device/device.h"
#include "core/exec/plan_counts.h"
#include "core/lineage/replay_recipe.h"
#include "core/profile/profile_builder.h"
#include "core/residency/residency.h"
#include "core/small_alloc/small_allocator.h"

namespace pooch {

class Recomputer;
class TraceObserver;

// What OpBegin hands to OpEnd.
struct ProfiledOp {
  bool active = false;
  uint64_t seq = 0;
  int64_t position = -1;  // in the reference iteration while following it; else -1
  EventHandle start = 0;  // 0: the op is not timed
  EventHandle end = 0;    // recorded by OpRan (Note [Op brackets]); 0: not yet
  // The plan recomputes this op's output, at this address: the hook hands its recipe to
  // OfferRecipe. 0: none.
  uintptr_t record_output = 0;
  double record_us = 0;  // the op's profiled device time
  // Note [Left-out accesses] (plan_executor.cc): allocations the plan holds out that an access
  // the profile left out touched (BeforeOp swapped them in or kept them from the plan's
  // swap-out); OpEnd swaps them out again.
  std::vector<DeviceAddress> send_back;
};

class PlanExecutor {
 public:
  // Everything must outlive the executor. `trace` (POOCH_TRACE) gets the iteration starts, the
  // plan and the departures; `recomputer` carries out recomputations (a planner policy). Both
  // may be null.
  PlanExecutor(Device& device, ResidencyManager& manager, SmallAllocator& small,
               const Config& config, TraceObserver* trace, Recomputer* recomputer);
  ~PlanExecutor();
  PlanExecutor(const PlanExecutor&) = delete;
  PlanExecutor& operator=(const PlanExecutor&) = delete;

  // Whether `config` asks for profiling: a planner policy, or POOCH_PROFILE_OUT.
  static bool WantedBy(const Config& config);

  // Around an intercepted op: Begin after its memory was made resident, Ran right after the real
  // call, End after the manager's AfterOp. `name` outlives the process. `replay_capable`: the hook
  // could give a replay recipe (the profile's replay_capable flag). `exact_accesses` false:
  // `ranges` were guessed (OpStreamRecorder::Op).
  // `copy`: what the op copies between host and device memory (Note [Program copies] in
  // core/sim/sim.cc). `demand_swapped_in`: the ticket's (OpTicket::demand_swapped_in), which
  // tells the plan's misses from swap-ins at accesses the profile left out (Note [Left-out
  // accesses] in plan_executor.cc).
  ProfiledOp OpBegin(const char* name, uintptr_t stream, const std::vector<AccessRange>& ranges,
                     bool replay_capable, bool exact_accesses = true, HostCopyBytes copy = {},
                     absl::Span<const DeviceAddress> demand_swapped_in = {});
  // The recipe of an op whose ProfiledOp::record_output was set (nullopt: it could not be made,
  // and the map is swapped instead of dropped).
  void OfferRecipe(const ProfiledOp& op, std::optional<ReplayRecipe> recipe);
  // Right after the real call returned: ends a timed op's bracket (Note [Op brackets]).
  void OpRan(ProfiledOp* op, uintptr_t stream);
  void OpEnd(const ProfiledOp& op, uintptr_t stream);
  // After a successful allocation, and before a free.
  void Alloc(uintptr_t address, int64_t bytes, bool managed);
  void Free(uintptr_t address);
  // The program copied `bytes` from the device to `host` and waited for them (a synchronous
  // read-back): a block boundary of the pilot model (Note [Pilot model], core/pilot/pilot.h).
  void ReadBack(const void* host, size_t bytes);
  // An iteration marker (POOCH_ITERATION_MARKER=sync or nvtx): an iteration ends here.
  void SyncMarker();

  // What the executor tells a listener of the iterations (the summary's per-iteration figures,
  // Note [Steady iterations] in interpose/process/steady_host.h): an iteration started, with
  // whether a plan's actions are carried out in it and which plan (a number that changes with
  // every plan installed); or the iteration under way departed from the reference.
  struct IterationNote {
    bool started = false;
    bool departed = false;
    bool following = false;
    uint64_t plan = 0;
  };
  // Called under the executor's lock, from the hook that found the event; must not call back.
  void SetIterationListener(std::function<void(const IterationNote&)> listener);

  // The summary's iterations:, plan:, the pilot's, plan_cache:, choice:, plan_run: and
  // recompute: lines (each when it applies).
  std::vector<std::string> SummaryLines();

  // What the summary's plain lines say of profiling and the plan (interpose/process/
  // summary_words.h).
  struct Outcome {
    std::optional<PlanCounts> plan;  // the plan of the reference followed last, if it has one
    std::string plan_line;           // the plan: line (says why when there is no plan)
    bool carried_out = false;        // a planner policy's plan's actions were installed
    double measured_iteration_ms = 0;  // mean measured under the current plan; 0: none yet
    int64_t profiles = 0;
    int reprofiles = 0;
    uint64_t departures = 0;
    // Demand swap-ins since the first plan began, but those at accesses the profile left out
    // (Note [Left-out accesses] in plan_executor.cc; the plan_run: line counts them apart).
    int64_t safety_net_swap_ins = 0;
    int replans = 0;  // re-plans with more headroom (Note [Headroom])
    int64_t diverged_iterations = 0;
  };
  Outcome SummaryOutcome();

 private:
  class Impl;
  const std::unique_ptr<Impl> impl_;
};

}  // namespace pooch

#endif  // POOCH_CORE_EXEC_PLAN_EXECUTOR_H_
