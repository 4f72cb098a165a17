// ResidencyManager: keeps the program's allocations under a device memory limit by swapping
// them to pinned host memory on demand, at the same virtual address (DESIGN.md decision 1).
//
// The interposer drives it:
//   cudaMalloc(n)        -> Allocate(n)            address that never changes
//   cudaFree(p)          -> Free(p)
//   any op on stream s   -> BeforeOp(s, touched)   makes every touched allocation resident, makes
//                           forward the call          s wait for the copies that did it, pins them
//                        -> AfterOp(ticket)        records the op's last use, unpins
//   small-allocation slab -> ChargeExternal(n) when core/small_alloc maps it,
//                           UnchargeExternal(n) when it releases it (Note [Small allocations])
//   any hook, now and then -> Poll()               reclaims memory of finished swaps and frees
//
// A profile-guided plan adds (Note [Planned residency], residency_plan.cc):
//   Offload(p)   planned swap-out now        Drop(p)  discard; the plan recomputes it by replay
//   Prefetch(p)  planned swap-in, only into free room, early enough to hide the copy
// BeforeOp stays the safety net: whatever the plan missed is swapped in on demand.
//
//   auto manager = ResidencyManager::Create(device, {.memory_limit = 8 << 30});
//   DeviceAddress x = *(*manager)->Allocate(64 << 20);
//   auto ticket = (*manager)->BeforeOp(stream, {{x, 64 << 20}});
//   ... enqueue the op on `stream` ...
//   (*manager)->AfterOp(std::move(*ticket));
//
// Budget: the physical bytes the manager has created (plus external charges) never exceed
// memory_limit, counting memory whose release waits for an event (Decision 8). An allocation
// that cannot fit even after evicting every unpinned swappable allocation fails with
// ResourceExhausted, which the interposer returns as cudaErrorMemoryAllocation /
// CUDA_ERROR_OUT_OF_MEMORY; nothing already swapped out is lost.
// Freed swappable chunks may stay mapped for reuse, counted in the budget and given back before
// anything is evicted (Note [Reuse cache], reuse_cache.h); so may physical chunks no allocation
// is resident in (Note [Spare chunks], Note [Retained chunks], chunk_pool.h).
//
// Parts: the manager owns the ReuseCache (freed allocations kept mapped), the ChunkPool (spare and
// retained chunks), the CopyTimer (copy timing), the HostPool and the AllocationTable; none of
// them is thread-safe, and the manager calls each under its mutex. The manager itself keeps the
// op protocol (BeforeOp/AfterOp, pins), the budget and the swaps.
//
// Thread safety: thread-safe. One mutex guards all state. Device calls that only queue work
// are made under it; the manager drops it while blocking on an event (SynchronizeEvent) and
// re-examines its state afterwards. The observer is called with the mutex held.
#ifndef POOCH_CORE_RESIDENCY_RESIDENCY_H_
#define POOCH_CORE_RESIDENCY_RESIDENCY_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/base/mutex.h"
#include "core/device/device.h"
#include "core/residency/parts/address_pool.h"
#include "core/residency/parts/chunk_pool.h"
#include "core/residency/parts/copy_timer.h"
#include "core/residency/parts/residency_events.h"
#include "core/residency/parts/residency_host_pool.h"
#include "core/residency/parts/residency_table.h"
#include "core/residency/parts/reuse_cache.h"

