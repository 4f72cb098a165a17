// Device memory: the reserved range, cudaMalloc-style allocations, pinned host memory and VMM
// (see "Memory" in device.h).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <iterator>

#include "tests/simgpu/device/device.h"

namespace simgpu {
namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kTiB = uint64_t{1} << 40;
constexpr uint64_t kMallocGranule = 512;  // MemAlloc sizes count against capacity in these
// A slab's size unless its first block needs more (Note [Malloc slabs]).
constexpr uint64_t kSlabBytes = uint64_t{64} << 20;

uint64_t RoundUp(uint64_t x, uint64_t to) { return (x + to - 1) / to * to; }

// Replaces [addr, addr+bytes) by inaccessible, unbacked address space (drops its pages).
bool MakeInaccessible(uint64_t addr, uint64_t bytes) {
  void* p = mmap(reinterpret_cast<void*>(addr), bytes, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  return p != MAP_FAILED;
}

}  // namespace

Err Device::EnsureReservedLocked() {
  if (va_base_ != 0) return Err::kOk;
  uint64_t want = std::max(kTiB, RoundUp(4 * config_.machine.capacity_bytes, kGranularity));
  // Room for cudaMalloc blocks plus the VA ranges pooch reserves beside them. A smaller range
  // still works, so halve on failure: sanitizer runtimes (TSan's shadow layout) and address-space
  // limits can refuse a terabyte.
  const uint64_t smallest = RoundUp(2 * config_.machine.capacity_bytes, kGranularity);
  void* p = MAP_FAILED;
  int mmap_errno = 0;
  for (;;) {
    // Over-reserve by one granule so the base can be aligned to it.
    p = mmap(nullptr, want + kGranularity, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
             -1, 0);
    if (p != MAP_FAILED) break;
    mmap_errno = errno;
    if (want / 2 < smallest) break;
    want = RoundUp(want / 2, kGranularity);
  }
  if (p == MAP_FAILED) {
    std::fprintf(stderr, "simgpu: cannot reserve %" PRIu64 " bytes of address space: %s\n", want,
                 std::strerror(mmap_errno));
    return Err::kOutOfMemory;
  }
  uint64_t raw = reinterpret_cast<uint64_t>(p);
  uint64_t base = RoundUp(raw, kGranularity);
  if (base > raw) munmap(p, base - raw);
  if (base + want < raw + want + kGranularity) {
    munmap(reinterpret_cast<void*>(base + want), raw + kGranularity - base);
  }
  memfd_ = memfd_create("simgpu-physical", MFD_CLOEXEC);
  if (memfd_ < 0 || ftruncate(memfd_, static_cast<off_t>(want)) != 0) {
    std::fprintf(stderr, "simgpu: cannot create the physical-memory file: %s\n",
                 std::strerror(errno));
    munmap(reinterpret_cast<void*>(base), want);
    if (memfd_ >= 0) close(memfd_);
    memfd_ = -1;
    return Err::kOutOfMemory;
  }
  va_base_ = base;
  va_bytes_ = want;
  va_ = std::make_unique<RangeAllocator>(want);
  phys_ = std::make_unique<RangeAllocator>(want);
  return Err::kOk;
}

// Note [Malloc slabs]
// ~~~~~~~~~~~~~~~~~~~
// MemAlloc blocks are cut from slabs, runs of the reserved range mapped read-write once
// (kSlabBytes, or the block's size rounded up to 2 MiB when larger), rather than mapped one by one.
// The kernel caps a process's mappings (vm.max_map_count, 65530 by default):
// a mapping per block plus the PROT_NONE guard page after it cost two, so cudaMalloc failed
// after about 32,700 live blocks, fewer than a framework without a caching allocator holds.
// Slabs make the count grow with the memory held, not with the number of blocks: first fit
// packs blocks into the lowest slab with room, and a slab is mapped PROT_NONE again (its pages
// dropped, its addresses back to va_) as soon as its last block goes. Blocks are whole pages, so
// freeing one drops exactly its pages (madvise MADV_DONTNEED): the memory is given back and reads
// as zeros again, as a fresh mapping did, without splitting the slab's mapping.
// What is given up is the guard page, and that is not what catches bad accesses: every op's
// ranges are checked against mapped_, exact to the byte (CheckAccessLocked), so an overrun or a
// use after free is the sticky illegal address it was, by any op; a guard page only made the host
// itself fault on the page after a block. VMM keeps a real mapping per cuMemMap, since unmapping
// is what pooch does there and what simgpu must judge.
//
// Note [Stream-ordered reuse]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// MemFreeAsync on stream A takes effect when A reaches the free, at virtual time t. Until the
// host's clock reaches t the block stays in the pool, a PendingFree that still holds its capacity
// and addresses. CUDA's default pool hands such a block to cudaMallocAsync on stream S only when it
// knows that S runs after the free:
//   - S is A: A's own order puts every later use after the free;
//   - S is ordered after t through an event or the legacy stream
//     (cudaMemPoolReuseFollowEventDependencies): here, S's ready time (Timeline::ReadyTime) is
//     at or past t. The race checker (hazards.h) judges order by the same time, so a reuse this
//     allows is never a race there;
//   - the free has completed (cudaMemPoolReuseAllowOpportunistic): here, the host's clock is at
//     or past t, which it reaches by synchronising. Such a block leaves the pool for good
//     (RetireFreesLocked), as the default pool (release threshold 0) gives memory back at
//     synchronisation.
// Otherwise S gets fresh memory. When the device has none, the pool makes S wait for the earliest
// frees that make room (cudaMemPoolReuseAllowInternalDependencies: Timeline::Wait), then reuses
// them. cudaMalloc and cuMemCreate take nothing from the pool: while unfinished frees hold the
// memory they fail with out of memory, as on a GPU until the program synchronises. A pending block
// larger than the request is split; the rest stays pending with the same stream and time.
// Handing a freed block to any stream at once would make simgpu blame the program for a race at
// its first use on another stream; the free's hazard record stays as a check that it never does.

bool Device::ReusableLocked(const PendingFree& f, const StreamClock& s) const {
  return f.stream == s.id || f.free_ns <= timeline_.ReadyTime(s);
}

void Device::AddPendingLocked(uint64_t base, const PendingFree& f) {
  pending_.emplace(base, f);
  pending_by_time_.emplace(f.free_ns, base);
  pending_by_size_.emplace(f.va_bytes, base);
}

Device::PendingFree Device::TakePendingLocked(uint64_t base) {
  auto it = pending_.find(base);
  PendingFree f = it->second;
  pending_by_time_.erase({f.free_ns, base});
  pending_by_size_.erase({f.va_bytes, base});
  pending_.erase(it);
  return f;
}

void Device::RetireFreesLocked() {
  while (!pending_by_time_.empty() && pending_by_time_.begin()->first <= timeline_.host_ns()) {
    uint64_t base = pending_by_time_.begin()->second;
    PendingFree f = TakePendingLocked(base);
    used_bytes_ -= f.phys_bytes;
    ReturnBlockLocked(base, f.va_bytes);
  }
}

std::optional<uint64_t> Device::FindReusableLocked(const StreamClock& s, uint64_t va_bytes,
                                                   uint64_t align) const {
  for (auto it = pending_by_size_.lower_bound({va_bytes, 0}); it != pending_by_size_.end(); ++it) {
    uint64_t base = it->second;
    if (base % align == 0 && ReusableLocked(pending_.at(base), s)) return base;
  }
  return std::nullopt;
}

bool Device::MakeRoomLocked(StreamClock& s, uint64_t need) {
  uint64_t now = 0;
  for (const auto& [base, f] : pending_) {
    if (ReusableLocked(f, s)) now += f.phys_bytes;
  }
  if (now < need) {
    // Not enough without waiting: the earliest frees on other streams that make room.
    uint64_t later = 0;
    double wait_ns = 0;
    for (const auto& [free_ns, base] : pending_by_time_) {
      const PendingFree& f = pending_.at(base);
      if (f.phys_bytes == 0 || ReusableLocked(f, s)) continue;
      later += f.phys_bytes;
      wait_ns = free_ns;
      if (now + later >= need) break;
    }
    if (now + later < need) return false;
    timeline_.Wait(s, wait_ns);
  }
  // The capacity passes to this allocation; the blocks' addresses stay pending until reused or
  // retired, since other streams are not ordered after their frees.
  uint64_t freed = 0;
  for (auto& [base, f] : pending_) {
    if (freed >= need) break;
    if (f.phys_bytes == 0 || !ReusableLocked(f, s)) continue;
    freed += f.phys_bytes;
    used_bytes_ -= f.phys_bytes;
    f.phys_bytes = 0;
  }
  return true;
}

Device::Slab& Device::SlabOfLocked(uint64_t addr) {
  return std::prev(slabs_.upper_bound(addr))->second;
}

std::optional<uint64_t> Device::CarveLocked(uint64_t va_bytes, uint64_t align) {
  for (auto& [base, slab] : slabs_) {
    if (std::optional<uint64_t> off = slab.space.Allocate(va_bytes, align)) {
      ++slab.blocks;
      return base + *off;
    }
  }
  const uint64_t slab_bytes = std::max(kSlabBytes, RoundUp(va_bytes, kGranularity));
  std::optional<uint64_t> off = va_->Allocate(slab_bytes, kGranularity);
  if (!off) return std::nullopt;
  const uint64_t base = va_base_ + *off;
  void* p = mmap(reinterpret_cast<void*>(base), slab_bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    va_->Free(*off, slab_bytes);
    return std::nullopt;
  }
  Slab& slab = slabs_.emplace(base, Slab{slab_bytes, 1, RangeAllocator(slab_bytes)}).first->second;
  return base + *slab.space.Allocate(va_bytes, align);  // a new slab holds it: aligned, big enough
}

void Device::ReturnBlockLocked(uint64_t base, uint64_t va_bytes) {
  auto it = std::prev(slabs_.upper_bound(base));
  Slab& slab = it->second;
  slab.space.Free(base - it->first, va_bytes);
  if (--slab.blocks > 0) return;
  MakeInaccessible(it->first, slab.bytes);
  va_->Free(it->first - va_base_, slab.bytes);
  slabs_.erase(it);
}

Err Device::AllocLocked(uint64_t bytes, StreamClock* s, void** out) {
  if (bytes == 0 || out == nullptr) return Err::kInvalidValue;
  if (sticky_ != Err::kOk) return sticky_;
  if (Err e = EnsureReservedLocked(); e != Err::kOk) return e;
  RetireFreesLocked();
  const uint64_t phys = RoundUp(bytes, kMallocGranule);
  const uint64_t va_bytes = RoundUp(bytes, kPage);
  if (phys < bytes || va_bytes < bytes) return Err::kOutOfMemory;
  const uint64_t align = bytes >= kGranularity ? kGranularity : kPage;
  auto held_by = [&](const std::optional<uint64_t>& base) {
    return base ? pending_.at(*base).phys_bytes : 0;
  };
  std::optional<uint64_t> reuse;
  if (s != nullptr) reuse = FindReusableLocked(*s, va_bytes, align);
  const uint64_t room = config_.machine.capacity_bytes - used_bytes_;
  if (phys > room + held_by(reuse)) {
    if (s == nullptr || !MakeRoomLocked(*s, phys - room)) return Err::kOutOfMemory;
    reuse = FindReusableLocked(*s, va_bytes, align);  // a wait may have made more blocks usable
  }
  uint64_t base = 0;
  if (reuse) {
    base = *reuse;
    PendingFree f = TakePendingLocked(base);
    used_bytes_ -= f.phys_bytes;  // the block's capacity passes to this allocation
    if (f.va_bytes > va_bytes) {
      f.va_bytes -= va_bytes;
      f.phys_bytes = 0;
      AddPendingLocked(base + va_bytes, f);
      ++SlabOfLocked(base).blocks;
    }
  } else {
    std::optional<uint64_t> at = CarveLocked(va_bytes, align);
    if (!at) return Err::kOutOfMemory;
    base = *at;
  }
  used_bytes_ += phys;
  allocs_[base] = Alloc{bytes, va_bytes, phys};
  mapped_.Assign(base, base + bytes, Mapping{Mapping::Kind::kMalloc, base, true, true});
  freed_.Erase(base, base + bytes);
  // No hazard reset here: the record a stream-ordered free left (MemFreeAsync) still checks that
  // the block was handed out only after its free.
  *out = reinterpret_cast<void*>(base);
  return Err::kOk;
}

Err Device::MemAlloc(uint64_t bytes, void** out) {
  CallLock lock(*this, HostCall::kMalloc);
  return AllocLocked(bytes, nullptr, out);
}

Err Device::MemAllocAsync(uint64_t bytes, void* stream, void** out) {
  CallLock lock(*this, HostCall::kMallocAsync);
  StreamClock* s = ResolveStreamLocked(stream);
  if (s == nullptr) return Err::kInvalidHandle;
  return AllocLocked(bytes, s, out);
}

Err Device::MemFree(void* ptr) {
  CallLock lock(*this, HostCall::kFree);
  // cudaFree synchronises the device first.
  HostWaitLocked("cudaFree", timeline_.DeviceDone());
  return FreeLocked(ptr, nullptr);
}

Err Device::MemFreeAsync(void* ptr, void* stream) {
  CallLock lock(*this, HostCall::kFreeAsync);
  return FreeLocked(ptr, stream);
}

Err Device::FreeLocked(void* ptr, void* stream) {
  if (sticky_ != Err::kOk) return sticky_;
  uint64_t base = reinterpret_cast<uint64_t>(ptr);
  auto it = allocs_.find(base);
  if (it == allocs_.end()) return Err::kInvalidValue;
  StreamClock* s = ResolveStreamLocked(stream);
  if (s == nullptr) return Err::kInvalidHandle;
  const Alloc a = it->second;
  double t = timeline_.ReadyTime(*s);
  if (std::optional<Race> race = hazards_.CheckRelease(base, base + a.bytes, s->id, t)) {
    if (Err e = ReportRaceLocked("cudaFreeAsync", "frees", s->id, t, *race); e != Err::kOk) {
      return e;
    }
  }
  // Ops run when issued, so nothing will touch the pages again: drop them now.
  madvise(ptr, a.va_bytes, MADV_DONTNEED);
  mapped_.Erase(base, base + a.bytes);
  freed_.Assign(base, base + a.bytes, true);
  // A later use of these addresses on another stream that may start before t is a use of
  // memory that is not yet free in stream order.
  hazards_.Reset(base, base + a.bytes,
                 t > timeline_.host_ns() ? Use{"cudaFreeAsync", s->id, t} : Use{});
  allocs_.erase(it);
  if (t > timeline_.host_ns()) {
    AddPendingLocked(base, PendingFree{a.va_bytes, a.phys_bytes, s->id, t});
  } else {
    used_bytes_ -= a.phys_bytes;
    ReturnBlockLocked(base, a.va_bytes);
  }
  return Err::kOk;
}

void Device::MemInfo(uint64_t* free_bytes, uint64_t* total_bytes) {
  CallLock lock(*this, HostCall::kQuery);
  RetireFreesLocked();
  *free_bytes = config_.machine.capacity_bytes - used_bytes_;
  *total_bytes = config_.machine.capacity_bytes;
}

Err Device::HostAlloc(uint64_t bytes, void** out) {
  if (bytes == 0 || out == nullptr) return Err::kInvalidValue;
  uint64_t len = RoundUp(bytes, kPage);
  if (len < bytes) return Err::kOutOfMemory;
  // NORESERVE and never touched here: under SIMGPU_COMPUTE=timing no page is ever touched.
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED) return Err::kOutOfMemory;
  CallLock lock(*this, HostCall::kHostAlloc, bytes);
  pinned_[reinterpret_cast<uint64_t>(p)] = len;
  *out = p;
  return Err::kOk;
}

