// op_timer.cc: the OpTimer (op_timer.h).
#include "core/measure/op_timer.h"

namespace pooch {

OpTimer::~OpTimer() {
  for (const Pending& p : pending_) {
    events_.Release(p.start);
    events_.Release(p.end);
  }
  // The pool destroys every event it holds.
}

EventHandle OpTimer::Begin(uintptr_t stream) {
  if (pending_.size() + begun_ >= kMaxPending) return 0;
  const std::optional<EventHandle> start = events_.AcquireRecorded(stream);
  if (!start.has_value()) return 0;
  ++begun_;
  return *start;
}

void OpTimer::End(EventHandle start, uintptr_t stream, uint64_t key) {
  if (start == 0) return;
  --begun_;
  const std::optional<EventHandle> end = events_.AcquireRecorded(stream);
  if (!end.has_value()) {
    events_.Release(start);
    return;
  }
  pending_.push_back({start, *end, key});
}

void OpTimer::Abandon(EventHandle start) {
  if (start == 0) return;
  --begun_;
  events_.Release(start);  // Note [Event reuse] (core/device/timing_event_pool.h)
}

std::vector<std::pair<uint64_t, double>> OpTimer::Take() {
  std::vector<std::pair<uint64_t, double>> done;
  while (!pending_.empty()) {
    const Pending& p = pending_.front();
    absl::StatusOr<bool> complete = device_.QueryEvent(p.end);
    if (complete.ok() && !*complete) break;
    if (complete.ok()) {
      absl::StatusOr<double> us = device_.ElapsedMicroseconds(p.start, p.end);
      if (us.ok()) done.emplace_back(p.key, *us);
    }
    // An error loses one timing, never more: the key keeps its estimate.
    events_.Release(p.start);
    events_.Release(p.end);
    pending_.pop_front();
  }
  return done;
}

}  // namespace pooch
