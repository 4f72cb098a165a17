// ResidencyManager's swap engine: swap-out, swap-in, cancellation, and reclaiming memory whose
// events completed.
#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/residency/residency.h"

namespace pooch {

// Note [Swap-out ordering]
// ~~~~~~~~~~~~~~~~~~~~~~~~
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
  if (a.host_current && a.host != nullptr) return StartCurrentSwapOutLocked(a);
  bool took_host = false;
  if (a.host == nullptr) {
    absl::StatusOr<void*> host = host_pool_.Acquire(a.bytes);
    if (!host.ok() && absl::IsResourceExhausted(host.status()) &&
        ForgetCurrentHostCopiesLocked(a.bytes) > 0) {
      host = host_pool_.Acquire(a.bytes);
    }
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
  // Note [Copy timing] (copy_timer.h).
  std::optional<CopyTimer::Pending> timing = copy_timer_.Begin(d2h_stream_);
  if (absl::Status s = device_.CopyToHostAsync(a.host, a.address, a.bytes, d2h_stream_); !s.ok()) {
    copy_timer_.Abandon(std::move(timing));
    undo();
    return s;
  }
  copy_timer_.End(std::move(timing), d2h_stream_, a.id, a.bytes, CopyTiming::Direction::kToHost);
  absl::StatusOr<EventRef> done = events_.Record(d2h_stream_);
  if (!done.ok()) {
    // The copy is queued but cannot be tracked: stay resident and keep the host buffer attached
    // (it is reused by the next attempt, which is ordered after this copy on the same stream).
    return done.status();
  }
  stats_.bytes_swapped_out += a.bytes;
  SwapOutStartedLocked(a, *std::move(done), /*copies=*/true);
  return absl::OkStatus();
}

void ResidencyManager::SwapOutStartedLocked(Allocation& a, EventRef done, bool copies) {
  a.transfer = std::move(done);
  a.state = ResidencyState::kSwappingOut;
  a.out_copies = copies;
  a.last_uses.clear();  // the swap-out waited for them; `transfer` stands for all of them now
  in_flight_.insert(a.id);
  ++a.swap_outs;
  ++stats_.swap_outs;
  NotifySwapLocked(SwapRecord::Kind::kOutStart, a);
  NotifyMemoryLocked();
}

// Note [Current host copies]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A swap-in copies the host copy to the device; from then until an op writes the allocation, the
// host copy and the device hold the same bytes. Weights are the common case: read in the forward
// pass, swapped out, read again in the backward pass, and written only by the optimizer; a
// routed expert may be read in several iterations before it is chosen for an update. So the host
// copy is not given back when the swap-in completes (nor when a retained chunk comes back) but
// kept with `host_current` set, and a swap-out of such an allocation copies nothing: it only
// waits, as every swap-out does, until the allocation's last uses completed before its chunk is
// unmapped (Note [Swap-out ordering], 4). Its `transfer` is then that last use's event, or, when
// several streams used it, an event recorded on the D2H stream after waiting for all of them.
//
// What makes it safe is that every write of device memory reaches the manager as an op: BeforeOp
// lists the allocations that a range other than kRead touches (a hook that cannot tell a read
// from a write says kReadWrite), and AfterOp clears their `host_current` and gives their host
// copies back; a replay's recomputed output and an overwritten allocation are such writes too,
// and a drop clears it (the chunk's bytes are then garbage until a replay writes them). The flag
// is set only where the copy is queued (StartCopyInLocked) or the chunk comes back untouched
// (ResurrectLocked), never at completion, so a write issued while the copy is in flight, which is
// ordered after the copy, still clears it. Kept copies hold pinned host memory: when the pool has
// no room for a swap-out's buffer, kept copies of resident allocations are given back first
// (ForgetCurrentHostCopiesLocked), and a free gives the copy back so that the chunk may go to the
// reuse cache.
absl::Status ResidencyManager::StartCurrentSwapOutLocked(Allocation& a) {
  std::vector<const EventRef*> pending;
  for (const auto& [stream, event] : a.last_uses) {
    if (!event->known_complete()) pending.push_back(&event);
  }
  if (a.transfer != nullptr && !a.transfer->known_complete()) pending.push_back(&a.transfer);
  EventRef done;
  if (pending.size() == 1) {
    done = *pending.front();
  } else if (pending.size() > 1) {
    for (const EventRef* event : pending) {
      if (absl::Status s = device_.StreamWaitEvent(d2h_stream_, (*event)->handle()); !s.ok()) {
        return s;
      }
    }
    absl::StatusOr<EventRef> recorded = events_.Record(d2h_stream_);
    if (!recorded.ok()) return recorded.status();
    done = *std::move(recorded);
  }
  ++stats_.current_swap_outs;
  stats_.bytes_not_copied_out += a.bytes;
  // `done` null: nothing pending; the next poll finishes it.
  SwapOutStartedLocked(a, std::move(done), /*copies=*/false);
  return absl::OkStatus();
}

absl::Status ResidencyManager::HostCopyStaleLocked(Allocation& a) {
  if (!a.host_current) return absl::OkStatus();
  a.host_current = false;
  // A copy still using it (a swap-in, a cancelled swap-out): PollLocked gives it back then.
  if (a.state != ResidencyState::kResident || a.transfer != nullptr) return absl::OkStatus();
  return ReleaseHostCopyLocked(a);
}

int64_t ResidencyManager::ForgetCurrentHostCopiesLocked(int64_t bytes) {
  int64_t released = 0;
  table_.ForEach([&](Allocation& a) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    if (released >= bytes || !a.host_current || a.host == nullptr ||
        a.state != ResidencyState::kResident || a.transfer != nullptr || a.host_readers > 0 ||
        !a.host_reads.empty()) {
      return;
    }
    a.host_current = false;
    released += a.bytes;
    ReleaseHostLocked(a);
  });
  return released;
}

