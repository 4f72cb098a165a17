// TimingEventPool: timing events (Device::CreateTimingEvent) for reuse. A timer acquires an
// event, records it, reads it, and releases it: the next Acquire hands it out again rather than
// creating one, so a timer that brackets every op of every profiled iteration makes only as many
// events as it ever holds at once. (The residency manager's EventPool, core/residency, shares
// recordings of events without timing by reference; this one hands out timing events whole.)
//
//   TimingEventPool pool(device);
//   std::optional<EventHandle> start = pool.AcquireRecorded(stream);  // nullopt: not timed
//   ... queue the work ...
//   std::optional<EventHandle> end = pool.AcquireRecorded(stream);
//   ... once `end` completed: device.ElapsedMicroseconds(*start, *end) ...
//   pool.Release(*start);
//   pool.Release(*end);
//
// Note [Event reuse]
// ~~~~~~~~~~~~~~~~~~
// A released event goes back at once, whether or not its record completed: re-recording an event
// whose record is pending is allowed (cuEventRecord replaces the pending record; Device's
// ordering), so nothing waits for or queries a released event. Its holder must not read it after
// releasing it. The most recently released event is handed out first.
//
// Owns the events it holds: the destructor destroys them. Events acquired and not released are
// the holder's (release them first, or destroy them).
//
// Thread safety: none; each owner serialises its calls (the plan executor's, the Recomputer's or
// the manager's lock), and the pool, like those locks, is per owner.
#ifndef POOCH_CORE_DEVICE_TIMING_EVENT_POOL_H_
#define POOCH_CORE_DEVICE_TIMING_EVENT_POOL_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/device/device.h"

namespace pooch {

class TimingEventPool {
 public:
  // `device` must outlive the pool.
  explicit TimingEventPool(Device& device) : device_(device) {}
  ~TimingEventPool();
  TimingEventPool(const TimingEventPool&) = delete;
  TimingEventPool& operator=(const TimingEventPool&) = delete;

  // A timing event: the last one released, else a new one; nullopt when none can be made.
  std::optional<EventHandle> Acquire();
  // Acquire, and record the event on `stream`; an event that cannot be recorded goes back to
  // the pool and nullopt is returned.
  std::optional<EventHandle> AcquireRecorded(StreamHandle stream);
  // `event` (from Acquire) is free for reuse (Note [Event reuse]).
  void Release(EventHandle event);

  size_t free_events() const { return free_.size(); }
  // Events created over the pool's life.
  int64_t created() const { return created_; }

 private:
  Device& device_;
  std::vector<EventHandle> free_;  // released, most recent last
  int64_t created_ = 0;
};

}  // namespace pooch

#endif  // POOCH_CORE_DEVICE_TIMING_EVENT_POOL_H_
