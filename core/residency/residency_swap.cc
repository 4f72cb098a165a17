// ResidencyManager's swap engine: swap-out, swap-in, cancellation, and reclaiming memory whose
// events completed.
#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/residency/residency.h"

namespace pooch {

// Note [Swap-out ordering]
// 1. A pinned host buffer is taken from the pool (or the one still attached from the last swap)
//    before anything is queued, so that a full host budget leaves the allocation untouched.
// 2. The D2H stream waits for every stream's last use of the allocation and for any copy still
//    pending on it (an H2D that brought it in, or a cancelled D2H).
// 3. The D2H copy is queued and an event recorded after it ("transfer").
// 4. Only when `transfer` has completed (PollLocked saw it, or MakeRoomLocked waited for it) is
//    the range unmapped and the chunk released and uncounted (DESIGN.md decision 8). Until then
//    the chunk counts against the budget and the data on the device stays valid, which is what
//    makes cancellation free.
absl::Status ResidencyManager::StartSwapOutLocked(Allocation& a) {
  bool took_host = false;
  if (a.host == nullptr) {
    absl::StatusOr<void*> host = host_pool_.Acquire(a.bytes);
    if (!host.ok()) return host.status();  // Note [Swap-out failure]
    a.host = *host;
    took_host = true;
  }
  auto undo = [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    if (took_host) {
      host_pool_.Release(a.host, a.bytes);
      a.host = nullptr;
    }
  };
  for (const auto& [stream, event] : a.last_uses) {
    if (event->known_complete()) continue;
    if (absl::Status s = device_.StreamWaitEvent(d2h_stream_, event->handle()); !s.ok()) {
      undo();
      return s;
    }
  }
  if (a.transfer != nullptr && !a.transfer->known_complete()) {
    if (absl::Status s = device_.StreamWaitEvent(d2h_stream_, a.transfer->handle()); !s.ok()) {
      undo();
      return s;
    }
  }
  std::optional<PendingTiming> timing = BeginTimingLocked(d2h_stream_);  // Note [Copy timing]
  if (absl::Status s = device_.CopyToHostAsync(a.host, a.address, a.bytes, d2h_stream_); !s.ok()) {
    AbandonTimingLocked(std::move(timing));
    undo();
    return s;
  }
  EndTimingLocked(std::move(timing), d2h_stream_, a, CopyTiming::Direction::kToHost);
  absl::StatusOr<EventRef> done = events_.Record(d2h_stream_);
  if (!done.ok()) {
    // The copy is queued but cannot be tracked: stay resident and keep the host buffer attached
    // (it is reused by the next attempt, which is ordered after this copy on the same stream).
    return done.status();
  }
  a.transfer = *std::move(done);
  a.state = ResidencyState::kSwappingOut;
  a.last_uses.clear();  // the copy waited for them; `transfer` stands for all of them now
  in_flight_.insert(a.id);
  ++a.swap_outs;
  ++stats_.swap_outs;
  stats_.bytes_swapped_out += a.bytes;
  NotifySwapLocked(SwapRecord::Kind::kOutStart, a);
  NotifyMemoryLocked();
  return absl::OkStatus();
}

absl::Status ResidencyManager::FinishSwapOutLocked(Allocation& a) {
  absl::Status status = UnmapChunkLocked(a.address, a.mapped_bytes, a.physical);
  a.physical = 0;
  a.state = ResidencyState::kOnHost;
  a.transfer.reset();
  NotifySwapLocked(SwapRecord::Kind::kOutEnd, a);
  NotifyMemoryLocked();
  unpinned_.SignalAll();
  return status;
}

void ResidencyManager::CancelSwapOutLocked(Allocation& a) {
  // The chunk is still mapped and its data valid; the host buffer stays attached until the
  // queued copy that writes it completes (PollLocked), and the op waits for that copy too
  // (Note [Op ordering]) so that it cannot overwrite data the copy is still reading.
  a.state = ResidencyState::kResident;
  ++stats_.cancelled_swap_outs;
  NotifySwapLocked(SwapRecord::Kind::kOutCancelled, a);
}

// Note [Swap-in]: a new chunk is mapped at the same address (decision 1) and the H2D copy is
// queued on the H2D stream. It needs no wait: the host copy is complete (kOnHost is entered only
// after the D2H event completed) and nothing else uses the range. Every op that touches the
// allocation before the copy is known complete waits for `transfer`.
absl::Status ResidencyManager::StartSwapInLocked(Allocation& a) {
  absl::StatusOr<PhysicalHandle> chunk = MapChunkLocked(a.address, a.mapped_bytes);
  if (!chunk.ok()) return chunk.status();
  a.physical = *chunk;
  a.state = ResidencyState::kSwappingIn;
  std::optional<PendingTiming> timing = BeginTimingLocked(h2d_stream_);  // Note [Copy timing]
  if (absl::Status s = device_.CopyToDeviceAsync(a.address, a.host, a.bytes, h2d_stream_);
      !s.ok()) {
    AbandonTimingLocked(std::move(timing));
    UnmapChunkLocked(a.address, a.mapped_bytes, a.physical).IgnoreError();
    a.physical = 0;
    a.state = ResidencyState::kOnHost;
    return s;
  }
  EndTimingLocked(std::move(timing), h2d_stream_, a, CopyTiming::Direction::kToDevice);
  absl::StatusOr<EventRef> done = events_.Record(h2d_stream_);
  if (!done.ok()) {
    // Cannot track the copy: wait for the whole stream's work the slow way is not available
    // through Device, so fail the op; the data stays valid in `host` and on the device.
    return done.status();
  }
  a.transfer = *std::move(done);
  in_flight_.insert(a.id);
  ++a.swap_ins;
  ++stats_.swap_ins;
  stats_.bytes_swapped_in += a.bytes;
  NotifySwapLocked(SwapRecord::Kind::kInStart, a);
  return absl::OkStatus();
}

absl::Status ResidencyManager::PollLocked() {
  absl::Status status;
  std::vector<AllocationId> finished;
  std::vector<AllocationId> held;
  for (AllocationId id : in_flight_) {
    Allocation* a = table_.Find(id);
    if (a == nullptr) {
      finished.push_back(id);
      continue;
    }
    absl::StatusOr<bool> done = events_.Done(a->transfer);
    if (!done.ok()) return done.status();
    if (!*done) continue;
    finished.push_back(id);
    if (a->state == ResidencyState::kSwappingOut) {
      status.Update(FinishSwapOutLocked(*a));
      continue;
    }
    // A swap-in completed, or a cancelled swap-out's copy did: the host copy is not needed.
    a->transfer.reset();
    if (a->state == ResidencyState::kSwappingIn) {
      a->state = ResidencyState::kResident;
      NotifySwapLocked(SwapRecord::Kind::kInEnd, *a);
    }
    if (a->host != nullptr) {
      absl::StatusOr<bool> idle = HostIdleLocked(*a);
      status.Update(idle.status());
      if (idle.ok() && *idle) {
        ReleaseHostLocked(*a);
      } else {
        held.push_back(id);  // Note [Reading the host copy]: reads of it may still run
      }
    }
    NotifyMemoryLocked();
  }
  for (AllocationId id : finished) in_flight_.erase(id);
  // Note [Reading the host copy]: host buffers kept for reads that were still running.
  for (AllocationId id : std::vector<AllocationId>(host_held_.begin(), host_held_.end())) {
    Allocation* a = table_.Find(id);
    // Gone, or the buffer was taken over by a swap-out (which waited for the reads' last uses).
    if (a == nullptr || a->host == nullptr || a->transfer != nullptr ||
        a->state != ResidencyState::kResident) {
      host_held_.erase(id);
      continue;
    }
    absl::StatusOr<bool> idle = HostIdleLocked(*a);
    status.Update(idle.status());
    if (idle.ok() && *idle) {
      ReleaseHostLocked(*a);
      host_held_.erase(id);
    }
  }
  host_held_.insert(held.begin(), held.end());
  status.Update(ReleaseDroppedLocked());  // after the loop above reset finished `transfer`s

  for (size_t i = 0; i < retired_.size();) {
    bool done = true;
    for (const EventRef& e : retired_[i].events) {
      absl::StatusOr<bool> d = events_.Done(e);
      if (!d.ok()) return d.status();
      if (!*d) {
        done = false;
        break;
      }
    }
    if (!done) {
      ++i;
      continue;
    }
    status.Update(ReleaseRetiredLocked(retired_[i]));
    retired_[i] = std::move(retired_.back());
    retired_.pop_back();
  }
  return status;
}

absl::StatusOr<bool> ResidencyManager::HostIdleLocked(Allocation& a) {
  if (a.host_readers > 0) return false;
  for (const EventRef& e : a.host_reads) {
    absl::StatusOr<bool> done = events_.Done(e);
    if (!done.ok()) return done.status();
    if (!*done) return false;
  }
  a.host_reads.clear();
  return true;
}

void ResidencyManager::ReleaseHostLocked(Allocation& a) {
  host_pool_.Release(a.host, a.bytes);
  a.host = nullptr;
}

int64_t ResidencyManager::PendingReleaseBytesLocked(EventRef* oldest) {
  int64_t bytes = 0;
  *oldest = nullptr;
  // The earliest recorded of the events a release waits for: waiting for it and polling again
  // releases memory in the order the device frees it (sets iterate in no useful order, and a
  // late pick holds the host until the copy queue drains).
  auto consider = [&](const EventRef& e) {
    if (e == nullptr || e->known_complete()) return;
    if (*oldest == nullptr || e->sequence() < (*oldest)->sequence()) *oldest = e;
  };
  for (const Retired& r : retired_) {
    if (r.physical == 0) continue;
    bytes += r.mapped_bytes;
    for (const EventRef& e : r.events) consider(e);
  }
  for (AllocationId id : in_flight_) {
    const Allocation* a = table_.Find(id);
    if (a == nullptr || a->state != ResidencyState::kSwappingOut) continue;
    bytes += a->mapped_bytes;
    consider(a->transfer);
  }
  for (AllocationId id : dropping_) {  // Note [Planned residency]
    const Allocation* a = table_.Find(id);
    if (a == nullptr || a->physical == 0) continue;
    bytes += a->mapped_bytes;
    consider(a->transfer);
    for (const auto& [stream, event] : a->last_uses) consider(event);
  }
  return bytes;
}

EventRef ResidencyManager::AnyPendingEventLocked() {
  for (const Retired& r : retired_) {
    for (const EventRef& e : r.events) {
      if (!e->known_complete()) return e;
    }
  }
  for (AllocationId id : in_flight_) {
    const Allocation* a = table_.Find(id);
    if (a != nullptr && a->transfer != nullptr) return a->transfer;
  }
  for (AllocationId id : dropping_) {
    const Allocation* a = table_.Find(id);
    if (a == nullptr) continue;
    for (const auto& [stream, event] : a->last_uses) {
      if (!event->known_complete()) return event;
    }
  }
  for (AllocationId id : host_held_) {  // Note [Reading the host copy]
    const Allocation* a = table_.Find(id);
    if (a == nullptr) continue;
    for (const EventRef& e : a->host_reads) {
      if (!e->known_complete()) return e;
    }
  }
  return nullptr;
}

// Note [Spare chunks]
// ~~~~~~~~~~~~~~~~~~~
// Every swap used to cost four VMM calls besides the copy: cuMemCreate and cuMemMap to bring an
// allocation in, cuMemUnmap and cuMemRelease once its swap-out completed. On an H200 they took
// 65 us each on average (the summary's host: line, cnn_train ResNet-50 at 40 % of its peak:
// 22 844 calls, 1.48 s in 12 iterations), on the hook's thread, under the manager's lock; split
// by kind, with spares, cuMemMap/cuMemUnmap took 118 us each and cuMemCreate/cuMemRelease 44 us.
// (Spares remove only the second pair; the first is the address's change of memory itself.) The
// swaps of an iteration move many chunks of the same rounded sizes, so a chunk whose mapping
// ends (a swap-out finished, a drop, a release) is unmapped but kept as a spare, still counted in
// device_bytes_, and the next mapping of its size takes it instead of creating one: no
// cuMemCreate, no cuMemRelease. It holds nothing anyone reads: its last user's work completed
// before the unmap (Note [Swap-out ordering], 4), and its next owner gets its bytes from a copy
// or from the program's writes, as with a fresh chunk. A mapping that takes a spare needs no
// room, since the spare's bytes are already counted. MakeRoomLocked releases spares before it
// waits for or evicts anything, so, like the reuse cache, spares never cause a swap-out or an
// out-of-memory; the interposer reports their bytes as free (ResidencyStats::cached_bytes).
// Bounds: those of the reuse cache (options_.reuse_cache_entries chunks; cache and spares
// together at most options_.reuse_cache_bytes, a quarter of the limit by default; 0 disables
// both); beyond them a chunk is released.

absl::Status ResidencyManager::UnmapChunkLocked(DeviceAddress address, int64_t mapped_bytes,
                                                PhysicalHandle handle) {
  absl::Status status = device_.Unmap(address, mapped_bytes);
  if (status.ok() && !closing_ &&
      spare_.size() < static_cast<size_t>(std::max(0, options_.reuse_cache_entries)) &&
      cached_bytes_ + spare_bytes_ + mapped_bytes <= cache_limit_) {
    spare_.push_back({mapped_bytes, handle});
    spare_bytes_ += mapped_bytes;
    unpinned_.SignalAll();  // a MakeRoomLocked waiting for pins can release it
    return status;
  }
  status.Update(device_.ReleasePhysical(handle));
  device_bytes_ -= mapped_bytes;
  NotifyMemoryLocked();
  return status;
}

bool ResidencyManager::HasSpareLocked(int64_t mapped_bytes) const {
  for (const Spare& spare : spare_) {
    if (spare.bytes == mapped_bytes) return true;
  }
  return false;
}

absl::Status ResidencyManager::ReleaseSparesLocked(int64_t bytes) {
  absl::Status status;
  int64_t released = 0;
  while (!spare_.empty() && released < bytes) {
    const Spare spare = spare_.front();
    spare_.erase(spare_.begin());
    spare_bytes_ -= spare.bytes;
    device_bytes_ -= spare.bytes;
    released += spare.bytes;
    status.Update(device_.ReleasePhysical(spare.handle));
  }
  if (released > 0) NotifyMemoryLocked();
  return status;
}

}  // namespace pooch
