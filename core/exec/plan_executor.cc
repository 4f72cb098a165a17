// The PlanExecutor (plan_executor.h).
#include "core/exec/plan_executor.h"

#include <algorithm>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "core/base/log.h"
#include "core/base/mutex.h"
#include "core/device/timing_event_pool.h"
#include "core/exec/pilot_actions.h"
#include "core/exec/plan_actions.h"
#include "core/exec/plan_life.h"
#include "core/measure/copy_times.h"
#include "core/measure/iteration_clock.h"
#include "core/measure/iteration_modes.h"
#include "core/measure/measured_choice.h"
#include "core/measure/trace_observer.h"
#include "core/plan/plan.h"
#include "core/profile/op_stream_recorder.h"
#include "core/profile/profile_builder.h"
#include "core/recompute/recomputer.h"

namespace pooch {
namespace {

// Note [Pilot model]: a pilot runs under a planner policy unless POOCH_PILOT=off.
bool PilotWanted(const Config& c) {
  return c.mode == RunMode::kPlanned && c.pilot != PilotMode::kOff;
}

// The most ops whose timing events are kept while profiling (two events each).
constexpr size_t kMaxTimedOps = size_t{1} << 16;

// Note [Free reserve] (core/residency/residency_evict.cc): the room kept free in iterations run
// under demand swapping alone, as a fraction of the memory limit. Too large a reserve swaps out
// what the iteration uses again.
constexpr double kFreeReserveFraction = 0.15;

RecordedAccess::Mode ModeOf(AccessRange::Mode mode) {
  switch (mode) {
    case AccessRange::Mode::kRead:
      return RecordedAccess::kRead;
    case AccessRange::Mode::kWrite:
      return RecordedAccess::kWrite;
    case AccessRange::Mode::kReadWrite:
      return RecordedAccess::kReadWrite;
  }
  return RecordedAccess::kReadWrite;
}

}  // namespace

class PlanExecutor::Impl {
 public:
  Impl(Device& device, ResidencyManager& manager, SmallAllocator& small, const Config& config,
       TraceObserver* trace, Recomputer* recomputer)
      : trace_(trace),
        recomputer_(recomputer),
        device_(device),
        manager_(manager),
        small_(small),
        config_(config),
        recorder_({.marker = config.iteration_marker,
                   .profile_iterations = config.profile_iters,
                   .max_detect_events = size_t{1} << 18}) {
    if (PilotWanted(config)) {
      pilot_.emplace(config.pilot, manager, trace);
    }
  }

  ProfiledOp OpBegin(const char* name, uintptr_t stream, const std::vector<AccessRange>& ranges,
                     bool replay_capable, bool exact_accesses, HostCopyBytes copy,
                     absl::Span<const DeviceAddress> demand_swapped_in) {
    MutexLock lock(&mu_);
    FinalizeIfDueLocked();
    std::vector<OpStreamRecorder::Access> accesses;
    // Note [Pilot model]: the managed allocations the op touches, by base.
    const bool feed_pilot = pilot_.has_value() && pilot_->pilot().active();
    std::vector<PilotKey> pilot_touched;
    // Note [Diverged iterations]: managed allocations made before the previous iteration began,
    // collected only while a plan is followed (none for a kernel, whose scanned words may be
    // stale).
    std::vector<uint64_t> old_touched;
    const bool check_divergence = exact_accesses && FollowingLocked();
    // Note [Left-out accesses]: the managed allocations a kernel's guessed accesses touch.
    std::vector<DeviceAddress> guessed_touched;
    for (const AccessRange& r : ranges) {
      if (const auto* live = ContainingLocked(r.address)) {
        if (!exact_accesses && live->second.managed) guessed_touched.push_back(live->first);
        // Note [Chains] (core/model/candidates.cc): a write of the whole allocation.
        const bool whole = r.mode == AccessRange::Mode::kWrite && r.address == live->first &&
                           r.bytes >= live->second.bytes;
        accesses.push_back({live->second.id, ModeOf(r.mode), whole});
        if (feed_pilot && live->second.managed) pilot_touched.push_back(live->first);
        if (check_divergence && live->second.managed &&
            live->second.id < previous_iteration_first_id_) {
          old_touched.push_back(live->second.id);
        }
      }
    }
    const bool profiling = ProfilingLocked();
    const IterationTracker::Step step =
        recorder_.Op(name, accesses, replay_capable, exact_accesses, copy);
    HandleStepLocked(step);
    if (step.position >= 0 && FollowingLocked()) NoteDivergenceLocked(step.position, old_touched);
    last_position_ = step.position;
    if (feed_pilot) pilot_->pilot().Op(step.signature, pilot_touched);
    if (clock_.mark_due()) {
      for (const IterationClock::Sample& s : clock_.Mark(stream, modes_.ended())) {
        SampleModeLocked(s);
      }
    }
    ProfiledOp op;
    op.active = true;
    op.seq = step.seq;
    op.position = step.position;
    if (step.position >= 0 && FollowingLocked()) {
      if (!exact_accesses) {
        NoteLeftOutLocked(step.position, demand_swapped_in, guessed_touched, op.send_back);
      }
      PrefetchBeforeLocked(step.position);
      if (auto r = actions_->record_at.find(step.position); r != actions_->record_at.end()) {
        op.record_output = actions_->address[static_cast<size_t>(r->second.slot)];
        op.record_us = r->second.profiled_us;
      }
    }
    if (profiling) copy_times_.OnOp(manager_);
    // Note [Departed references]: the iteration may become the reference at its end.
    if (profiling || recorder_.tracker().keeping_iteration()) {
      // Bracket the op with timing events on its stream: its device time (§4.2).
      if (std::optional<EventHandle> start = events_.AcquireRecorded(stream)) op.start = *start;
    }
    return op;
  }

  // Note [Op brackets] (plan_executor.h): the end event, as soon as the real call returned.
  void OpRan(ProfiledOp* op, uintptr_t stream) {
    MutexLock lock(&mu_);
    if (std::optional<EventHandle> end = events_.AcquireRecorded(stream)) op->end = *end;
  }

