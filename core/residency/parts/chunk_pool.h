// ChunkPool: the physical chunks the residency manager holds for reuse although no allocation
// is resident in them: spare chunks (unmapped) and retained chunks (still mapped under an
// allocation whose data is on the host). Both stay counted in the manager's device bytes and
// count as free to the program (ResidencyStats::cached_bytes).
//
// Note [Spare chunks]
// ~~~~~~~~~~~~~~~~~~~
// Besides its copy, a swap costs four VMM calls: cuMemCreate and cuMemMap to bring an allocation
// in, cuMemUnmap and cuMemRelease once its swap-out completed, each on the hook's thread under
// the manager's lock. The swaps of an iteration move many chunks of the same rounded sizes, so a
// chunk whose mapping ends (a swap-out finished, a drop, a release) is unmapped but kept as a
// spare, still counted in device_bytes_, and the next mapping of its size takes it instead of
// creating one: no cuMemCreate, no cuMemRelease. (Spares remove only that pair; the map and unmap
// are the address's change of memory itself.) It holds nothing anyone reads: its last user's
// work completed before the unmap (Note [Swap-out ordering], 4), and its next owner gets its
// bytes from a copy or from the program's writes, as with a fresh chunk. A mapping that takes a
// spare needs no room, since the spare's bytes are already counted. MakeRoomLocked releases
// spares before it waits for or evicts anything, so, like the reuse cache, spares never cause a
// swap-out or an out-of-memory; the interposer reports their bytes as free. Bounds: those of the
// reuse cache (options.reuse_cache_entries chunks; cache and spares together at most
// options.reuse_cache_bytes, a quarter of the limit by default; 0 disables both); beyond them a
// chunk is released.
//
// Note [Retained chunks]
// ~~~~~~~~~~~~~~~~~~~~~~
// A swap-out whose copy completed leaves the data in two places: the host copy, and the chunk,
// which nothing touched since (any op on the allocation cancels the swap-out or waits for it).
// So the chunk is not unmapped when the copy completes but only when its room is needed: the
// allocation is kOnHost with `physical` still mapped, its bytes still counted, and it is listed
// here. If an op or a prefetch wants the allocation back before then, it is resident again at
// once (ResidencyManager::ResurrectLocked): no cuMemMap, no copy; the host copy goes back to the
// pool as after a swap-in. Otherwise MakeRoomLocked and Prefetch unmap retained chunks, oldest
// first, once spares and the reuse cache are gone and before they wait for anything or evict:
// the unmap only moves from the copy's completion to the moment the room is taken, so retention
// never causes a swap-out or an out-of-memory that would not happen without it. A plan that
// swaps out ahead of its peak gets back what the peak did not take. On with the reuse cache
// (reuse_cache_bytes > 0), and never while the manager closes.
//
// Invariants: spare_bytes() is the sum of the spares' bytes, at most max_spares of them;
// retained_bytes() is the sum of the mapped bytes of the retained entries not yet forgotten
// (Unretain), so a stale entry (its allocation freed or brought back) adds nothing. The pool makes
// no device call: the manager maps, unmaps and releases the handles it gives and takes.
//
// Thread safety: not thread-safe; the residency manager calls it under its mutex.
#ifndef POOCH_CORE_RESIDENCY_PARTS_CHUNK_POOL_H_
#define POOCH_CORE_RESIDENCY_PARTS_CHUNK_POOL_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/functional/function_ref.h"
#include "core/device/device.h"
#include "core/residency/parts/residency_table.h"

namespace pooch {

class ChunkPool {
 public:
  // `max_spares`: at most this many spare chunks (<= 0: none).
  explicit ChunkPool(int max_spares) : max_spares_(max_spares) {}

  // Note [Spare chunks].
  struct Spare {
    int64_t bytes = 0;
    PhysicalHandle handle = 0;
  };
  // Keeps the unmapped chunk `handle` of `bytes` as a spare, when fewer than max_spares are kept
  // and spare_bytes() + bytes <= `byte_limit`; false otherwise (the caller releases it).
  bool KeepSpare(int64_t bytes, PhysicalHandle handle, int64_t byte_limit);
  bool HasSpare(int64_t bytes) const;
  // The oldest spare of exactly `bytes`, no longer kept; nullopt when there is none.
  std::optional<PhysicalHandle> TakeSpare(int64_t bytes);
  // Spares, oldest first, no longer kept, until their bytes reach `bytes` or none is left; the
  // caller releases them.
  std::vector<Spare> TakeOldestSpares(int64_t bytes);
  bool has_spares() const { return !spares_.empty(); }
  int64_t spare_bytes() const { return spare_bytes_; }

  // Note [Retained chunks]. `is_retained(id)`: whether the allocation `id` is still retained
  // (on the host with its chunk mapped); entries for which it is not are dropped now and then.
  void Retain(AllocationId id, int64_t mapped_bytes,
              absl::FunctionRef<bool(AllocationId)> is_retained);
  // The allocation of a retained chunk was freed or came back: its bytes are no longer retained
  // (its entry is stale from here on).
  void Unretain(int64_t mapped_bytes) { retained_bytes_ -= mapped_bytes; }
  // Reclaims retained chunks, oldest first, until `bytes` were reclaimed or none is left:
  // `unmap(id)` unmaps the allocation's chunk and returns its mapped bytes, or 0 for a stale
  // entry. Returns the bytes reclaimed.
  int64_t ReclaimRetained(int64_t bytes, absl::FunctionRef<int64_t(AllocationId)> unmap);
  int64_t retained_bytes() const { return retained_bytes_; }
  size_t retained_entries() const { return retained_.size(); }

 private:
  const int max_spares_;
  std::vector<Spare> spares_;  // oldest first
  int64_t spare_bytes_ = 0;
  // In the order the swap-outs finished; stale entries are skipped, and dropped when the list
  // grows long (kRetainedCompactAt).
  std::vector<AllocationId> retained_;
  int64_t retained_bytes_ = 0;
};

}  // namespace pooch

#endif  // POOCH_CORE_RESIDENCY_PARTS_CHUNK_POOL_H_