Err Device::HostFree(void* ptr) {
  CallLock lock(*this, HostCall::kHostFree);
  uint64_t base = reinterpret_cast<uint64_t>(ptr);
  auto it = pinned_.find(base);
  if (it == pinned_.end()) return Err::kInvalidValue;
  // cudaFreeHost synchronises the device, like cudaFree.
  HostWaitLocked("cudaFreeHost", timeline_.DeviceDone());
  hazards_.Reset(base, base + it->second, Use{});
  munmap(ptr, it->second);
  pinned_.erase(it);
  return Err::kOk;
}

// --- VMM ---

Err Device::PhysCreate(uint64_t bytes, uint64_t* handle) {
  if (bytes == 0 || bytes % kGranularity != 0 || handle == nullptr) return Err::kInvalidValue;
  CallLock lock(*this, HostCall::kMemCreate);
  if (sticky_ != Err::kOk) return sticky_;
  if (Err e = EnsureReservedLocked(); e != Err::kOk) return e;
  RetireFreesLocked();  // the pool's unfinished frees still hold their memory
  if (bytes > config_.machine.capacity_bytes - used_bytes_) return Err::kOutOfMemory;
  std::optional<uint64_t> off = phys_->Allocate(bytes, kGranularity);
  if (!off) return Err::kOutOfMemory;
  used_bytes_ += bytes;
  *handle = next_handle_++;
  phys_handles_[*handle] = Phys{bytes, *off};
  return Err::kOk;
}