  void OpEnd(const ProfiledOp& op, uintptr_t stream) {
    MutexLock lock(&mu_);
    if (op.position >= 0 && FollowingLocked()) {
      DropAfterLocked(op.position);
      OffloadAfterLocked(op.position);
      SendBackLocked(op.send_back);
    }
    if (op.start != 0 && op.end != 0) {
      timed_ops_.push_back({op.seq, op.start, op.end});
      // A stream that never repeats (or threads interleaving) stays in profiling: keep only the
      // latest ops' events, enough for any iteration the recorder can hold, and reuse the rest
      // (Note [Event reuse] in core/device/timing_event_pool.h).
      while (timed_ops_.size() > kMaxTimedOps) {
        events_.Release(timed_ops_.front().start);
        events_.Release(timed_ops_.front().end);
        timed_ops_.pop_front();
      }
    } else if (op.start != 0) {
      events_.Release(op.start);
    }
    FinalizeIfDueLocked();
  }

  void Alloc(uintptr_t address, int64_t bytes, bool managed) {
    MutexLock lock(&mu_);
    FinalizeIfDueLocked();
    const uint64_t id = next_id_++;
    live_[address] = {id, bytes, managed};
    if (managed && pilot_.has_value()) pilot_->pilot().Allocated(address);
    if (managed && ProfilingLocked()) {
      // Note [Copy times]: the manager's id of the allocation, to find its copies' timings.
      if (std::optional<AllocationInfo> info = manager_.Lookup(address)) {
        copy_times_.NoteAllocation(info->id, id);
      }
    }
    const IterationTracker::Step step = recorder_.Alloc(id, bytes, managed);
    HandleStepLocked(step);
    if (actions_.has_value() && step.position >= 0) {
      if (auto it = actions_->slot_at.find(step.position); it != actions_->slot_at.end()) {
        actions_->address[static_cast<size_t>(it->second)] = address;
        actions_->slot_of[address] = it->second;
      }
    }
  }

  void Free(uintptr_t address) {
    MutexLock lock(&mu_);
    FinalizeIfDueLocked();
    auto it = live_.find(address);
    if (it == live_.end()) return;
    const uint64_t id = it->second.id;
    if (it->second.managed && pilot_.has_value()) pilot_->pilot().Freed(address);
    live_.erase(it);
    if (actions_.has_value()) {
      // The address may be handed to another allocation: forget it as the tensor's.
      if (auto o = actions_->slot_of.find(address); o != actions_->slot_of.end()) {
        actions_->address[static_cast<size_t>(o->second)] = 0;
        actions_->fixed.erase(o->second);
        actions_->slot_of.erase(o);
      }
      actions_->held_out.erase(address);
    }
    if (std::optional<IterationTracker::Step> step = recorder_.Free(id)) HandleStepLocked(*step);
  }

  void ReadBack(const void* host, size_t bytes) {
    MutexLock lock(&mu_);
    if (!pilot_.has_value() || bytes > Pilot::kMaxReadBackBytes) return;
    // Note [Pilot model]: it acts while no plan that moves anything is followed (a plan with
    // nothing to do, as when the reference fits, leaves the other tensors to demand swapping),
    // and never in a recorded profiling pass (its copies would be the profile's).
    const bool following =
        last_position_ >= 0 && FollowingLocked() && actions_->swapped + actions_->recomputed > 0;
    // Note [Measured choice]: a plan set aside for demand swapping alone keeps the pilot quiet.
    const bool quiet = actions_.has_value() && modes_.mode() == MeasuredChoice::Mode::kSetAside;
    pilot_->ReadBack({static_cast<const uint8_t*>(host), bytes},
                     !following && !quiet && !recorder_.tracker().recording_next());
  }

  void SetIterationListener(std::function<void(const IterationNote&)> listener) {
    MutexLock lock(&mu_);
    listener_ = std::move(listener);
  }

  void SyncMarker() {
    MutexLock lock(&mu_);
    // Here too for the iterations the tracker is still profiling, whose events have no
    // iteration_start step (IterationStart is idempotent).
    if (pilot_.has_value()) pilot_->pilot().IterationStart();
    const IterationTracker::BoundaryResult b = recorder_.MarkBoundary();
    if (b.profile_ready) {
      finalize_due_ = true;
      from_departure_ = b.from_departure;
    } else if (recorder_.tracker().keeping_iteration() && !recorder_.tracker().recording_next()) {
      ReleaseTimedOpsLocked();  // the ended iteration is not the reference: its times go
    }
    if (b.departed) {
      NoteDepartureLocked();
      TellListenerLocked({.departed = true});
    }
    // The next iteration's start is noted at its first event (HandleStepLocked), whose step says
    // so under every marker, not here: each iteration is counted once.
    FinalizeIfDueLocked();
  }

  // The summary's iterations:, plan:, pilot, plan_cache:, choice:, plan_run: and recompute:
  // lines.
  std::vector<std::string> SummaryLines() {
    MutexLock lock(&mu_);
    std::vector<std::string> lines;
    const IterationTracker& t = recorder_.tracker();
    lines.push_back(absl::StrFormat(
        "iterations: marker %s profiles %lld followed %llu departures %llu unmatched_ops %llu "
        "reprofiles %d reference_events %zu profiled_under %s measured_iteration_ms %.3f",
        std::string(IterationMarkerName(config_.iteration_marker)),
        static_cast<long long>(t.profiles_made()),
        static_cast<unsigned long long>(t.iterations_completed()),
        static_cast<unsigned long long>(departures_),
        static_cast<unsigned long long>(t.unmatched_ops()), reprofiles_, t.Reference().size(),
        profiled_under_, clock_.MeasuredMs()));
    if (!life_.plan_line().empty()) lines.push_back(life_.plan_line());
    if (pilot_.has_value()) lines.push_back(pilot_->SummaryLine());
    if (config_.mode == RunMode::kPlanned) lines.push_back(life_.CacheLine());
    if (!actions_.has_value()) return lines;
    lines.push_back(choice_.SummaryLine(modes_.set_aside_iterations()));
    lines.push_back(PlanRunLineLocked());
    if (recomputer_ != nullptr) lines.push_back(RecomputeLineLocked());
    return lines;
  }

