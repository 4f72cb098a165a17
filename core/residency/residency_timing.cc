// ResidencyManager's copy timing for profiling (ResidencyOptions::time_copies).
#include <utility>

#include "core/residency/residency.h"

namespace pooch {

// Note [Copy timing]
// ~~~~~~~~~~~~~~~~~~
// The plan needs each feature map's swap time on this machine (the profile's swap_out_us and
// swap_in_us; DESIGN.md decision 7: measured, not assumed). The start event is recorded on the
// copy stream after the stream's waits for the allocation's last uses, just before the copy, so
// the interval is the copy itself (the copy stream is FIFO: earlier copies finished before the
// start). Events are queried, never waited for: timings come back once the copies completed.
std::optional<ResidencyManager::PendingTiming> ResidencyManager::BeginTimingLocked(
    StreamHandle stream) {
  if (!time_copies_) return std::nullopt;
  absl::StatusOr<EventHandle> start = device_.CreateTimingEvent();
  if (!start.ok()) return std::nullopt;
  absl::StatusOr<EventHandle> end = device_.CreateTimingEvent();
  if (!end.ok() || !device_.RecordEvent(*start, stream).ok()) {
    device_.DestroyEvent(*start).IgnoreError();
    if (end.ok()) device_.DestroyEvent(*end).IgnoreError();
    return std::nullopt;
  }
  PendingTiming pending;
  pending.start = *start;
  pending.end = *end;
  return pending;
}

void ResidencyManager::EndTimingLocked(std::optional<PendingTiming> pending, StreamHandle stream,
                                       const Allocation& a, CopyTiming::Direction direction) {
  if (!pending.has_value()) return;
  if (!device_.RecordEvent(pending->end, stream).ok()) return AbandonTimingLocked(pending);
  pending->timing.allocation = a.id;
  pending->timing.bytes = a.bytes;
  pending->timing.direction = direction;
  timings_.push_back(*std::move(pending));
}

void ResidencyManager::AbandonTimingLocked(std::optional<PendingTiming> pending) {
  if (!pending.has_value()) return;
  device_.DestroyEvent(pending->start).IgnoreError();
  device_.DestroyEvent(pending->end).IgnoreError();
}

void ResidencyManager::SetTimeCopies(bool on) {
  MutexLock lock(&mu_);
  time_copies_ = on;
}

std::vector<CopyTiming> ResidencyManager::TakeCopyTimings() {
  MutexLock lock(&mu_);
  std::vector<CopyTiming> done;
  size_t kept = 0;
  for (size_t i = 0; i < timings_.size(); ++i) {
    PendingTiming& p = timings_[i];
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
    AbandonTimingLocked(std::move(p));  // destroys both events; an error drops the timing
  }
  timings_.resize(kept);
  return done;
}

}  // namespace pooch
