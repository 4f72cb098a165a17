// ResidencyManager: allocation, free, the op protocol and the budget. The swap engine and
// reclamation are in residency_swap.cc, the choice of victims in residency_evict.cc.
#include "core/residency/residency.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/units.h"

namespace pooch {
namespace {

// Note [Waiting for pins]: what MakeRoomLocked returns to an op that must give way.
absl::Status BackOff() { return absl::AbortedError("an older op waits for memory: give way"); }
bool IsBackOff(const absl::Status& s) { return s == BackOff(); }

// The errors MakeRoomLocked fails with: `bytes` exceed the limit less the external charges, or
// cannot be made room for.
absl::Status LargerThanLimitError(int64_t bytes, int64_t limit, int64_t external) {
  return absl::ResourceExhaustedError(absl::StrCat(
      "cannot allocate ", FormatBytes(bytes), ": larger than the memory limit ", FormatBytes(limit),
      external > 0 ? absl::StrCat(" less ", FormatBytes(external), " of small allocations") : ""));
}
// What the ops in progress pin (the op asking, in a program of one thread) tells the user whether
// any plan could run it: one op's memory must fit under the limit.
absl::Status NoRoomError(int64_t bytes, int64_t limit, int64_t in_use, int64_t evictable,
                         int64_t pinned) {
  return absl::ResourceExhaustedError(absl::StrCat(
      "cannot make room for ", FormatBytes(bytes), " under the memory limit ", FormatBytes(limit),
      ": ", FormatBytes(in_use), " in use, ", FormatBytes(evictable), " of it can be swapped out, ",
      FormatBytes(pinned),
      " pinned by ops in progress, the rest too small to swap or not yet released (the memory "
      "one op touches must fit under the limit)"));
}
// The mapped bytes of the resident allocations that ops in progress pin.
int64_t PinnedResidentBytes(const AllocationTable& table) {
  int64_t pinned = 0;
  table.ForEach([&](const Allocation& a) {
    if (a.pins > 0 && a.state == ResidencyState::kResident) pinned += a.mapped_bytes;
  });
  return pinned;
}

// Note [Reuse cache]: the cache's byte limit; 0 disables it (and spares and retained chunks).
int64_t ReuseCacheLimit(const ResidencyOptions& options) {
  if (options.reuse_cache_entries <= 0) return 0;
  return std::max<int64_t>(0, options.reuse_cache_bytes.value_or(options.memory_limit / 4));
}

}  // namespace

absl::StatusOr<std::unique_ptr<ResidencyManager>> ResidencyManager::Create(
    Device& device, ResidencyOptions options, ResidencyObserver* observer) {
  if (options.memory_limit <= 0) {
    return absl::InvalidArgumentError("memory limit must be greater than 0");
  }
  absl::StatusOr<StreamHandle> d2h = device.CreateStream();
  if (!d2h.ok()) return d2h.status();
  absl::StatusOr<StreamHandle> h2d = device.CreateStream();
  if (!h2d.ok()) {
    device.DestroyStream(*d2h).IgnoreError();
    return h2d.status();
  }
  return std::unique_ptr<ResidencyManager>(
      new ResidencyManager(device, options, observer, *d2h, *h2d));
}

ResidencyManager::ResidencyManager(Device& device, ResidencyOptions options,
                                   ResidencyObserver* observer, StreamHandle d2h, StreamHandle h2d)
    : device_(device),
      options_(options),
      observer_(observer),
      granularity_(std::max<int64_t>(1, device.Granularity())),
      d2h_stream_(d2h),
      h2d_stream_(h2d),
      events_(device),
      host_pool_(device, options.host_memory_limit),
      reuse_cache_(ReuseCacheLimit(options), options.reuse_cache_entries),
      chunks_(options.reuse_cache_entries),
      // Note [Address pool]: address space only, so a generous bound.
      addresses_(std::min(options.memory_limit, std::numeric_limits<int64_t>::max() / 4) * 4),
      copy_timer_(device, options.time_copies) {}

ResidencyManager::~ResidencyManager() {
  {
    MutexLock lock(&mu_);
    closing_ = true;
    SpillReuseCacheLocked(reuse_cache_.bytes());  // retires what is still in use
    ReleaseSparesLocked(chunks_.spare_bytes()).IgnoreError();
    std::vector<AllocationId> ids;
    table_.ForEach([&](Allocation& a) { ids.push_back(a.id); });
    for (AllocationId id : ids) {
      Allocation* a = table_.Find(id);
      a->pins = 0;
      FreeLocked(a).IgnoreError();  // retires what queued work still uses
    }
  }
  Drain().IgnoreError();  // waits for that work, then releases it
  MutexLock lock(&mu_);
  for (Retired& r : retired_) ReleaseRetiredLocked(r).IgnoreError();  // only after errors
  retired_.clear();
  for (const auto& [address, bytes] : addresses_.TakeAll()) {
    device_.FreeAddress(address, bytes).IgnoreError();
  }
  copy_timer_.AbandonAll();  // Note [Copy timing]
  host_pool_.Trim();
  device_.DestroyStream(d2h_stream_).IgnoreError();
  device_.DestroyStream(h2d_stream_).IgnoreError();
}

// Note [Budget]
// ~~~~~~~~~~~~~
// device_bytes_ counts every chunk from CreatePhysical until ReleasePhysical, plus external
// charges. MakeRoomLocked first reclaims what already completed; if that is not enough but
// swap-outs or frees in flight will release enough, it waits for their events (dropping the
// lock); otherwise it evicts unpinned candidates in EvictionCandidatesLocked's order (swap-outs
// of the least recently used, or Note [DTR eviction]'s drops and swaps), just enough to cover
// the shortfall, and loops. When even every candidate would not be enough, the
// missing bytes are pinned by ops in progress: it waits for another thread's AfterOp, or for a
// younger op to give way (Note [Waiting for pins]), and fails after options_.pinned_wait.
//
// Note [Waiting for pins]
// ~~~~~~~~~~~~~~~~~~~~~~~
// An op pins everything it touches before it makes any of it resident (Note [Budget]), so two
// threads whose ops each fit the limit alone can each hold part of what the other waits for:
// neither would ever unpin. Ops are ordered by their sequence number (BeforeOp's `op`), oldest
// first: an op that must wait for pinned memory while an older op is waiting too gives way:
// MakeRoomLocked returns BackOff(), and BeforeOp releases the op's pins, waits until no older op
// is waiting, pins again and starts over. The oldest waiting op never gives way, so it gets its
// memory once the younger ones have unpinned and the ops running now have ended; then the next
// oldest, and so on: every op whose working set fits is served in order, none starves, and the
// wait is bounded by options_.pinned_wait. An op that gave way keeps its number, so it only
// grows older.
absl::Status ResidencyManager::MakeRoomLocked(int64_t bytes, uint64_t op, bool for_chunk) {
  const int64_t limit = options_.memory_limit;
  if (bytes > limit - external_bytes_) return LargerThanLimitError(bytes, limit, external_bytes_);
  const absl::Time deadline = absl::Now() + options_.pinned_wait;
  absl::Status last_swap_error;
  // Note [Waiting for pins]: an op stays among the waiting from its first wait for pins until it
  // returns, so that younger ops keep giving way meanwhile; they may go on once it is done.
  struct Waiting {
    ResidencyManager* manager;
    uint64_t op;
    bool registered = false;
    ~Waiting() ABSL_NO_THREAD_SAFETY_ANALYSIS {
      if (!registered) return;
      manager->waiting_ops_.erase(op);
      manager->unpinned_.SignalAll();
    }
  } waiting{this, op};
  while (true) {
    absl::StatusOr<RoomStep> reclaimed = ReclaimForRoomLocked(bytes, for_chunk);
    if (!reclaimed.ok()) return reclaimed.status();
    if (*reclaimed == RoomStep::kRoom) return absl::OkStatus();
    if (*reclaimed == RoomStep::kRetry) continue;

    EventRef pending_event;
    int64_t pending = PendingReleaseBytesLocked(&pending_event);
    // Bytes whose release waits for no event still pending were not reclaimed by the poll
    // above (a release that is not the poll's to make: a pinned drop, a failed finish): they
    // cannot make room by waiting, so they are no room; count on eviction instead.
    if (pending_event == nullptr) pending = 0;
    if (pending_event != nullptr && device_bytes_ - pending + bytes <= limit) {
      if (absl::Status s = WaitUnlocked(pending_event); !s.ok()) return s;
      continue;
    }

    const int64_t shortfall = device_bytes_ - pending + bytes - limit;
    const std::vector<Allocation*> candidates = EvictionCandidatesLocked();
    int64_t available = 0;
    for (const Allocation* a : candidates) available += a->mapped_bytes;
    if (available >= shortfall) {
      if (EvictForLocked(candidates, shortfall, &last_swap_error) > 0) continue;  // waited next
      if (pending_event == nullptr) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "cannot make room for ", FormatBytes(bytes), ": ", last_swap_error.message()));
      }
      // Swaps in flight may give host buffers back; wait for one and try again.
      if (absl::Status s = WaitUnlocked(pending_event); !s.ok()) return s;
      continue;
    }

    absl::StatusOr<RoomStep> waited =
        WaitForPinsLocked(op, deadline, pending_event, &waiting.registered);
    if (!waited.ok()) return waited.status();
    if (*waited == RoomStep::kNext) {
      return NoRoomError(bytes, limit, device_bytes_, available, PinnedResidentBytes(table_));
    }
  }
}