  PlanExecutor::Outcome SummaryOutcome() {
    MutexLock lock(&mu_);
    PlanExecutor::Outcome o;
    const IterationTracker& t = recorder_.tracker();
    o.plan = life_.CurrentPlan();
    o.plan_line = life_.plan_line();
    o.carried_out = config_.mode == RunMode::kPlanned && actions_.has_value();
    o.measured_iteration_ms = clock_.MeasuredMs();
    o.profiles = t.profiles_made();
    o.reprofiles = reprofiles_;
    o.departures = departures_;
    o.replans = life_.total_replans();
    if (actions_.has_value()) {
      o.safety_net_swap_ins = manager_.Stats().demand_swap_ins -
                              actions_->at_start.demand_swap_ins - actions_->left_out_swap_ins;
      o.diverged_iterations = actions_->diverged_iterations;
    }
    return o;
  }

  // A planned producer ran: keep its recipe if it is the one the plan asked for.
  void OfferRecipe(const ProfiledOp& op, std::optional<ReplayRecipe> recipe) {
    // A recipe for another address (the plan's tensor is not this op's output) is not kept; a
    // call that wrote several allocations rebuilds the plan's (Note [Side outputs]).
    recipe = ForOutput(std::move(recipe), op.record_output);
    if (recomputer_ == nullptr || !recipe.has_value() || recipe->output != op.record_output) {
      return;
    }
    recomputer_->Offer(*std::move(recipe), op.record_us);
  }

 private:
  struct Live {
    uint64_t id = 0;
    int64_t bytes = 0;
    bool managed = false;
  };
  // An op bracketed by timing events while profiling (Note [Op brackets]).
  struct TimedOp {
    uint64_t seq = 0;
    EventHandle start = 0;
    EventHandle end = 0;
  };

  // What the plans' actions did since the first plan began: the safety net's hits are the
  // demand swap-ins since then (the swaps: line counts those of the profiling too) but those at
  // accesses the profile left out, counted apart (Note [Left-out accesses]).
  std::string PlanRunLineLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const ResidencyStats s = manager_.Stats();
    return absl::StrFormat(
        "plan_run: swapped_maps %d planned_swap_outs %lld prefetches %lld "
        "safety_net_swap_ins %lld left_out_swap_ins %lld sent_back %lld prefetch_no_room %lld "
        "safety_net_last_iteration %lld diverged_iterations %lld",
        actions_->swapped,
        static_cast<long long>(s.planned_swap_outs - actions_->at_start.planned_swap_outs),
        static_cast<long long>(s.prefetches - actions_->at_start.prefetches),
        static_cast<long long>(s.demand_swap_ins - actions_->at_start.demand_swap_ins -
                               actions_->left_out_swap_ins),
        static_cast<long long>(actions_->left_out_swap_ins),
        static_cast<long long>(actions_->sent_back),
        static_cast<long long>(actions_->prefetch_no_room),
        static_cast<long long>(life_.last_iteration_hits()),
        static_cast<long long>(actions_->diverged_iterations));
  }

