// PlanLife: which plan is carried out, over a run. It holds the profile planned last and its
// positions, plans it (with the summary's plan: line, the trace instant and POOCH_PLOT's picture),
// keeps each plan by its reference (Note [Plan cache]), re-plans with headroom when the safety
// net fires (Note [Headroom]), and takes another cached reference's plan when the tracker
// switches to it (Note [Switching references]). The plan executor (plan_executor.h) turns the
// current plan into actions and says when each of these happens.
//
//   PlanLife life(config, trace);
//   life.SetMachine(machine, assumed);           // measured with the profile
//   if (const PlanCache::Entry* e = life.FindCached(reference)) { life.SetProfile(...); ... }
//   life.SetProfile(built, positions);
//   std::optional<PlanResult> plan = life.PlanProfile();
//   life.Cache(plan);
//   ...at each iteration start under the plan:
//   if (std::optional<PlanResult> p = life.ReplanIfMissed(demand_ins, limit, false)) ...
//
// Note [Headroom]
// ~~~~~~~~~~~~~~~
// The planner's simulation frees memory at the device time the work completes; at run time the
// host runs ahead of the device and memory comes back only when the host sees completion, and
// the runtime holds a little the profile does not show (the reuse cache, replay scratch). A
// plan that uses the last byte of the limit then overflows at run time: the safety net evicts
// (parameters, mostly: the least recently used) and swaps back in on demand, and the measured
// time leaves the prediction behind. So when the safety net fired in two successive whole
// iterations under a plan (its first does not count: it starts from the previous plan's
// residency, Note [Kept across a new plan]), the same profile is planned again for a smaller
// memory: the limit less a headroom grown by the largest feature map (at least 1/64 of the
// limit) per re-plan, up to kMaxReplans re-plans and a headroom of a quarter of the limit. A
// re-plan that finds no feasible plan keeps the previous one. Two iterations, not one: a plan
// that is short of memory misses in every iteration, while one iteration's misses can come from
// what differs between iterations and no headroom removes (under PyTorch, a stale pointer word
// that makes another, larger allocation resident in one iteration and not the next, Note
// [Left-out accesses]); re-planning on those moved the plan (and its headroom) by chance from
// run to run. The cost is one more iteration under a plan that is short.
// Every plan is also made without the small allocator's slabs beyond the profile's "other"
// tensor, up to their peak so far: the profile counts the slabs mapped at its end, but their
// number moves (a slab is mapped while freed blocks wait for their batch's event, Note [Reuse
// after free], and released when empty), and a plan made for the fewer overflowed by a slab at
// its peak (the transformer's profile counted 4 MiB of the 6 its iterations held: the 2 MiB the
// safety net then found short).
//
// Thread safety: none; the plan executor calls it under its lock.
#ifndef POOCH_CORE_EXEC_PLAN_LIFE_H_
#define POOCH_CORE_EXEC_PLAN_LIFE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/config/config.h"
#include "core/exec/plan_cache.h"
#include "core/exec/plan_counts.h"
#include "core/model/model.h"
#include "core/plan/plan.h"
#include "core/profile/iteration_tracker.h"
#include "core/profile/op_stream_recorder.h"
#include "core/profile/profile_builder.h"

namespace pooch {

class TraceObserver;

class PlanLife {
 public:
  static constexpr int kMaxReplans = 4;  // Note [Headroom]

  // `trace` may be null; both must outlive this.
  PlanLife(const Config& config, TraceObserver* trace) : config_(config), trace_(trace) {}
  PlanLife(const PlanLife&) = delete;
  PlanLife& operator=(const PlanLife&) = delete;

  // The machine plans are made for (Note [Copy times]): measured with a profile; `assumed`: a
  // copy direction had no copy to measure.
  void SetMachine(const MachineModel& machine, bool assumed);
  // Note [Swap-all profiling]: `profile` planned with every interval swapped, on that machine.
  absl::StatusOr<PlanResult> PlanSwapAll(const Profile& profile) const;

