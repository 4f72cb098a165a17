// ReuseCache: freed allocations whose reserved range and chunk the residency manager keeps
// mapped, to hand them to a later Allocate of the same rounded size with no device call.
//
// Note [Reuse cache]
// ~~~~~~~~~~~~~~~~~~
// Without a caching allocator (PYTORCH_NO_CUDA_MEMORY_CACHING=1, Decision 2) every tensor is a
// cudaMalloc/cudaFree pair, and each swappable one costs four VMM calls each way. So Free of a
// resident swappable allocation keeps its reserved range and its chunk mapped here (with the
// last-use events it had), and Allocate of the same rounded size takes the oldest entry whose
// events all completed, making no device call but event queries. An entry whose events are
// pending is never handed out: the new owner must not race the old owner's queued work
// (Decision 8), with the one exception below. Allocations on the host or in a swap, and small
// ones, are freed as before. Budget: cached chunks stay counted in the manager's device bytes (so
// in peak_device_bytes too; the interposer reports them as free in cudaMemGetInfo). Whenever
// MakeRoomLocked finds no room it spills the cache first, before waiting for or evicting
// anything: entries whose events completed are released at once, then older pending ones are
// retired, which is exactly where a plain Free would have left them, so the cache never causes a
// swap-out or an out-of-memory that would not happen without it. Bounds: reuse_cache_bytes
// (default a quarter of the limit) and reuse_cache_entries (64); a Free that would exceed them
// spills the oldest entries first. The manager's destructor spills everything. Reuse is by exact
// rounded size only.
//
// Note [Reuse on the allocating stream]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A program that allocates with cudaMallocAsync and frees with cudaFreeAsync on one stream
// (PyTorch's cudaMallocAsync backend, which pooch run chooses: Note [PyTorch's allocator]) frees
// a tensor right after queuing its last use, and allocates the next one before that use has run.
// So the entry of the right size has pending events, and the rule above would make a new mapping.
// CUDA's stream-ordered allocator reuses such memory at once for an allocation on the same
// stream: the new owner's work on that stream runs after the old owner's, and a program may use
// memory from cudaMallocAsync on another stream only after synchronising with the allocating one
// (CUDA Programming Guide, "Stream Ordered Memory Allocator"). The cache does the same: a Take
// with `ordered_on` S may return an entry whose events were all recorded on S
// (FreedRange::events_stream: not a transfer's, which runs on the manager's copy streams, nor an
// op reading the host copy). One whose events all completed is still preferred. The new
// allocation inherits the last of those events as its last use on S, so that what the manager
// itself does with it before the program's first op (a swap-out, a drop, a free) waits for the
// old owner's work (Decision 8).
//
// Invariants: bytes() is the sum of the entries' mapped bytes; every entry holds a mapped chunk
// (physical != 0). The bounds are the manager's to keep (MustSpillFor before Put): the cache
// itself only holds, hands out and spills.
//
// Thread safety: not thread-safe; the residency manager calls it under its mutex.
#ifndef POOCH_CORE_RESIDENCY_PARTS_REUSE_CACHE_H_
#define POOCH_CORE_RESIDENCY_PARTS_REUSE_CACHE_H_

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/device/device.h"
#include "core/residency/parts/residency_events.h"

namespace pooch {

// A freed allocation's reserved range and the chunk mapped there, with the events its release
// (or its reuse) waits for.
struct FreedRange {
  DeviceAddress address = 0;
  int64_t mapped_bytes = 0;
  PhysicalHandle physical = 0;  // 0: nothing mapped
  std::vector<EventRef> events;
  // Note [Reuse on the allocating stream]: the program stream every one of `events` was recorded
  // on; nullopt when they are on several, or one is not known to be on a program stream (a copy
  // of the manager's).
  std::optional<StreamHandle> events_stream;
  // Adds `event`, recorded on `stream` (nullopt: not known to be a program stream).
  void AddEvent(EventRef event, std::optional<StreamHandle> stream) {
    events_stream = events.empty() || events_stream == stream ? stream : std::nullopt;
    events.push_back(std::move(event));
  }
};

class ReuseCache {
 public:
  // At most `limit_bytes` in at most `max_entries` entries; a limit of 0 disables the cache.
  ReuseCache(int64_t limit_bytes, int max_entries)
      : limit_(limit_bytes), max_entries_(max_entries) {}

  int64_t limit() const { return limit_; }
  int64_t bytes() const { return bytes_; }
  bool empty() const { return entries_.empty(); }
  // Whether an entry of `mapped_bytes` may ever be held (it is within the byte limit).
  bool Fits(int64_t mapped_bytes) const { return mapped_bytes <= limit_; }
  // Whether entries must be spilled before an entry of `mapped_bytes` is put: the bytes or the
  // entry count would exceed their bounds. Then Excess says how many bytes at least.
  bool MustSpillFor(int64_t mapped_bytes) const;
  int64_t Excess(int64_t mapped_bytes) const;
  // Holds `r` as the newest entry. REQUIRES: Fits and !MustSpillFor of its mapped bytes.
  void Put(FreedRange r);
  // Takes the oldest entry of exactly `mapped_bytes` whose events all completed (its events
  // cleared), or else, with `ordered_on`, the oldest whose events are all on that stream (its
  // events kept: Note [Reuse on the allocating stream]); nullopt when none. An entry whose
  // events cannot be queried is skipped.
  std::optional<FreedRange> Take(int64_t mapped_bytes, std::optional<StreamHandle> ordered_on,
                                 EventPool& events);
  // Removes at least `bytes` of entries (or all of them), oldest first: those whose events
  // completed go to `release` first, then the oldest pending ones to `retire`. Returns the bytes
  // removed.
  int64_t Spill(int64_t bytes, EventPool& events, absl::FunctionRef<void(FreedRange&)> release,
                absl::FunctionRef<void(FreedRange&)> retire);

  // Oldest first. The entries' events may be added to (Note [Words into freed memory]).
  absl::Span<FreedRange> entries() { return absl::MakeSpan(entries_); }
  absl::Span<const FreedRange> entries() const { return entries_; }

 private:
  const int64_t limit_;
  const int max_entries_;
  std::vector<FreedRange> entries_;  // oldest first
  int64_t bytes_ = 0;
};

}  // namespace pooch

#endif  // POOCH_CORE_RESIDENCY_PARTS_REUSE_CACHE_H_
