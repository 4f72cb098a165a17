#include "core/residency/parts/copy_timer.h"

#include <utility>

namespace pooch {

std::optional<CopyTimer::Pending> CopyTimer::Begin(StreamHandle stream) {
  if (!enabled_) return std::nullopt;
  std::optional<EventHandle> start = events_.AcquireRecorded(stream);
  if (!start.has_value()) return std::nullopt;
  std::optional<EventHandle> end = events_.Acquire();
  if (!end.has_value()) {
    events_.Release(*start);
    return std::nullopt;
  }
  Pending pending;
  pending.start = *start;
  pending.end = *end;
  return pending;
}

void CopyTimer::End(std::optional<Pending> pending, StreamHandle stream, AllocationId allocation,
                    int64_t bytes, CopyTiming::Direction direction) {
  if (!pending.has_value()) return;
  if (!device_.RecordEvent(pending->end, stream).ok()) return Abandon(std::move(pending));
  pending->timing.allocation = allocation;
  pending->timing.bytes = bytes;
  pending->timing.direction = direction;
  timings_.push_back(*std::move(pending));
}

void CopyTimer::Abandon(std::optional<Pending> pending) {
  if (!pending.has_value()) return;
  events_.Release(pending->start);
  events_.Release(pending->end);
}

std::vector<CopyTiming> CopyTimer::TakeCompleted() {
  std::vector<CopyTiming> done;
  size_t kept = 0;
  for (size_t i = 0; i < timings_.size(); ++i) {
    Pending& p = timings_[i];
    absl::StatusOr<bool> complete = device_.QueryEvent(p.end);
    if (complete.ok() && !*complete) {
      timings_[kept++] = std::move(p);
      continue;
    }
    if (complete.ok()) {
      absl::StatusOr<double> us = device_.ElapsedMicroseconds(p.start, p.end);
      if (us.ok()) {
        p.timing.microseconds = *us;
        done.push_back(p.timing);
      }
    }
    Abandon(std::move(p));  // gives both events back; an error drops the timing
  }
  timings_.resize(kept);
  return done;
}

void CopyTimer::AbandonAll() {
  for (Pending& p : timings_) Abandon(std::move(p));
  timings_.clear();
}

}  // namespace pooch
