// The Profiler (profiler.h).
#include "core/exec/profiler.h"

#include <errno.h>  // program_invocation_short_name

#include <algorithm>
#include <atomic>
#include <deque>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/base/log.h"
#include "core/base/mutex.h"
#include "core/exec/copy_times.h"
#include "core/exec/measured_choice.h"
#include "core/exec/pilot_actions.h"
#include "core/exec/plan_actions.h"
#include "core/exec/plan_cache.h"
#include "core/exec/recomputer.h"
#include "core/exec/trace_observer.h"
#include "core/model/candidates.h"
#include "core/model/model_json.h"
#include "core/plan/plan.h"
#include "core/plot/plot.h"
#include "core/profile/op_stream_recorder.h"
#include "core/profile/profile_builder.h"

namespace pooch {
namespace {

// Note [Pilot model]: a pilot runs under a planner policy unless POOCH_PILOT=off.
bool PilotWanted(const pooch::Config& c) {
  return c.mode == pooch::RunMode::kPlanned && c.pilot != pooch::PilotMode::kOff;
}

// The most ops whose timing events are kept while profiling (two events each).
constexpr size_t kMaxTimedOps = size_t{1} << 16;

// Note [Free reserve] (core/residency/residency_evict.cc): the room kept free in iterations run
// under demand swapping alone, as a fraction of the memory limit. Measured on cnn_train moe top
// 2 of 16 at 40 % of its peak (simgpu v100-pcie3, 40 iterations, the last 16, every iteration
// set aside): none 1.322 ms, 0.10 1.145, 0.15 1.102, 0.20 1.109, 0.25 1.273, 0.30 1.387. Too
// large a reserve swaps out what the iteration uses again.
constexpr double kFreeReserveFraction = 0.15;

pooch::RecordedAccess::Mode ModeOf(pooch::AccessRange::Mode mode) {
  switch (mode) {
    case pooch::AccessRange::Mode::kRead:
      return pooch::RecordedAccess::kRead;
    case pooch::AccessRange::Mode::kWrite:
      return pooch::RecordedAccess::kWrite;
    case pooch::AccessRange::Mode::kReadWrite:
      return pooch::RecordedAccess::kReadWrite;
  }
  return pooch::RecordedAccess::kReadWrite;
}

}  // namespace

class Profiler::Impl {
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

