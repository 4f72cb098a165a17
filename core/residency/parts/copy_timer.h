// CopyTimer: the device time of the residency manager's swap copies, taken with timing events
// (ResidencyOptions::time_copies), for profiling.
//
// Note [Copy timing]
// ~~~~~~~~~~~~~~~~~~
// The plan needs each feature map's swap time on this machine (the profile's swap_out_us and
// swap_in_us; DESIGN.md decision 7: measured, not assumed). The start event is recorded on the
// copy stream after the stream's waits for the allocation's last uses, just before the copy, so
// the interval is the copy itself (the copy stream is FIFO: earlier copies finished before the
// start). Events are queried, never waited for: timings come back once the copies completed.
//
//   std::optional<CopyTimer::Pending> t = timer.Begin(stream);   // before the copy is queued
//   if (!device.CopyToHostAsync(...).ok()) timer.Abandon(std::move(t)); else
//   timer.End(std::move(t), stream, id, bytes, CopyTiming::Direction::kToHost);
//   ... later: timer.TakeCompleted()
//
// Invariant: every event the timer takes from its TimingEventPool is released back to it exactly
// once: by Abandon, by TakeCompleted once the copy completed, or by AbandonAll; so a profiled
// run makes only as many timing events as copies are timed at once, and the pool destroys them
// with the timer.
//
// Thread safety: not thread-safe; the residency manager calls it under its mutex.
#ifndef POOCH_CORE_RESIDENCY_PARTS_COPY_TIMER_H_
#define POOCH_CORE_RESIDENCY_PARTS_COPY_TIMER_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "core/device/device.h"
#include "core/device/timing_event_pool.h"
#include "core/residency/parts/residency_table.h"

namespace pooch {

// One swap copy's measured device time (ResidencyOptions::time_copies).
struct CopyTiming {
  enum class Direction { kToHost, kToDevice };
  AllocationId allocation = 0;
  int64_t bytes = 0;
  Direction direction = Direction::kToHost;
  double microseconds = 0;
};

class CopyTimer {
 public:
  // `device` must outlive the timer. `enabled`: whether Begin times copies (set_enabled).
  CopyTimer(Device& device, bool enabled) : device_(device), events_(device), enabled_(enabled) {}
  ~CopyTimer() { AbandonAll(); }
  CopyTimer(const CopyTimer&) = delete;
  CopyTimer& operator=(const CopyTimer&) = delete;

  // The two events around one copy, until End hands them to the timer.
  struct Pending {
    EventHandle start = 0;
    EventHandle end = 0;
    CopyTiming timing;
  };

  bool enabled() const { return enabled_; }
  void set_enabled(bool on) { enabled_ = on; }

  // Records the start event on `stream`, just before a copy is queued there. nullopt when timing
  // is off or the events cannot be made or recorded: the copy is then simply not timed.
  std::optional<Pending> Begin(StreamHandle stream);
  // Records the end event on `stream` after the copy and keeps the timing for TakeCompleted.
  // Nothing for nullopt.
  void End(std::optional<Pending> pending, StreamHandle stream, AllocationId allocation,
           int64_t bytes, CopyTiming::Direction direction);
  // The copy could not be queued: gives both events back. Nothing for nullopt.
  void Abandon(std::optional<Pending> pending);
  // The timings whose copies completed, in the order they were queued; the others are kept for
  // a later call. Never blocks. A timing whose events fail to answer is dropped.
  std::vector<CopyTiming> TakeCompleted();
  // Gives back the events of every timing still kept.
  void AbandonAll();

  size_t pending_count() const { return timings_.size(); }
  // Events released and held for the next Begin.
  size_t free_events() const { return events_.free_events(); }

 private:
  Device& device_;
  TimingEventPool events_;
  bool enabled_;
  std::vector<Pending> timings_;  // queued order
};

}  // namespace pooch

#endif  // POOCH_CORE_RESIDENCY_PARTS_COPY_TIMER_H_
