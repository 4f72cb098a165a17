// TimingEventPool (timing_event_pool.h).
#include "core/device/timing_event_pool.h"

namespace pooch {

TimingEventPool::~TimingEventPool() {
  for (EventHandle e : free_) device_.DestroyEvent(e).IgnoreError();
}

std::optional<EventHandle> TimingEventPool::Acquire() {
  if (!free_.empty()) {
    const EventHandle e = free_.back();
    free_.pop_back();
    return e;
  }
  absl::StatusOr<EventHandle> e = device_.CreateTimingEvent();
  if (!e.ok()) return std::nullopt;
  ++created_;
  return *e;
}

std::optional<EventHandle> TimingEventPool::AcquireRecorded(StreamHandle stream) {
  std::optional<EventHandle> e = Acquire();
  if (!e.has_value()) return std::nullopt;
  if (!device_.RecordEvent(*e, stream).ok()) {
    Release(*e);
    return std::nullopt;
  }
  return e;
}

void TimingEventPool::Release(EventHandle event) { free_.push_back(event); }

}  // namespace pooch