  ProfiledOp OpBegin(const char* name, uintptr_t stream,
                     const std::vector<pooch::AccessRange>& ranges, bool replay_capable,
                     bool exact_accesses, HostCopyBytes copy) {
    pooch::MutexLock lock(&mu_);
    FinalizeIfDueLocked();
    std::vector<pooch::OpStreamRecorder::Access> accesses;
    // Note [Pilot model]: the managed allocations the op touches, by base.
    const bool feed_pilot = pilot_.has_value() && pilot_->pilot().active();
    std::vector<pooch::PilotKey> pilot_touched;
    // Note [Diverged iterations]: managed allocations made before the previous iteration began,
    // collected only while a plan is followed (none for a kernel, whose scanned words may be
    // stale).
    std::vector<uint64_t> old_touched;
    const bool check_divergence = exact_accesses && actions_.has_value() && !actions_->diverged;
    for (const pooch::AccessRange& r : ranges) {
      if (const auto* live = ContainingLocked(r.address)) {
        accesses.push_back({live->second.id, ModeOf(r.mode)});
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
    if (actions_.has_value() && step.position >= 0 && !actions_->diverged) {
      NoteDivergenceLocked(step.position, old_touched);
    }
    last_position_ = step.position;
    if (feed_pilot) pilot_->pilot().Op(step.signature, pilot_touched);
    if (iteration_mark_due_) MarkIterationOnDeviceLocked(stream);
    ProfiledOp op;
    op.active = true;
    op.seq = step.seq;
    op.position = step.position;
    if (actions_.has_value() && step.position >= 0 && !actions_->diverged) {
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
      if (std::optional<EventHandle> start = EventLocked();
          start.has_value() && device_.RecordEvent(*start, stream).ok()) {
        op.start = *start;
      } else if (start.has_value()) {
        spare_.push_back(*start);
      }
    }
    return op;
  }

  // Note [Op brackets] (profiler.h): the end event, as soon as the real call returned.
  void OpRan(ProfiledOp* op, uintptr_t stream) {
    pooch::MutexLock lock(&mu_);
    std::optional<EventHandle> end = EventLocked();
    if (end.has_value() && device_.RecordEvent(*end, stream).ok()) {
      op->end = *end;
    } else if (end.has_value()) {
      spare_.push_back(*end);
    }
  }

  void OpEnd(const ProfiledOp& op, uintptr_t stream) {
    pooch::MutexLock lock(&mu_);
    if (actions_.has_value() && op.position >= 0 && !actions_->diverged) {
      DropAfterLocked(op.position);
      OffloadAfterLocked(op.position);
    }
    if (op.start != 0 && op.end != 0) {
      timed_.push_back({op.seq, op.start, op.end});
      // A stream that never repeats (or threads interleaving) stays in profiling: keep only the
      // latest ops' events, enough for any iteration the recorder can hold, and reuse the rest
      // (re-recording an event whose record is pending is allowed).
      while (timed_.size() > kMaxTimedOps) {
        spare_.push_back(timed_.front().start);
        spare_.push_back(timed_.front().end);
        timed_.pop_front();
      }
    } else if (op.start != 0) {
      spare_.push_back(op.start);
    }
    FinalizeIfDueLocked();
  }

  void Alloc(uintptr_t address, int64_t bytes, bool managed) {
    pooch::MutexLock lock(&mu_);
    FinalizeIfDueLocked();
    const uint64_t id = next_id_++;
    live_[address] = {id, bytes, managed};
    if (managed && pilot_.has_value()) pilot_->pilot().Allocated(address);
    if (managed && ProfilingLocked()) {
      // Note [Copy times]: the manager's id of the allocation, to find its copies' timings.
      if (std::optional<pooch::AllocationInfo> info = manager_.Lookup(address)) {
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
    pooch::MutexLock lock(&mu_);
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
    }
    if (std::optional<IterationTracker::Step> step = recorder_.Free(id)) HandleStepLocked(*step);
  }

  void ReadBack(const void* host, size_t bytes) {
    pooch::MutexLock lock(&mu_);
    if (!pilot_.has_value() || bytes > pooch::Pilot::kMaxReadBackBytes) return;
    // Note [Pilot model]: it acts while no plan that moves anything is followed (a plan with
    // nothing to do, as when the reference fits, leaves the other tensors to demand swapping),
    // and never in a recorded profiling pass (its copies would be the profile's).
    const bool following = actions_.has_value() && last_position_ >= 0 && !actions_->diverged &&
                           actions_->swapped + actions_->recomputed > 0;
    // Note [Measured choice]: a plan set aside for demand swapping alone keeps the pilot quiet.
    const bool quiet = actions_.has_value() && iteration_mode_ == MeasuredChoice::Mode::kSetAside;
    pilot_->ReadBack({static_cast<const uint8_t*>(host), bytes},
                     !following && !quiet && !recorder_.tracker().recording_next());
  }

  void SyncMarker() {
    pooch::MutexLock lock(&mu_);
    // Here too for the iterations the tracker is still profiling, whose events have no
    // iteration_start step (IterationStart is idempotent).
    if (pilot_.has_value()) pilot_->pilot().IterationStart();
    const IterationTracker::BoundaryResult b = recorder_.MarkBoundary();
    if (b.profile_ready) {
      finalize_due_ = true;
      from_departure_ = b.from_departure;
    } else if (recorder_.tracker().keeping_iteration() && !recorder_.tracker().recording_next()) {
      RecycleTimedLocked();  // the ended iteration is not the reference: its times go
    }
    if (b.departed) NoteDepartureLocked();
    // The next iteration's start is noted at its first event (HandleStepLocked), whose step says
    // so under every marker: noting it here as well counted each iteration twice (two
    // `iteration` trace instants, safety_net_last_iteration always 0, a re-plan's wait of three
    // iterations halved, and Note [Diverged iterations]' previous iteration taken as this one).
    FinalizeIfDueLocked();
  }

  // The summary's iteration, plan, plan_run and recompute lines.
  std::vector<std::string> SummaryLines() {
    pooch::MutexLock lock(&mu_);
    std::vector<std::string> lines;
    const IterationTracker& t = recorder_.tracker();
    const double measured_ms = iterations_timed_ > 0
                                   ? iteration_ms_sum_ / static_cast<double>(iterations_timed_)
                                   : std::max(first_iteration_ms_, 0.0);
    lines.push_back(absl::StrFormat(
        "iterations: marker %s profiles %lld followed %llu departures %llu unmatched_ops %llu "
        "reprofiles %d reference_events %zu profiled_under %s measured_iteration_ms %.3f",
        std::string(IterationMarkerName(config_.iteration_marker)),
        static_cast<long long>(t.profiles_made()),
        static_cast<unsigned long long>(t.iterations_completed()),
        static_cast<unsigned long long>(departures_),
        static_cast<unsigned long long>(t.unmatched_ops()), reprofiles_, t.Reference().size(),
        profiled_under_, measured_ms));
    if (!plan_line_.empty()) lines.push_back(plan_line_);
    if (pilot_.has_value()) lines.push_back(pilot_->SummaryLine());
    if (config_.mode == pooch::RunMode::kPlanned) {
      lines.push_back(absl::StrFormat("plan_cache: hits %lld misses %lld entries %zu switches %lld",
                                      static_cast<long long>(plan_cache_.hits()),
                                      static_cast<long long>(plan_cache_.misses()),
                                      plan_cache_.size(), static_cast<long long>(plan_switches_)));
    }
    if (!actions_.has_value()) return lines;
    lines.push_back(choice_.SummaryLine(set_aside_iterations_));
    // What the plans' actions did since the first plan began: the safety net's hits are the
    // demand swap-ins since then (the swaps: line counts those of the profiling too).
    const ResidencyStats s = manager_.Stats();
    lines.push_back(absl::StrFormat(
        "plan_run: swapped_maps %d planned_swap_outs %lld prefetches %lld "
        "safety_net_swap_ins %lld prefetch_no_room %lld safety_net_last_iteration %lld "
        "diverged_iterations %lld",
        actions_->swapped,
        static_cast<long long>(s.planned_swap_outs - actions_->at_start.planned_swap_outs),
        static_cast<long long>(s.prefetches - actions_->at_start.prefetches),
        static_cast<long long>(s.demand_swap_ins - actions_->at_start.demand_swap_ins),
        static_cast<long long>(actions_->prefetch_no_room),
        static_cast<long long>(last_iteration_hits_),
        static_cast<long long>(actions_->diverged_iterations)));
    if (recomputer_ != nullptr) {
      const Recomputer::Stats rs = recomputer_->stats();
      lines.push_back(absl::StrFormat(
          "recompute: planned_maps %d recipes %lld refused %lld drops %lld replays %lld "
          "chained %lld forgotten %lld swapped_instead %lld failures %lld "
          "replay_ms %.3f (profiled time of the replayed calls)",
          actions_->recomputed, static_cast<long long>(rs.recipes),
          static_cast<long long>(rs.refused), static_cast<long long>(rs.drops),
          static_cast<long long>(rs.replays), static_cast<long long>(rs.chained),
          static_cast<long long>(rs.forgotten), static_cast<long long>(actions_->drop_fallbacks),
          static_cast<long long>(rs.failures), rs.replay_us / 1000.0));
    }
    return lines;
  }

  // A planned producer ran: keep its recipe if it is the one the plan asked for.
  void OfferRecipe(const ProfiledOp& op, std::optional<ReplayRecipe> recipe) {
    // A recipe for another address (the plan's tensor is not this op's output) is not kept.
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
  struct Timed {
    uint64_t seq = 0;
    EventHandle start = 0;
    EventHandle end = 0;
    // An iteration's pair (Note [Measured choice]): its plan, and its mode as a sample (-1: none,
    // the first iteration of a plan or after a change of mode).
    uint64_t plan_key = 0;
    int sample_mode = -1;
  };

  // The live allocation (base, Live) that holds `address`, or null.
  const std::pair<const DeviceAddress, Live>* ContainingLocked(DeviceAddress address) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = live_.upper_bound(address);
    if (it == live_.begin()) return nullptr;
    --it;
    if (address - it->first >= static_cast<DeviceAddress>(it->second.bytes)) return nullptr;
    return &*it;
  }

  std::optional<EventHandle> EventLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!spare_.empty()) {
      const EventHandle e = spare_.back();
      spare_.pop_back();
      return e;
    }
    absl::StatusOr<EventHandle> e = device_.CreateTimingEvent();
    if (!e.ok()) return std::nullopt;
    return *e;
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
  }

  // Note [Measured iteration time]
  // ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
  // An iteration's time is the device time between timing
  // events recorded before the first op of consecutive followed iterations, on that op's stream
  // (virtual time on simgpu, as the planner's prediction and the program's own figures are).
  // An iteration may start at an allocation, which has no stream: the event then goes before
  // the next op. Pairs are resolved once both events completed, without blocking.
  void NoteIterationStartLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    iteration_mark_due_ = true;
    previous_iteration_first_id_ = iteration_first_id_;
    iteration_first_id_ = next_id_;
    if (actions_.has_value() && config_.mode == pooch::RunMode::kPlanned) ReplanIfMissedLocked();
    if (trace_ != nullptr) {
      const pooch::TraceArg args[] = {
          {"followed", static_cast<int64_t>(recorder_.tracker().iterations_completed())}};
      trace_->OnRuntime("iteration", args);
    }
  }