void Device::DropPhysLocked(uint64_t handle) {
  auto it = phys_handles_.find(handle);
  const Phys& p = it->second;
  // Give the pages back (they are zero again if this range is reused).
  fallocate(memfd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(p.file_offset),
            static_cast<off_t>(p.bytes));
  phys_->Free(p.file_offset, p.bytes);
  used_bytes_ -= p.bytes;
  phys_handles_.erase(it);
}

Err Device::PhysRelease(uint64_t handle) {
  CallLock lock(*this, HostCall::kMemRelease);
  auto it = phys_handles_.find(handle);
  if (it == phys_handles_.end() || it->second.released) return Err::kInvalidValue;
  it->second.released = true;
  if (it->second.maps == 0) DropPhysLocked(handle);
  return Err::kOk;
}

Err Device::AddressReserve(uint64_t bytes, uint64_t alignment, uint64_t hint, void** out) {
  if (bytes == 0 || bytes % kGranularity != 0 || out == nullptr) return Err::kInvalidValue;
  if (alignment == 0) alignment = kGranularity;
  if ((alignment & (alignment - 1)) != 0 || alignment % kGranularity != 0) {
    return Err::kInvalidValue;
  }
  CallLock lock(*this, HostCall::kAddressReserve);
  if (sticky_ != Err::kOk) return sticky_;
  if (Err e = EnsureReservedLocked(); e != Err::kOk) return e;
  uint64_t hint_off = InDeviceRange(hint, bytes) ? hint - va_base_ : 0;
  std::optional<uint64_t> off = va_->Allocate(bytes, alignment, hint_off);
  if (!off) return Err::kOutOfMemory;
  reserved_[va_base_ + *off] = bytes;
  freed_.Erase(va_base_ + *off, va_base_ + *off + bytes);
  *out = reinterpret_cast<void*>(va_base_ + *off);
  return Err::kOk;
}

