#include "core/residency/parts/residency_table.h"

#include <algorithm>

namespace pooch {

bool Overlaps(DeviceAddress address, int64_t bytes, DeviceAddress base, int64_t mapped_bytes) {
  const uint64_t length = static_cast<uint64_t>(std::max<int64_t>(bytes, 1));
  return address < base + static_cast<DeviceAddress>(mapped_bytes) &&
         (address >= base || base - address < length);
}

Allocation* AllocationTable::Insert(std::unique_ptr<Allocation> allocation) {
  Allocation* a = allocation.get();
  by_address_[a->address] = a;
  by_id_[a->id] = std::move(allocation);
  return a;
}

std::unique_ptr<Allocation> AllocationTable::Remove(AllocationId id) {
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return nullptr;
  std::unique_ptr<Allocation> a = std::move(it->second);
  by_id_.erase(it);
  by_address_.erase(a->address);
  return a;
}

Allocation* AllocationTable::Find(AllocationId id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second.get();
}

Allocation* AllocationTable::FindContaining(DeviceAddress address) const {
  auto it = by_address_.upper_bound(address);
  if (it == by_address_.begin()) return nullptr;
  --it;
  Allocation* a = it->second;
  return address < a->address + static_cast<DeviceAddress>(a->mapped_bytes) ? a : nullptr;
}

void AllocationTable::ForEachOverlapping(DeviceAddress address, int64_t bytes,
                                         absl::FunctionRef<void(Allocation&)> fn) const {
  const DeviceAddress end = address + static_cast<DeviceAddress>(bytes > 0 ? bytes : 1);
  auto it = by_address_.upper_bound(address);
  if (it != by_address_.begin()) {
    auto prev = std::prev(it);
    if (address < prev->second->address + static_cast<DeviceAddress>(prev->second->mapped_bytes)) {
      fn(*prev->second);
    }
  }
  for (; it != by_address_.end() && it->first < end; ++it) fn(*it->second);
}

void AllocationTable::ForEach(absl::FunctionRef<void(Allocation&)> fn) const {
  for (const auto& [address, a] : by_address_) fn(*a);
}

}  // namespace pooch