absl::StatusOr<ResidencyManager::RoomStep> ResidencyManager::ReclaimForRoomLocked(int64_t bytes,
                                                                                  bool for_chunk) {
  if (absl::Status s = PollLocked(); !s.ok()) return s;
  if (device_bytes_ + bytes <= options_.memory_limit) return RoomStep::kRoom;
  // Note [Spare chunks] (chunk_pool.h): a spare of the size is the room.
  if (for_chunk && chunks_.HasSpare(bytes)) return RoomStep::kRoom;
  // Memory held for reuse goes before anything is waited for or evicted.
  absl::StatusOr<bool> gave = GiveBackHeldLocked(bytes);
  if (!gave.ok()) return gave.status();
  return *gave ? RoomStep::kRetry : RoomStep::kNext;
}

int64_t ResidencyManager::EvictForLocked(absl::Span<Allocation* const> candidates,
                                         int64_t shortfall, absl::Status* last_error) {
  int64_t started = 0;
  for (Allocation* a : candidates) {
    if (started >= shortfall) break;
    absl::Status s = EvictLocked(*a);
    if (s.ok()) {
      started += a->mapped_bytes;
    } else {
      *last_error = s;
    }
  }
  return started;
}

absl::StatusOr<ResidencyManager::RoomStep> ResidencyManager::WaitForPinsLocked(
    uint64_t op, absl::Time deadline, const EventRef& pending_event, bool* registered) {
  // What is missing is pinned by ops in progress (or was just freed by nobody).
  if (op != 0 && !waiting_ops_.empty() && *waiting_ops_.begin() < op) return BackOff();
  const int others_active = active_ops_ - (op != 0 ? 1 : 0);
  if (others_active > 0 && absl::Now() < deadline) {
    if (op != 0 && !*registered) {
      // Waiting from now until MakeRoomLocked returns (which then unregisters it).
      *registered = true;
      waiting_ops_.insert(op);
      unpinned_.SignalAll();  // younger ops waiting for pins give way now
    }
    unpinned_.WaitWithDeadline(&mu_, std::min(deadline, absl::Now() + absl::Milliseconds(20)));
    return RoomStep::kRetry;
  }
  // A swap-in in flight holds memory no op pins that becomes evictable once it lands (another
  // thread's op started it and ended): wait for it rather than fail.
  EventRef event = pending_event != nullptr ? pending_event : AnyPendingEventLocked();
  if (event == nullptr) return RoomStep::kNext;
  if (absl::Status s = WaitUnlocked(event); !s.ok()) return s;
  return RoomStep::kRetry;
}