namespace pooch {

struct ResidencyOptions {
  int64_t memory_limit = 0;  // device bytes; > 0
  int64_t min_swap_bytes = int64_t{1} << 20;
  std::optional<int64_t> host_memory_limit;  // nullopt = unlimited
  // How long an op or allocation that finds every candidate pinned by other threads' ops waits
  // for them to finish before it fails with ResourceExhausted.
  absl::Duration pinned_wait = absl::Seconds(10);
  // Note [Reuse cache]: bytes of freed swappable allocations kept mapped for reuse by an
  // Allocate of the same rounded size. nullopt = memory_limit / 4; 0 disables the cache.
  std::optional<int64_t> reuse_cache_bytes;
  int reuse_cache_entries = 64;  // at most this many cached allocations
  // Bracket every swap copy with timing events (Device::CreateTimingEvent) so that its device
  // duration can be taken with TakeCopyTimings, for profiling. Off by default: two more events
  // per copy.
  bool time_copies = false;
  // Prefetch waits for memory already on its way out (swap-outs, drops, frees whose last uses
  // are still queued) when that makes room (Note [Prefetch in device order]).
  bool prefetch_waits = true;
  // How victims are chosen when room is needed. kLru: least recently used first, always swapped
  // (demand and the planner policies). kDtr: Note [DTR eviction] (residency_evict.cc): lowest
  // cost / (size x staleness) first; an allocation with a recompute cost (SetRecomputeCost) is
  // dropped, any other swapped, priced by its copy out and back at dtr_link_bytes_per_us.
  enum class Eviction { kLru, kDtr };
  Eviction eviction = Eviction::kLru;
  // The link speed each way that prices a swap under kDtr: 16 GB/s, PCIe gen3 x16, as
  // CopyTimes::kAssumedLinkGbps (nothing measures the link under dtr, which never profiles).
  double dtr_link_bytes_per_us = 16000;
};

// One range an op reads or writes. The address may point inside an allocation; a range may span
// several; addresses that are not the manager's (small pass-through allocations, host memory)
// are ignored.
struct AccessRange {
  enum class Mode { kRead, kWrite, kReadWrite };
  DeviceAddress address = 0;
  int64_t bytes = 1;
  // Demand swapping ignores it; for a dropped allocation (Drop) it decides between an error
  // (a read) and a restore (only writes: the replay that recomputes it).
  Mode mode = Mode::kReadWrite;
  // The op can read this range from the allocation's pinned host copy instead (a copy's source,
  // whose pointer the interposer can change): when the allocation is on the host and there is no
  // room to bring it back, BeforeOp leaves it there and OpTicket::HostSource says where to read
  // (Note [Reading the host copy], residency.cc). Only for kRead ranges inside one allocation.
  bool host_copy_ok = false;
  // The op writes every byte of this range and reads none of it (a copy's destination, a
  // memset, a dense GEMM output with beta zero): a swapped-out allocation that such ranges cover
  // whole, and that the op touches through no other range, comes back without its copy (Note
  // [Overwritten allocations], residency.cc). Only the interposer's hooks that know it set it.
  bool overwritten = false;
};

// Note [Overwritten allocations] (residency.cc): whether the op whose ranges are `touched`
// overwrites the allocation at [address, address + bytes) whole: every range that overlaps
// [address, address + mapped_bytes) is an `overwritten` write, and one covers its bytes.
bool OverwritesWhole(DeviceAddress address, int64_t bytes, int64_t mapped_bytes,
                     absl::Span<const AccessRange> touched);

// What BeforeOp pinned; hand it to AfterOp. Move-only.
class OpTicket {
 public:
  OpTicket() = default;
  OpTicket(OpTicket&&) = default;
  OpTicket& operator=(OpTicket&&) = default;
  StreamHandle stream() const { return stream_; }
  absl::Span<const AllocationId> allocations() const { return ids_; }
  // Where the op must read touched[range] from instead of its device address: the pinned host
  // copy of a swapped-out allocation (Note [Reading the host copy]); nullptr to read it in place.
  // Valid until AfterOp's event completes.
  const void* HostSource(size_t range) const {
    for (const auto& [index, host] : host_sources_) {
      if (index == range) return host;
    }
    return nullptr;
  }
  // The bases of the allocations BeforeOp swapped in on demand for this op (each counted in
  // ResidencyStats::demand_swap_ins): the plan executor tells its plan's misses from swap-ins
  // at accesses its profile left out (Note [Left-out accesses], core/exec/plan_executor.cc).
  absl::Span<const DeviceAddress> demand_swapped_in() const { return demand_swapped_in_; }