Err Device::AddressFree(void* ptr, uint64_t bytes) {
  CallLock lock(*this, HostCall::kAddressFree);
  uint64_t base = reinterpret_cast<uint64_t>(ptr);
  auto it = reserved_.find(base);
  if (it == reserved_.end() || it->second != bytes) return Err::kInvalidValue;
  bool still_mapped = false;
  mapped_.ForEachOverlap(base, base + bytes,
                         [&](uint64_t, uint64_t, const Mapping&) { still_mapped = true; });
  if (still_mapped) {
    std::fprintf(stderr,
                 "simgpu: cuMemAddressFree: [0x%" PRIx64 ", +%" PRIu64
                 ") still has mappings; cuMemUnmap them first\n",
                 base, bytes);
    return Err::kInvalidValue;
  }
  va_->Free(base - va_base_, bytes);
  reserved_.erase(it);
  return Err::kOk;
}

Err Device::Map(void* ptr, uint64_t bytes, uint64_t offset, uint64_t handle) {
  uint64_t base = reinterpret_cast<uint64_t>(ptr);
  if (bytes == 0 || bytes % kGranularity != 0 || offset % kGranularity != 0 ||
      base % kGranularity != 0) {
    return Err::kInvalidValue;
  }
  CallLock lock(*this, HostCall::kMemMap);
  if (sticky_ != Err::kOk) return sticky_;
  auto h = phys_handles_.find(handle);
  if (h == phys_handles_.end() || h->second.released) return Err::kInvalidHandle;
  if (offset > h->second.bytes || bytes > h->second.bytes - offset) return Err::kInvalidValue;
  // The range must lie inside one reservation and be unmapped.
  auto r = reserved_.upper_bound(base);
  if (r == reserved_.begin()) return Err::kInvalidValue;
  --r;
  if (base + bytes > r->first + r->second) return Err::kInvalidValue;
  bool overlaps = false;
  mapped_.ForEachOverlap(base, base + bytes,
                         [&](uint64_t, uint64_t, const Mapping&) { overlaps = true; });
  if (overlaps) return Err::kInvalidValue;
  void* p = mmap(ptr, bytes, PROT_NONE, MAP_SHARED | MAP_FIXED | MAP_NORESERVE, memfd_,
                 static_cast<off_t>(h->second.file_offset + offset));
  if (p == MAP_FAILED) return Err::kOutOfMemory;
  ++h->second.maps;
  mapped_.Assign(base, base + bytes, Mapping{Mapping::Kind::kVmm, handle, false, false});
  return Err::kOk;
}