  // Each pair owns its two events: the previous iteration's start mark and an end mark recorded
  // here, next to the new start mark.
  void MarkIterationOnDeviceLocked(uintptr_t stream) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    iteration_mark_due_ = false;
    if (last_mark_ != 0) {
      std::optional<EventHandle> end = EventLocked();
      if (end.has_value() && device_.RecordEvent(*end, stream).ok()) {
        iteration_pairs_.push_back({0, last_mark_, *end, ended_key_, ended_sample_mode_});
      } else {
        spare_.push_back(last_mark_);
        if (end.has_value()) spare_.push_back(*end);
      }
      last_mark_ = 0;
    }
    if (std::optional<EventHandle> start = EventLocked(); start.has_value()) {
      if (device_.RecordEvent(*start, stream).ok()) {
        last_mark_ = *start;
      } else {
        spare_.push_back(*start);
      }
    }
    ResolveIterationPairsLocked();
  }

  // The summary's measured_iteration_ms is the plan's: a new plan (or re-plan) starts the
  // average again, so that it compares with predicted_iteration_ms. The iteration under way
  // when it is made is already the new plan's (plans are made or re-made at iteration starts,
  // or just after the profiled one ends), but it starts from what the profiling pass left
  // (every map on the host) or the old plan's state: it is left out of the average when later
  // iterations were timed (torchvision ResNet-50 under pooch, simgpu v100-pcie3: 574.8 ms, then
  // 137.3 ms and 124.4 ms from the third on, against 122.9 ms predicted).
  void RestartIterationTimesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const Timed& t : iteration_pairs_) {
      spare_.push_back(t.start);
      spare_.push_back(t.end);
    }
    iteration_pairs_.clear();
    iteration_ms_sum_ = 0;
    iterations_timed_ = 0;
    first_iteration_ms_ = -1;
  }

  void RecycleTimedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const Timed& t : timed_) {
      spare_.push_back(t.start);
      spare_.push_back(t.end);
    }
    timed_.clear();
  }

  void ResolveIterationPairsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    while (!iteration_pairs_.empty()) {
      const Timed& t = iteration_pairs_.front();
      absl::StatusOr<bool> done = device_.QueryEvent(t.end);
      if (!done.ok() || !*done) return;
      if (absl::StatusOr<double> us = device_.ElapsedMicroseconds(t.start, t.end); us.ok()) {
        const double ms = *us / 1000.0;
        if (t.sample_mode >= 0) SampleModeLocked(t.plan_key, t.sample_mode, ms);
        // A set-aside iteration's time is not the plan's: the summary compares
        // measured_iteration_ms with the plan's prediction.
        const bool plans = t.sample_mode <= static_cast<int>(MeasuredChoice::Mode::kFollow);
        if (plans && first_iteration_ms_ < 0) {
          first_iteration_ms_ = ms;
        } else if (plans) {
          iteration_ms_sum_ += ms;
          ++iterations_timed_;
        }
      }
      spare_.push_back(t.start);
      spare_.push_back(t.end);
      iteration_pairs_.pop_front();
    }
  }

  // A departed iteration runs under demand swapping (as every iteration does until plans are
  // carried out); after POOCH_REPROFILE_AFTER of them the stream is profiled again.
  void NoteDepartureLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    ++departures_;
    iterations_under_plan_ = 0;  // the safety net's hits of a departed iteration are not a miss
    if (trace_ != nullptr) {
      const pooch::TraceArg args[] = {{"departures", static_cast<int64_t>(departures_)}};
      trace_->OnRuntime("departure: demand swapping", args);
    }
    // The departed iteration's time is not the plan's: drop the open mark.
    iteration_mark_due_ = false;
    if (last_mark_ != 0) spare_.push_back(last_mark_);
    last_mark_ = 0;
    // Note [Departed references] (iteration_tracker.h): with an explicit marker, under a plan,
    // each departed iteration from the next one on is profiled and planned at its end.
    if (config_.iteration_marker != pooch::IterationMarker::kAuto &&
        config_.mode == pooch::RunMode::kPlanned && actions_.has_value() && !take_departed_) {
      take_departed_ = true;
      recorder_.SetTakeDeparted(true);
    }
    if (take_departed_) return;
    if (++departures_since_profile_ >= config_.reprofile_after) {
      POOCH_LOG_AT(kInfo, "%d iterations departed from the profile; profiling again",
                   departures_since_profile_);
      recorder_.Reprofile();
      swap_all_pass_ = false;        // Note [Swap-all profiling]: it starts again too
      manager_.SetTimeCopies(true);  // Note [Copy times]
      if (trace_ != nullptr) trace_->OnRuntime("profiling again", {});
      departures_since_profile_ = 0;
      ++reprofiles_;
    }
  }

  // The reference iteration is complete: measure, build, write and plan. Deferred to the next
  // hook after the one that completed it, so that the last op's end event is recorded.
  void FinalizeIfDueLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!finalize_due_) return;
    finalize_due_ = false;
    const bool from_departure = std::exchange(from_departure_, false);
    for (const Timed& t : timed_) {
      if (device_.SynchronizeEvent(t.end).ok()) {
        if (absl::StatusOr<double> us = device_.ElapsedMicroseconds(t.start, t.end); us.ok()) {
          recorder_.SetDuration(t.seq, *us);
        }
      }
      spare_.push_back(t.start);
      spare_.push_back(t.end);
    }
    timed_.clear();
    pooch::OpStreamRecorder::Positions positions;
    absl::StatusOr<pooch::RecordedIteration> recorded =
        recorder_.Reference(small_.Stats().slab_bytes, &positions);
    recorder_.DropKept();
    if (!recorded.ok()) {
      NoProfileLocked(recorded.status());
      if (!swap_all_pass_) NoActionsLocked();  // the pass's reference is the same events
      return;
    }
    absl::StatusOr<pooch::BuiltProfile> built =
        pooch::BuildProfile(*recorded, {.name = "measured", .granularity = manager_.granularity()});
    if (!built.ok()) {
      NoProfileLocked(built.status());
      if (!swap_all_pass_) NoActionsLocked();
      return;
    }
    if (!from_departure) {  // a departed iteration's copies are not timed: the machine stays
      copy_times_.Take(manager_);
      copy_times_.Attribute(*built);
      machine_ = copy_times_.Machine(manager_.memory_limit(), &machine_assumed_);
      copy_times_.Clear();
    }
    // Note [Plan cache]: a reference planned before is carried out with its plan at once, with
    // no swap-all pass and no planning.
    const pooch::PlanCache::Entry* cached = nullptr;
    if (!swap_all_pass_ && config_.mode == pooch::RunMode::kPlanned) {
      cache_key_ = pooch::PlanCache::Key(recorder_.tracker().Reference());
      cached = plan_cache_.Find(cache_key_);
    }
    if (from_departure) profiled_under_ = "departure";
    if (cached == nullptr && !from_departure && StartSwapAllPassLocked(*built, positions)) {
      return;
    }
    manager_.SetTimeCopies(false);  // Note [Copy times]
    built_ = std::make_shared<const pooch::BuiltProfile>(*std::move(built));
    positions_ = std::make_shared<const pooch::OpStreamRecorder::Positions>(std::move(positions));
    if (cached != nullptr) {
      headroom_ = cached->headroom_bytes;
      replans_ = cached->replans;
      plan_line_ = cached->plan_line;
      profiled_under_ = "cache";
      if (trace_ != nullptr) trace_->OnRuntime("plan from the cache", {});
      ActionsLocked(*built_, *positions_, cached->plan ? &*cached->plan : nullptr);
      iterations_under_plan_ = 0;
      return;
    }
    WriteProfileLocked(built_->profile);
    std::optional<pooch::PlanResult> plan = PlanLocked(built_->profile);
    if (plan.has_value() && config_.mode == pooch::RunMode::kPlanned) {
      ActionsLocked(*built_, *positions_, &*plan);
      CacheLocked(plan, /*new_reference=*/true);
      iterations_under_plan_ = 0;
    } else if (actions_.has_value()) {
      // No plan for this reference: another reference's actions must not run at its positions.
      // Cached as planless, so that the shape is not planned again and a switch can find it.
      ActionsLocked(*built_, *positions_, nullptr);
      CacheLocked(std::nullopt, /*new_reference=*/true);
    }
  }

  // `new_reference`: the tracker's reference is the one just planned, kept as the alternate of
  // its key (Note [Switching references]); a re-plan's entry keeps its alternate (the tracker
  // may already follow another reference when a re-plan is made at an iteration start).
  void CacheLocked(const std::optional<pooch::PlanResult>& plan, bool new_reference)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (std::optional<uint64_t> dropped = plan_cache_.Put(cache_key_, {.plan = plan,
                                                                       .headroom_bytes = headroom_,
                                                                       .replans = replans_,
                                                                       .plan_line = plan_line_,
                                                                       .built = built_,
                                                                       .positions = positions_})) {
      recorder_.ForgetAlternate(*dropped);
    }
    if (new_reference) recorder_.KeepReferenceAs(cache_key_);
  }

  // Note [Switching references] (iteration_tracker.h): the iteration turned out, at `position`,
  // to be the reference of another cached plan, whose actions are carried out from there on.
  // The two references are the same events before `position`, so the allocations made so far
  // are the same slots' in both: they keep their addresses. What the old plan did before
  // (swap-outs, drops) and the new one's actions before `position` that did not happen are
  // left to the safety nets, as with a wrong plan (Note [Carrying out the plan]): demand
  // swapping, and the Recomputer's rebuild of a dropped map before anything touches it.
  void SwitchPlanLocked(uint64_t key, int64_t position) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const pooch::PlanCache::Entry* entry = plan_cache_.Peek(key);
    if (entry == nullptr || entry->built == nullptr || !actions_.has_value()) {
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
    BindPersistentLocked(a);
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
    built_ = entry->built;
    positions_ = entry->positions;
    cache_key_ = key;
    headroom_ = entry->headroom_bytes;
    replans_ = entry->replans;
    plan_line_ = entry->plan_line;
    iterations_under_plan_ = 0;  // a re-plan's evidence is a whole iteration under this plan
    ++plan_switches_;
    if (trace_ != nullptr) {
      const pooch::TraceArg args[] = {{"position", position}};
      trace_->OnRuntime("plan switched", args);
    }
  }

  // Tensors that outlive iterations keep their addresses: find them among the live ones.
  void BindPersistentLocked(PlanActions& a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (a.persistent.empty()) return;
    absl::flat_hash_map<uint64_t, DeviceAddress> by_id;
    for (const auto& [address, live] : live_) by_id[live.id] = address;
    for (const PlanActions::Persistent& p : a.persistent) {
      if (auto it = by_id.find(p.allocation); it != by_id.end()) a.fixed[p.slot] = it->second;
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

  // How plans are made at run time: every allocation of the profile is a candidate (it holds
  // only those the manager moves, POOCH_MIN_SWAP_BYTES and up).
  static pooch::PlanOptions RunPlanOptions() {
    pooch::PlanOptions options;
    options.min_candidate_bytes = 0;
    return options;
  }

  // The swap-all pass swaps every interval that matters by capacity, short ones included, so
  // that the profile carries measured copy times for every tensor a plan may move.
  static pooch::PlanOptions SwapAllPassOptions() {
    pooch::PlanOptions options = RunPlanOptions();
    options.long_intervals_first = false;
    return options;
  }

  // Returns true when the swap-all pass starts (the profile will be made at its end).
  bool StartSwapAllPassLocked(const pooch::BuiltProfile& built,
                              const pooch::OpStreamRecorder::Positions& positions)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (swap_all_pass_) {  // this profile is the pass's: plans from here on are the policy's
      swap_all_pass_ = false;
      profiled_under_ = "swap-all";
      // The plan_run: line counts from the policy's first plan (across re-profiles).
      if (pass_was_first_plan_) actions_.reset();
      return false;
    }
    profiled_under_ = "demand";
    if (config_.profile_swap != pooch::ProfileSwap::kAll ||
        config_.mode != pooch::RunMode::kPlanned) {
      return false;
    }
    absl::StatusOr<pooch::PlanResult> plan =
        pooch::MakePlan(built.profile, machine_, pooch::Policy::kSwapAll, SwapAllPassOptions());
    if (!plan.ok() || !plan->sim.feasible) {
      POOCH_LOG_AT(
          kInfo, "swap-all does not fit: profiled under demand swapping (%s)",
          plan.ok() ? plan->sim.failure.c_str() : std::string(plan.status().message()).c_str());
      return false;
    }
    swap_all_pass_ = true;
    pass_was_first_plan_ = !actions_.has_value();
    recorder_.RecordNextIteration();
    ActionsLocked(built, positions, &*plan);
    // The summary keeps showing the last plan made, if any (a re-profile's pass).
    if (plan_line_.empty()) {
      plan_line_ = "plan: none yet: profiling with every feature map swapped (POOCH_PROFILE_SWAP)";
    }
    profiled_under_ = "swap-all-pending";
    if (trace_ != nullptr) trace_->OnRuntime("profiling with every feature map swapped", {});
    return true;
  }

  // Note [Headroom]
  // ~~~~~~~~~~~~~~~
  // The planner's simulation frees memory at the device time the work completes; at run time the
  // host runs ahead of the device and memory comes back only when the host sees completion, and
  // the runtime holds a little the profile does not show (the reuse cache, replay scratch). A
  // plan that uses the last byte of the limit then overflows at run time: the safety net evicts
  // (parameters, mostly: the least recently used) and swaps back in on demand, and the measured
  // time leaves the prediction behind. So after a plan's second full iteration, if the safety
  // net fired in it, the same profile is planned again for a smaller memory: the limit less a
  // headroom grown by the largest feature map (at least 1/64 of the limit) per re-plan, up to
  // kMaxReplans re-plans and a headroom of a quarter of the limit. A re-plan that finds no
  // feasible plan keeps the previous one.
  static constexpr int kMaxReplans = 4;

  void ReplanIfMissedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const int64_t demand_ins = manager_.Stats().demand_swap_ins;
    if (iterations_under_plan_ >= 1) last_iteration_hits_ = demand_ins - demand_ins_mark_;
    demand_ins_mark_ = demand_ins;
    ++iterations_under_plan_;
    if (iterations_under_plan_ < 3 || last_iteration_hits_ <= 0 || built_ == nullptr ||
        replans_ >= kMaxReplans || swap_all_pass_) {
      return;
    }
    const int64_t limit = manager_.memory_limit();
    int64_t step = limit / 64;
    for (const pooch::Candidate& c : pooch::FindCandidates(built_->profile, &machine_)) {
      step = std::max(step, DeviceBytes(built_->profile.tensors[static_cast<size_t>(c.tensor)]));
    }
    if (headroom_ + step > limit / 4) return;
    const int64_t before = headroom_;
    headroom_ += step;
    ++replans_;
    const std::string previous_line = plan_line_;
    std::optional<pooch::PlanResult> plan = PlanLocked(built_->profile);
    if (!plan.has_value() || !plan->sim.feasible) {
      headroom_ = before;
      replans_ = kMaxReplans;  // smaller memory does not help: stop trying
      plan_line_ = previous_line;
      return;
    }
    POOCH_LOG_AT(kInfo,
                 "the safety net swapped in %lld times in an iteration: re-planned with "
                 "%lld bytes of headroom",
                 static_cast<long long>(last_iteration_hits_), static_cast<long long>(headroom_));
    ActionsLocked(*built_, *positions_, &*plan);
    CacheLocked(plan, /*new_reference=*/false);
    iterations_under_plan_ = 1;  // the iteration starting now is the new plan's first
  }

  // Note [Carrying out the plan] (plan_actions.h): the plan becomes actions at positions.
  // `plan` null: the reference has no plan, and no action is taken in it.
  void ActionsLocked(const pooch::BuiltProfile& built,
                     const pooch::OpStreamRecorder::Positions& positions,
                     const pooch::PlanResult* plan) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    RestartIterationTimesLocked();
    PlanActions a = plan != nullptr ? MakePlanActions(built, positions, *plan) : PlanActions{};
    BindPersistentLocked(a);
    a.StartIteration();
    // Note [Carried slots]: the iteration starting now frees the successors the reference made.
    if (!a.carried.empty()) {
      absl::flat_hash_map<uint64_t, DeviceAddress> by_id;
      for (const auto& [address, live] : live_) by_id[live.id] = address;
      for (const PlanActions::Carried& c : a.carried) {
        if (auto it = by_id.find(c.successor_allocation); it != by_id.end()) {
          a.address[static_cast<size_t>(c.slot)] = it->second;
          a.slot_of[it->second] = c.slot;
        }
      }
    }
    InstallActionsLocked(std::move(a));
  }

  // Makes `a` the actions carried out, with the counts the plan_run: line keeps from the first
  // plan on, across re-profiles and switches.
  void InstallActionsLocked(PlanActions a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    // Note [Measured choice]: the iteration under way starts from another plan's residency.
    iteration_mode_ = MeasuredChoice::Mode::kFollow;
    manager_.SetFreeReserve(0);  // Note [Free reserve]: the new plan's iteration is followed
    mode_changed_ = true;
    a.at_start = actions_.has_value() ? actions_->at_start : manager_.Stats();
    a.prefetch_no_room = actions_.has_value() ? actions_->prefetch_no_room : 0;
    a.diverged_iterations = actions_.has_value() ? actions_->diverged_iterations : 0;
    a.drop_fallbacks = actions_.has_value() ? actions_->drop_fallbacks : 0;
    actions_ = std::move(a);
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
      choice_.Diverged(cache_key_);  // Note [Measured choice]
      if (trace_ != nullptr) {
        const pooch::TraceArg args[] = {{"position", position}};
        trace_->OnRuntime("diverged", args);
      }
      return;
    }
  }

  // Note [Measured choice]: at the first op of an iteration under a plan, the ended iteration's
  // sample is noted for its timing pair, and the plan is followed or set aside in this one.
  void ChooseModeLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    ended_key_ = iteration_key_;
    ended_sample_mode_ = mode_changed_ ? -1 : static_cast<int>(iteration_mode_);
    const MeasuredChoice::Mode mode = choice_.ModeFor(cache_key_);
    mode_changed_ = mode != iteration_mode_ || cache_key_ != iteration_key_;
    iteration_mode_ = mode;
    iteration_key_ = cache_key_;
    // Note [Free reserve] (core/residency/residency_evict.cc): an iteration left to demand
    // swapping alone keeps room free ahead of its misses; a followed plan makes its own room,
    // and so does the pilot, pushing out at each read-back what it does not expect to be used
    // (with both, the pilot's mode on moe top 2 at 40 % went from 0.973 to 1.102 ms).
    manager_.SetFreeReserve(mode == MeasuredChoice::Mode::kSetAside
                                ? static_cast<int64_t>(kFreeReserveFraction *
                                                       static_cast<double>(manager_.memory_limit()))
                                : 0);
    if (mode == MeasuredChoice::Mode::kFollow) return;
    actions_->diverged = true;  // no action of the plan in this iteration
    ++set_aside_iterations_;
    if (trace_ != nullptr) trace_->OnRuntime("plan set aside", {});
  }

  void SampleModeLocked(uint64_t key, int mode, double ms) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const std::optional<MeasuredChoice::Mode> verdict =
        choice_.Sample(key, static_cast<MeasuredChoice::Mode>(mode), ms);
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
      const pooch::TraceArg args[] = {{"verdict", v.trace}};
      trace_->OnRuntime("measured choice", args);
    }
  }

  void PrefetchBeforeLocked(int64_t position) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = actions_->prefetch_before.find(position);
    if (it == actions_->prefetch_before.end()) return;
    for (const PlanActions::Prefetch& p : it->second) {
      const DeviceAddress address = actions_->address[static_cast<size_t>(p.slot)];
      if (address == 0 || actions_->prefetched[static_cast<size_t>(p.candidate)]) continue;
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
      }
    }
  }

  // The iteration found cannot be planned (e.g. it has no op): the summary's plan line says why.
  void NoProfileLocked(const absl::Status& why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    plan_line_ = absl::StrFormat("plan: none: no profile: %s", why.message());
    POOCH_LOG_AT(kInfo, "%s", plan_line_.c_str());
    if (trace_ != nullptr) {
      const pooch::TraceArg args[] = {{"why", why.message()}};
      trace_->OnRuntime("no plan", args);
    }
  }

  void WriteProfileLocked(const pooch::Profile& profile) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (config_.profile_out.empty()) return;
    std::ofstream out(config_.profile_out, std::ios::trunc);
    out << pooch::ProfileToJson(profile) << "\n";
    out.close();
    if (!out) {
      LogLine("POOCH_PROFILE_OUT: cannot write %s; no profile file", config_.profile_out.c_str());
    }
  }

  std::optional<pooch::PlanResult> PlanLocked(const pooch::Profile& profile)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const bool assumed = machine_assumed_;
    pooch::MachineModel machine = machine_;  // measured when the profile was made
    machine.memory_bytes -= headroom_;       // Note [Headroom]
    const pooch::Policy policy =
        config_.mode == pooch::RunMode::kPlanned ? config_.planned_policy : pooch::Policy::kPooch;
    const pooch::PlanOptions options = RunPlanOptions();
    const absl::Time started = absl::Now();
    absl::StatusOr<pooch::PlanResult> plan = pooch::MakePlan(profile, machine, policy, options);
    const double plan_s = absl::ToDoubleSeconds(absl::Now() - started);
    if (!plan.ok()) {
      plan_line_ = absl::StrFormat("plan: policy %s failed: %s", pooch::PolicyName(policy),
                                   plan.status().message());
      return std::nullopt;
    }
    // Counted over the planner's candidates, as `pooch plan` counts them.
    const DecisionCounts counts = CountDecisions(plan->plan, plan->candidates);
    plan_line_ = absl::StrFormat(
        "plan: policy %s keep %d swap %d recompute %d predicted_iteration_ms %.3f "
        "feasible %s h2d_gbps %.2f d2h_gbps %.2f%s headroom_bytes %lld replans %d "
        "simulations %lld plan_s %.3f; %s",
        pooch::PolicyName(policy), counts.keep, counts.swap, counts.recompute,
        plan->sim.iteration_us / 1000.0, plan->sim.feasible ? "yes" : "no", machine.h2d_gbps,
        machine.d2h_gbps, assumed ? " (a direction had no copy: assumed)" : "",
        static_cast<long long>(headroom_), replans_, static_cast<long long>(plan->simulations),
        plan_s,
        config_.mode != pooch::RunMode::kPlanned ? "not carried out (not a planner policy)"
                                                 : "carried out");
    POOCH_LOG_AT(kInfo, "%s", plan_line_.c_str());
    if (trace_ != nullptr) {
      const pooch::TraceArg args[] = {{"policy", pooch::PolicyName(policy)},
                                      {"keep", counts.keep},
                                      {"swap", counts.swap},
                                      {"recompute", counts.recompute},
                                      {"predicted_iteration_ms", plan->sim.iteration_us / 1000.0},
                                      {"feasible", plan->sim.feasible ? "yes" : "no"},
                                      {"headroom_bytes", headroom_}};
      trace_->OnRuntime("plan", args);
    }
    if (!config_.plot_path.empty()) PlotLocked(profile, machine, *plan);
    return *std::move(plan);
  }

  // POOCH_PLOT: each plan made is drawn (core/plot/plot.h), so the file shows the last. It blocks
  // the hook that made the plan while gnuplot runs, as planning does. A failure is said once and
  // not tried again.
  void PlotLocked(const pooch::Profile& profile, const pooch::MachineModel& machine,
                  const pooch::PlanResult& plan) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (plot_failed_) return;
    const std::string title = absl::StrFormat(
        "%s under pooch: the measured iteration (%d ops), copies at %.1f GB/s to the device",
        program_invocation_short_name, profile.ops.size(), machine.h2d_gbps);
    if (absl::Status s =
            pooch::WritePlanPlot(config_.plot_path, title, profile, machine, plan.plan, plan.sim);
        !s.ok()) {
      plot_failed_ = true;
      LogLine("POOCH_PLOT: %s; no picture of the plan", std::string(s.message()).c_str());
      return;
    }
    POOCH_LOG_AT(kInfo, "POOCH_PLOT: the plan is drawn in %s", config_.plot_path.c_str());
  }

  pooch::Mutex mu_;
  TraceObserver* const trace_;    // may be null
  Recomputer* const recomputer_;  // may be null (not a planner policy)
  pooch::Device& device_;
  pooch::ResidencyManager& manager_;
  pooch::SmallAllocator& small_;
  const pooch::Config config_;
  pooch::OpStreamRecorder recorder_ ABSL_GUARDED_BY(mu_);
  absl::btree_map<DeviceAddress, Live> live_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::deque<Timed> timed_ ABSL_GUARDED_BY(mu_);
  std::vector<EventHandle> spare_ ABSL_GUARDED_BY(mu_);
  bool finalize_due_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t departures_ ABSL_GUARDED_BY(mu_) = 0;
  int departures_since_profile_ ABSL_GUARDED_BY(mu_) = 0;
  int reprofiles_ ABSL_GUARDED_BY(mu_) = 0;
  bool iteration_mark_due_ ABSL_GUARDED_BY(mu_) = false;
  EventHandle last_mark_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<Timed> iteration_pairs_ ABSL_GUARDED_BY(mu_);  // {0, start mark, end mark}
  double iteration_ms_sum_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t iterations_timed_ ABSL_GUARDED_BY(mu_) = 0;
  double first_iteration_ms_ ABSL_GUARDED_BY(mu_) = -1;  // under the plan; -1: not yet timed
  // Note [Diverged iterations]: the first recorder id of this iteration and of the one before.
  uint64_t iteration_first_id_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t previous_iteration_first_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::string plan_line_ ABSL_GUARDED_BY(mu_);
  // The profile planned last, kept for re-plans (Note [Headroom]).
  // Shared with its plan cache entry (Note [Switching references]).
  std::shared_ptr<const pooch::BuiltProfile> built_ ABSL_GUARDED_BY(mu_);
  // Note [Swap-all profiling]: the swap-all iteration is under way; how the profile was taken.
  bool swap_all_pass_ ABSL_GUARDED_BY(mu_) = false;
  bool pass_was_first_plan_ ABSL_GUARDED_BY(mu_) = false;
  std::string profiled_under_ ABSL_GUARDED_BY(mu_) = "-";
  std::shared_ptr<const pooch::OpStreamRecorder::Positions> positions_ ABSL_GUARDED_BY(mu_);
  pooch::MachineModel machine_ ABSL_GUARDED_BY(mu_);  // measured once per profile
  // Note [Copy times]: timings taken while profiling.
  CopyTimes copy_times_ ABSL_GUARDED_BY(mu_);
  bool machine_assumed_ ABSL_GUARDED_BY(mu_) = false;
  int64_t headroom_ ABSL_GUARDED_BY(mu_) = 0;
  int replans_ ABSL_GUARDED_BY(mu_) = 0;
  // Note [Plan cache]: plans by reference, and the key of the reference planned last.
  pooch::PlanCache plan_cache_ ABSL_GUARDED_BY(mu_);
  uint64_t cache_key_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t plan_switches_ ABSL_GUARDED_BY(mu_) = 0;  // Note [Switching references]
  // Note [Departed references]: on after the first departure under a plan (explicit markers);
  // the reference due to be finalized is a departed iteration.
  bool take_departed_ ABSL_GUARDED_BY(mu_) = false;
  bool from_departure_ ABSL_GUARDED_BY(mu_) = false;
  int iterations_under_plan_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t demand_ins_mark_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t last_iteration_hits_ ABSL_GUARDED_BY(mu_) = -1;
  std::optional<PlanActions> actions_ ABSL_GUARDED_BY(mu_);
  // Note [Measured choice]: the trials, the mode and plan of the iteration under way, and those
  // of the iteration that ended at its start (for its timing pair).
  MeasuredChoice choice_ ABSL_GUARDED_BY(mu_){PilotWanted(config_)};
  MeasuredChoice::Mode iteration_mode_ ABSL_GUARDED_BY(mu_) = MeasuredChoice::Mode::kFollow;
  uint64_t iteration_key_ ABSL_GUARDED_BY(mu_) = 0;
  bool mode_changed_ ABSL_GUARDED_BY(mu_) = true;
  uint64_t ended_key_ ABSL_GUARDED_BY(mu_) = 0;
  int ended_sample_mode_ ABSL_GUARDED_BY(mu_) = -1;
  int64_t set_aside_iterations_ ABSL_GUARDED_BY(mu_) = 0;
  bool plot_failed_ ABSL_GUARDED_BY(mu_) = false;  // POOCH_PLOT could not be drawn
  // Note [Pilot model]: under a planner policy unless POOCH_PILOT=off.
  std::optional<pooch::PilotActions> pilot_ ABSL_GUARDED_BY(mu_);
  int64_t last_position_ ABSL_GUARDED_BY(mu_) = -1;  // of the last op in the reference
};