 private:
  friend class ResidencyManager;
  StreamHandle stream_ = kDefaultStream;
  std::vector<AllocationId> ids_;
  std::vector<DeviceAddress> demand_swapped_in_;
  std::vector<AllocationId> host_reads_;  // of ids_, those read from their host copy
  // Note [Current host copies]: of ids_, those a range other than kRead touches; AfterOp forgets
  // their host copies.
  std::vector<AllocationId> written_;
  std::vector<std::pair<size_t, const void*>> host_sources_;  // range index -> host address
  // Note [Overwritten allocations]: of ids_, those mapped fresh for the op to overwrite, whose
  // host copies are kept until AfterOp knows whether the op ran.
  std::vector<AllocationId> overwritten_;
  // Note [Words into freed memory]: freed memory the manager still holds that the op's ranges
  // touch, by address; their release waits for the op too.
  std::vector<DeviceAddress> freed_touched_;
};

// What the interposer and the recomputer need to know about an address.
struct AllocationInfo {
  AllocationId id = 0;
  DeviceAddress address = 0;  // base
  int64_t bytes = 0;
  bool swappable = false;
  ResidencyState state = ResidencyState::kResident;
  uint64_t first_use_op = 0;
  uint64_t last_use_op = 0;
  uint64_t use_count = 0;
};

// For the at-exit summary.
struct ResidencyStats {
  int64_t device_bytes = 0;  // physical + external, now
  int64_t peak_device_bytes = 0;
  // The peak of device_bytes since ResetWindowPeak (or start-up): what a memory pool's
  // "high watermark" attribute reports and its reset restarts
  // (interpose/hooks/runtime/pool_hooks.cc).
  int64_t window_peak_device_bytes = 0;
  int64_t host_bytes = 0;  // pinned bytes holding swapped data, now
  int64_t peak_host_bytes = 0;
  int64_t bytes_swapped_out = 0;  // D2H bytes
  int64_t bytes_swapped_in = 0;   // H2D bytes
  int64_t swap_outs = 0;
  int64_t swap_ins = 0;             // every H2D copy: demand_swap_ins + prefetches
  int64_t demand_swap_ins = 0;      // swap-ins started by BeforeOp: the plan's safety-net hits
  int64_t prefetches = 0;           // swap-ins started by Prefetch
  int64_t prefetch_waits = 0;       // waits of Prefetch for memory on its way out
  int64_t demand_swap_outs = 0;     // evictions to make room (swap_outs = demand + planned)
  int64_t planned_swap_outs = 0;    // swap-outs started by Offload
  int64_t drops = 0;                // allocations discarded by Drop
  int64_t eviction_drops = 0;       // Note [DTR eviction]: victims dropped, not swapped
  int64_t restores = 0;             // dropped allocations given a fresh chunk by a write-only op
  int64_t cancelled_swap_outs = 0;  // touched again while the D2H copy was in flight
  // Note [Current host copies]: swap-outs (of swap_outs) that copied nothing, and their bytes
  // (not in bytes_swapped_out).
  int64_t current_swap_outs = 0;
  int64_t bytes_not_copied_out = 0;
  int64_t host_reads = 0;  // ops that read a swapped-out allocation's host copy (no room for it)
  int64_t allocations = 0;
  int64_t frees = 0;
  int64_t out_of_memory = 0;  // Allocate/BeforeOp that returned ResourceExhausted
  int64_t pin_backoffs = 0;   // ops that gave way to an older one (Note [Waiting for pins])
  // Note [Reuse cache]: swappable Allocate calls served from the cache without a device call,
  // and those that were not (cache disabled or no entry of the size it could hand out).
  int64_t reuse_hits = 0;
  int64_t reuse_misses = 0;
  // Of reuse_hits, those served on the stream the entry's queued work is on (Note [Reuse on the
  // allocating stream], reuse_cache.h).
  int64_t reuse_ordered_hits = 0;
  int64_t cached_bytes = 0;  // now; part of device_bytes (and of peak_device_bytes)
  // Note [Spare chunks]: mappings served by a spare chunk instead of a new one (cached_bytes
  // includes the spares' bytes: memory held for reuse, free to the program).
  int64_t chunk_reuses = 0;
  // Note [Retained chunks]: swap-ins that found their chunk still mapped and made no copy.
  int64_t retained_hits = 0;
  // Note [Overwritten allocations]: swapped-out allocations an op overwrote whole, brought back
  // without a copy (not counted in swap_ins).
  int64_t overwritten_ins = 0;
  // Note [Free reserve]: swap-outs started after an op to keep room free (not in demand_swap_outs).
  int64_t reserve_swap_outs = 0;
  absl::Duration swap_wait = absl::ZeroDuration();  // host time blocked in SynchronizeEvent
};

// Note [Tracing hooks]
// ~~~~~~~~~~~~~~~~~~~~
// The interposer connects core/trace here. Start times are when the copy
// was queued, end times when the manager observed its event complete (query or synchronize);
// exact device times come later from timed events.
struct SwapRecord {
  enum class Kind { kOutStart, kOutEnd, kInStart, kInEnd, kOutCancelled };
  Kind kind = Kind::kOutStart;
  AllocationId allocation = 0;
  DeviceAddress address = 0;
  int64_t bytes = 0;
  absl::Time at;
  bool copied = true;  // false: a swap-out that copies nothing (Note [Current host copies])
};

class ResidencyObserver {
 public:
  virtual ~ResidencyObserver() = default;
  // Both are called with the manager's mutex held: be quick, do not call the manager.
  virtual void OnSwap(const SwapRecord& record) {}
  virtual void OnMemory(int64_t device_bytes, int64_t host_bytes, absl::Time at) {}
};

class ResidencyManager {
 public:
  // Creates the copy streams. `device` and `observer` (may be null) must outlive the manager.
  static absl::StatusOr<std::unique_ptr<ResidencyManager>> Create(
      Device& device, ResidencyOptions options, ResidencyObserver* observer = nullptr);
  // Waits for queued copies and releases everything the manager holds.
  ~ResidencyManager();

  // Reserves an address range and backs it with one physical chunk, evicting least recently
  // used allocations if needed. ResourceExhausted when it cannot fit (bytes > limit, everything
  // else pinned, host budget exhausted, or the device refused the chunk). `ordered_on`: the
  // stream of a stream-ordered allocation (cudaMallocAsync), whose memory the program uses on
  // that stream, or on another only after synchronising with it; the reuse cache may then hand
  // out memory whose queued work is all on that stream (Note [Reuse on the allocating stream]).
  absl::StatusOr<DeviceAddress> Allocate(int64_t bytes,
                                         std::optional<StreamHandle> ordered_on = std::nullopt)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Frees the allocation at `address` (its base) wherever its data is. Memory still used by
  // queued work is released when that work completes. NotFound if not the manager's.
  absl::Status Free(DeviceAddress address) ABSL_LOCKS_EXCLUDED(mu_);