absl::StatusOr<PhysicalHandle> ResidencyManager::MapChunkLocked(DeviceAddress address,
                                                                int64_t mapped_bytes) {
  // Note [Spare chunks] (chunk_pool.h): a spare of the size is already counted.
  if (std::optional<PhysicalHandle> spare = chunks_.TakeSpare(mapped_bytes); spare.has_value()) {
    if (absl::Status s = device_.Map(address, mapped_bytes, *spare); !s.ok()) {
      device_.ReleasePhysical(*spare).IgnoreError();
      device_bytes_ -= mapped_bytes;
      NotifyMemoryLocked();
      return s;
    }
    ++stats_.chunk_reuses;
    return *spare;
  }
  absl::StatusOr<PhysicalHandle> chunk = device_.CreatePhysical(mapped_bytes);
  if (!chunk.ok()) return chunk.status();
  if (absl::Status s = device_.Map(address, mapped_bytes, *chunk); !s.ok()) {
    device_.ReleasePhysical(*chunk).IgnoreError();
    return s;
  }
  AddDeviceBytesLocked(mapped_bytes);
  return *chunk;
}

void ResidencyManager::AddDeviceBytesLocked(int64_t bytes) {
  device_bytes_ += bytes;
  stats_.peak_device_bytes = std::max(stats_.peak_device_bytes, device_bytes_);
  stats_.window_peak_device_bytes = std::max(stats_.window_peak_device_bytes, device_bytes_);
  NotifyMemoryLocked();
}

absl::StatusOr<DeviceAddress> ResidencyManager::Allocate(int64_t bytes,
                                                         std::optional<StreamHandle> ordered_on) {
  if (bytes <= 0) return absl::InvalidArgumentError(absl::StrCat("Allocate(", bytes, ")"));
  if (bytes > options_.memory_limit) {
    // Nothing evicted could make room, so no device call: reserving the range first would fail
    // with whatever code the driver gives a huge size, and rounding one near INT64_MAX
    // overflows; the API answers out-of-memory.
    MutexLock lock(&mu_);
    ++stats_.out_of_memory;
    return absl::ResourceExhaustedError(absl::StrCat("cannot allocate ", FormatBytes(bytes),
                                                     ": larger than the memory limit ",
                                                     FormatBytes(options_.memory_limit)));
  }
  const int64_t mapped = RoundUp(bytes, granularity_);
  const bool swappable = bytes >= options_.min_swap_bytes;
  auto insert = [&](DeviceAddress address, PhysicalHandle physical, int64_t mapped_bytes)
                    ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                      auto a = std::make_unique<Allocation>();
                      a->id = next_id_++;
                      a->address = address;
                      a->bytes = bytes;
                      a->mapped_bytes = mapped_bytes;
                      a->swappable = swappable;
                      a->physical = physical;
                      a->lru_tick = ++tick_;
                      a->allocated_at_op = op_seq_;
                      a->allocated_in_iteration = iteration_;
                      Allocation* inserted = a.get();
                      table_.Insert(std::move(a));
                      ++stats_.allocations;
                      return inserted;
                    };
  if (swappable) {
    MutexLock lock(&mu_);
    // Note [Reuse cache]: a hit makes no device call but event queries.
    if (std::optional<FreedRange> cached = reuse_cache_.Take(mapped, ordered_on, events_);
        cached.has_value()) {
      ++stats_.reuse_hits;
      // Still mapped and counted.
      Allocation* a = insert(cached->address, cached->physical, cached->mapped_bytes);
      if (!cached->events.empty()) {
        // Note [Reuse on the allocating stream]: the old owner's work, all on this stream and
        // completed in order, is the new allocation's last use there until its own first op.
        a->last_uses.emplace_back(*cached->events_stream, cached->events.back());
        ++stats_.reuse_ordered_hits;
      }
      return cached->address;
    }
    ++stats_.reuse_misses;
  }
  std::optional<DeviceAddress> kept;  // Note [Address pool]
  {
    MutexLock lock(&mu_);
    kept = addresses_.Take(mapped);
  }
  absl::StatusOr<DeviceAddress> address =
      kept.has_value() ? *kept : device_.ReserveAddress(mapped);
  if (!address.ok()) return address.status();

  MutexLock lock(&mu_);
  absl::Status s = MakeRoomLocked(mapped, /*op=*/0, /*for_chunk=*/true);
  absl::StatusOr<PhysicalHandle> chunk =
      s.ok() ? MapChunkLocked(*address, mapped) : absl::StatusOr<PhysicalHandle>(s);
  if (s.ok() && !chunk.ok() && absl::IsResourceExhausted(chunk.status()) &&
      (!reuse_cache_.empty() || chunks_.has_spares())) {
    // The device itself is full (another process?): give the cache and the spares back and try
    // once more. That only lowers device_bytes_, so the room MakeRoomLocked made is still there.
    ReleaseSparesLocked(chunks_.spare_bytes()).IgnoreError();
    SpillReuseCacheLocked(reuse_cache_.bytes());
    s = PollLocked();
    chunk = s.ok() ? MapChunkLocked(*address, mapped) : absl::StatusOr<PhysicalHandle>(s);
  }
  if (!chunk.ok()) {
    if (absl::IsResourceExhausted(chunk.status())) ++stats_.out_of_memory;
    ReleaseAddressLocked(*address, mapped).IgnoreError();
    return chunk.status();
  }
  insert(*address, *chunk, mapped);
  return *address;
}

