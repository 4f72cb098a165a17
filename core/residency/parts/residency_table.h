// The residency manager's per-allocation record and the table that finds records by address.
//
// Note [Residency states]
// ~~~~~~~~~~~~~~~~~~~~~~~
// An allocation (one cudaMalloc = one tensor, DESIGN.md decision 2) owns a reserved virtual
// range for its whole life; only the physical memory behind it comes and goes:
//
//   kResident ──evict──▶ kSwappingOut ──D2H event done──▶ kOnHost ──op touches──▶ kSwappingIn
//       ▲                     │ op touches it again                                   │
//       │                     ▼ (cancel: keep the chunk, drop the copy)               │
//       └─────────────────────┴──────────────────H2D event done───────────────────────┘
//
//   kResident ──Drop──▶ kDropped ──an op that only writes it (the replay)──▶ kResident
//
//   kResident     chunk mapped, data valid on the device.
//   kSwappingOut  chunk still mapped and counted; a D2H copy into `host` is queued on the D2H
//                 stream behind every last-use event. The chunk is unmapped and released only
//                 once `transfer` completed (Note [Swap-out ordering], residency_swap.cc).
//   kOnHost       no chunk; data only in `host`.
//   kSwappingIn   a new chunk mapped at the same address; an H2D copy from `host` is queued on
//                 the H2D stream, `transfer` is its event. Ops may already be queued behind it:
//                 every stream that touches the allocation waits on `transfer` first. The host
//                 buffer goes back to the pool once `transfer` completed.
//
//   kDropped      content discarded (Note [Planned residency], residency_plan.cc): no valid data
//                 anywhere. `physical` is the old chunk until its last uses (and `transfer`)
//                 complete, then 0; an op that reads the allocation is an error, one that only
//                 writes it maps a chunk (or keeps the pending one) and makes it kResident.
//
// In kResident, `transfer` may still be pending after a cancelled swap-out; users wait on it too.
//
// Thread safety: plain data; the manager guards the table and every record with its mutex.
#ifndef POOCH_CORE_RESIDENCY_PARTS_RESIDENCY_TABLE_H_
#define POOCH_CORE_RESIDENCY_PARTS_RESIDENCY_TABLE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "core/device/device.h"
#include "core/residency/parts/residency_events.h"

namespace pooch {

using AllocationId = uint64_t;

enum class ResidencyState { kResident, kSwappingOut, kOnHost, kSwappingIn, kDropped };

struct Allocation {
  // Constant after creation.
  AllocationId id = 0;
  DeviceAddress address = 0;
  int64_t bytes = 0;         // as requested; what is copied
  int64_t mapped_bytes = 0;  // rounded up to the granularity; what is reserved and mapped
  bool swappable = false;    // bytes >= min_swap_bytes

  ResidencyState state = ResidencyState::kResident;
  // 0 when kOnHost (unless retained: Note [Retained chunks] in chunk_pool.h) or kDropped
  // and released.
  PhysicalHandle physical = 0;
  void* host = nullptr;  // pinned copy, or nullptr
  // The last copy to or from `host`, or what a swap-out that copies nothing waits for (Note
  // [Current host copies]); null when none is pending.
  EventRef transfer;
  // Note [Current host copies] (residency_swap.cc): `host` holds the bytes the device holds, and
  // no op has written the allocation since they were copied, so a swap-out need not copy.
  bool host_current = false;
  bool out_copies = true;  // false while a swap-out that copies nothing is in progress
  // The most recent op on each stream that touched it (Decision 8: a copy or an unmap waits for
  // all of them, not just the latest, when several streams share the allocation).
  std::vector<std::pair<StreamHandle, EventRef>> last_uses;
  int pins = 0;                 // ops between BeforeOp and AfterOp that touch it
  bool free_requested = false;  // Free arrived while pinned; freed at the last unpin
  uint64_t lru_tick = 0;        // larger = used more recently
  // Note [DTR eviction]: the time to rebuild it by replay when its recipe is sound, else < 0.
  double recompute_us = -1;
  // Note [DTR eviction]: Hold calls in progress: eviction may swap it but not drop it.
  int holds = 0;
  // Note [Reading the host copy] (residency.cc): ops between BeforeOp and AfterOp that read
  // `host` in place of the device memory, and the completion events of those queued since
  // (pending ones; kept in last_uses too). `host` goes back to the pool only after all of them.
  int host_readers = 0;
  std::vector<EventRef> host_reads;

  // Note [Feature-map knowledge]
  // ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
  // What a later policy needs to restrict eviction candidates to
  // feature maps (DESIGN.md decision 3) — allocated in the forward part, used again in backward.
  // The demand policy records it but evicts any swappable allocation; correctness does not
  // depend on the choice of victims.
  uint64_t allocated_at_op = 0;  // ops seen before Allocate returned it
  uint64_t first_use_op = 0;     // 1-based op sequence number; 0 = never used
  uint64_t last_use_op = 0;
  uint64_t use_count = 0;
  uint64_t allocated_in_iteration = 0;
  uint64_t swap_outs = 0;
  uint64_t swap_ins = 0;
};

// Whether [address, address + bytes) overlaps [base, base + mapped_bytes), an empty range
// counting as 1 byte, as AllocationTable::ForEachOverlapping counts it.
bool Overlaps(DeviceAddress address, int64_t bytes, DeviceAddress base, int64_t mapped_bytes);

// Address -> allocation. Records have stable addresses until Remove.
class AllocationTable {
 public:
  Allocation* Insert(std::unique_ptr<Allocation> allocation);
  std::unique_ptr<Allocation> Remove(AllocationId id);

  Allocation* Find(AllocationId id) const;
  // The allocation whose [address, address + mapped_bytes) contains `address`.
  Allocation* FindContaining(DeviceAddress address) const;
  // Every allocation overlapping [address, address + bytes), in address order.
  void ForEachOverlapping(DeviceAddress address, int64_t bytes,
                          absl::FunctionRef<void(Allocation&)> fn) const;
  void ForEach(absl::FunctionRef<void(Allocation&)> fn) const;
  size_t size() const { return by_id_.size(); }

 private:
  absl::flat_hash_map<AllocationId, std::unique_ptr<Allocation>> by_id_;
  std::map<DeviceAddress, Allocation*> by_address_;
};

}  // namespace pooch

#endif  // POOCH_CORE_RESIDENCY_PARTS_RESIDENCY_TABLE_H_
