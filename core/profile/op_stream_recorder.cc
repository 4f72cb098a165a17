#include "core/profile/op_stream_recorder.h"

#include <string_view>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"

namespace pooch {

// Note [Event signatures]
// Two iterations of a training loop make the same calls with the same sizes, but not at the same
// addresses (a freed buffer's address is handed to whichever allocation comes next), so a
// signature is built from what repeats: an op's API name and, for each allocation it touches,
// that allocation's size and the access mode; an allocation's size and whether pooch manages it;
// a free's size. Call sites (libunwind) would separate same-sized allocations of different layers
// but cost microseconds per call; sizes and order have been enough for the tracker so far.
// A kernel's accesses are guessed from its parameter words (interpose/hooks/kernel_args.h), and
// a struct parameter may hold stale words that point at whatever was allocated there last
// (Note [Words into freed memory] in core/residency/residency.cc), so they differ between
// iterations of the same op: such an op is signed by its name alone, which is the kernel's
// (Note [Kernel op names] in interpose/hooks/kernel_names.h).

OpStreamRecorder::OpStreamRecorder(IterationTrackerOptions options)
    : tracker_(options), max_kept_(options.max_detect_events) {}

IterationTracker::Step OpStreamRecorder::Op(const char* name, absl::Span<const Access> accesses,
                                            bool replay_capable, bool exact_accesses) {
  size_t signature = absl::HashOf(std::string_view(name));
  Kept k;
  k.kind = StreamEvent::Kind::kOp;
  k.name = name;
  k.replay_capable = replay_capable;
  for (const Access& a : accesses) {
    auto it = live_.find(a.allocation);
    if (it == live_.end()) continue;
    if (exact_accesses) {
      signature = absl::HashOf(signature, it->second.bytes, static_cast<int>(a.mode));
    }
    if (it->second.managed) k.accesses.push_back(a);
  }
  const IterationTracker::Step step =
      tracker_.Feed({StreamEvent::Kind::kOp, static_cast<uint64_t>(signature), 0});
  k.seq = step.seq;
  Keep(std::move(k));
  return step;
}

IterationTracker::Step OpStreamRecorder::Alloc(uint64_t allocation, int64_t bytes, bool managed) {
  if (managed) managed_bytes_[allocation] = bytes;
  const IterationTracker::Step step =
      tracker_.Feed({StreamEvent::Kind::kAlloc,
                     static_cast<uint64_t>(absl::HashOf(1, bytes, managed)), allocation, bytes});
  live_[allocation] = Live{bytes, managed, step.seq};
  Kept k;
  k.seq = step.seq;
  k.kind = StreamEvent::Kind::kAlloc;
  k.allocation = managed ? allocation : 0;
  Keep(std::move(k));
  return step;
}

std::optional<IterationTracker::Step> OpStreamRecorder::Free(uint64_t allocation) {
  auto it = live_.find(allocation);
  if (it == live_.end()) return std::nullopt;
  const Live live = it->second;
  live_.erase(it);
  const IterationTracker::Step step =
      tracker_.Feed({StreamEvent::Kind::kFree,
                     static_cast<uint64_t>(absl::HashOf(2, live.bytes, live.managed)), allocation});
  Kept k;
  k.seq = step.seq;
  k.kind = StreamEvent::Kind::kFree;
  k.allocation = live.managed ? allocation : 0;
  k.alloc_seq = live.seq;
  Keep(std::move(k));
  return step;
}

IterationTracker::BoundaryResult OpStreamRecorder::MarkBoundary() {
  return tracker_.MarkBoundary();
}

void OpStreamRecorder::Keep(Kept k) {
  // Only profiling needs the events (following compares signatures inside the tracker): keep
  // them until the reference iteration has ended.
  if (!tracker_.Reference().empty() && !tracker_.recording_next() &&
      k.seq >= tracker_.ReferenceWindow().second) {
    return;
  }
  kept_.push_back(std::move(k));
  while (kept_.size() > max_kept_) kept_.pop_front();
}

void OpStreamRecorder::SetDuration(uint64_t seq, double microseconds) {
  if (kept_.empty() || seq < kept_.front().seq) return;
  const size_t i = static_cast<size_t>(seq - kept_.front().seq);
  if (i < kept_.size() && kept_[i].kind == StreamEvent::Kind::kOp) {
    kept_[i].duration_us = microseconds;
  }
}

absl::StatusOr<RecordedIteration> OpStreamRecorder::Reference(int64_t other_bytes,
                                                              Positions* positions) const {
  if (tracker_.Reference().empty()) {
    return absl::FailedPreconditionError("no reference iteration yet");
  }
  const auto [first, end] = tracker_.ReferenceWindow();
  if (kept_.empty() || kept_.front().seq > first || kept_.back().seq + 1 < end) {
    return absl::FailedPreconditionError(absl::StrCat("the reference iteration's events [", first,
                                                      ", ", end, ") are no longer kept"));
  }
  RecordedIteration it;
  it.resident_other_bytes = other_bytes;
  if (positions != nullptr) *positions = Positions{};
  absl::flat_hash_set<uint64_t> allocated_here;
  absl::flat_hash_set<uint64_t> persistent;
  auto note_outside = [&](uint64_t a) {
    if (allocated_here.contains(a) || !persistent.insert(a).second) return;
    auto bytes = managed_bytes_.find(a);
    it.persistent.push_back({a, bytes == managed_bytes_.end() ? 0 : bytes->second});
  };
  auto at = [&](uint64_t seq) -> const Kept& {
    return kept_[static_cast<size_t>(seq - kept_.front().seq)];
  };
  for (uint64_t seq = first; seq < end; ++seq) {
    const Kept& k = at(seq);
    switch (k.kind) {
      case StreamEvent::Kind::kOp: {
        RecordedOp op;
        op.name = k.name;
        op.duration_us = k.duration_us;
        op.replay_capable = k.replay_capable;
        for (const Access& a : k.accesses) {
          note_outside(a.allocation);
          op.accesses.push_back({a.allocation, a.mode});
        }
        it.events.push_back({RecordedIteration::Event::kOp, static_cast<int>(it.ops.size()), 0, 0});
        if (positions != nullptr) positions->ops.push_back(static_cast<int64_t>(seq - first));
        it.ops.push_back(std::move(op));
        break;
      }
      case StreamEvent::Kind::kAlloc: {
        if (k.allocation == 0) break;  // not managed
        allocated_here.insert(k.allocation);
        if (positions != nullptr) {
          positions->managed_allocs.push_back(static_cast<int64_t>(seq - first));
        }
        it.events.push_back(
            {RecordedIteration::Event::kAlloc, 0, k.allocation, managed_bytes_.at(k.allocation)});
        break;
      }
      case StreamEvent::Kind::kFree: {
        if (k.allocation == 0) break;
        note_outside(k.allocation);
        // Made in the period before the window: its successor is the event one period later,
        // in the window (the windows are equal event for event), when that is a managed
        // allocation too.
        if (const uint64_t p = end - first; positions != nullptr &&
                                            !allocated_here.contains(k.allocation) &&
                                            k.alloc_seq < first && k.alloc_seq + p >= first) {
          const Kept& next = at(k.alloc_seq + p);
          if (next.kind == StreamEvent::Kind::kAlloc && next.allocation != 0) {
            positions->carried[k.allocation] = static_cast<int64_t>(k.alloc_seq + p - first);
          }
        }
        it.events.push_back({RecordedIteration::Event::kFree, 0, k.allocation, 0});
        break;
      }
    }
  }
  return it;
}

void OpStreamRecorder::DropKept() {
  kept_.clear();
  absl::erase_if(managed_bytes_, [&](const auto& entry) { return !live_.contains(entry.first); });
}

void OpStreamRecorder::RecordNextIteration() {
  DropKept();
  tracker_.RecordNextIteration();
}

void OpStreamRecorder::Reprofile() {
  DropKept();
  tracker_.Reprofile();
}

}  // namespace pooch