absl::Status ResidencyManager::Free(DeviceAddress address) {
  MutexLock lock(&mu_);
  Allocation* a = table_.FindContaining(address);
  if (a == nullptr || a->address != address) {
    return absl::NotFoundError(
        absl::StrCat("Free: 0x", absl::Hex(address), " is not an allocation"));
  }
  if (a->pins > 0) {  // an op in progress on another thread still uses it
    a->free_requested = true;
    return absl::OkStatus();
  }
  return FreeLocked(a);
}

absl::Status ResidencyManager::FreeLocked(Allocation* a) {
  // Note [Current host copies]: given back, so that the chunk may be cached; a failed query keeps
  // it held, and it is freed below.
  HostCopyStaleLocked(*a).IgnoreError();
  Retired r;
  r.address = a->address;
  r.mapped_bytes = a->mapped_bytes;
  r.physical = a->physical;  // 0 when on host
  r.host = a->host;
  r.host_bytes = a->bytes;
  const bool cacheable = a->swappable && a->state == ResidencyState::kResident &&
                         a->physical != 0 && a->host == nullptr && a->transfer == nullptr;
  // Note [Reuse on the allocating stream]: a transfer is on a copy stream of the manager's.
  if (a->transfer != nullptr) r.AddEvent(a->transfer, std::nullopt);
  if (a->state == ResidencyState::kSwappingIn || a->state == ResidencyState::kSwappingOut) {
    r.swap_end = a->state == ResidencyState::kSwappingIn ? SwapRecord::Kind::kInEnd
                                                         : SwapRecord::Kind::kOutEnd;
    r.allocation = a->id;
    r.swap_copied = SwapCopies(*r.swap_end, *a);
  }
  for (auto& [stream, event] : a->last_uses) r.AddEvent(event, stream);
  // Note [Reading the host copy]: the host buffer goes back only after the reads of it. (Each
  // was recorded on some op's stream, not known here.)
  for (const EventRef& event : a->host_reads) r.AddEvent(event, std::nullopt);
  in_flight_.erase(a->id);
  dropping_.erase(a->id);
  host_held_.erase(a->id);
  // Note [Retained chunks] (chunk_pool.h): its chunk is released with the rest.
  if (a->state == ResidencyState::kOnHost && a->physical != 0) chunks_.Unretain(a->mapped_bytes);
  table_.Remove(a->id);  // `a` is gone from here on
  ++stats_.frees;
  if (cacheable && KeepForReuseLocked(r)) return absl::OkStatus();

  absl::StatusOr<bool> done = QueryAllDone(events_, r.events);
  if (!done.ok()) return done.status();
  if (*done) return ReleaseRetiredLocked(r);
  retired_.push_back(std::move(r));
  return absl::OkStatus();
}

absl::Status ResidencyManager::ReleaseRetiredLocked(Retired& r) {
  absl::Status status;
  if (r.physical != 0) {
    status.Update(UnmapChunkLocked(r.address, r.mapped_bytes, r.physical));
    r.physical = 0;
  }
  if (r.host != nullptr) {
    host_pool_.Release(r.host, r.host_bytes);
    r.host = nullptr;
  }
  // A range whose unmap failed may still have memory mapped: freed, never kept.
  status.Update(status.ok() ? ReleaseAddressLocked(r.address, r.mapped_bytes)
                            : device_.FreeAddress(r.address, r.mapped_bytes));
  if (r.swap_end.has_value() && observer_ != nullptr) {
    observer_->OnSwap(
        SwapRecord{*r.swap_end, r.allocation, r.address, r.host_bytes, absl::Now(), r.swap_copied});
    r.swap_end.reset();
  }
  r.events.clear();
  NotifyMemoryLocked();
  unpinned_.SignalAll();
  return status;
}

absl::Status ResidencyManager::ReleaseAddressLocked(DeviceAddress address, int64_t bytes) {
  if (!closing_ && addresses_.Keep(address, bytes)) return absl::OkStatus();
  return device_.FreeAddress(address, bytes);
}

// Note [Reading the host copy]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Under POOCH_HOST_MEMORY_LIMIT, once the host pool is full nothing more can be swapped out, so
// an allocation on the host cannot come back either (its swap-in needs room that only an
// eviction, which needs host space, would make), and every read of it would fail with an
// out-of-memory error until the program freed something. A copy can do without the swap-in:
// its source pointer is the interposer's to change, and the pinned host copy holds exactly the
// allocation's bytes (kOnHost is entered only after the D2H copy completed, and any write swaps
// the allocation in first). So when BeforeOp finds no room (ResourceExhausted) for an allocation
// on the host that the op only reads, through ranges marked host_copy_ok that lie inside its
// bytes, it leaves the allocation on the host and hands out the host address instead
// (OpTicket::HostSource); the interposer points the copy at it (interpose/process/managed.h).
// The op needs no wait: the copy that filled the host buffer has completed.
// This is the fallback only: with room, the allocation is swapped in as before, so demand
// swapping and plans behave as they did. The other design, letting the victim's swap-out reuse
// the host space the swap-in frees, is circular (the swap-in needs the device room the victim's
// swap-out makes, which needs the host room the swap-in frees) and would need a staging buffer.
// The host buffer must outlive the reads: ops in progress count in host_readers (the
// allocation is pinned too, so it is neither freed nor evicted meanwhile), and AfterOp keeps
// their events in host_reads (and last_uses). Every place that gives the buffer back or
// overwrites it waits for them: a swap-out reusing it and a free wait for last_uses, and when a
// swap-in started meanwhile completes, PollLocked gives the buffer back only once host_readers is
// 0 and host_reads completed (HostIdleLocked); until then it stays attached (host_held_).
bool ResidencyManager::ReadHostCopyLocked(Allocation& a, absl::Span<const AccessRange> touched,
                                          OpTicket& ticket) {
  if (a.state != ResidencyState::kOnHost) return false;
  const DeviceAddress end = a.address + static_cast<DeviceAddress>(a.bytes);
  std::vector<std::pair<size_t, const void*>> sources;
  for (size_t i = 0; i < touched.size(); ++i) {
    const AccessRange& r = touched[i];
    if (!Overlaps(r.address, r.bytes, a.address, a.mapped_bytes)) continue;
    if (!r.host_copy_ok || r.mode != AccessRange::Mode::kRead || r.address < a.address ||
        r.bytes < 0 || static_cast<uint64_t>(r.bytes) > end - r.address) {
      return false;
    }
    sources.emplace_back(i, static_cast<const char*>(a.host) + (r.address - a.address));
  }
  ++a.host_readers;
  ticket.host_reads_.push_back(a.id);
  ticket.host_sources_.insert(ticket.host_sources_.end(), sources.begin(), sources.end());
  ++stats_.host_reads;
  return true;
}