  std::string RecomputeLineLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const Recomputer::Stats rs = recomputer_->stats();
    return absl::StrFormat(
        "recompute: planned_maps %d recipes %lld refused %lld drops %lld replays %lld "
        "chained %lld forgotten %lld swapped_instead %lld failures %lld kernel_replays %lld "
        "replay_ms %.3f (profiled time of the replayed calls) links %lld (the calls they issued: "
        "%.2f per replay, Note [Chained recipes])",
        actions_->recomputed, static_cast<long long>(rs.recipes),
        static_cast<long long>(rs.refused), static_cast<long long>(rs.drops),
        static_cast<long long>(rs.replays), static_cast<long long>(rs.chained),
        static_cast<long long>(rs.forgotten), static_cast<long long>(actions_->drop_fallbacks),
        static_cast<long long>(rs.failures), static_cast<long long>(rs.kernel_replays),
        rs.replay_us / 1000.0, static_cast<long long>(rs.links),
        rs.replays > 0 ? static_cast<double>(rs.links) / static_cast<double>(rs.replays) : 0.0);
  }

  // A plan's actions are carried out in this iteration (none diverged or set it aside).
  bool FollowingLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return actions_.has_value() && !actions_->diverged;
  }

  // The live allocation (base, Live) that holds `address`, or null.
  const std::pair<const DeviceAddress, Live>* ContainingLocked(DeviceAddress address) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = live_.upper_bound(address);
    if (it == live_.begin()) return nullptr;
    --it;
    if (address - it->first >= static_cast<DeviceAddress>(it->second.bytes)) return nullptr;
    return &*it;
  }

  void HandleStepLocked(const IterationTracker::Step& step) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (step.profile_ready) finalize_due_ = true;
    if (actions_.has_value() && (step.iteration_start || step.departed)) {
      actions_->StartIteration();
      if (step.iteration_start) ChooseModeLocked();
    }
    if (step.iteration_start) NoteIterationStartLocked();
    if (step.departed) NoteDepartureLocked();
    if (step.iteration_start && pilot_.has_value()) pilot_->pilot().IterationStart();
    // After the iteration start: a re-plan made there is the old reference's.
    if (step.switched) SwitchPlanLocked(step.switched_to, step.position);
    if (step.iteration_start) {
      TellListenerLocked({.started = true,
                          .following = FollowingLocked() && !swap_all_pass_,
                          .plan = plans_installed_});
    }
    if (step.departed) TellListenerLocked({.departed = true});
  }

  void TellListenerLocked(const IterationNote& note) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (listener_) listener_(note);
  }

  // Note [Measured iteration time] (core/measure/iteration_clock.h): the mark goes before the
  // next op, on its stream.
  void NoteIterationStartLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    clock_.IterationStarted();
    previous_iteration_first_id_ = iteration_first_id_;
    iteration_first_id_ = next_id_;
    if (actions_.has_value() && config_.mode == RunMode::kPlanned) ReplanIfMissedLocked();
    if (trace_ != nullptr) {
      const TraceArg args[] = {
          {"followed", static_cast<int64_t>(recorder_.tracker().iterations_completed())}};
      trace_->OnRuntime("iteration", args);
    }
  }

  void ReleaseTimedOpsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const TimedOp& t : timed_ops_) {
      events_.Release(t.start);
      events_.Release(t.end);
    }
    timed_ops_.clear();
  }

  // A departed iteration runs under demand swapping (as every iteration does until plans are
  // carried out); after POOCH_REPROFILE_AFTER of them the stream is profiled again.
  void NoteDepartureLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    ++departures_;
    life_.RestartEvidence();  // the safety net's hits of a departed iteration are not a miss
    if (trace_ != nullptr) {
      const TraceArg args[] = {{"departures", static_cast<int64_t>(departures_)}};
      trace_->OnRuntime("departure: demand swapping", args);
    }
    clock_.DropOpen();  // the departed iteration's time is not the plan's
    // Note [Departed references] (iteration_tracker.h): with an explicit marker, under a plan,
    // each departed iteration from the next one on is profiled and planned at its end.
    if (config_.iteration_marker != IterationMarker::kAuto && config_.mode == RunMode::kPlanned &&
        actions_.has_value() && !take_departed_) {
      take_departed_ = true;
      recorder_.SetTakeDeparted(true);
    }
    if (take_departed_) return;
    if (++departures_since_profile_ >= config_.reprofile_after) {
      POOCH_LOG_AT(kInfo, "re-profiling: %d iterations departed from the profile",
                   departures_since_profile_);
      recorder_.Reprofile();
      swap_all_pass_ = false;        // Note [Swap-all profiling]: it starts again too
      manager_.SetTimeCopies(true);  // Note [Copy times]
      if (trace_ != nullptr) trace_->OnRuntime("profiling again", {});
      departures_since_profile_ = 0;
      ++reprofiles_;
    }
  }

  // Each timed op's device time goes to the recorder (waiting for the last ones), and the
  // events back to the pool.
  void SetOpDurationsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const TimedOp& t : timed_ops_) {
      if (device_.SynchronizeEvent(t.end).ok()) {
        if (absl::StatusOr<double> us = device_.ElapsedMicroseconds(t.start, t.end); us.ok()) {
          recorder_.SetDuration(t.seq, *us);
        }
      }
      events_.Release(t.start);
      events_.Release(t.end);
    }
    timed_ops_.clear();
  }

  // The reference iteration is complete: measure, build, write and plan. Deferred to the next
  // hook after the one that completed it, so that the last op's end event is recorded.
  void FinalizeIfDueLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!finalize_due_) return;
    finalize_due_ = false;
    const bool from_departure = std::exchange(from_departure_, false);
    SetOpDurationsLocked();
    OpStreamRecorder::Positions positions;
    absl::StatusOr<RecordedIteration> recorded =
        recorder_.Reference(small_.Stats().slab_bytes, &positions);
    recorder_.DropKept();
    if (recorded.ok() && recorded->unstable_accesses > 0) {
      // Note [Stable kernel accesses] (core/profile/stable_accesses.cc).
      POOCH_LOG_AT(kInfo,
                   "profile: %lld kernel accesses left out (another recorded iteration's op "
                   "did not touch that tensor)",
                   static_cast<long long>(recorded->unstable_accesses));
    }
    absl::StatusOr<BuiltProfile> built =
        recorded.ok()
            ? BuildProfile(*recorded, {.name = "measured", .granularity = manager_.granularity()})
            : absl::StatusOr<BuiltProfile>(recorded.status());
    if (!swap_all_pass_ && !from_departure) {
      POOCH_LOG_AT(kInfo, "iteration found: %zu events (marker %s)",
                   recorder_.tracker().Reference().size(),
                   std::string(IterationMarkerName(config_.iteration_marker)).c_str());
    }
    if (!built.ok()) {
      life_.NoProfile(built.status());
      if (!swap_all_pass_) NoActionsLocked();  // the pass's reference is the same events
      return;
    }
    if (!from_departure) {  // a departed iteration's copies are not timed: the machine stays
      copy_times_.Take(manager_);
      copy_times_.Attribute(*built);
      bool assumed = false;
      const MachineModel machine = copy_times_.Machine(manager_.memory_limit(), &assumed);
      life_.SetMachine(machine, assumed);
      copy_times_.Clear();
    }
    // Note [Plan cache]: a reference planned before is carried out with its plan at once, with
    // no swap-all pass and no planning.
    const PlanCache::Entry* cached = nullptr;
    if (!swap_all_pass_ && config_.mode == RunMode::kPlanned) {
      cached = life_.FindCached(recorder_.tracker().Reference());
    }
    if (from_departure) profiled_under_ = "departure";
    if (cached == nullptr && !from_departure && StartSwapAllPassLocked(*built, positions)) {
      return;
    }
    manager_.SetTimeCopies(false);  // Note [Copy times]
    POOCH_LOG_AT(kInfo, "profiled: %zu ops, %zu tensors, under %s", built->profile.ops.size(),
                 built->profile.tensors.size(), profiled_under_.c_str());
    life_.SetProfile(*std::move(built), std::move(positions));
    if (cached != nullptr) {
      life_.TakeCached(*cached);
      profiled_under_ = "cache";
      ActionsLocked(*life_.built(), *life_.positions(), cached->plan ? &*cached->plan : nullptr);
      life_.RestartEvidence();
      return;
    }
    life_.SetSlabPeak(small_.Stats().peak_slab_bytes);  // Note [Headroom]
    std::optional<PlanResult> plan = life_.PlanProfile();
    if (plan.has_value() && config_.mode == RunMode::kPlanned) {
      ActionsLocked(*life_.built(), *life_.positions(), &*plan);
      KeepPlanLocked(plan, /*new_reference=*/true);
      life_.RestartEvidence();
    } else if (actions_.has_value()) {
      // No plan for this reference: another reference's actions must not run at its positions.
      // Cached as planless, so that the shape is not planned again and a switch can find it.
      ActionsLocked(*life_.built(), *life_.positions(), nullptr);
      KeepPlanLocked(std::nullopt, /*new_reference=*/true);
    }
  }

  // Keeps the plan of the reference planned last (Note [Plan cache]). `new_reference`: the
  // tracker's reference is the one just planned, kept as the alternate of its key (Note
  // [Switching references]); a re-plan's entry keeps its alternate (the tracker may already
  // follow another reference when a re-plan is made at an iteration start).
  void KeepPlanLocked(const std::optional<PlanResult>& plan, bool new_reference)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (std::optional<uint64_t> dropped = life_.Cache(plan)) recorder_.ForgetAlternate(*dropped);
    if (new_reference) recorder_.KeepReferenceAs(life_.key());
  }

  // Note [Switching references] (iteration_tracker.h): the iteration turned out, at `position`,
  // to be the reference of another cached plan, whose actions are carried out from there on.
  // The two references are the same events before `position`, so the allocations made so far
  // are the same slots' in both: they keep their addresses. What the old plan did before
  // (swap-outs, drops) and the new one's actions before `position` that did not happen are
  // left to the safety nets, as with a wrong plan (Note [Carrying out the plan]): demand
  // swapping, and the Recomputer's rebuild of a dropped map before anything touches it.
  void SwitchPlanLocked(uint64_t key, int64_t position) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const PlanCache::Entry* entry = life_.Switchable(key);
    if (entry == nullptr || !actions_.has_value()) {
      // The tracker's alternates are the cache's keys, so this is not expected; another plan's
      // actions must not run against this reference's positions.
      POOCH_LOG_AT(kWarn, "no cached plan for the reference switched to; profiling again");
      recorder_.ForgetAlternate(key);
      recorder_.Reprofile();
      actions_.reset();
      return;
    }
    PlanActions a = entry->plan.has_value()
                        ? MakePlanActions(*entry->built, *entry->positions, *entry->plan)
                        : PlanActions{};
    BindPersistent(OutlivingByIdLocked(a), a);
    a.StartIteration();
    for (const auto& [at, slot] : a.slot_at) {
      if (at >= position) continue;
      auto old = actions_->slot_at.find(at);
      if (old == actions_->slot_at.end()) continue;
      const DeviceAddress address = actions_->address[static_cast<size_t>(old->second)];
      if (address == 0) continue;  // freed since
      a.address[static_cast<size_t>(slot)] = address;
      a.slot_of[address] = slot;
    }
    InstallActionsLocked(std::move(a));
    life_.SwitchedTo(key, *entry);
    if (trace_ != nullptr) {
      const TraceArg args[] = {{"position", position}};
      trace_->OnRuntime("plan switched", args);
    }
  }

  // The live allocations' addresses by the recorder's id, for the tensors of new actions that
  // outlive iterations (PlanActions::persistent and carried); empty when `a` has none.
  absl::flat_hash_map<uint64_t, DeviceAddress> OutlivingByIdLocked(const PlanActions& a) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    absl::flat_hash_map<uint64_t, DeviceAddress> by_id;
    if (a.persistent.empty() && a.carried.empty()) return by_id;
    for (const auto& [address, live] : live_) by_id[live.id] = address;
    return by_id;
  }

  // Tensors that outlive iterations keep their addresses: find them among the live ones.
  static void BindPersistent(const absl::flat_hash_map<uint64_t, DeviceAddress>& by_id,
                             PlanActions& a) {
    for (const PlanActions::Persistent& p : a.persistent) {
      if (auto it = by_id.find(p.allocation); it != by_id.end()) a.fixed[p.slot] = it->second;
    }
  }

  // Note [Carried slots]: the iteration starting now frees the successors the reference made.
  static void BindCarried(const absl::flat_hash_map<uint64_t, DeviceAddress>& by_id,
                          PlanActions& a) {
    for (const PlanActions::Carried& c : a.carried) {
      if (auto it = by_id.find(c.successor_allocation); it != by_id.end()) {
        a.address[static_cast<size_t>(c.slot)] = it->second;
        a.slot_of[it->second] = c.slot;
      }
    }
  }

  // Note [Swap-all profiling]
  // ~~~~~~~~~~~~~~~~~~~~~~~~~
  // PoocH §4.2 profiles with every feature map swapped, so that each map's swap-out and swap-in
  // times are measured rather than estimated. The iterations in which the reference is found
  // cannot run that way: which allocations are feature maps, and where their last forward use
  // is, is known only once the reference is (they run under demand swapping). So with
  // POOCH_PROFILE_SWAP=all, under a planner policy, the first profile is planned with swap-all
  // (§4.3's schedule) and that plan carried out for the next iteration followed from start to
  // end, with its ops and copies timed (OpStreamRecorder::RecordNextIteration); that iteration
  // is the profile that is written and planned. Op times come from it too, as in §4.2: each is
  // bracketed on its stream after the stream's waits for swap-ins, so a stall is not an op's
  // time. When swap-all has no feasible plan, the demand-swapped reference is the profile (the
  // iterations: line says which was planned); an iteration that departs is not taken (the next
  // one is).
  bool ProfilingLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return recorder_.tracker().Reference().empty() || recorder_.tracker().recording_next();
  }

  // Returns true when the swap-all pass starts (the profile will be made at its end).
  bool StartSwapAllPassLocked(const BuiltProfile& built,
                              const OpStreamRecorder::Positions& positions)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (swap_all_pass_) {  // this profile is the pass's: plans from here on are the policy's
      swap_all_pass_ = false;
      profiled_under_ = "swap-all";
      // The plan_run: line counts from the policy's first plan (across re-profiles).
      if (pass_was_first_plan_) actions_.reset();
      return false;
    }
    profiled_under_ = "demand";
    if (config_.profile_swap != ProfileSwap::kAll || config_.mode != RunMode::kPlanned) {
      return false;
    }
    absl::StatusOr<PlanResult> plan = life_.PlanSwapAll(built.profile);
    if (!plan.ok() || !plan->sim.feasible) {
      POOCH_LOG_AT(
          kInfo, "swap-all does not fit: profiled under demand swapping (%s)",
          plan.ok() ? plan->sim.failure.c_str() : std::string(plan.status().message()).c_str());
      return false;
    }
    POOCH_LOG_AT(kInfo, "profiling the next iteration with every feature map swapped");
    swap_all_pass_ = true;
    pass_was_first_plan_ = !actions_.has_value();
    recorder_.RecordNextIteration();
    ActionsLocked(built, positions, &*plan);
    // The summary keeps showing the last plan made, if any (a re-profile's pass).
    life_.SetPlanLineIfNone(
        "plan: none yet: profiling with every feature map swapped (POOCH_PROFILE_SWAP)");
    profiled_under_ = "swap-all-pending";
    if (trace_ != nullptr) trace_->OnRuntime("profiling with every feature map swapped", {});
    return true;
  }

  // Note [Headroom] (plan_life.h): a re-plan, when one is due, is carried out from the
  // iteration starting now.
  void ReplanIfMissedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    life_.SetSlabPeak(small_.Stats().peak_slab_bytes);
    // Note [Left-out accesses]: what the profile left out is no miss of the plan.
    std::optional<PlanResult> plan =
        life_.ReplanIfMissed(manager_.Stats().demand_swap_ins - actions_->left_out_swap_ins,
                             manager_.memory_limit(), swap_all_pass_);
    if (!plan.has_value()) return;
    ActionsLocked(*life_.built(), *life_.positions(), &*plan);
    KeepPlanLocked(plan, /*new_reference=*/false);
  }

  // Note [Carrying out the plan] (plan_actions.h): the plan becomes actions at positions.
  // `plan` null: the reference has no plan, and no action is taken in it.
  void ActionsLocked(const BuiltProfile& built, const OpStreamRecorder::Positions& positions,
                     const PlanResult* plan) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    clock_.Restart();  // Note [Measured iteration time]: the average is the new plan's
    PlanActions a = plan != nullptr ? MakePlanActions(built, positions, *plan) : PlanActions{};
    if (plan != nullptr && config_.mode == RunMode::kPlanned && !swap_all_pass_) {
      POOCH_LOG_AT(kInfo, "carrying out the plan: %d maps swapped, %d recomputed", a.swapped,
                   a.recomputed);
    }
    const absl::flat_hash_map<uint64_t, DeviceAddress> by_id = OutlivingByIdLocked(a);
    BindPersistent(by_id, a);
    a.StartIteration();
    BindCarried(by_id, a);
    InstallActionsLocked(std::move(a));
  }

  // Makes `a` the actions carried out, with the counts the plan_run: line keeps from the first
  // plan on, across re-profiles and switches.
  void InstallActionsLocked(PlanActions a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    // Note [Measured choice]: the iteration under way starts from another plan's residency.
    modes_.PlanInstalled();
    manager_.SetFreeReserve(0);  // Note [Free reserve]: the new plan's iteration is followed
    a.at_start = actions_.has_value() ? actions_->at_start : manager_.Stats();
    a.prefetch_no_room = actions_.has_value() ? actions_->prefetch_no_room : 0;
    a.diverged_iterations = actions_.has_value() ? actions_->diverged_iterations : 0;
    a.drop_fallbacks = actions_.has_value() ? actions_->drop_fallbacks : 0;
    a.left_out_swap_ins = actions_.has_value() ? actions_->left_out_swap_ins : 0;
    a.sent_back = actions_.has_value() ? actions_->sent_back : 0;
    actions_ = std::move(a);
    ++plans_installed_;
  }

  // A new reference that got no profile: the actions of the plan carried out before would run
  // at positions of another iteration, so none run (a wrong action costs time only, but a
  // whole plan's worth of them is not worth it).
  void NoActionsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (actions_.has_value()) InstallActionsLocked(PlanActions{});
  }

  // Note [Diverged iterations] (plan_actions.h): the op at `position` touched these allocations
  // made before the previous iteration began; one the reference's op did not touch stops the
  // plan's actions until the next iteration.
  void NoteDivergenceLocked(int64_t position, const std::vector<uint64_t>& old_touched)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const auto expected = actions_->persistent_touched.find(position);
    for (uint64_t id : old_touched) {
      if (expected != actions_->persistent_touched.end() &&
          std::binary_search(expected->second.begin(), expected->second.end(), id)) {
        continue;
      }
      actions_->diverged = true;
      ++actions_->diverged_iterations;
      choice_.Diverged(life_.key());  // Note [Measured choice]
      if (trace_ != nullptr) {
        const TraceArg args[] = {{"position", position}};
        trace_->OnRuntime("diverged", args);
      }
      return;
    }
  }

  // Note [Measured choice]: at the first op of an iteration under a plan, the ended iteration's
  // sample is noted for its timing pair, and the plan is followed or set aside in this one.
  void ChooseModeLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const MeasuredChoice::Mode mode = choice_.ModeFor(life_.key());
    modes_.Start(life_.key(), mode);
    // Note [Free reserve] (core/residency/residency_evict.cc): an iteration left to demand
    // swapping alone keeps room free ahead of its misses; a followed plan makes its own room,
    // and so does the pilot, pushing out at each read-back what it does not expect to be used.
    manager_.SetFreeReserve(mode == MeasuredChoice::Mode::kSetAside
                                ? static_cast<int64_t>(kFreeReserveFraction *
                                                       static_cast<double>(manager_.memory_limit()))
                                : 0);
    if (mode == MeasuredChoice::Mode::kFollow) return;
    actions_->diverged = true;  // no action of the plan in this iteration
    if (trace_ != nullptr) trace_->OnRuntime("plan set aside", {});
  }

  void SampleModeLocked(const IterationClock::Sample& sample) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const std::optional<MeasuredChoice::Mode> verdict =
        choice_.Sample(sample.plan_key, sample.mode, sample.ms);
    if (!verdict.has_value()) return;
    struct Verdict {
      const char* trace;
      const char* log;
    };
    static constexpr Verdict kVerdicts[] = {
        {"follow", "followed"},
        {"set aside", "run with the plan set aside, under demand swapping"},
        {"set aside, pilot", "run with the plan set aside, under demand swapping and the pilot"}};
    const Verdict& v = kVerdicts[static_cast<int>(*verdict)];
    POOCH_LOG_AT(kInfo, "a plan whose iterations diverge: measured, its iterations are now %s",
                 v.log);
    if (trace_ != nullptr) {
      const TraceArg args[] = {{"verdict", v.trace}};
      trace_->OnRuntime("measured choice", args);
    }
  }

  void PrefetchBeforeLocked(int64_t position) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = actions_->prefetch_before.find(position);
    if (it == actions_->prefetch_before.end()) return;
    for (const PlanActions::Prefetch& p : it->second) {
      const DeviceAddress address = actions_->address[static_cast<size_t>(p.slot)];
      if (address == 0 || actions_->prefetched[static_cast<size_t>(p.candidate)]) continue;
      actions_->held_out.erase(address);  // Note [Left-out accesses]: the plan wants it back
      absl::StatusOr<bool> issued = manager_.Prefetch(address);
      if (issued.ok() && *issued) {
        actions_->prefetched[static_cast<size_t>(p.candidate)] = true;  // done this iteration
      } else if (issued.ok()) {
        ++actions_->prefetch_no_room;  // retried at the next op, up to the first use
      }
    }
  }

  void DropAfterLocked(int64_t position) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = actions_->drop_after.find(position);
    if (it == actions_->drop_after.end()) return;
    for (int slot : it->second) {
      const DeviceAddress address = actions_->address[static_cast<size_t>(slot)];
      if (address == 0) continue;
      if (recomputer_ != nullptr && recomputer_->Drop(address)) continue;
      ++actions_->drop_fallbacks;
      if (absl::Status s = manager_.Offload(address); !s.ok()) {
        POOCH_LOG_AT(kDebug, "swap-out instead of a drop: %s", std::string(s.message()).c_str());
      }
    }
  }

  void OffloadAfterLocked(int64_t position) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = actions_->offload_after.find(position);
    if (it == actions_->offload_after.end()) return;
    for (int slot : it->second) {
      const DeviceAddress address = actions_->address[static_cast<size_t>(slot)];
      if (address == 0) continue;
      if (absl::Status s = manager_.Offload(address); !s.ok()) {
        POOCH_LOG_AT(kDebug, "planned swap-out: %s", std::string(s.message()).c_str());
      } else {
        actions_->held_out.insert(address);  // Note [Left-out accesses]
      }
    }
  }

  // Note [Left-out accesses]
  // ~~~~~~~~~~~~~~~~~~~~~~~~
  // A profile leaves out a kernel's guessed accesses that the recorded iterations do not agree on
  // (Note [Stable kernel accesses], core/profile/stable_accesses.cc): stale words in by-value
  // structs (PyTorch's ReduceOp, TensorListMetadata's unused entries) point at whichever
  // allocation address reuse put there, another one each iteration and each run. RunOp still
  // makes every allocation they point into resident, so when the plan has swapped such an
  // allocation out, BeforeOp swaps it in on demand. That is not the plan being wrong about the
  // program's uses, and the plan cannot model it (which tensor follows how PyTorch's threads
  // interleave), nor keep those tensors out of its swaps (they are other tensors in every
  // iteration). So a demand swap-in at a followed position, by an op whose accesses were guessed,
  // of an allocation the profile's op there did not touch (a slot made in the iteration that is
  // not among the op's, or an allocation older than the previous iteration that is not among its
  // persistent ones) is counted apart, as left_out_swap_ins: not a safety-net hit, no evidence
  // for a re-plan with headroom (Note [Headroom], plan_life.h). If the plan holds that
  // allocation out (swapped out by it, its prefetch not yet tried), it goes back out after the op
  // (`sent_back`), so that the memory the plan counted on is there: the two copies are the cost
  // the plan does not model, and the safety net's make-room evictions, which would be misses,
  // are not. The same goes for a left-out access that finds the plan's swap-out still copying,
  // or done with its chunk still mapped (Note [Retained chunks]): the manager cancels the copy or
  // takes the chunk back, with no swap-in, so nothing counted it and the allocation stayed
  // resident up to its prefetch. Under PyTorch the ops after a left-out swap-in often carry the
  // same stale word, so that was how such an allocation usually stayed in: a 64 MiB activation
  // held through the plan's peak, where the safety net then evicted weights that AdamW's foreach
  // ops swapped back in, misses in steady state. So every allocation the plan holds out that a
  // left-out access touched is sent back, swapped in or not. Anything else (an allocation made in
  // the previous iteration, a carried slot, an op whose accesses are exact) counts as a miss, as
  // before. Where a kernel's real read set is known (issue 36's analysis), its stale words are no
  // accesses and none of this happens.
  void NoteLeftOutLocked(int64_t position, absl::Span<const DeviceAddress> demand_swapped_in,
                         absl::Span<const DeviceAddress> touched,
                         std::vector<DeviceAddress>& send_back) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (DeviceAddress base : demand_swapped_in) {
      if (LeftOutLocked(position, base)) ++actions_->left_out_swap_ins;
    }
    for (DeviceAddress base : touched) {
      if (!actions_->held_out.contains(base) || !LeftOutLocked(position, base)) continue;
      if (std::find(send_back.begin(), send_back.end(), base) == send_back.end()) {
        send_back.push_back(base);
      }
    }
  }

  // Whether the profile's op at `position` did not touch the allocation at `base`, as far as the
  // actions can tell (Note [Left-out accesses]).
  bool LeftOutLocked(int64_t position, DeviceAddress base) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (auto slot = actions_->slot_of.find(base);
        slot != actions_->slot_of.end() && slot->second < actions_->made_slots) {
      const auto made = actions_->made_touched.find(position);
      return made == actions_->made_touched.end() ||
             !std::binary_search(made->second.begin(), made->second.end(), slot->second);
    }
    const auto live = live_.find(base);
    if (live == live_.end() || live->second.id >= previous_iteration_first_id_) return false;
    const auto old = actions_->persistent_touched.find(position);
    return old == actions_->persistent_touched.end() ||
           !std::binary_search(old->second.begin(), old->second.end(), live->second.id);
  }

  void SendBackLocked(const std::vector<DeviceAddress>& send_back)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (DeviceAddress base : send_back) {
      if (!actions_->held_out.contains(base)) continue;  // freed, or its prefetch came since
      if (absl::Status s = manager_.Offload(base); s.ok()) {
        ++actions_->sent_back;
      } else {
        POOCH_LOG_AT(kDebug, "swap-out after a left-out access: %s",
                     std::string(s.message()).c_str());
      }
    }
  }

  Mutex mu_;
  TraceObserver* const trace_;    // may be null
  Recomputer* const recomputer_;  // may be null (not a planner policy)
  Device& device_;
  ResidencyManager& manager_;
  SmallAllocator& small_;
  const Config config_;
  OpStreamRecorder recorder_ ABSL_GUARDED_BY(mu_);
  absl::btree_map<DeviceAddress, Live> live_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  // The timing events of the ops' brackets and of the iteration clock.
  TimingEventPool events_ ABSL_GUARDED_BY(mu_){device_};
  std::deque<TimedOp> timed_ops_ ABSL_GUARDED_BY(mu_);  // while profiling, oldest first
  IterationClock clock_ ABSL_GUARDED_BY(mu_){device_, events_};
  bool finalize_due_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t departures_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t plans_installed_ ABSL_GUARDED_BY(mu_) = 0;  // IterationNote::plan
  std::function<void(const IterationNote&)> listener_ ABSL_GUARDED_BY(mu_);
  int departures_since_profile_ ABSL_GUARDED_BY(mu_) = 0;
  int reprofiles_ ABSL_GUARDED_BY(mu_) = 0;
  // Note [Diverged iterations]: the first recorder id of this iteration and of the one before.
  uint64_t iteration_first_id_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t previous_iteration_first_id_ ABSL_GUARDED_BY(mu_) = 0;
  // Note [Swap-all profiling]: the swap-all iteration is under way; how the profile was taken.
  bool swap_all_pass_ ABSL_GUARDED_BY(mu_) = false;
  bool pass_was_first_plan_ ABSL_GUARDED_BY(mu_) = false;
  std::string profiled_under_ ABSL_GUARDED_BY(mu_) = "-";
  // Note [Copy times]: timings taken while profiling.
  CopyTimes copy_times_ ABSL_GUARDED_BY(mu_);
  // Which plan is carried out: its profile, the cache, re-plans and switches.
  PlanLife life_ ABSL_GUARDED_BY(mu_){config_, trace_};
  // Note [Departed references]: on after the first departure under a plan (explicit markers);
  // the reference due to be finalized is a departed iteration.
  bool take_departed_ ABSL_GUARDED_BY(mu_) = false;
  bool from_departure_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<PlanActions> actions_ ABSL_GUARDED_BY(mu_);
  // Note [Measured choice]: the trials, and the mode of the iteration under way and of the one
  // that ended at its start (for its timing pair).
  MeasuredChoice choice_ ABSL_GUARDED_BY(mu_){PilotWanted(config_)};
  IterationModes modes_ ABSL_GUARDED_BY(mu_);
  // Note [Pilot model]: under a planner policy unless POOCH_PILOT=off.
  std::optional<PilotActions> pilot_ ABSL_GUARDED_BY(mu_);
  int64_t last_position_ ABSL_GUARDED_BY(mu_) = -1;  // of the last op in the reference
};

