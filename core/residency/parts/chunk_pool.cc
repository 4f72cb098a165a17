#include "core/residency/parts/chunk_pool.h"

#include <algorithm>

namespace pooch {
namespace {

// Note [Retained chunks]: the list is compacted (its stale entries dropped) when it reaches this
// many entries.
constexpr size_t kRetainedCompactAt = 1024;

}  // namespace

bool ChunkPool::KeepSpare(int64_t bytes, PhysicalHandle handle, int64_t byte_limit) {
  if (spares_.size() >= static_cast<size_t>(std::max(0, max_spares_)) ||
      spare_bytes_ + bytes > byte_limit) {
    return false;
  }
  spares_.push_back({bytes, handle});
  spare_bytes_ += bytes;
  return true;
}

bool ChunkPool::HasSpare(int64_t bytes) const {
  return std::any_of(spares_.begin(), spares_.end(),
                     [&](const Spare& spare) { return spare.bytes == bytes; });
}

std::optional<PhysicalHandle> ChunkPool::TakeSpare(int64_t bytes) {
  auto it = std::find_if(spares_.begin(), spares_.end(),
                         [&](const Spare& spare) { return spare.bytes == bytes; });
  if (it == spares_.end()) return std::nullopt;
  const PhysicalHandle handle = it->handle;
  spares_.erase(it);
  spare_bytes_ -= bytes;
  return handle;
}

std::vector<ChunkPool::Spare> ChunkPool::TakeOldestSpares(int64_t bytes) {
  std::vector<Spare> taken;
  int64_t taken_bytes = 0;
  while (!spares_.empty() && taken_bytes < bytes) {
    taken.push_back(spares_.front());
    spares_.erase(spares_.begin());
    spare_bytes_ -= taken.back().bytes;
    taken_bytes += taken.back().bytes;
  }
  return taken;
}

void ChunkPool::Retain(AllocationId id, int64_t mapped_bytes,
                       absl::FunctionRef<bool(AllocationId)> is_retained) {
  if (retained_.size() >= kRetainedCompactAt) {
    std::erase_if(retained_, [&](AllocationId other) { return !is_retained(other); });
  }
  retained_.push_back(id);
  retained_bytes_ += mapped_bytes;
}

int64_t ChunkPool::ReclaimRetained(int64_t bytes, absl::FunctionRef<int64_t(AllocationId)> unmap) {
  int64_t reclaimed = 0;
  size_t i = 0;
  for (; i < retained_.size() && reclaimed < bytes; ++i) {
    const int64_t unmapped = unmap(retained_[i]);
    retained_bytes_ -= unmapped;
    reclaimed += unmapped;
  }
  retained_.erase(retained_.begin(), retained_.begin() + static_cast<ptrdiff_t>(i));
  return reclaimed;
}

}  // namespace pooch