absl::StatusOr<OpTicket> ResidencyManager::BeforeOp(StreamHandle stream,
                                                    absl::Span<const AccessRange> touched) {
  MutexLock lock(&mu_);
  ++active_ops_;
  const uint64_t op = ++op_seq_;
  OpTicket ticket;
  ticket.stream_ = stream;
  // Note [Planned residency]: dropped allocations this op reads (an error) or only writes.
  std::vector<AllocationId> dropped_read;
  for (const AccessRange& range : touched) {
    table_.ForEachOverlapping(
        range.address, range.bytes, [&](Allocation& a) ABSL_NO_THREAD_SAFETY_ANALYSIS {
          if (a.state == ResidencyState::kDropped && range.mode != AccessRange::Mode::kWrite &&
              std::find(dropped_read.begin(), dropped_read.end(), a.id) == dropped_read.end()) {
            dropped_read.push_back(a.id);
          }
          // Note [Current host copies] (residency_swap.cc): what the op may write.
          if (range.mode != AccessRange::Mode::kRead &&
              std::find(ticket.written_.begin(), ticket.written_.end(), a.id) ==
                  ticket.written_.end()) {
            ticket.written_.push_back(a.id);
          }
          if (std::find(ticket.ids_.begin(), ticket.ids_.end(), a.id) != ticket.ids_.end()) return;
          ticket.ids_.push_back(a.id);
          // Pin first, all of them: none may be evicted to make room for another (Note [Budget]).
          ++a.pins;
          a.lru_tick = ++tick_;
          if (a.first_use_op == 0) a.first_use_op = op;
          a.last_use_op = op;
          ++a.use_count;
        });
    FreedTouchedLocked(range, &ticket.freed_touched_);
  }
  // Note [Reading the host copy]: the host copies an attempt reads are given back when it fails
  // or gives way.
  auto forget_host_reads = [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    for (AllocationId id : ticket.host_reads_) --table_.Find(id)->host_readers;  // pinned
    stats_.host_reads -= static_cast<int64_t>(ticket.host_reads_.size());
    ticket.host_reads_.clear();
    ticket.host_sources_.clear();
  };
  auto fail = [&](absl::Status s) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    if (absl::IsResourceExhausted(s)) ++stats_.out_of_memory;
    forget_host_reads();
    s.Update(RestoreOverwrittenLocked(ticket));  // the op will not run
    UnpinLocked(ticket.ids_);
    --active_ops_;
    unpinned_.SignalAll();
    return s;
  };
  if (!dropped_read.empty()) {
    const Allocation* a = table_.Find(dropped_read.front());
    return fail(absl::FailedPreconditionError(
        absl::StrCat("allocation 0x", absl::Hex(a->address), " (", FormatBytes(a->bytes),
                     ") was dropped and must be recomputed before it is read")));
  }
  const absl::Time deadline = absl::Now() + options_.pinned_wait;
  while (true) {
    absl::Status s = MakeResidentLocked(touched, ticket, op);
    if (s.ok()) return ticket;
    if (!IsBackOff(s)) return fail(s);
    // Note [Waiting for pins]: give way to the older ops waiting, then pin again and start over.
    ++stats_.pin_backoffs;
    forget_host_reads();
    // Unpinned, what was mapped for the op to overwrite could be evicted with no data in it.
    if (absl::Status r = RestoreOverwrittenLocked(ticket); !r.ok()) return fail(r);
    UnpinLocked(ticket.ids_);
    unpinned_.SignalAll();
    while (!waiting_ops_.empty() && *waiting_ops_.begin() < op && absl::Now() < deadline) {
      unpinned_.WaitWithDeadline(&mu_, std::min(deadline, absl::Now() + absl::Milliseconds(20)));
    }
    for (AllocationId id : ticket.ids_) {
      Allocation* a = table_.Find(id);
      if (a == nullptr) {
        std::erase_if(ticket.ids_, [&](AllocationId other) ABSL_NO_THREAD_SAFETY_ANALYSIS {
          return table_.Find(other) == nullptr;
        });
        return fail(absl::FailedPreconditionError(
            "an allocation an op touches was freed while the op waited for memory"));
      }
      ++a->pins;
    }
  }
}