PlanExecutor::PlanExecutor(Device& device, ResidencyManager& manager, SmallAllocator& small,
                           const Config& config, TraceObserver* trace, Recomputer* recomputer)
    : impl_(std::make_unique<Impl>(device, manager, small, config, trace, recomputer)) {}

PlanExecutor::~PlanExecutor() = default;

bool PlanExecutor::WantedBy(const Config& config) {
  return config.mode == RunMode::kPlanned || !config.profile_out.empty();
}

ProfiledOp PlanExecutor::OpBegin(const char* name, uintptr_t stream,
                                 const std::vector<AccessRange>& ranges, bool replay_capable,
                                 bool exact_accesses, HostCopyBytes copy,
                                 absl::Span<const DeviceAddress> demand_swapped_in) {
  return impl_->OpBegin(name, stream, ranges, replay_capable, exact_accesses, copy,
                        demand_swapped_in);
}

void PlanExecutor::OfferRecipe(const ProfiledOp& op, std::optional<ReplayRecipe> recipe) {
  impl_->OfferRecipe(op, std::move(recipe));
}

void PlanExecutor::OpRan(ProfiledOp* op, uintptr_t stream) {
  if (op->active && op->start != 0) impl_->OpRan(op, stream);
}

void PlanExecutor::OpEnd(const ProfiledOp& op, uintptr_t stream) {
  if (op.active) impl_->OpEnd(op, stream);
}

void PlanExecutor::Alloc(uintptr_t address, int64_t bytes, bool managed) {
  impl_->Alloc(address, bytes, managed);
}

void PlanExecutor::Free(uintptr_t address) { impl_->Free(address); }

void PlanExecutor::ReadBack(const void* host, size_t bytes) { impl_->ReadBack(host, bytes); }

void PlanExecutor::SyncMarker() { impl_->SyncMarker(); }

void PlanExecutor::SetIterationListener(std::function<void(const IterationNote&)> listener) {
  impl_->SetIterationListener(std::move(listener));
}

std::vector<std::string> PlanExecutor::SummaryLines() { return impl_->SummaryLines(); }

PlanExecutor::Outcome PlanExecutor::SummaryOutcome() { return impl_->SummaryOutcome(); }

}  // namespace pooch
