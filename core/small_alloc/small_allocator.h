// SmallAllocator: the sub-allocator for allocations below POOCH_MIN_SWAP_BYTES. They never
// swap, so instead of a reserved range and a 2 MiB chunk each (DESIGN.md, decision 1) they are
// packed into slabs of device memory that stay mapped, and handed out without a device call.
//
// Blocks are multiples of 512 bytes (CUDA aligns cudaMalloc to at least 256; 512 is the unit
// simgpu and CUDA charge), carved best-fit from slabs: a slab is one reservation mapped to one
// physical chunk of max(granularity, max_bytes rounded up to it) bytes. The smallest free range
// that holds a request is split; a freed range merges with its free neighbours in the same slab.
// Every size shares the same slabs, so a program with a few buffers of many sizes needs few
// slabs, and rounding wastes under 512 bytes per block. Not size classes (one slab per class
// takes, under a tight limit, the memory the limit leaves for feature maps) nor a buddy allocator
// (which rounds a 576 KiB weight up to 1 MiB); docs/measurements.md, "Small allocations".
// A slab's whole size is charged to the budget callback (the residency manager's
// ChargeExternal) when it is created and uncharged when it is released, so the memory limit
// still covers small allocations. A slab that becomes empty is released unless it is the last
// one (a program that frees and allocates one small buffer per step would otherwise map and
// unmap a slab every step).
//
// Note [Reuse after free]
// ~~~~~~~~~~~~~~~~~~~~~~~
// cudaFree synchronises the device, so a program may free a buffer right after queuing work that
// uses it, and the real allocator never hands it out while that work runs. Free() here must not
// block (that is the cost this allocator exists to avoid), so a freed block is not reusable at
// once: it joins a pending list. When an allocation finds no free range that holds it, the pending
// list is sealed into a batch: one event is recorded on the legacy default stream (stream 0), which
// on a real GPU and on simgpu waits for all work queued before it on every blocking stream, hence
// for all work queued before each of the batch's frees. Blocks of a batch become free when its
// event has completed (QueryEvent, never blocking). If that does not make room and the batches hold
// at least the requested bytes, the allocation waits (SynchronizeEvent) for the oldest batches, as
// the real cudaFree would have waited, but only once per batch instead of once per free; otherwise,
// or if waiting did not make room, a new slab is made, and when the budget or the device refuses
// one the allocation waits for the remaining batches. Waiting before mapping matters under a limit:
// a new slab is charged to the budget and pushes feature maps out, and freed small blocks would
// otherwise pile up unused (docs/measurements.md, "Small allocations"). Recording at sealing rather
// than at each free costs one event per batch instead of one per free and only orders reuse later
// than needed, never earlier. Alternatives rejected: synchronising the device in Free (correct, but
// a blocking device call per free, what the pass-through cost) and an event per free (a device call
// per free). Work on streams created with cudaStreamNonBlocking is not ordered by the legacy
// default stream, so the batch also records an event on each such stream (SmallAllocatorOptions::
// unordered_streams; the interposer tracks the program's streams) and is reusable when all its
// events completed.
//
// Thread safety: all methods may be called from any thread; one mutex guards the state, and the
// device and budget callbacks are called with it held (they must not call back into this object).
#ifndef POOCH_CORE_SMALL_ALLOC_SMALL_ALLOCATOR_H_
#define POOCH_CORE_SMALL_ALLOC_SMALL_ALLOCATOR_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/container/btree_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/base/mutex.h"
#include "core/device/device.h"

namespace pooch {

struct SmallAllocatorOptions {
  // Allocate accepts 1 <= bytes < max_bytes (POOCH_MIN_SWAP_BYTES); 0 or 1: none.
  int64_t max_bytes = int64_t{1} << 20;
  // Called before a slab is made (ResourceExhausted: no room) and after one is released.
  // Either may be empty (no budget).
  std::function<absl::Status(int64_t)> charge;
  std::function<void(int64_t)> uncharge;
  // Appends the streams whose work the legacy default stream does not wait for (the program's
  // cudaStreamNonBlocking streams); a batch of frees also waits for each (Note [Reuse after
  // free]). Called with the allocator's lock held. Empty: none.
  std::function<void(std::vector<StreamHandle>*)> unordered_streams;
};

struct SmallAllocatorStats {
  int64_t slab_bytes = 0;  // mapped (and charged) slab memory
  int64_t peak_slab_bytes = 0;
  int64_t slabs = 0;
  int64_t live_blocks = 0;  // allocated and not freed
  int64_t live_bytes = 0;   // their sizes, rounded to kMinBlock
  int64_t peak_live_bytes = 0;
  int64_t pending_blocks = 0;  // freed, waiting for their batch's event (Note [Reuse after free])
  int64_t batches = 0;         // sealed batches whose event has not been seen complete
  int64_t waits = 0;           // times an allocation blocked on a batch's event
};

class SmallAllocator {
 public:
  // The smallest block, and so the alignment of every address returned.
  static constexpr int64_t kMinBlock = 512;

  // `device` must outlive the allocator. InvalidArgument for max_bytes < 0.
  static absl::StatusOr<std::unique_ptr<SmallAllocator>> Create(Device& device,
                                                                SmallAllocatorOptions options);
  // Waits for pending batches and releases every slab (uncharging it).
  ~SmallAllocator();