absl::Status ResidencyManager::MakeResidentLocked(absl::Span<const AccessRange> touched,
                                                  OpTicket& ticket, uint64_t op) {
  if (absl::Status s = PollLocked(); !s.ok()) return s;
  for (AllocationId id : ticket.ids_) {
    Allocation* a = table_.Find(id);  // pinned, so still in the table
    if (a->state == ResidencyState::kDropped) {
      // Only written by this op (reads failed in BeforeOp): the replay that recomputes it.
      if (absl::Status s = RestoreLocked(*a, ticket.stream_, op); !s.ok()) return s;
    }
    if (a->state == ResidencyState::kSwappingOut) CancelSwapOutLocked(*a);
    if (a->state == ResidencyState::kOnHost) {
      // Note [Retained chunks] (chunk_pool.h): still mapped, nothing to copy.
      absl::StatusOr<bool> back = ResurrectLocked(*a);
      if (!back.ok()) return back.status();
    }
    if (a->state == ResidencyState::kOnHost &&
        OverwritesWhole(a->address, a->bytes, a->mapped_bytes, touched)) {
      // Note [Overwritten allocations]: a chunk for the op to fill; the host copy stays until
      // AfterOp.
      absl::StatusOr<bool> mapped = MapForWriteLocked(*a, op, ResidencyState::kOnHost);
      if (!mapped.ok()) return mapped.status();
      if (*mapped) {
        ticket.overwritten_.push_back(a->id);
        ++stats_.overwritten_ins;
        NotifyMemoryLocked();
      }
    }
    if (a->state == ResidencyState::kOnHost) {
      absl::Status s = MakeRoomLocked(a->mapped_bytes, op, /*for_chunk=*/true);
      // MakeRoomLocked may have dropped the lock: another op that touches `a` may have swapped
      // it in meanwhile.
      if (s.ok() && a->state == ResidencyState::kOnHost) {
        s = StartSwapInLocked(*a);
        if (s.ok()) {
          ++stats_.demand_swap_ins;
          ticket.demand_swapped_in_.push_back(a->address);
        }
      }
      if (!s.ok()) {
        // Note [Reading the host copy]: no room, but the op may read the host copy instead.
        if (!absl::IsResourceExhausted(s) || !ReadHostCopyLocked(*a, touched, ticket)) return s;
        continue;
      }
    }
    // Note [Op ordering]
    // ~~~~~~~~~~~~~~~~~~
    // The op runs after the copy that brought the data (or the cancelled
    // copy that still reads it).
    if (a->transfer != nullptr && !a->transfer->known_complete()) {
      if (absl::Status s = device_.StreamWaitEvent(ticket.stream_, a->transfer->handle());
          !s.ok()) {
        return s;
      }
    }
  }
  return absl::OkStatus();
}

// Note [Overwritten allocations]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A swapped-out allocation that the op writes whole before reading any of it needs no swap-in:
// its old bytes would be copied only to be overwritten. Persistent gradient buffers are the
// common case: the optimizer reads them at the end of an iteration, the next backward's weight
// gradient (a GEMM or a filter gradient with beta zero) overwrites them, and between the two they
// are idle and may be swapped out. Only the hooks know that a call writes
// every byte of a range (AccessRange::overwritten: a copy's destination, a memset, a GEMM's C
// when beta is zero and C is dense); kWrite alone does not say it (a workspace is written in
// part). BeforeOp then maps a chunk and the op runs on it with no wait: its content is garbage
// the op replaces. The chunk comes from MapChunkLocked as a swap-in's does, so nothing still
// uses it. The host copy is not given back at once: a call that returns an error has written
// nothing, and its allocation must still hold its data. AfterOp gives the copies back when the
// call ran, and otherwise (and BeforeOp when it fails after mapping) copies them to the device
// as a swap-in, which later ops wait for.
bool OverwritesWhole(DeviceAddress address, int64_t bytes, int64_t mapped_bytes,
                     absl::Span<const AccessRange> touched) {
  bool covered = false;
  for (const AccessRange& r : touched) {
    if (!Overlaps(r.address, r.bytes, address, mapped_bytes)) continue;
    // Its length as Overlaps counts it (an empty range is 1 byte).
    const uint64_t length = static_cast<uint64_t>(std::max<int64_t>(r.bytes, 1));
    if (!r.overwritten || r.mode != AccessRange::Mode::kWrite) return false;
    if (r.address <= address && length - (address - r.address) >= static_cast<uint64_t>(bytes)) {
      covered = true;
    }
  }
  return covered;
}

absl::Status ResidencyManager::RestoreOverwrittenLocked(OpTicket& ticket) {
  absl::Status status;
  for (AllocationId id : ticket.overwritten_) {
    Allocation* a = table_.Find(id);  // pinned by the ticket
    if (a == nullptr || a->state != ResidencyState::kResident || a->host == nullptr) continue;
    if (absl::Status s = StartCopyInLocked(*a); !s.ok()) {
      // No copy queued: the data stays on the host, without the chunk.
      status.Update(UnmapChunkLocked(a->address, a->mapped_bytes, a->physical));
      a->physical = 0;
      status.Update(s);
    }
  }
  ticket.overwritten_.clear();
  return status;
}

