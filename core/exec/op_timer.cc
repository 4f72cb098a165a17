// op_timer.cc: the OpTimer (op_timer.h).
#include "core/exec/op_timer.h"

namespace pooch {

OpTimer::~OpTimer() {
  for (const Pending& p : pending_) {
    device_.DestroyEvent(p.start).IgnoreError();
    device_.DestroyEvent(p.end).IgnoreError();
  }
  for (EventHandle e : spare_) device_.DestroyEvent(e).IgnoreError();
}

EventHandle OpTimer::Event() {
  if (!spare_.empty()) {
    const EventHandle e = spare_.back();
    spare_.pop_back();
    return e;
  }
  absl::StatusOr<EventHandle> e = device_.CreateTimingEvent();
  return e.ok() ? *e : 0;
}

EventHandle OpTimer::Begin(uintptr_t stream) {
  if (pending_.size() + begun_ >= kMaxPending) return 0;
  const EventHandle start = Event();
  if (start == 0) return 0;
  if (!device_.RecordEvent(start, stream).ok()) {
    spare_.push_back(start);
    return 0;
  }
  ++begun_;
  return start;
}

void OpTimer::End(EventHandle start, uintptr_t stream, uint64_t key) {
  if (start == 0) return;
  --begun_;
  const EventHandle end = Event();
  if (end == 0 || !device_.RecordEvent(end, stream).ok()) {
    spare_.push_back(start);
    if (end != 0) spare_.push_back(end);
    return;
  }
  pending_.push_back({start, end, key});
}

void OpTimer::Abandon(EventHandle start) {
  if (start == 0) return;
  --begun_;
  spare_.push_back(start);  // re-recording an event whose record is pending is allowed
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
    spare_.push_back(p.start);
    spare_.push_back(p.end);
    pending_.pop_front();
  }
  return done;
}

}  // namespace pooch