  // Makes every allocation overlapping `touched` resident at its address, makes `stream` wait
  // for the copies that did so, and pins them until AfterOp. On error nothing stays pinned.
  // One exception: an allocation on the host that there is no room for and that the op only
  // reads through host_copy_ok ranges stays on the host, and the ticket's HostSource gives the
  // op its pinned copy to read (Note [Reading the host copy]).
  // REQUIRES: the returned ticket is passed to AfterOp once the op is queued.
  absl::StatusOr<OpTicket> BeforeOp(StreamHandle stream, absl::Span<const AccessRange> touched)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Records the op's completion event as the last use of each pinned allocation and unpins.
  // `op_ran`: false when the call returned an error, so that what BeforeOp mapped for the op
  // to overwrite gets its data back (Note [Overwritten allocations]).
  absl::Status AfterOp(OpTicket ticket, bool op_ran = true) ABSL_LOCKS_EXCLUDED(mu_);

  // Note [Small allocations]
  // ~~~~~~~~~~~~~~~~~~~~~~~~
  // Allocations below min_swap_bytes are never swapped, and giving
  // each its own 2 MiB-granular mapping would waste most of it, so the interposer packs them
  // into slabs with core/small_alloc (which maps the slabs itself) and charges each slab's
  // bytes here; the budget then covers everything the program holds and evicts swappable data
  // to make room for them. Allocate() still accepts small sizes (non-swappable, rounded up to
  // the granularity) for callers that want one path.
  // ChargeExternal evicts to make room; ResourceExhausted when it cannot.
  absl::Status ChargeExternal(int64_t bytes) ABSL_LOCKS_EXCLUDED(mu_);
  void UnchargeExternal(int64_t bytes) ABSL_LOCKS_EXCLUDED(mu_);

  // Finishes swaps and frees whose events completed; never blocks.
  absl::Status Poll() ABSL_LOCKS_EXCLUDED(mu_);
  // Waits for every queued copy and deferred free (at exit, or device synchronisation).
  absl::Status Drain() ABSL_LOCKS_EXCLUDED(mu_);

  // Note [Planned residency] (residency_plan.cc): what a profile-guided plan asks for. Each takes
  // the base address of an allocation (NotFound otherwise), never blocks (but Prefetch, see
  // below), and leaves the allocation correct to use: BeforeOp still makes it resident (or rejects
  // a read of dropped data), so a plan that is wrong costs time, never correctness (DESIGN.md
  // decision 4).
  //
  // Planned swap-out now: if the allocation is kResident, swappable, not pinned by an op in
  // progress and not waiting to be freed, starts its swap-out (the D2H copy waits for every
  // last use, as an eviction does) and counts stats.planned_swap_outs. Otherwise a no-op that
  // returns Ok: already on the host or on the way there or back, dropped, pinned (the plan runs
  // ahead of an op still using it; the next Offload or an eviction catches it), or too small.
  // An error from the swap (host budget, device) leaves the allocation resident and intact.
  absl::Status Offload(DeviceAddress base) ABSL_LOCKS_EXCLUDED(mu_);
  // The plan recomputes this allocation: if it is kResident, swappable, unpinned and not waiting
  // to be freed, its content is discarded without a copy and it enters kDropped; its chunk is
  // unmapped and released once every last use (and a cancelled swap-out's copy) completed —
  // the deferred release of a Free, counted in the budget until then. Counts stats.drops.
  // Otherwise a no-op that returns Ok (the data is elsewhere or in use; nothing is lost by
  // keeping it): in particular a host copy is never thrown away, as the plan may be stale.
  // After Drop, an op that reads the allocation fails (BeforeOp); one that only writes it
  // restores it. Free of a dropped allocation releases its range (and a chunk still pending).
  // An error may come from the poll that follows the drop, the allocation dropped all the same:
  // whether it is, the caller learns from Lookup, not from the status.
  absl::Status Drop(DeviceAddress base) ABSL_LOCKS_EXCLUDED(mu_);
  // Makes `stream` wait for every op queued so far that touched the allocation at `base` (its
  // last use on each stream) and for its pending copy: for a reader outside the program's stream
  // order, such as the copy Note [Replay check] (core/recompute/replay_check.h) takes before a
  // drop. NotFound when `base` is no allocation.
  absl::Status WaitForUses(DeviceAddress base, StreamHandle stream) ABSL_LOCKS_EXCLUDED(mu_);
  // Planned swap-in, issued ahead of the op that needs it: if the allocation is kOnHost and its
  // chunk fits under the limit without evicting anything (after reclaiming completed work and
  // spilling the reuse cache, and, with options.prefetch_waits, after waiting for memory already
  // on its way out: Note [Prefetch in device order]), maps a chunk and queues the H2D copy on the
  // manager's copy stream, counts stats.prefetches and returns true; false when there is no room
  // (retry at a later op).
  // true at once when it is kResident or kSwappingIn; kSwappingOut is cancelled as an op's touch
  // would be (the chunk is still mapped and valid: no copy, no wait) and returns true. A
  // dropped allocation is FailedPrecondition: only a replay can bring it back. The op that
  // touches it later waits for the copy's event on the device through BeforeOp, with no second
  // copy and no host block.
  // `may_wait` false: never waits, not even for memory on its way out (a caller on the
  // program's thread that makes the room itself: core/exec/pilot_actions.h).
  absl::StatusOr<bool> Prefetch(DeviceAddress base, bool may_wait = true) ABSL_LOCKS_EXCLUDED(mu_);
  // Bytes an allocation could take now or once memory on its way out is released: free under
  // the limit, held for reuse (spares, the reuse cache, retained chunks) or pending release.
  int64_t RoomBytes() ABSL_LOCKS_EXCLUDED(mu_);
  // Note [Free reserve] (residency_evict.cc): after each op, swaps out least recently used
  // allocations, without waiting, while RoomBytes() is below `bytes`; 0 (the initial value)
  // turns it off.
  void SetFreeReserve(int64_t bytes) ABSL_LOCKS_EXCLUDED(mu_);