absl::Status ResidencyManager::AfterOp(OpTicket ticket, bool op_ran) {
  MutexLock lock(&mu_);
  absl::Status status;
  if (op_ran) {  // Note [Overwritten allocations]: the op wrote them; their host copies go
    for (AllocationId id : ticket.overwritten_) {
      if (Allocation* a = table_.Find(id); a != nullptr) status.Update(ReleaseHostCopyLocked(*a));
    }
  } else {
    status.Update(RestoreOverwrittenLocked(ticket));
  }
  // Note [Current host copies] (residency_swap.cc): written, or maybe written (an op that failed
  // may have written part).
  for (AllocationId id : ticket.written_) {
    if (Allocation* a = table_.Find(id); a != nullptr) status.Update(HostCopyStaleLocked(*a));
  }
  if (!ticket.ids_.empty() || !ticket.freed_touched_.empty()) {
    absl::StatusOr<EventRef> event = events_.Record(ticket.stream_);
    if (event.ok()) {
      // Note [Words into freed memory]: held freed memory is released after the op.
      for (DeviceAddress address : ticket.freed_touched_) {
        for (FreedRange& r : reuse_cache_.entries()) {
          if (r.address == address) r.AddEvent(*event, ticket.stream_);
        }
        for (Retired& r : retired_) {
          if (r.address == address) r.AddEvent(*event, ticket.stream_);
        }
      }
      for (AllocationId id : ticket.ids_) {
        Allocation* a = table_.Find(id);
        if (a == nullptr) continue;
        a->lru_tick = ++tick_;
        // One entry per stream; drop entries already known complete.
        std::erase_if(a->last_uses, [&](const auto& use) {
          return use.first == ticket.stream_ || use.second->known_complete();
        });
        a->last_uses.emplace_back(ticket.stream_, *event);
      }
      for (AllocationId id : ticket.host_reads_) {  // Note [Reading the host copy]
        Allocation* a = table_.Find(id);            // pinned until UnpinLocked below
        std::erase_if(a->host_reads, [](const EventRef& e) { return e->known_complete(); });
        a->host_reads.push_back(*event);
      }
    } else {
      status = event.status();
    }
  }
  for (AllocationId id : ticket.host_reads_) --table_.Find(id)->host_readers;
  KeepReserveLocked();  // while the op's allocations are still pinned: they stay
  UnpinLocked(ticket.ids_);
  --active_ops_;
  unpinned_.SignalAll();
  return status;
}

void ResidencyManager::UnpinLocked(absl::Span<const AllocationId> ids) {
  for (AllocationId id : ids) {
    Allocation* a = table_.Find(id);
    if (a == nullptr) continue;
    if (--a->pins == 0 && a->free_requested) FreeLocked(a).IgnoreError();
  }
}

absl::Status ResidencyManager::ChargeExternal(int64_t bytes) {
  MutexLock lock(&mu_);
  if (absl::Status s = MakeRoomLocked(bytes, /*op=*/0, /*for_chunk=*/false); !s.ok()) {
    if (absl::IsResourceExhausted(s)) ++stats_.out_of_memory;
    return s;
  }
  external_bytes_ += bytes;
  AddDeviceBytesLocked(bytes);
  return absl::OkStatus();
}

void ResidencyManager::UnchargeExternal(int64_t bytes) {
  MutexLock lock(&mu_);
  device_bytes_ -= bytes;
  external_bytes_ -= bytes;
  NotifyMemoryLocked();
  unpinned_.SignalAll();
}

absl::Status ResidencyManager::Poll() {
  MutexLock lock(&mu_);
  return PollLocked();
}

absl::Status ResidencyManager::Drain() {
  MutexLock lock(&mu_);
  while (true) {
    if (absl::Status s = PollLocked(); !s.ok()) return s;
    EventRef event = AnyPendingEventLocked();
    if (event == nullptr) return absl::OkStatus();
    if (absl::Status s = WaitUnlocked(event); !s.ok()) return s;
  }
}

void ResidencyManager::MarkIteration() {
  MutexLock lock(&mu_);
  ++iteration_;
}

absl::Status ResidencyManager::WaitUnlocked(const EventRef& event) {
  EventRef keep = event;  // the caller's ref may live in state that changes meanwhile
  mu_.Unlock();
  const absl::Time start = absl::Now();
  absl::Status s = events_.Wait(keep);
  const absl::Duration waited = absl::Now() - start;
  mu_.Lock();
  stats_.swap_wait += waited;
  return s;
}

void ResidencyManager::ResetWindowPeak() {
  MutexLock lock(&mu_);
  stats_.window_peak_device_bytes = device_bytes_;
}

std::optional<AllocationInfo> ResidencyManager::Lookup(DeviceAddress address) const {
  MutexLock lock(&mu_);
  const Allocation* a = table_.FindContaining(address);
  if (a == nullptr) return std::nullopt;
  return AllocationInfo{a->id,    a->address,      a->bytes,       a->swappable,
                        a->state, a->first_use_op, a->last_use_op, a->use_count};
}

bool ResidencyManager::Holds(DeviceAddress address) const {
  MutexLock lock(&mu_);
  if (table_.FindContaining(address) != nullptr) return true;
  std::vector<DeviceAddress> freed;
  FreedTouchedLocked(AccessRange{address, 1, AccessRange::Mode::kRead}, &freed);
  return !freed.empty();
}

// Note [Words into freed memory]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A kernel's parameter words are scanned for addresses (interpose/hooks/kernel_args.h), and not
// every word is a pointer the kernel follows: a struct parameter may carry fields the host never
// set (PyTorch's ReduceOp leaves dst[1] alone for a reduction with one output), which hold stale
// stack contents, often the address of a tensor freed a moment ago. The program freed it, but
// the manager may still hold it mapped (the reuse cache, a release waiting for queued work).
// On a GPU without pooch such memory stays mapped in the driver's pool, so whatever the kernel
// does with the word, nothing faults. Under pooch it must stay the same: the manager's own
// release (an unmap) of held freed memory an op's ranges touch waits for that op's completion
// in stream order, like any use. The op is not made to wait for anything, and nothing is made
// resident for it: the memory is the program's no longer.
void ResidencyManager::FreedTouchedLocked(const AccessRange& range,
                                          std::vector<DeviceAddress>* out) const {
  auto add = [&](const FreedRange& r) {
    if (r.physical == 0) return;  // nothing mapped to wait for
    if (Overlaps(range.address, range.bytes, r.address, r.mapped_bytes) &&
        std::find(out->begin(), out->end(), r.address) == out->end()) {
      out->push_back(r.address);
    }
  };
  for (const FreedRange& r : reuse_cache_.entries()) add(r);
  for (const Retired& r : retired_) add(r);
}

