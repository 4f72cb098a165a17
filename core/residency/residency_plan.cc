// ResidencyManager's planned residency: the primitives a profile-guided plan drives (Offload,
// Drop, Prefetch) and the restore of a dropped allocation by the op that recomputes it.
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/residency/residency.h"

namespace pooch {

// Note [Planned residency]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// A plan (PoocH §4) decides per feature map: keep, swap (Offload after its last forward use,
// Prefetch ahead of its first backward use) or recompute (Drop after its last forward use; the
// interposer replays the ops that produced it before the op that needs it). The demand path
// stays underneath as the safety net (DESIGN.md decision 4): BeforeOp swaps in whatever is on
// the host, and counts it as demand_swap_ins, so a plan's misses show in the summary.
//
// Drop discards the content. Its chunk cannot go at once: ops queued before the Drop may still
// read it (Decision 8), so the allocation enters kDropped holding the chunk, counted in the
// budget and in PendingReleaseBytesLocked, and ReleaseDroppedLocked (from PollLocked) unmaps and
// releases it once every last use completed. The range stays reserved: the address never
// changes (Decision 1). A read of a dropped allocation would silently return garbage, so
// BeforeOp rejects it; the replay that recomputes it only writes it, and BeforeOp then maps a
// fresh chunk (no copy) or, when the old chunk is still pending release, keeps that one and
// makes the op's stream wait for the chunk's previous users instead.
//
// Prefetch never evicts: a plan's swap-in must not push out what another part of the plan keeps
// (and a swap-out made to fit a prefetch is exactly the thrashing a plan avoids); when there is
// no room it says so and the caller retries at a later op, or BeforeOp swaps in on demand.
//
// Note [Prefetch in device order]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The host runs ahead of the device (ops are queued, not run),
// and memory is released only once the host sees the device finished with it. A prefetch
// issued where the plan says (its position in the op stream, which the host reaches early)
// would then find no room that the device, at that point of its own timeline, has: the memory
// of maps swapped out, dropped or freed just before is still on its way out. So with
// ResidencyOptions::prefetch_waits a prefetch that would fit once the memory already on its way
// out is released waits for that (blocking the host, which only shortens how far it runs
// ahead) instead of giving up; it still never evicts.
//
// A prefetch of an allocation still swapping out cancels the swap-out, as a touch does: the
// chunk is still mapped and valid, so that costs nothing and never blocks, whereas waiting for
// the D2H copy to finish and then copying back would block or cost two copies.

absl::StatusOr<Allocation*> ResidencyManager::FindBaseLocked(DeviceAddress base,
                                                             absl::string_view what) const {
  Allocation* a = table_.FindContaining(base);
  if (a == nullptr || a->address != base) {
    return absl::NotFoundError(
        absl::StrCat(what, ": 0x", absl::Hex(base), " is not an allocation"));
  }
  return a;
}

absl::Status ResidencyManager::Offload(DeviceAddress base) {
  MutexLock lock(&mu_);
  absl::StatusOr<Allocation*> found = FindBaseLocked(base, "Offload");
  if (!found.ok()) return found.status();
  if (absl::Status s = PollLocked(); !s.ok()) return s;
  Allocation& a = **found;
  if (a.state != ResidencyState::kResident || !a.swappable || a.pins > 0 || a.free_requested) {
    return absl::OkStatus();
  }
  if (absl::Status s = StartSwapOutLocked(a); !s.ok()) return s;  // Note [Swap-out failure]
  ++stats_.planned_swap_outs;
  return absl::OkStatus();
}

absl::Status ResidencyManager::Drop(DeviceAddress base) {
  MutexLock lock(&mu_);
  absl::StatusOr<Allocation*> found = FindBaseLocked(base, "Drop");
  if (!found.ok()) return found.status();
  if (absl::Status s = PollLocked(); !s.ok()) return s;  // a swap-in that completed is resident
  Allocation& a = **found;
  if (a.state != ResidencyState::kResident || !a.swappable || a.pins > 0 || a.free_requested) {
    return absl::OkStatus();
  }
  DropLocked(a);
  ++stats_.drops;
  return PollLocked();  // releases the chunk now when nothing uses it any more
}

absl::Status ResidencyManager::WaitForUses(DeviceAddress base, StreamHandle stream) {
  MutexLock lock(&mu_);
  absl::StatusOr<Allocation*> found = FindBaseLocked(base, "WaitForUses");
  if (!found.ok()) return found.status();
  const Allocation& a = **found;
  for (const auto& [user, event] : a.last_uses) {
    if (event->known_complete()) continue;
    if (absl::Status s = device_.StreamWaitEvent(stream, event->handle()); !s.ok()) return s;
  }
  if (a.transfer != nullptr && !a.transfer->known_complete()) {
    return device_.StreamWaitEvent(stream, a.transfer->handle());
  }
  return absl::OkStatus();
}

void ResidencyManager::DropLocked(Allocation& a) {
  a.state = ResidencyState::kDropped;
  a.host_current = false;  // Note [Current host copies]: the chunk's bytes are to be rebuilt
  dropping_.insert(a.id);
}

absl::StatusOr<bool> ResidencyManager::Prefetch(DeviceAddress base, bool may_wait) {
  MutexLock lock(&mu_);
  while (true) {
    // Found again after each wait: the lock was dropped, the allocation may be gone.
    absl::StatusOr<Allocation*> found = FindBaseLocked(base, "Prefetch");
    if (!found.ok()) return found.status();
    if (absl::Status s = PollLocked(); !s.ok()) return s;
    Allocation& a = **found;
    switch (a.state) {
      case ResidencyState::kResident:
      case ResidencyState::kSwappingIn:
        return true;
      case ResidencyState::kSwappingOut:
        CancelSwapOutLocked(a);
        return true;
      case ResidencyState::kDropped:
        return absl::FailedPreconditionError(
            absl::StrCat("Prefetch: 0x", absl::Hex(base),
                         " was dropped and must be recomputed, not prefetched"));
      case ResidencyState::kOnHost: {
        // Note [Retained chunks] (chunk_pool.h): still mapped, nothing to copy.
        absl::StatusOr<bool> back = ResurrectLocked(a);
        if (!back.ok()) return back.status();
        if (*back) return true;
        break;
      }
    }
    const int64_t limit = options_.memory_limit;
    // Note [Spare chunks] (chunk_pool.h): a spare of the size is the room.
    if (device_bytes_ + a.mapped_bytes > limit && !chunks_.HasSpare(a.mapped_bytes)) {
      // Memory held for reuse counts as free: it goes before anything is waited for.
      absl::StatusOr<bool> gave = GiveBackHeldLocked(a.mapped_bytes);
      if (!gave.ok()) return gave.status();
      if (*gave) continue;
      // Note [Prefetch in device order]: memory on its way out makes room once the device
      // gets there; wait for it rather than leave the swap-in to the op that needs it.
      EventRef pending_event;
      const int64_t pending = PendingReleaseBytesLocked(&pending_event);
      if (!may_wait || !options_.prefetch_waits || pending_event == nullptr ||
          device_bytes_ - pending + a.mapped_bytes > limit) {
        return false;
      }
      if (absl::Status s = WaitUnlocked(pending_event); !s.ok()) return s;
      ++stats_.prefetch_waits;
      continue;
    }
    if (absl::Status s = StartSwapInLocked(a); !s.ok()) {
      // The device itself is full (another process?): no room either; the data stays on the
      // host.
      if (absl::IsResourceExhausted(s) && a.state == ResidencyState::kOnHost) return false;
      return s;
    }
    ++stats_.prefetches;
    return true;
  }
}

absl::Status ResidencyManager::RestoreLocked(Allocation& a, StreamHandle stream, uint64_t op) {
  if (a.physical != 0) {
    // The old chunk's release is still pending: keep it. Its content is garbage, which a
    // write-only op does not mind, but the op must not overwrite it before the chunk's previous
    // users are done with it (write after read, Decision 8). A pending cancelled swap-out copy
    // is `transfer`, which BeforeOp waits for (Note [Op ordering]).
    for (const auto& [user, event] : a.last_uses) {
      if (event->known_complete()) continue;
      if (absl::Status s = device_.StreamWaitEvent(stream, event->handle()); !s.ok()) return s;
    }
    dropping_.erase(a.id);
    a.state = ResidencyState::kResident;
    ++stats_.restores;
    return absl::OkStatus();
  }
  absl::StatusOr<bool> mapped = MapForWriteLocked(a, op, ResidencyState::kDropped);
  if (!mapped.ok()) return mapped.status();
  if (*mapped) ++stats_.restores;
  return absl::OkStatus();
}

absl::Status ResidencyManager::ReleaseDroppedLocked() {
  absl::Status status;
  std::vector<AllocationId> released;
  for (AllocationId id : dropping_) {
    Allocation* a = table_.Find(id);
    if (a == nullptr || a->state != ResidencyState::kDropped || a->physical == 0) {
      released.push_back(id);
      continue;
    }
    // A cancelled swap-out's copy still reads the chunk; PollLocked resets `transfer` (and gives
    // the host buffer back) once it completed.
    if (a->transfer != nullptr) continue;
    absl::StatusOr<bool> done = AllDone(events_, a->last_uses);
    if (!done.ok()) return done.status();
    if (!*done) continue;
    status.Update(UnmapChunkLocked(a->address, a->mapped_bytes, a->physical));
    a->physical = 0;
    a->last_uses.clear();
    // Left attached by a swap-out that could not be tracked.
    if (a->host != nullptr) ReleaseHostLocked(*a);
    released.push_back(id);
  }
  if (!released.empty()) {
    for (AllocationId id : released) dropping_.erase(id);
    NotifyMemoryLocked();
    unpinned_.SignalAll();
  }
  return status;
}

}  // namespace pooch
