#include "core/residency/parts/reuse_cache.h"

#include <algorithm>
#include <utility>

namespace pooch {

bool ReuseCache::MustSpillFor(int64_t mapped_bytes) const {
  return !entries_.empty() &&
         (bytes_ + mapped_bytes > limit_ || entries_.size() >= static_cast<size_t>(max_entries_));
}

int64_t ReuseCache::Excess(int64_t mapped_bytes) const {
  return std::max<int64_t>(1, bytes_ + mapped_bytes - limit_);
}

void ReuseCache::Put(FreedRange r) {
  bytes_ += r.mapped_bytes;
  entries_.push_back(std::move(r));
}

std::optional<FreedRange> ReuseCache::Take(int64_t mapped_bytes,
                                           std::optional<StreamHandle> ordered_on,
                                           EventPool& events) {
  auto take = [&](size_t i) {
    FreedRange r = std::move(entries_[i]);
    entries_.erase(entries_.begin() + static_cast<ptrdiff_t>(i));
    bytes_ -= r.mapped_bytes;
    return r;
  };
  std::optional<size_t> on_stream;  // Note [Reuse on the allocating stream]
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].mapped_bytes != mapped_bytes) continue;
    absl::StatusOr<bool> done = AllDone(events, entries_[i].events);
    if (!done.ok()) continue;
    if (*done) {
      FreedRange r = take(i);
      r.events.clear();
      return r;
    }
    if (!on_stream.has_value() && ordered_on.has_value() && !entries_[i].events.empty() &&
        entries_[i].events_stream == ordered_on) {
      on_stream = i;
    }
  }
  if (on_stream.has_value()) return take(*on_stream);
  return std::nullopt;
}

int64_t ReuseCache::Spill(int64_t bytes, EventPool& events,
                          absl::FunctionRef<void(FreedRange&)> release,
                          absl::FunctionRef<void(FreedRange&)> retire) {
  int64_t spilled = 0;
  for (size_t i = 0; i < entries_.size() && spilled < bytes;) {
    absl::StatusOr<bool> done = AllDone(events, entries_[i].events);
    if (!done.ok() || !*done) {
      ++i;
      continue;
    }
    FreedRange r = std::move(entries_[i]);
    entries_.erase(entries_.begin() + static_cast<ptrdiff_t>(i));
    bytes_ -= r.mapped_bytes;
    spilled += r.mapped_bytes;
    release(r);
  }
  while (!entries_.empty() && spilled < bytes) {
    FreedRange r = std::move(entries_.front());
    entries_.erase(entries_.begin());
    bytes_ -= r.mapped_bytes;
    spilled += r.mapped_bytes;
    retire(r);
  }
  return spilled;
}

}  // namespace pooch