std::vector<AccessRange> ResidencyManager::LiveRanges(int64_t* mapped_bytes) const {
  MutexLock lock(&mu_);
  std::vector<AccessRange> ranges;
  ranges.reserve(table_.size());
  int64_t total = 0;
  table_.ForEach([&](Allocation& a) {
    if (a.free_requested) return;  // the program freed it: no call of its may touch it
    ranges.push_back({a.address, a.bytes, AccessRange::Mode::kReadWrite});
    total += a.mapped_bytes;
  });
  if (mapped_bytes != nullptr) *mapped_bytes = total;
  return ranges;
}

// Note [Range checks]
// ~~~~~~~~~~~~~~~~~~~
// A copy or memset that runs past the end of an allocation, or lands in one already freed, is
// the program's bug; simgpu (and often a GPU) faults on it, but under pooch the neighbouring
// address range or a freed chunk kept for reuse is mapped, so it succeeded and silently
// overwrote another tensor, or wrote bytes a swap-out would not keep (the rounding after
// `bytes` is never copied). pooch knows every allocation's size, so the interposer checks the
// exact ranges of copies and memsets here and in the sub-allocator (SmallAllocator::CheckRange)
// before anything runs, and fails the call with its API's invalid-value error
// (interpose/process/managed.h). Only ranges that start in pooch's memory are judged: a range
// that starts elsewhere (host memory, another allocator) is not pooch's business. A range that
// starts in a freed allocation's range is caught while the manager still holds that range (in
// the reuse cache, or retired until its queued work completes); once the range is given back,
// the address is no longer pooch's, and reusing it for a new allocation makes it a live one.
// Ranges of kernels and library calls are not checked: a kernel's are guesses from its
// arguments, and a library call may be given a larger workspace size than it uses.
absl::Status ResidencyManager::CheckRange(DeviceAddress address, int64_t bytes) const {
  MutexLock lock(&mu_);
  if (const Allocation* a = table_.FindContaining(address); a != nullptr) {
    const DeviceAddress end = a->address + static_cast<DeviceAddress>(a->bytes);
    if (address >= end || bytes < 0 || static_cast<uint64_t>(bytes) > end - address) {
      return absl::InvalidArgumentError(absl::StrCat(
          bytes, " bytes at 0x", absl::Hex(address), " run past the end of the allocation at 0x",
          absl::Hex(a->address), " of ", a->bytes, " bytes"));
    }
    return absl::OkStatus();
  }
  const FreedRange* freed = nullptr;
  auto find = [&](const FreedRange& r) {
    if (freed == nullptr && Overlaps(address, 1, r.address, r.mapped_bytes)) freed = &r;
  };
  for (const FreedRange& r : reuse_cache_.entries()) find(r);
  for (const Retired& r : retired_) find(r);
  if (freed == nullptr) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(bytes, " bytes at 0x", absl::Hex(address),
                                                 " start in the allocation at 0x",
                                                 absl::Hex(freed->address), ", which was freed"));
}

ResidencyStats ResidencyManager::Stats() const {
  MutexLock lock(&mu_);
  ResidencyStats s = stats_;
  s.device_bytes = device_bytes_;
  s.cached_bytes = HeldForReuseBytesLocked();
  s.host_bytes = host_pool_.in_use_bytes();
  return s;
}

bool ResidencyManager::KeepForReuseLocked(Retired& r) {
  if (closing_ || !reuse_cache_.Fits(r.mapped_bytes)) return false;
  while (reuse_cache_.MustSpillFor(r.mapped_bytes)) {
    SpillReuseCacheLocked(reuse_cache_.Excess(r.mapped_bytes));
  }
  reuse_cache_.Put(std::move(r));  // a resident allocation's: no host copy, no swap to report
  // Note [Spare chunks] (chunk_pool.h): spares share the bound, and the spill above may have made
  // some.
  if (const int64_t over = reuse_cache_.bytes() + chunks_.spare_bytes() - reuse_cache_.limit();
      over > 0) {
    ReleaseSparesLocked(over).IgnoreError();
  }
  unpinned_.SignalAll();  // a MakeRoomLocked waiting for pins can spill it
  return true;
}

int64_t ResidencyManager::SpillReuseCacheLocked(int64_t bytes) {
  return reuse_cache_.Spill(
      bytes, events_,
      [&](FreedRange& range) ABSL_NO_THREAD_SAFETY_ANALYSIS {
        Retired r(std::move(range));
        ReleaseRetiredLocked(r).IgnoreError();
      },
      [&](FreedRange& range)
          ABSL_NO_THREAD_SAFETY_ANALYSIS { retired_.push_back(Retired(std::move(range))); });
}

int64_t ResidencyManager::HeldForReuseBytesLocked() const {
  return reuse_cache_.bytes() + chunks_.spare_bytes() + chunks_.retained_bytes();
}

void ResidencyManager::SetTimeCopies(bool on) {
  MutexLock lock(&mu_);
  copy_timer_.set_enabled(on);
}

std::vector<CopyTiming> ResidencyManager::TakeCopyTimings() {
  MutexLock lock(&mu_);
  return copy_timer_.TakeCompleted();
}

void ResidencyManager::NotifyMemoryLocked() {
  const int64_t host = host_pool_.in_use_bytes();
  stats_.peak_host_bytes = std::max(stats_.peak_host_bytes, host);
  if (observer_ != nullptr) observer_->OnMemory(device_bytes_, host, absl::Now());
}

void ResidencyManager::NotifySwapLocked(SwapRecord::Kind kind, const Allocation& a) {
  if (observer_ == nullptr) return;
  observer_->OnSwap(SwapRecord{kind, a.id, a.address, a.bytes, absl::Now(), SwapCopies(kind, a)});
}

bool ResidencyManager::SwapCopies(SwapRecord::Kind kind, const Allocation& a) {
  const bool in = kind == SwapRecord::Kind::kInStart || kind == SwapRecord::Kind::kInEnd;
  return in || a.out_copies;  // Note [Current host copies]
}

}  // namespace pooch
