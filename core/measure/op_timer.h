// op_timer.h: the device time of chosen ops, read from timing events once they completed, never
// waited for. Under POOCH_POLICY=dtr the Recomputer times every producer it keeps a recipe of:
// that time is the recipe's cost in DTR's heuristic (Note [DTR eviction] in
// core/residency/residency_evict.cc).
//
//   EventHandle start = timer.Begin(stream);   // before the op is queued (0: not timed)
//   ... queue the op on `stream` ...
//   timer.End(start, stream, key);            // or Abandon(start)
//   for (auto [key, us] : timer.Take()) ...   // later: the ops whose end event completed
//
// Bounded: at most kMaxPending timings wait at a time (Begin returns 0 beyond), and events are
// reused (core/device/timing_event_pool.h). Take reads the oldest pending first and stops at the
// first that has not completed, so one call costs a query or two when the device keeps up.
//
// Thread safety: none; the owner serialises every call (the Recomputer's lock).
#ifndef POOCH_CORE_MEASURE_OP_TIMER_H_
#define POOCH_CORE_MEASURE_OP_TIMER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "core/device/device.h"
#include "core/device/timing_event_pool.h"

namespace pooch {

class OpTimer {
 public:
  static constexpr size_t kMaxPending = 1024;

  explicit OpTimer(Device& device) : device_(device), events_(device) {}
  ~OpTimer();
  OpTimer(const OpTimer&) = delete;
  OpTimer& operator=(const OpTimer&) = delete;

  // Records a start event on `stream`; 0 when the op is not timed (too many pending, or no
  // event could be made or recorded).
  EventHandle Begin(uintptr_t stream);
  // The op started at `start` was queued on `stream`: records its end. A `start` of 0 is
  // ignored.
  void End(EventHandle start, uintptr_t stream, uint64_t key);
  // The op started at `start` is not timed after all (it failed, or is not wanted).
  void Abandon(EventHandle start);
  // The (key, device microseconds) of the timed ops that completed since the last call, oldest
  // first.
  std::vector<std::pair<uint64_t, double>> Take();

 private:
  struct Pending {
    EventHandle start = 0;
    EventHandle end = 0;
    uint64_t key = 0;
  };
  Device& device_;
  std::deque<Pending> pending_;
  TimingEventPool events_;
  size_t begun_ = 0;  // Begin without End or Abandon yet
};

}  // namespace pooch

#endif  // POOCH_CORE_MEASURE_OP_TIMER_H_