  // Note [DTR eviction] (residency_evict.cc), under ResidencyOptions::Eviction::kDtr.
  // The allocation at `base` can be rebuilt exactly by replay in about `cost_us` (its recipe
  // is sound): eviction may drop it instead of swapping it. nullopt: it cannot (any more);
  // from then on it is only ever swapped. Returns whether it is kDropped now, so that a caller
  // that clears the cost learns of a drop it has not taken yet (TakeEvictionDrops) and can
  // rebuild the data while its recipe still holds. NotFound when `base` is no allocation.
  absl::StatusOr<bool> SetRecomputeCost(DeviceAddress base, std::optional<double> cost_us)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The allocations eviction dropped since the last call that are still dropped, by base.
  std::vector<DeviceAddress> TakeEvictionDrops() ABSL_LOCKS_EXCLUDED(mu_);
  // Keeps eviction from dropping any allocation overlapping `ranges` until Release (it may
  // still swap them): a caller that rebuilds several of an op's operands one after the other
  // never loses the ones already there. Returns what to pass to Release.
  std::vector<AllocationId> Hold(absl::Span<const AccessRange> ranges) ABSL_LOCKS_EXCLUDED(mu_);
  void Release(absl::Span<const AllocationId> held) ABSL_LOCKS_EXCLUDED(mu_);
  // h(t) = cost / (bytes x staleness), DTR's heuristic (Kirisame et al. 2021): the victim with
  // the lowest h goes first. `staleness` >= 1 (ticks since the last use).
  static double DtrScore(double cost_us, int64_t bytes, uint64_t staleness);

  // Iteration boundary (from the interposer's marker), recorded for later policies.
  void MarkIteration() ABSL_LOCKS_EXCLUDED(mu_);

  // Restarts ResidencyStats::window_peak_device_bytes at the current device bytes.
  void ResetWindowPeak() ABSL_LOCKS_EXCLUDED(mu_);
  // The allocation containing `address`, if any.
  std::optional<AllocationInfo> Lookup(DeviceAddress address) const ABSL_LOCKS_EXCLUDED(mu_);
  // Whether `address` lies in an allocation or in freed memory the manager still holds mapped
  // (the reuse cache, a release waiting for queued work): Note [Words into freed memory].
  bool Holds(DeviceAddress address) const ABSL_LOCKS_EXCLUDED(mu_);
  // Note [Opaque calls] (interpose/process/opaque.h): every live allocation (not those whose
  // free waits for an unpin), whole, as read-write ranges, for a call that may touch any of them;
  // `mapped_bytes` (may be null) receives what they need mapped at once.
  std::vector<AccessRange> LiveRanges(int64_t* mapped_bytes = nullptr) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Note [Range checks] (residency.cc): InvalidArgument when [address, address + bytes) starts
  // inside an allocation (or the rounding after its end) and runs past the bytes it was allocated
  // with, or starts in a freed allocation's range that the manager still holds (the reuse cache,
  // a release waiting for queued work). Ok otherwise, also for memory that is not the manager's.
  absl::Status CheckRange(DeviceAddress address, int64_t bytes) const ABSL_LOCKS_EXCLUDED(mu_);
  ResidencyStats Stats() const ABSL_LOCKS_EXCLUDED(mu_);
  // The timings of the swap copies that completed since the last call, in the order they were
  // queued; copies still in flight are kept for a later call. Never blocks. Empty unless copies
  // are timed (Note [Copy timing], copy_timer.h).
  std::vector<CopyTiming> TakeCopyTimings() ABSL_LOCKS_EXCLUDED(mu_);
  // Starts or stops timing copies (initially ResidencyOptions::time_copies). Profiling times
  // them; a long run must not, since each timing holds two events until it is taken.
  void SetTimeCopies(bool on) ABSL_LOCKS_EXCLUDED(mu_);
  int64_t memory_limit() const { return options_.memory_limit; }
  // Every allocation's mapping is its size rounded up to this (Note [Mapped bytes]).
  int64_t granularity() const { return granularity_; }

