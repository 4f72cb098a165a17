#include "core/small_alloc/small_allocator.h"

#include <algorithm>
#include <bit>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/units.h"

namespace pooch {
absl::StatusOr<std::unique_ptr<SmallAllocator>> SmallAllocator::Create(
    Device& device, SmallAllocatorOptions options) {
  // max_bytes 0 or 1 (POOCH_MIN_SWAP_BYTES 0 or 1: every allocation is swappable) is an
  // allocator that serves nothing and so never maps a slab; it must still exist, since the
  // interposer asks it about every free and pointer before the manager.
  if (options.max_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("small allocator: max_bytes ", options.max_bytes, " < 0"));
  }
  const int64_t g = device.Granularity();
  if (g < kMinBlock || !std::has_single_bit(static_cast<uint64_t>(g))) {
    return absl::InvalidArgumentError(
        absl::StrCat("small allocator: granularity ", g, " is not a power of two >= 512"));
  }
  return std::unique_ptr<SmallAllocator>(new SmallAllocator(device, std::move(options)));
}

SmallAllocator::SmallAllocator(Device& device, SmallAllocatorOptions options)
    : device_(device),
      options_(std::move(options)),
      slab_bytes_each_(
          RoundUp(std::max(device.Granularity(), options_.max_bytes), device.Granularity())) {}

SmallAllocator::~SmallAllocator() {
  MutexLock lock(&mu_);
  // Nothing may be unmapped while queued work uses it: wait for every batch. Blocks still
  // allocated belong to a program that is exiting; their slabs go too.
  (void)SealLocked();
  while (!batches_.empty()) {
    if (!CollectLocked(/*wait=*/true).ok()) break;
  }
  std::vector<DeviceAddress> bases;
  for (const auto& [base, physical] : slabs_) bases.push_back(base);
  for (DeviceAddress base : bases) (void)ReleaseSlabLocked(base);
  for (EventHandle e : spare_events_) (void)device_.DestroyEvent(e);
}

std::optional<DeviceAddress> SmallAllocator::SlabOfLocked(DeviceAddress address) const {
  auto it = slabs_.upper_bound(address);
  if (it == slabs_.begin()) return std::nullopt;
  --it;
  if (address - it->first >= static_cast<DeviceAddress>(slab_bytes_each_)) return std::nullopt;
  return it->first;
}

void SmallAllocator::InsertFreeLocked(DeviceAddress address, int64_t bytes) {
  free_by_address_.emplace(address, bytes);
  free_by_size_.emplace(bytes, address);
}

void SmallAllocator::EraseFreeLocked(DeviceAddress address, int64_t bytes) {
  free_by_address_.erase(address);
  free_by_size_.erase({bytes, address});
}

std::optional<DeviceAddress> SmallAllocator::TakeLocked(int64_t bytes, int64_t requested) {
  auto it = free_by_size_.lower_bound({bytes, 0});
  if (it == free_by_size_.end()) return std::nullopt;
  const auto [range_bytes, address] = *it;
  EraseFreeLocked(address, range_bytes);
  if (range_bytes > bytes) {
    InsertFreeLocked(address + static_cast<DeviceAddress>(bytes), range_bytes - bytes);
  }
  allocated_.emplace(address, Allocated{bytes, requested});
  live_bytes_ += bytes;
  peak_live_bytes_ = std::max(peak_live_bytes_, live_bytes_);
  return address;
}

absl::StatusOr<DeviceAddress> SmallAllocator::Allocate(int64_t bytes) {
  if (bytes < 1 || bytes >= options_.max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("small allocation of ", bytes,
                                                   " bytes outside [1, ", options_.max_bytes, ")"));
  }
  const int64_t block = RoundUp(bytes, kMinBlock);
  MutexLock lock(&mu_);
  if (std::optional<DeviceAddress> b = TakeLocked(block, bytes)) return *b;
  // Nothing free is large enough: see whether earlier frees became reusable
  // (Note [Reuse after free]).
  if (absl::Status s = SealLocked(); !s.ok()) return s;
  if (absl::Status s = CollectLocked(/*wait=*/false); !s.ok()) return s;
  if (std::optional<DeviceAddress> b = TakeLocked(block, bytes)) return *b;
  // Freed memory that could hold the request is still pending: wait for it rather than map a
  // new slab, which under a memory limit would push feature maps out (Note [Reuse after free]).
  while (batch_bytes_ >= block && !batches_.empty()) {
    ++waits_;
    if (absl::Status s = CollectLocked(/*wait=*/true); !s.ok()) return s;
    if (std::optional<DeviceAddress> b = TakeLocked(block, bytes)) return *b;
  }
  for (;;) {
    absl::Status made = NewSlabLocked();
    if (made.ok()) break;
    if (!absl::IsResourceExhausted(made) || batches_.empty()) return made;
    // No room for a slab: pending blocks are the only memory left to reuse; wait for the
    // oldest batch.
    ++waits_;
    if (absl::Status s = CollectLocked(/*wait=*/true); !s.ok()) return s;
    if (std::optional<DeviceAddress> b = TakeLocked(block, bytes)) return *b;
  }
  return *TakeLocked(block, bytes);
}

