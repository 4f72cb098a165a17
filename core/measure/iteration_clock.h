// IterationClock: the device time of each iteration run under a plan, for the measured choice
// (Note [Measured choice] in measured_choice.h) and the summary's measured_iteration_ms.
//
//   IterationClock clock(device, events);
//   clock.IterationStarted();                       // at the iteration's first event
//   if (clock.mark_due()) {                         // at its first op, on the op's stream
//     for (const IterationClock::Sample& s : clock.Mark(stream, ended)) choice.Sample(...);
//   }
//   clock.MeasuredMs();                             // the summary's figure
//
// Note [Measured iteration time]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// An iteration's time is the device time between timing events recorded before the first op of
// consecutive followed iterations, on that op's stream (virtual time on simgpu, as the planner's
// prediction and the program's own figures are). An iteration may start at an allocation, which
// has no stream: the mark then goes before the next op. Each pair owns its two events: the
// previous iteration's start mark and an end mark recorded next to the new start mark. Pairs
// are resolved once both events completed, without blocking, oldest first.
//
// The average is the plan's: a new plan (or re-plan) starts it again (Restart), so that it
// compares with the plan's predicted_iteration_ms. The iteration under way when a plan is made
// is already the new plan's, but it starts from what the profiling pass or the old plan left: its
// time is the fallback, left out of the average once a later iteration was timed. A set-aside
// iteration's time is not the plan's and is not averaged either.
//
// Thread safety: none; the owner serialises every call (the plan executor's lock), and shares
// its TimingEventPool with the clock under that lock.
#ifndef POOCH_CORE_MEASURE_ITERATION_CLOCK_H_
#define POOCH_CORE_MEASURE_ITERATION_CLOCK_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "core/device/device.h"
#include "core/device/timing_event_pool.h"
#include "core/measure/measured_choice.h"

namespace pooch {

class IterationClock {
 public:
  // The iteration that ends at a mark: the plan it ran under, and its mode as a sample of the
  // measured choice (nullopt: not a sample, as the first iteration of a plan or after a change
  // of mode is not).
  struct Ended {
    uint64_t plan_key = 0;
    std::optional<MeasuredChoice::Mode> sample;
  };
  // A timed iteration that was a sample.
  struct Sample {
    uint64_t plan_key = 0;
    MeasuredChoice::Mode mode = MeasuredChoice::Mode::kFollow;
    double ms = 0;
  };

  // Both must outlive the clock; `events` may be shared with other timers of the same owner.
  IterationClock(Device& device, TimingEventPool& events) : device_(device), events_(events) {}
  IterationClock(const IterationClock&) = delete;
  IterationClock& operator=(const IterationClock&) = delete;

  // An iteration started: its mark is due at the next op.
  void IterationStarted() { mark_due_ = true; }
  bool mark_due() const { return mark_due_; }
  // At the first op after IterationStarted, on its stream: closes the pair of the iteration that
  // ended (`ended`) and opens the next. Returns the samples among the pairs resolved now.
  std::vector<Sample> Mark(StreamHandle stream, const Ended& ended);
  // The iteration under way departed from the reference: its time is not the plan's, and its
  // open mark goes.
  void DropOpen();
  // A new plan: the pairs under way and the average start again.
  void Restart();

  // The plan's mean iteration time; the first iteration's when no later one was timed; 0 when
  // none was.
  double MeasuredMs() const;
  int64_t iterations_timed() const { return iterations_timed_; }

 private:
  struct Pair {
    EventHandle start = 0;
    EventHandle end = 0;
    Ended ended;
  };
  std::vector<Sample> Resolve();

  Device& device_;
  TimingEventPool& events_;
  bool mark_due_ = false;
  EventHandle open_mark_ = 0;  // the start mark of the iteration under way; 0: none
  std::deque<Pair> pairs_;     // closed, not yet resolved, oldest first
  double ms_sum_ = 0;
  int64_t iterations_timed_ = 0;
  std::optional<double> first_ms_;  // the plan's first iteration (left out of the average)
};

}  // namespace pooch

#endif  // POOCH_CORE_MEASURE_ITERATION_CLOCK_H_
