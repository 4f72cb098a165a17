// range_allocator.h: first-fit allocation of aligned ranges from [0, size).
//
// Hands out offsets in the reserved device address space (and in the physical-memory file).
// First fit by address keeps results deterministic: the same program gets the same addresses.
//
// Thread safety: none; the owner locks.
#ifndef SIMGPU_DEVICE_RANGE_ALLOCATOR_H_
#define SIMGPU_DEVICE_RANGE_ALLOCATOR_H_

#include <cstdint>
#include <map>
#include <optional>

namespace simgpu {

class RangeAllocator {
 public:
  explicit RangeAllocator(uint64_t size);

  // An offset aligned to `alignment` (a power of two) with `bytes` free after it, or nullopt.
  // With `hint` != 0, tries [hint, hint + bytes) first.
  std::optional<uint64_t> Allocate(uint64_t bytes, uint64_t alignment, uint64_t hint = 0);

  // Returns [offset, offset + bytes), which must have been allocated.
  void Free(uint64_t offset, uint64_t bytes);

  uint64_t free_bytes() const { return free_bytes_; }

 private:
  bool TakeExact(uint64_t offset, uint64_t bytes);

  std::map<uint64_t, uint64_t> free_;  // offset -> length, disjoint and coalesced
  uint64_t free_bytes_;
};

}  // namespace simgpu

#endif  // SIMGPU_DEVICE_RANGE_ALLOCATOR_H_
