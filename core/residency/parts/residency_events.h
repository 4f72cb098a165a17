// EventPool: recorded device events shared by reference, recycled when the last holder drops
// them.
//
// The residency manager records one event per op (its "last use" of every allocation it touched)
// and one per copy, and many allocations hold the same event. An EventRef is a shared handle to
// one recording: once every holder is gone the CUevent goes back to the pool and is recorded
// again later (cuEventRecord re-captures), so steady state creates no events. A recording that
// was once seen complete is remembered as complete, so each is queried until it completes and
// never after.
//
// Thread safety: EventPool is thread-safe; an EventRef may be copied and dropped on any thread.
// The pool must outlive its device calls, not its refs: a ref dropped after the pool is
// destroyed destroys its event instead of recycling it.
#ifndef POOCH_CORE_RESIDENCY_PARTS_RESIDENCY_EVENTS_H_
#define POOCH_CORE_RESIDENCY_PARTS_RESIDENCY_EVENTS_H_

#include <atomic>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "core/base/mutex.h"
#include "core/device/device.h"

namespace pooch {

// One recording of a device event.
class RecordedEvent {
 public:
  RecordedEvent(EventHandle handle, StreamHandle stream, uint64_t sequence)
      : handle_(handle), stream_(stream), sequence_(sequence) {}
  EventHandle handle() const { return handle_; }
  StreamHandle stream() const { return stream_; }  // where it was recorded
  // The pool's count of recordings before this one: on one stream, a smaller sequence completes
  // no later.
  uint64_t sequence() const { return sequence_; }
  bool known_complete() const { return complete_.load(std::memory_order_acquire); }
  void set_complete() { complete_.store(true, std::memory_order_release); }

 private:
  const EventHandle handle_;
  const StreamHandle stream_;
  const uint64_t sequence_;
  std::atomic<bool> complete_{false};
};
using EventRef = std::shared_ptr<RecordedEvent>;

class EventPool {
 public:
  explicit EventPool(Device& device);
  ~EventPool();
  EventPool(const EventPool&) = delete;
  EventPool& operator=(const EventPool&) = delete;

  // Records an event on `stream` now (cuEventRecord) and returns the shared recording.
  absl::StatusOr<EventRef> Record(StreamHandle stream);
  // True when the recording completed (cuEventQuery; remembered once true). A null ref is done.
  absl::StatusOr<bool> Done(const EventRef& event);
  // Blocks until the recording completes (cuEventSynchronize). A null ref returns at once.
  absl::Status Wait(const EventRef& event);

 private:
  // Free events, shared with the refs' deleters so that a late drop finds it.
  struct FreeList {
    Mutex mu;
    bool closed ABSL_GUARDED_BY(mu) = false;
    std::vector<EventHandle> handles ABSL_GUARDED_BY(mu);
  };

  Device& device_;
  std::shared_ptr<FreeList> free_;
  std::atomic<uint64_t> recorded_{0};
};

// Whether every recording of `list` completed (EventPool::Done: queried, never waited for; an
// empty list has), stopping at the first that has not. `list` holds EventRefs, or (stream,
// EventRef) pairs as an allocation's last uses do.
inline const EventRef& EventOf(const EventRef& event) { return event; }
inline const EventRef& EventOf(const std::pair<StreamHandle, EventRef>& use) { return use.second; }
template <typename List>
absl::StatusOr<bool> AllDone(EventPool& events, const List& list) {
  for (const auto& item : list) {
    absl::StatusOr<bool> done = events.Done(EventOf(item));
    if (!done.ok()) return done.status();
    if (!*done) return false;
  }
  return true;
}

// Whether every event of `list` completed, querying each one even past a pending one, so that
// every completion found is recorded on its ref (Free's retirement reads them all, and later
// polls and waits skip those known complete).
template <typename List>
absl::StatusOr<bool> QueryAllDone(EventPool& events, const List& list) {
  bool all = true;
  for (const auto& item : list) {
    absl::StatusOr<bool> done = events.Done(EventOf(item));
    if (!done.ok()) return done.status();
    all = all && *done;
  }
  return all;
}

}  // namespace pooch

#endif  // POOCH_CORE_RESIDENCY_PARTS_RESIDENCY_EVENTS_H_