absl::Status ResidencyManager::FinishSwapOutLocked(Allocation& a) {
  absl::Status status;
  if (reuse_cache_.limit() > 0 && !closing_) {
    // Note [Retained chunks] (chunk_pool.h): the chunk stays mapped, with the data the copy took,
    // until its room is needed.
    chunks_.Retain(a.id, a.mapped_bytes, [&](AllocationId id) ABSL_NO_THREAD_SAFETY_ANALYSIS {
      const Allocation* r = table_.Find(id);
      return r != nullptr && r->state == ResidencyState::kOnHost && r->physical != 0;
    });
  } else {
    status = UnmapChunkLocked(a.address, a.mapped_bytes, a.physical);
    a.physical = 0;
  }
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

// Note [Swap-in]
// ~~~~~~~~~~~~~~
// A new chunk is mapped at the same address (decision 1) and the H2D copy is
// queued on the H2D stream. It needs no wait: the host copy is complete (kOnHost is entered only
// after the D2H event completed) and nothing else uses the range. Every op that touches the
// allocation before the copy is known complete waits for `transfer`.
absl::Status ResidencyManager::StartSwapInLocked(Allocation& a) {
  absl::StatusOr<PhysicalHandle> chunk = MapChunkLocked(a.address, a.mapped_bytes);
  if (!chunk.ok()) return chunk.status();
  a.physical = *chunk;
  absl::Status s = StartCopyInLocked(a);
  if (!s.ok() && a.state == ResidencyState::kOnHost) {  // no copy queued: the chunk goes
    UnmapChunkLocked(a.address, a.mapped_bytes, a.physical).IgnoreError();
    a.physical = 0;
  }
  return s;
}

// On an error before the copy was queued, `a` is left kOnHost.
absl::Status ResidencyManager::StartCopyInLocked(Allocation& a) {
  // Note [Copy timing] (copy_timer.h).
  std::optional<CopyTimer::Pending> timing = copy_timer_.Begin(h2d_stream_);
  if (absl::Status s = device_.CopyToDeviceAsync(a.address, a.host, a.bytes, h2d_stream_);
      !s.ok()) {
    copy_timer_.Abandon(std::move(timing));
    a.state = ResidencyState::kOnHost;
    return s;
  }
  a.state = ResidencyState::kSwappingIn;
  copy_timer_.End(std::move(timing), h2d_stream_, a.id, a.bytes, CopyTiming::Direction::kToDevice);
  absl::StatusOr<EventRef> done = events_.Record(h2d_stream_);
  if (!done.ok()) {
    // Cannot track the copy: wait for the whole stream's work the slow way is not available
    // through Device, so fail the op; the data stays valid in `host` and on the device.
    return done.status();
  }
  a.transfer = *std::move(done);
  a.host_current = true;  // Note [Current host copies]
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
  // Note [Polling in stream order]
  // ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
  // pooch's copies are queued on its two streams under mu_, so on
  // each stream they complete in the order of their events' sequence numbers. Polled in that
  // order, a stream's first copy not yet complete ends the queries on that stream: the copies
  // behind it are not complete either (unless a wait already saw them complete). On a GPU each
  // query is a driver call on the hook's thread; simgpu charges host time for one not ready.
  struct InFlight {
    StreamHandle stream;
    uint64_t sequence;
    AllocationId id;
  };
  std::vector<InFlight> order;
  order.reserve(in_flight_.size());
  for (AllocationId id : in_flight_) {
    const Allocation* a = table_.Find(id);
    if (a == nullptr) {
      finished.push_back(id);
      continue;
    }
    if (a->transfer == nullptr) {  // done (EventPool::Done of a null ref), handled first
      order.push_back({0, 0, id});
    } else {
      order.push_back({a->transfer->stream(), a->transfer->sequence(), id});
    }
  }
  std::sort(order.begin(), order.end(), [](const InFlight& x, const InFlight& y) {
    return x.stream != y.stream ? x.stream < y.stream : x.sequence < y.sequence;
  });
  std::vector<StreamHandle> behind;  // streams whose next copy is not complete
  for (const InFlight& f : order) {
    Allocation* a = table_.Find(f.id);
    bool done = a->transfer == nullptr || a->transfer->known_complete();
    if (!done && std::find(behind.begin(), behind.end(), f.stream) == behind.end()) {
      absl::StatusOr<bool> queried = events_.Done(a->transfer);
      if (!queried.ok()) return queried.status();
      done = *queried;
      if (!done) behind.push_back(f.stream);
    }
    if (!done) continue;
    const AllocationId id = f.id;
    finished.push_back(id);
    if (a->state == ResidencyState::kSwappingOut) {
      status.Update(FinishSwapOutLocked(*a));
      continue;
    }
    // A swap-in completed, or a cancelled swap-out's copy did: the host copy is not needed,
    // unless it is current (Note [Current host copies]).
    a->transfer.reset();
    if (a->state == ResidencyState::kSwappingIn) {
      a->state = ResidencyState::kResident;
      NotifySwapLocked(SwapRecord::Kind::kInEnd, *a);
    }
    if (!a->host_current) status.Update(ReleaseHostCopyLocked(*a, &held));
    NotifyMemoryLocked();
  }
  for (AllocationId id : finished) in_flight_.erase(id);
  // Note [Reading the host copy]: host buffers kept for reads that were still running.
  for (AllocationId id : std::vector<AllocationId>(host_held_.begin(), host_held_.end())) {
    Allocation* a = table_.Find(id);
    // Gone, or the buffer was taken over by a swap-out (which waited for the reads' last uses).
    if (a == nullptr || a->host == nullptr || a->transfer != nullptr ||
        a->state != ResidencyState::kResident || a->host_current) {
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
    absl::StatusOr<bool> done = AllDone(events_, retired_[i].events);
    if (!done.ok()) return done.status();
    if (!*done) {
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
  absl::StatusOr<bool> done = AllDone(events_, a.host_reads);
  if (!done.ok() || !*done) return done;
  a.host_reads.clear();
  return true;
}

void ResidencyManager::ReleaseHostLocked(Allocation& a) {
  host_pool_.Release(a.host, a.bytes);
  a.host = nullptr;
  a.host_current = false;
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

absl::StatusOr<int64_t> ResidencyManager::ReclaimRetainedLocked(int64_t bytes) {
  absl::Status status;
  const int64_t unmapped = chunks_.ReclaimRetained(
      bytes, [&](AllocationId id) ABSL_NO_THREAD_SAFETY_ANALYSIS -> int64_t {
        Allocation* a = table_.Find(id);
        if (a == nullptr || a->state != ResidencyState::kOnHost || a->physical == 0) return 0;
        status.Update(UnmapChunkLocked(a->address, a->mapped_bytes, a->physical));
        a->physical = 0;
        return a->mapped_bytes;
      });
  if (!status.ok()) return status;
  return unmapped;
}

absl::StatusOr<bool> ResidencyManager::ResurrectLocked(Allocation& a) {
  if (a.state != ResidencyState::kOnHost || a.physical == 0) return false;
  chunks_.Unretain(a.mapped_bytes);  // its entry in the pool is stale from here on
  a.state = ResidencyState::kResident;
  ++stats_.retained_hits;
  // Note [Current host copies]: the chunk and the host copy hold the same bytes.
  a.host_current = a.host != nullptr;
  return true;
}

absl::Status ResidencyManager::ReleaseHostCopyLocked(Allocation& a,
                                                     std::vector<AllocationId>* held) {
  if (a.host == nullptr) return absl::OkStatus();
  absl::StatusOr<bool> idle = HostIdleLocked(a);
  if (idle.ok() && *idle) {
    ReleaseHostLocked(a);
  } else if (held != nullptr) {  // Note [Reading the host copy]: reads of it may still run
    held->push_back(a.id);
  } else {
    host_held_.insert(a.id);
  }
  return idle.status();
}

absl::StatusOr<bool> ResidencyManager::MapForWriteLocked(Allocation& a, uint64_t op,
                                                         ResidencyState from) {
  if (absl::Status s = MakeRoomLocked(a.mapped_bytes, op, /*for_chunk=*/true); !s.ok()) return s;
  if (a.state != from) return false;  // another op brought it back meanwhile
  absl::StatusOr<PhysicalHandle> chunk = MapChunkLocked(a.address, a.mapped_bytes);
  if (!chunk.ok()) return chunk.status();
  a.physical = *chunk;
  a.state = ResidencyState::kResident;
  a.host_current = false;  // Note [Current host copies]: the chunk holds garbage for the op
  return true;
}

absl::StatusOr<bool> ResidencyManager::GiveBackHeldLocked(int64_t bytes) {
  const int64_t short_by = device_bytes_ + bytes - options_.memory_limit;
  if (chunks_.has_spares()) {  // Note [Spare chunks]: released at once
    if (absl::Status s = ReleaseSparesLocked(short_by); !s.ok()) return s;
    return true;
  }
  // Note [Reuse cache]: completed entries released now, others retired.
  if (!reuse_cache_.empty()) {
    SpillReuseCacheLocked(short_by);
    return true;
  }
  if (chunks_.retained_bytes() > 0) {  // Note [Retained chunks]
    absl::StatusOr<int64_t> unmapped = ReclaimRetainedLocked(short_by);
    if (!unmapped.ok()) return unmapped.status();
    return *unmapped > 0;
  }
  return false;
}

absl::Status ResidencyManager::UnmapChunkLocked(DeviceAddress address, int64_t mapped_bytes,
                                                PhysicalHandle handle) {
  absl::Status status = device_.Unmap(address, mapped_bytes);
  // Note [Spare chunks] (chunk_pool.h): spares and the reuse cache share its byte limit.
  if (status.ok() && !closing_ &&
      chunks_.KeepSpare(mapped_bytes, handle, reuse_cache_.limit() - reuse_cache_.bytes())) {
    unpinned_.SignalAll();  // a MakeRoomLocked waiting for pins can release it
    return status;
  }
  status.Update(device_.ReleasePhysical(handle));
  device_bytes_ -= mapped_bytes;
  NotifyMemoryLocked();
  return status;
}

absl::Status ResidencyManager::ReleaseSparesLocked(int64_t bytes) {
  absl::Status status;
  const std::vector<ChunkPool::Spare> spares = chunks_.TakeOldestSpares(bytes);
  for (const ChunkPool::Spare& spare : spares) {
    device_bytes_ -= spare.bytes;
    status.Update(device_.ReleasePhysical(spare.handle));
  }
  if (!spares.empty()) NotifyMemoryLocked();
  return status;
}

}  // namespace pooch