  // A block of at least `bytes`, aligned to kMinBlock. InvalidArgument outside [1, max_bytes);
  // ResourceExhausted when no slab can be made.
  absl::StatusOr<DeviceAddress> Allocate(int64_t bytes) ABSL_LOCKS_EXCLUDED(mu_);
  // Frees a block Allocate returned; never blocks (Note [Reuse after free]). NotFound when
  // `address` is in no slab (not this allocator's); InvalidArgument for an address inside a
  // slab that is not an allocated block (interior pointer, double free).
  absl::Status Free(DeviceAddress address) ABSL_LOCKS_EXCLUDED(mu_);
  // The size of the block at `address` (a block's start) if it is allocated here.
  std::optional<int64_t> BlockBytes(DeviceAddress address) const ABSL_LOCKS_EXCLUDED(mu_);
  // The allocated block whose requested bytes hold `address` (its start or inside it): its
  // start and the bytes Allocate was asked for, for pointer queries that must answer about the
  // allocation the program made. nullopt past them (the rounding to kMinBlock), or when no block
  // holds it.
  struct Requested {
    DeviceAddress address = 0;
    int64_t bytes = 0;
  };
  std::optional<Requested> BlockContaining(DeviceAddress address) const ABSL_LOCKS_EXCLUDED(mu_);
  // Whether `address` lies in one of this allocator's slabs (a block, its rounding, free space).
  // Answers false without the lock outside the span of every slab ever made: a kernel launch's
  // scan asks for each word it may write, most of them no pointer (Note [Small blocks in the
  // lineage] in interpose/hooks/launch/kernel_args.h).
  bool InSlab(DeviceAddress address) const ABSL_LOCKS_EXCLUDED(mu_);
  // Note [Range checks] (core/residency/residency.cc): InvalidArgument when [address, address +
  // bytes) starts in a slab but in no allocated block (freed, or never handed out), or runs past
  // the end of the block it starts in. A block is its size rounded up to kMinBlock, as CUDA's
  // allocator rounds too: its rounding reaches no other block. Ok outside every slab.
  absl::Status CheckRange(DeviceAddress address, int64_t bytes) const ABSL_LOCKS_EXCLUDED(mu_);
  // Frees the blocks of batches whose event completed and releases empty slabs; never blocks.
  absl::Status Poll() ABSL_LOCKS_EXCLUDED(mu_);

  SmallAllocatorStats Stats() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Block {
    DeviceAddress address = 0;
    int64_t bytes = 0;  // a multiple of kMinBlock
  };
  struct Allocated {
    int64_t bytes = 0;      // the block, a multiple of kMinBlock
    int64_t requested = 0;  // what Allocate was asked for
  };
  struct Batch {
    std::vector<EventHandle> events;  // one per stream the batch waits for
    std::vector<Block> blocks;
  };

  SmallAllocator(Device& device, SmallAllocatorOptions options);

  // The base of the slab holding `address`, if any.
  std::optional<DeviceAddress> SlabOfLocked(DeviceAddress address) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The lowest-addressed of the smallest free ranges that hold `bytes`, split off and recorded
  // as a block asked for `requested` bytes; nullopt when none does.
  std::optional<DeviceAddress> TakeLocked(int64_t bytes, int64_t requested)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void InsertFreeLocked(DeviceAddress address, int64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EraseFreeLocked(DeviceAddress address, int64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status SealLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Retires completed batches from the front; with `wait`, blocks for the oldest one first.
  absl::Status CollectLocked(bool wait) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Makes a block free, merging it with its free neighbours; releases its slab if it became
  // empty.
  void ReturnBlockLocked(Block block) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status NewSlabLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status ReleaseSlabLocked(DeviceAddress base) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Device& device_;
  const SmallAllocatorOptions options_;
  const int64_t slab_bytes_each_;

  mutable Mutex mu_;
  // Free ranges, disjoint and never spanning two slabs, indexed by address (to merge neighbours)
  // and by (size, address) (for best fit). Blocks handed out are in `allocated_`.
  absl::btree_map<DeviceAddress, int64_t> free_by_address_ ABSL_GUARDED_BY(mu_);
  absl::btree_set<std::pair<int64_t, DeviceAddress>> free_by_size_ ABSL_GUARDED_BY(mu_);
  // Ordered, so that BlockContaining and CheckRange find the block below an interior address.
  absl::btree_map<DeviceAddress, Allocated> allocated_ ABSL_GUARDED_BY(mu_);
  absl::btree_map<DeviceAddress, PhysicalHandle> slabs_ ABSL_GUARDED_BY(mu_);  // base -> chunk
  std::vector<Block> pending_ ABSL_GUARDED_BY(mu_);
  std::deque<Batch> batches_ ABSL_GUARDED_BY(mu_);  // oldest first
  std::vector<EventHandle> spare_events_ ABSL_GUARDED_BY(mu_);
  int64_t waits_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t batch_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // the blocks of `batches_`
  int64_t live_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t peak_live_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t peak_slab_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  // [span_begin_, span_end_): holds every slab ever made (never shrinks; written under mu_). A
  // thread that was handed a block's address saw the slab's making, so it sees the span too.
  std::atomic<DeviceAddress> span_begin_{std::numeric_limits<DeviceAddress>::max()};
  std::atomic<DeviceAddress> span_end_{0};
};

}  // namespace pooch

#endif  // POOCH_CORE_SMALL_ALLOC_SMALL_ALLOCATOR_H_
