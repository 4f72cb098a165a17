// steady_host.h: the host time and driver memory calls of pooch per steady iteration, for the
// summary's host_steady: line (Note [Steady iterations]).
//
//   SteadyHost steady;
//   steady.IterationStarted({.following = true, .plan = 3}, HostSnapshotNow());  // each start
//   steady.Departed();                        // the iteration under way left the reference
//   std::optional<SteadyHost::PerIteration> p = steady.PerIterationMean();
//
// Note [Steady iterations]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// The summary's host: line adds up the whole run, whose profiling, swap-all pass and planning
// iterations make most of the mapping calls and say nothing of the iterations a long run is made
// of. A steady iteration is one that followed the plan installed last from its start to the next
// iteration's start without departing, and was not the first under that plan (which starts from
// what profiling or the previous plan left, as Note [Measured iteration time] in
// core/measure/iteration_clock.h leaves it out too). The figures are the difference of the
// process-wide sums between the start of the first and the end of the last of the latest run of
// consecutive steady iterations, divided by their number: a departure or a new plan starts the
// run again, so they are the last plan's. The sums are read at iteration starts, from the hook
// that found the start, so the hook under way at each end counts in one iteration or the next.
//
// Thread safety: every method may be called from any thread (one mutex): the plan executor calls
// it from the hooks under its own lock, the summary at exit.
#ifndef POOCH_INTERPOSE_PROCESS_STEADY_HOST_H_
#define POOCH_INTERPOSE_PROCESS_STEADY_HOST_H_

#include <cstdint>
#include <optional>

#include "core/base/mutex.h"
#include "core/device/timed_device.h"
#include "interpose/process/host_time.h"

namespace pooch::interpose {

// The process-wide sums at one moment.
struct HostSnapshot {
  HookTimes hooks;
  DeviceCallTimes device_calls;
  MemoryCallCounts memory_calls;
};

class SteadyHost {
 public:
  // What the plan executor says of the iteration starting.
  struct Start {
    bool following = false;  // a plan's actions are carried out in it
    uint64_t plan = 0;       // which plan: changes with every plan installed
  };
  // Means per steady iteration.
  struct PerIteration {
    int64_t iterations = 0;
    double hook_ms[static_cast<size_t>(HookWork::kCount)] = {};
    double device_ms[static_cast<size_t>(DeviceCallKind::kCount)] = {};
    double memory_calls[static_cast<size_t>(MemoryCall::kCount)] = {};
    double host_ms() const;  // the hooks' time, which the device calls are part of
  };

  void IterationStarted(const Start& start, const HostSnapshot& now) ABSL_LOCKS_EXCLUDED(mu_);
  void Departed() ABSL_LOCKS_EXCLUDED(mu_);
  // nullopt: no steady iteration ended yet.
  std::optional<PerIteration> PerIterationMean() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable Mutex mu_;
  // The iteration under way.
  std::optional<HostSnapshot> open_ ABSL_GUARDED_BY(mu_);
  Start open_start_ ABSL_GUARDED_BY(mu_);
  bool open_departed_ ABSL_GUARDED_BY(mu_) = false;
  bool previous_followed_ ABSL_GUARDED_BY(mu_) =
      false;  // the iteration before the open one followed open_start_.plan
  uint64_t previous_plan_ ABSL_GUARDED_BY(mu_) = 0;
  // The latest run of consecutive steady iterations.
  HostSnapshot first_ ABSL_GUARDED_BY(mu_);
  HostSnapshot last_ ABSL_GUARDED_BY(mu_);
  int64_t iterations_ ABSL_GUARDED_BY(mu_) = 0;
  bool run_open_ ABSL_GUARDED_BY(mu_) =
      false;  // the run's last iteration is the one that ended last
};

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_PROCESS_STEADY_HOST_H_