absl::Status SmallAllocator::Free(DeviceAddress address) {
  MutexLock lock(&mu_);
  auto it = allocated_.find(address);
  if (it == allocated_.end()) {
    if (!SlabOfLocked(address).has_value()) return absl::NotFoundError("not a small block");
    return absl::InvalidArgumentError(
        absl::StrCat("free of 0x", absl::Hex(address), ", which is not an allocated block"));
  }
  pending_.push_back(Block{address, it->second.bytes});
  live_bytes_ -= it->second.bytes;
  allocated_.erase(it);
  return absl::OkStatus();
}

std::optional<int64_t> SmallAllocator::BlockBytes(DeviceAddress address) const {
  MutexLock lock(&mu_);
  auto it = allocated_.find(address);
  if (it == allocated_.end()) return std::nullopt;
  return it->second.bytes;
}

std::optional<SmallAllocator::Requested> SmallAllocator::BlockContaining(
    DeviceAddress address) const {
  MutexLock lock(&mu_);
  auto it = allocated_.upper_bound(address);
  if (it == allocated_.begin()) return std::nullopt;
  --it;
  if (address - it->first >= static_cast<DeviceAddress>(it->second.requested)) return std::nullopt;
  return Requested{it->first, it->second.requested};
}

bool SmallAllocator::InSlab(DeviceAddress address) const {
  if (address < span_begin_.load(std::memory_order_relaxed) ||
      address >= span_end_.load(std::memory_order_relaxed)) {
    return false;
  }
  MutexLock lock(&mu_);
  return SlabOfLocked(address).has_value();
}

absl::Status SmallAllocator::CheckRange(DeviceAddress address, int64_t bytes) const {
  MutexLock lock(&mu_);
  if (!SlabOfLocked(address).has_value()) return absl::OkStatus();
  // The block at or before `address`; `address` is in it unless past its end.
  auto next = allocated_.upper_bound(address);
  const bool in_block =
      next != allocated_.begin() &&
      address - std::prev(next)->first < static_cast<DeviceAddress>(std::prev(next)->second.bytes);
  if (!in_block) {
    return absl::InvalidArgumentError(absl::StrCat(bytes, " bytes at 0x", absl::Hex(address),
                                                   " start in freed small-allocation memory"));
  }
  const DeviceAddress block = std::prev(next)->first;
  const int64_t block_bytes = std::prev(next)->second.bytes;
  const DeviceAddress end = block + static_cast<DeviceAddress>(block_bytes);
  if (bytes < 0 || static_cast<uint64_t>(bytes) > end - address) {
    return absl::InvalidArgumentError(absl::StrCat(
        bytes, " bytes at 0x", absl::Hex(address), " run past the end of the block at 0x",
        absl::Hex(block), " of ", block_bytes, " bytes"));
  }
  return absl::OkStatus();
}

absl::Status SmallAllocator::Poll() {
  MutexLock lock(&mu_);
  return CollectLocked(/*wait=*/false);
}

absl::Status SmallAllocator::SealLocked() {
  if (pending_.empty()) return absl::OkStatus();
  std::vector<StreamHandle> streams = {kDefaultStream};
  if (options_.unordered_streams) options_.unordered_streams(&streams);
  Batch batch;
  auto give_back = [&] {
    spare_events_.insert(spare_events_.end(), batch.events.begin(), batch.events.end());
  };
  for (StreamHandle stream : streams) {
    EventHandle event = 0;
    if (!spare_events_.empty()) {
      event = spare_events_.back();
      spare_events_.pop_back();
    } else {
      absl::StatusOr<EventHandle> created = device_.CreateEvent();
      if (!created.ok()) {
        give_back();
        return created.status();
      }
      event = *created;
    }
    batch.events.push_back(event);
    if (absl::Status s = device_.RecordEvent(event, stream); !s.ok()) {
      give_back();
      return s;
    }
  }
  for (const Block& b : pending_) batch_bytes_ += b.bytes;
  batch.blocks = std::move(pending_);
  batches_.push_back(std::move(batch));
  pending_.clear();
  return absl::OkStatus();
}

absl::Status SmallAllocator::CollectLocked(bool wait) {
  bool first = true;
  while (!batches_.empty()) {
    Batch& batch = batches_.front();
    // Batches complete in the order they were sealed on each stream, but query every event of
    // each anyway (cheap, and a device may report them out of order).
    for (EventHandle event : batch.events) {
      if (wait && first) {
        if (absl::Status s = device_.SynchronizeEvent(event); !s.ok()) return s;
        continue;
      }
      absl::StatusOr<bool> done = device_.QueryEvent(event);
      if (!done.ok()) return done.status();
      if (!*done) return absl::OkStatus();
    }
    first = false;
    spare_events_.insert(spare_events_.end(), batch.events.begin(), batch.events.end());
    std::vector<Block> blocks = std::move(batch.blocks);
    batches_.pop_front();
    for (const Block& b : blocks) batch_bytes_ -= b.bytes;
    for (const Block& block : blocks) ReturnBlockLocked(block);
  }
  return absl::OkStatus();
}

