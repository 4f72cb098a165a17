// IterationClock (iteration_clock.h; Note [Measured iteration time]).
#include "core/measure/iteration_clock.h"

#include <algorithm>

namespace pooch {

std::vector<IterationClock::Sample> IterationClock::Mark(StreamHandle stream, const Ended& ended) {
  mark_due_ = false;
  if (open_mark_ != 0) {
    if (std::optional<EventHandle> end = events_.AcquireRecorded(stream); end.has_value()) {
      pairs_.push_back({open_mark_, *end, ended});
    } else {
      events_.Release(open_mark_);
    }
    open_mark_ = 0;
  }
  if (std::optional<EventHandle> start = events_.AcquireRecorded(stream); start.has_value()) {
    open_mark_ = *start;
  }
  return Resolve();
}

void IterationClock::DropOpen() {
  mark_due_ = false;
  if (open_mark_ != 0) events_.Release(open_mark_);
  open_mark_ = 0;
}

void IterationClock::Restart() {
  for (const Pair& p : pairs_) {
    events_.Release(p.start);
    events_.Release(p.end);
  }
  pairs_.clear();
  ms_sum_ = 0;
  iterations_timed_ = 0;
  first_ms_.reset();
}

double IterationClock::MeasuredMs() const {
  if (iterations_timed_ > 0) return ms_sum_ / static_cast<double>(iterations_timed_);
  return std::max(first_ms_.value_or(0.0), 0.0);
}

std::vector<IterationClock::Sample> IterationClock::Resolve() {
  std::vector<Sample> samples;
  while (!pairs_.empty()) {
    const Pair& p = pairs_.front();
    absl::StatusOr<bool> done = device_.QueryEvent(p.end);
    if (!done.ok() || !*done) break;
    if (absl::StatusOr<double> us = device_.ElapsedMicroseconds(p.start, p.end); us.ok()) {
      const double ms = *us / 1000.0;
      const std::optional<MeasuredChoice::Mode>& sample = p.ended.sample;
      if (sample.has_value()) samples.push_back({p.ended.plan_key, *sample, ms});
      // A set-aside iteration's time is not the plan's: the summary compares
      // measured_iteration_ms with the plan's prediction.
      if (!sample.has_value() || *sample == MeasuredChoice::Mode::kFollow) {
        if (!first_ms_.has_value()) {
          first_ms_ = ms;
        } else {
          ms_sum_ += ms;
          ++iterations_timed_;
        }
      }
    }
    events_.Release(p.start);
    events_.Release(p.end);
    pairs_.pop_front();
  }
  return samples;
}

}  // namespace pooch