  // Note [Plan cache]: `reference`'s key becomes the current one; its entry, or null.
  const PlanCache::Entry* FindCached(const std::vector<StreamEvent>& reference);
  // The profile carried out from now on, kept for re-plans and cached with its plan.
  void SetProfile(BuiltProfile built, OpStreamRecorder::Positions positions);
  const BuiltProfile* built() const { return built_.get(); }
  const OpStreamRecorder::Positions* positions() const { return positions_.get(); }
  // A cache hit (FindCached): its headroom, re-plans and plan line are the current ones.
  void TakeCached(const PlanCache::Entry& entry);
  // Writes the current profile to POOCH_PROFILE_OUT and plans it under the run's policy.
  std::optional<PlanResult> PlanProfile();
  // Keeps `plan` (nullopt: the reference has no plan) as the current key's entry; returns the
  // key the cache dropped, if any.
  std::optional<uint64_t> Cache(const std::optional<PlanResult>& plan);

  // Note [Switching references]: the entry of `key` if its plan can be switched to (it keeps
  // the profile and positions its actions are made from); null otherwise.
  const PlanCache::Entry* Switchable(uint64_t key) const;
  // The plan of `entry` (from Switchable(key)) is carried out from now on.
  void SwitchedTo(uint64_t key, const PlanCache::Entry& entry);

  // Note [Headroom]: called at each iteration start while a plan is carried out, with the
  // manager's demand swap-ins so far. Returns a feasible re-plan of the current profile, to be
  // carried out and cached, when the last two whole iterations both missed; nullopt when none
  // is due or none was found.
  std::optional<PlanResult> ReplanIfMissed(int64_t demand_swap_ins, int64_t memory_limit,
                                           bool swap_all_pass);
  // The plan carried out from now on starts (its first iteration is the one under way), or an
  // iteration departed: the safety net's hits so far are no evidence for a re-plan.
  void RestartEvidence() {
    iterations_under_plan_ = 0;
    missed_in_a_row_ = 0;
  }

  // Note [Headroom]: the small allocator's peak of slab bytes so far, for the plans made next.
  void SetSlabPeak(int64_t bytes) { slab_peak_ = bytes; }

  // The iteration found cannot be planned (e.g. it has no op): the plan line says why.
  void NoProfile(const absl::Status& why);
  // The summary's plan: line until a plan is made, if none was made before.
  void SetPlanLineIfNone(std::string line);

  const std::string& plan_line() const { return plan_line_; }
  // The counts and prediction of the plan of the reference planned or switched to last; nullopt
  // when it has none (not planned yet, or planning failed).
  std::optional<PlanCounts> CurrentPlan() const;
  // Re-plans made since the start, across references (ReplanIfMissed).
  int total_replans() const { return total_replans_; }
  uint64_t key() const { return key_; }
  // The safety net's swap-ins in the last whole iteration under the plan; -1: none yet.
  int64_t last_iteration_hits() const { return last_iteration_hits_; }
  // The summary's plan_cache: line.
  std::string CacheLine() const;

 private:
  std::optional<PlanResult> Plan(const Profile& profile);
  void WriteProfile(const Profile& profile) const;
  void Plot(const Profile& profile, const MachineModel& machine, const PlanResult& plan);
  // The step a re-plan grows the headroom by: the largest candidate, at least 1/64 of the limit.
  int64_t HeadroomStep(int64_t memory_limit) const;
  // Note [Headroom]: the slab bytes beyond the current profile's "other" tensor.
  int64_t SlabGrowth() const;

  const Config& config_;
  TraceObserver* const trace_;  // may be null
  MachineModel machine_;        // measured once per profile
  bool machine_assumed_ = false;
  // The profile planned last, kept for re-plans; shared with its cache entry (Note [Switching
  // references]).
  std::shared_ptr<const BuiltProfile> built_;
  std::shared_ptr<const OpStreamRecorder::Positions> positions_;
  std::string plan_line_;
  int64_t headroom_ = 0;   // Note [Headroom]
  int64_t slab_peak_ = 0;  // Note [Headroom]
  int replans_ = 0;
  int total_replans_ = 0;
  PlanCache cache_;   // Note [Plan cache]
  uint64_t key_ = 0;  // of the reference planned or switched to last
  int64_t switches_ = 0;
  // Note [Headroom]: whole iterations under the current plan, the manager's demand swap-ins
  // when the current iteration began, the swap-ins of the last whole iteration, and how many
  // whole iterations in a row (the plan's first not counted) ended with some.
  int iterations_under_plan_ = 0;
  int64_t demand_ins_mark_ = 0;
  int64_t last_iteration_hits_ = -1;
  int missed_in_a_row_ = 0;
  bool plot_failed_ = false;  // POOCH_PLOT could not be drawn
};

}  // namespace pooch

#endif  // POOCH_CORE_EXEC_PLAN_LIFE_H_