Err Device::Unmap(void* ptr, uint64_t bytes) {
  uint64_t base = reinterpret_cast<uint64_t>(ptr);
  if (bytes == 0) return Err::kInvalidValue;
  CallLock lock(*this, HostCall::kMemUnmap);
  if (sticky_ != Err::kOk) return sticky_;
  // Every byte must be VMM-mapped and every mapping touched must lie wholly inside the range.
  uint64_t bad = 0;
  if (!mapped_.Covers(
          base, base + bytes, [](const Mapping& m) { return m.kind == Mapping::Kind::kVmm; },
          &bad)) {
    return Err::kInvalidValue;
  }
  bool partial = false;
  std::vector<uint64_t> handles;
  mapped_.ForEachOverlap(base, base + bytes, [&](uint64_t lo, uint64_t hi, const Mapping& m) {
    if (lo < base || hi > base + bytes) partial = true;
    handles.push_back(m.owner);
  });
  if (partial) return Err::kInvalidValue;
  double t = timeline_.host_ns();
  if (std::optional<Race> race = hazards_.CheckRelease(base, base + bytes, kHostStreamId, t)) {
    if (Err e = ReportRaceLocked("cuMemUnmap", "unmaps", kHostStreamId, t, *race); e != Err::kOk) {
      return e;
    }
  }
  MakeInaccessible(base, bytes);
  mapped_.Erase(base, base + bytes);
  hazards_.Reset(base, base + bytes, Use{});
  for (uint64_t handle : handles) {
    Phys& p = phys_handles_.at(handle);
    if (--p.maps == 0 && p.released) DropPhysLocked(handle);
  }
  return Err::kOk;
}

Err Device::SetAccess(void* ptr, uint64_t bytes, bool read, bool write) {
  uint64_t base = reinterpret_cast<uint64_t>(ptr);
  if (bytes == 0) return Err::kInvalidValue;
  CallLock lock(*this, HostCall::kMemSetAccess);
  if (sticky_ != Err::kOk) return sticky_;
  uint64_t bad = 0;
  if (!mapped_.Covers(
          base, base + bytes, [](const Mapping& m) { return m.kind == Mapping::Kind::kVmm; },
          &bad)) {
    return Err::kInvalidValue;
  }
  int prot = (read ? PROT_READ : 0) | (write ? PROT_WRITE : 0);
  if (mprotect(ptr, bytes, prot == 0 ? PROT_NONE : prot) != 0) return Err::kInvalidValue;
  mapped_.ForEachSplit(base, base + bytes, [&](uint64_t, uint64_t, Mapping& m) {
    m.read = read;
    m.write = write;
  });
  return Err::kOk;
}

}  // namespace simgpu