 private:
  // Memory whose release waits for events: a freed allocation's chunk and range (FreedRange) and
  // its host copy.
  struct Retired : FreedRange {
    Retired() = default;
    explicit Retired(FreedRange range) : FreedRange(std::move(range)) {}
    void* host = nullptr;
    int64_t host_bytes = 0;
    // A swap that was in flight when the allocation was freed: its end is reported on release
    // (Note [Tracing hooks]), so that the trace shows every swap the summary counts.
    std::optional<SwapRecord::Kind> swap_end;
    AllocationId allocation = 0;
    bool swap_copied = true;  // SwapRecord::copied of that swap
  };

  ResidencyManager(Device& device, ResidencyOptions options, ResidencyObserver* observer,
                   StreamHandle d2h, StreamHandle h2d);

  // Budget (residency.cc). Returns with mu_ held and device_bytes_ + bytes <= limit, so that
  // the caller can create the chunk before anyone else takes the room. May drop mu_ while it
  // waits. `op`: the caller's op sequence number between BeforeOp and AfterOp, or 0 for a caller
  // that is no op; an op may be told to give way (Note [Waiting for pins]).
  // For a chunk (`for_chunk`: MapChunkLocked of `bytes` comes next, under the lock), a spare of
  // that size is room too (Note [Spare chunks], chunk_pool.h).
  absl::Status MakeRoomLocked(int64_t bytes, uint64_t op, bool for_chunk)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // MakeRoomLocked's steps. Each returns an error to return, or whether the caller looks again
  // (kRetry) or goes on to the next step (kNext); kRoom: the room is there.
  enum class RoomStep { kRoom, kRetry, kNext };
  // Polls, and gives back memory held for reuse when that is what is missing.
  absl::StatusOr<RoomStep> ReclaimForRoomLocked(int64_t bytes, bool for_chunk)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Evicts `candidates` in order until their bytes cover `shortfall`; returns the bytes on their
  // way out and keeps the last error in `last_error`.
  int64_t EvictForLocked(absl::Span<Allocation* const> candidates, int64_t shortfall,
                         absl::Status* last_error) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Note [Waiting for pins]: what is missing is pinned by ops in progress. Waits for them (or for
  // an event whose release may make room) and returns kRetry, BackOff() for an op that must give
  // way, or kNext when there is nothing left to wait for. `*registered`: whether `op` is among
  // the waiting ops (it stays there until MakeRoomLocked returns).
  absl::StatusOr<RoomStep> WaitForPinsLocked(uint64_t op, absl::Time deadline,
                                             const EventRef& pending_event, bool* registered)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // BeforeOp's work once the op's allocations are pinned: each made resident on the op's stream.
  // A copy's source it cannot make resident may be read from its host copy instead (Note
  // [Reading the host copy]), recorded in `ticket`.
  absl::Status MakeResidentLocked(absl::Span<const AccessRange> touched, OpTicket& ticket,
                                  uint64_t op) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Note [Spare chunks] (chunk_pool.h). UnmapChunkLocked unmaps `handle` from `address` and
  // keeps it spare, or releases it (device_bytes_ drops) when the spares are full.
  // ReleaseSparesLocked releases spares, oldest first, until `bytes` were released or none is left.
  absl::Status UnmapChunkLocked(DeviceAddress address, int64_t mapped_bytes, PhysicalHandle handle)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status ReleaseSparesLocked(int64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Note [Retained chunks] (chunk_pool.h). ReclaimRetainedLocked unmaps retained chunks, oldest
  // first, until `bytes` were unmapped or none is left, and returns the bytes unmapped.
  // ResurrectLocked makes a kOnHost allocation whose chunk is retained resident again, with no
  // copy; false when its chunk is gone.
  absl::StatusOr<int64_t> ReclaimRetainedLocked(int64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<bool> ResurrectLocked(Allocation& a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Note [Current host copies] (residency_swap.cc). StartCurrentSwapOutLocked swaps out an
  // allocation whose host copy is current, copying nothing. ForgetCurrentHostCopiesLocked gives
  // back current host copies of resident allocations that nothing reads until `bytes` went, and
  // returns the bytes given back.
  absl::Status StartCurrentSwapOutLocked(Allocation& a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A swap-out of `a` was queued (`copies`: a D2H copy) and completes with `done`.
  void SwapOutStartedLocked(Allocation& a, EventRef done, bool copies)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int64_t ForgetCurrentHostCopiesLocked(int64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `a` is written (or freed): its host copy is no longer current, and goes back to the pool when
  // no copy uses it.
  absl::Status HostCopyStaleLocked(Allocation& a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // When `bytes` more do not fit: gives back the first kind of memory held for reuse that there
  // is, in the order spares, the reuse cache, retained chunks (MakeRoomLocked and Prefetch take
  // it before they wait or evict). True when something went; false when nothing is held.
  absl::StatusOr<bool> GiveBackHeldLocked(int64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A swap-in completed or an allocation came back (Note [Retained chunks]): its host copy goes
  // back to the pool, or, while reads of it may still run (Note [Reading the host copy]), to
  // `held` (null: host_held_ at once).
  absl::Status ReleaseHostCopyLocked(Allocation& a, std::vector<AllocationId>* held = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // For an op that only writes `a` (a replay that recomputes it, a whole overwrite): makes room
  // and, if `a` is still in state `from` (MakeRoomLocked may drop the lock), maps a chunk with no
  // copy and makes it resident. True when it did.
  absl::StatusOr<bool> MapForWriteLocked(Allocation& a, uint64_t op, ResidencyState from)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Maps a spare chunk of `mapped_bytes` at `address`, or creates, maps and counts a new one.
  // REQUIRES: room was made (MakeRoomLocked for a chunk), or chunks_.HasSpare(mapped_bytes).
  absl::StatusOr<PhysicalHandle> MapChunkLocked(DeviceAddress address, int64_t mapped_bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status FreeLocked(Allocation* a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The allocation whose base is `base`; NotFound naming `what` otherwise.
  absl::StatusOr<Allocation*> FindBaseLocked(DeviceAddress base, absl::string_view what) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Note [Planned residency]: gives a dropped allocation touched only by writes a chunk again
  // (the pending one if its release has not happened yet), and orders `stream` after the
  // chunk's previous users. May drop mu_ (MakeRoomLocked). (residency_plan.cc)
  absl::Status RestoreLocked(Allocation& a, StreamHandle stream, uint64_t op)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Releases the chunks of dropped allocations whose last uses completed. (residency_plan.cc)
  absl::Status ReleaseDroppedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Note [Reuse cache] (reuse_cache.h).
  // Keeps `r` (a freed resident allocation's range and chunk) in the reuse cache, spilling older
  // entries to keep its bounds; false when it cannot be kept (then the caller retires it).
  bool KeepForReuseLocked(Retired& r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gives back at least `bytes` of the reuse cache (or all of it), oldest first: entries whose
  // events completed are released now, then others are retired (released once their events
  // complete, as a plain Free would have). Returns the bytes given back.
  int64_t SpillReuseCacheLocked(int64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Bytes held for reuse: the reuse cache, spare and retained chunks (counted in device_bytes_,
  // free to the program).
  int64_t HeldForReuseBytesLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Counts `bytes` more of device memory and updates the peaks.
  void AddDeviceBytesLocked(int64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Note [Words into freed memory]: the held freed memory (the reuse cache, retired_) that
  // `range` overlaps, by address, each added to `out` once.
  void FreedTouchedLocked(const AccessRange& range, std::vector<DeviceAddress>* out) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status ReleaseRetiredLocked(Retired& r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Note [Address pool]: keeps the range [address, address + bytes), which has nothing mapped,
  // for a later allocation of its size, or frees it.
  absl::Status ReleaseAddressLocked(DeviceAddress address, int64_t bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UnpinLocked(absl::Span<const AllocationId> ids) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reclaims what completed; never blocks. (residency_swap.cc)
  absl::Status PollLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Bytes that PollLocked will release once their events complete, and one event to wait for.
  int64_t PendingReleaseBytesLocked(EventRef* oldest) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // An event that the next release waits for, or null when nothing is pending.
  EventRef AnyPendingEventLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops mu_, waits for `event`, takes mu_ again; accounts the time.
  absl::Status WaitUnlocked(const EventRef& event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Swap engine (residency_swap.cc).
  // Note [Swap-out failure]
  // ~~~~~~~~~~~~~~~~~~~~~~~
  // When the host budget or the copy fails, the allocation stays
  // resident and intact and the error is returned; the caller tries another victim or fails.
  absl::Status StartSwapOutLocked(Allocation& a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status FinishSwapOutLocked(Allocation& a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // REQUIRES: a.state == kOnHost and room was made for a.mapped_bytes.
  absl::Status StartSwapInLocked(Allocation& a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues the H2D copy of a.host into the chunk mapped at a.address: kSwappingIn until it
  // completes. REQUIRES: a.host and a.physical are set and nothing else uses the chunk.
  absl::Status StartCopyInLocked(Allocation& a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Note [Overwritten allocations]: the ticket's allocations mapped fresh for an op that did not
  // run get their host copies back on the device.
  absl::Status RestoreOverwrittenLocked(OpTicket& ticket) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // An op touches `a` while its D2H copy is in flight: keep the chunk.
  void CancelSwapOutLocked(Allocation& a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Note [Reading the host copy]: when `a` is on the host and every range of `touched` that
  // overlaps it is a host_copy_ok read inside its bytes, records that the op reads the host copy
  // (host_readers, the ticket's host sources) and returns true; false otherwise.
  bool ReadHostCopyLocked(Allocation& a, absl::Span<const AccessRange> touched, OpTicket& ticket)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Note [Reading the host copy]: whether no op reads a.host any more, in progress or queued
  // (then host_reads is cleared); never blocks.
  absl::StatusOr<bool> HostIdleLocked(Allocation& a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gives a.host back to the pool. REQUIRES: a.host != nullptr and no queued copy uses it.
  void ReleaseHostLocked(Allocation& a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Unpinned, swappable, mapped allocations, in the order they should go: least recently used
  // first, or by DtrScore under kDtr. (residency_evict.cc)
  std::vector<Allocation*> EvictionCandidatesLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Evicts one candidate: drops it (Note [DTR eviction]) or starts its swap-out. Ok when its
  // memory is on its way out. (residency_evict.cc)
  absl::Status EvictLocked(Allocation& a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // RoomBytes, under the lock (after a poll).
  int64_t RoomLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Note [Free reserve]: swap-outs until RoomLocked() >= reserve_bytes_. (residency_evict.cc)
  void KeepReserveLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Discards a kResident allocation's content (Drop, EvictLocked). (residency_plan.cc)
  void DropLocked(Allocation& a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  void NotifyMemoryLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void NotifySwapLocked(SwapRecord::Kind kind, const Allocation& a)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // SwapRecord::copied of a swap of `a` of that kind.
  static bool SwapCopies(SwapRecord::Kind kind, const Allocation& a);

  // Constant after construction.
  Device& device_;
  const ResidencyOptions options_;
  ResidencyObserver* const observer_;
  const int64_t granularity_;
  const StreamHandle d2h_stream_;  // swap-outs
  const StreamHandle h2d_stream_;  // swap-ins
  EventPool events_;               // thread-safe itself

  mutable Mutex mu_;
  CondVar unpinned_;  // signalled when pins drop or memory is released
  AllocationTable table_ ABSL_GUARDED_BY(mu_);
  HostPool host_pool_ ABSL_GUARDED_BY(mu_);
  std::vector<Retired> retired_ ABSL_GUARDED_BY(mu_);
  ReuseCache reuse_cache_ ABSL_GUARDED_BY(mu_);  // Note [Reuse cache]; limit 0: disabled
  // Note [Spare chunks], Note [Retained chunks]; counted in device_bytes_.
  ChunkPool chunks_ ABSL_GUARDED_BY(mu_);
  // Note [Address pool]: unmapped reserved ranges kept by size.
  AddressPool addresses_ ABSL_GUARDED_BY(mu_);
  CopyTimer copy_timer_ ABSL_GUARDED_BY(mu_);  // Note [Copy timing]
  bool closing_ ABSL_GUARDED_BY(mu_) = false;  // the destructor runs: cache nothing
  absl::flat_hash_set<AllocationId> in_flight_ ABSL_GUARDED_BY(mu_);  // transfer != null
  // Resident allocations still holding the host buffer an op reads (Note [Reading the host
  // copy]): given back to the pool by PollLocked once those reads completed.
  absl::flat_hash_set<AllocationId> host_held_ ABSL_GUARDED_BY(mu_);
  // kDropped allocations whose chunk still waits for its last uses (physical != 0).
  absl::flat_hash_set<AllocationId> dropping_ ABSL_GUARDED_BY(mu_);
  // Note [DTR eviction]: allocations eviction dropped, not yet taken (TakeEvictionDrops).
  std::vector<AllocationId> eviction_drops_ ABSL_GUARDED_BY(mu_);
  AllocationId next_id_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t tick_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t op_seq_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t iteration_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t device_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // physical created + external
  int64_t external_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int active_ops_ ABSL_GUARDED_BY(mu_) = 0;  // between BeforeOp and AfterOp
  // Of those, the ops waiting for pins to drop, by sequence number (Note [Waiting for pins]).
  absl::btree_set<uint64_t> waiting_ops_ ABSL_GUARDED_BY(mu_);
  int64_t reserve_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // Note [Free reserve]; 0: off
  ResidencyStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace pooch

#endif  // POOCH_CORE_RESIDENCY_RESIDENCY_H_
