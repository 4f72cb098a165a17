#include "tests/simgpu/device/memory/range_allocator.h"

#include <iterator>

namespace simgpu {

RangeAllocator::RangeAllocator(uint64_t size) : free_bytes_(size) { free_.emplace(0, size); }

bool RangeAllocator::TakeExact(uint64_t offset, uint64_t bytes) {
  auto it = free_.upper_bound(offset);
  if (it == free_.begin()) return false;
  --it;
  uint64_t lo = it->first, hi = it->first + it->second;
  if (offset < lo || offset + bytes > hi || offset + bytes < offset) return false;
  free_.erase(it);
  if (lo < offset) free_.emplace(lo, offset - lo);
  if (offset + bytes < hi) free_.emplace(offset + bytes, hi - offset - bytes);
  free_bytes_ -= bytes;
  return true;
}

std::optional<uint64_t> RangeAllocator::Allocate(uint64_t bytes, uint64_t alignment,
                                                 uint64_t hint) {
  if (bytes == 0 || alignment == 0 || (alignment & (alignment - 1)) != 0) return std::nullopt;
  if (hint != 0 && hint % alignment == 0 && TakeExact(hint, bytes)) return hint;
  for (const auto& [lo, len] : free_) {
    uint64_t start = (lo + alignment - 1) & ~(alignment - 1);
    if (start < lo || start - lo > len || len - (start - lo) < bytes) continue;
    TakeExact(start, bytes);
    return start;
  }
  return std::nullopt;
}

void RangeAllocator::Free(uint64_t offset, uint64_t bytes) {
  uint64_t lo = offset, hi = offset + bytes;
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && next->first == hi) {
    hi += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == lo) {
      lo = prev->first;
      free_.erase(prev);
    }
  }
  free_.emplace(lo, hi - lo);
  free_bytes_ += bytes;
}

}  // namespace simgpu