Profiler::Profiler(Device& device, ResidencyManager& manager, SmallAllocator& small,
                   const Config& config, TraceObserver* trace, Recomputer* recomputer)
    : impl_(std::make_unique<Impl>(device, manager, small, config, trace, recomputer)) {}

Profiler::~Profiler() = default;

bool Profiler::WantedBy(const Config& config) {
  return config.mode == RunMode::kPlanned || !config.profile_out.empty();
}

ProfiledOp Profiler::OpBegin(const char* name, uintptr_t stream,
                             const std::vector<AccessRange>& ranges, bool replay_capable,
                             bool exact_accesses, HostCopyBytes copy) {
  return impl_->OpBegin(name, stream, ranges, replay_capable, exact_accesses, copy);
}

void Profiler::OfferRecipe(const ProfiledOp& op, std::optional<ReplayRecipe> recipe) {
  impl_->OfferRecipe(op, std::move(recipe));
}

void Profiler::OpRan(ProfiledOp* op, uintptr_t stream) {
  if (op->active && op->start != 0) impl_->OpRan(op, stream);
}

void Profiler::OpEnd(const ProfiledOp& op, uintptr_t stream) {
  if (op.active) impl_->OpEnd(op, stream);
}

void Profiler::Alloc(uintptr_t address, int64_t bytes, bool managed) {
  impl_->Alloc(address, bytes, managed);
}

void Profiler::Free(uintptr_t address) { impl_->Free(address); }

void Profiler::ReadBack(const void* host, size_t bytes) { impl_->ReadBack(host, bytes); }

void Profiler::SyncMarker() { impl_->SyncMarker(); }

std::vector<std::string> Profiler::SummaryLines() { return impl_->SummaryLines(); }

}  // namespace pooch