void SmallAllocator::ReturnBlockLocked(Block block) {
  const DeviceAddress base = *SlabOfLocked(block.address);
  const DeviceAddress slab_end = base + static_cast<DeviceAddress>(slab_bytes_each_);
  DeviceAddress start = block.address;
  DeviceAddress end = block.address + static_cast<DeviceAddress>(block.bytes);
  // The free range after the block, if it starts where the block ends within the same slab
  // (another slab's reservation may happen to follow this one's).
  if (end < slab_end) {
    if (auto next = free_by_address_.find(end); next != free_by_address_.end()) {
      end += static_cast<DeviceAddress>(next->second);
      EraseFreeLocked(next->first, next->second);
    }
  }
  // The free range before it, likewise.
  if (start > base) {
    if (auto prev = free_by_address_.lower_bound(start); prev != free_by_address_.begin()) {
      --prev;
      if (prev->first >= base && prev->first + static_cast<DeviceAddress>(prev->second) == start) {
        start = prev->first;
        EraseFreeLocked(prev->first, prev->second);
      }
    }
  }
  if (start == base && end == slab_end && slabs_.size() > 1) {
    // Errors here leave the slab mapped and charged (a leak, not a hazard).
    (void)ReleaseSlabLocked(base);
    return;
  }
  InsertFreeLocked(start, static_cast<int64_t>(end - start));
}

absl::Status SmallAllocator::NewSlabLocked() {
  const int64_t bytes = slab_bytes_each_;
  if (options_.charge) {
    if (absl::Status s = options_.charge(bytes); !s.ok()) return s;
  }
  auto undo_charge = [&] {
    if (options_.uncharge) options_.uncharge(bytes);
  };
  absl::StatusOr<DeviceAddress> base = device_.ReserveAddress(bytes);
  if (!base.ok()) {
    undo_charge();
    return base.status();
  }
  absl::StatusOr<PhysicalHandle> physical = device_.CreatePhysical(bytes);
  if (!physical.ok()) {
    (void)device_.FreeAddress(*base, bytes);
    undo_charge();
    return physical.status();
  }
  if (absl::Status s = device_.Map(*base, bytes, *physical); !s.ok()) {
    (void)device_.ReleasePhysical(*physical);
    (void)device_.FreeAddress(*base, bytes);
    undo_charge();
    return s;
  }
  slabs_.emplace(*base, *physical);
  span_begin_.store(std::min(span_begin_.load(std::memory_order_relaxed), *base),
                    std::memory_order_relaxed);
  span_end_.store(std::max(span_end_.load(std::memory_order_relaxed),
                           *base + static_cast<DeviceAddress>(bytes)),
                  std::memory_order_relaxed);
  peak_slab_bytes_ =
      std::max(peak_slab_bytes_, static_cast<int64_t>(slabs_.size()) * slab_bytes_each_);
  InsertFreeLocked(*base, bytes);
  return absl::OkStatus();
}

absl::Status SmallAllocator::ReleaseSlabLocked(DeviceAddress base) {
  auto it = slabs_.find(base);
  const PhysicalHandle physical = it->second;
  slabs_.erase(it);
  // No range of the slab is in the free index: it is released either wholly merged
  // (ReturnBlockLocked, which does not insert the merged range) or by the destructor, after
  // which nothing looks.
  const int64_t bytes = slab_bytes_each_;
  absl::Status s = device_.Unmap(base, bytes);
  if (s.ok()) s = device_.ReleasePhysical(physical);
  if (s.ok()) s = device_.FreeAddress(base, bytes);
  if (options_.uncharge) options_.uncharge(bytes);
  return s;
}

SmallAllocatorStats SmallAllocator::Stats() const {
  MutexLock lock(&mu_);
  SmallAllocatorStats st;
  st.slabs = static_cast<int64_t>(slabs_.size());
  st.slab_bytes = st.slabs * slab_bytes_each_;
  st.peak_slab_bytes = peak_slab_bytes_;
  st.live_blocks = static_cast<int64_t>(allocated_.size());
  st.live_bytes = live_bytes_;
  st.peak_live_bytes = peak_live_bytes_;
  st.pending_blocks = static_cast<int64_t>(pending_.size());
  for (const Batch& b : batches_) st.pending_blocks += static_cast<int64_t>(b.blocks.size());
  st.batches = static_cast<int64_t>(batches_.size());
  st.waits = waits_;
  return st;
}

}  // namespace pooch
