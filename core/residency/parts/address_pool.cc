// AddressPool (address_pool.h): reserved ranges kept by size.
#include "core/residency/parts/address_pool.h"

namespace pooch {

std::optional<DeviceAddress> AddressPool::Take(int64_t bytes) {
  auto it = by_size_.find(bytes);
  if (it == by_size_.end()) return std::nullopt;
  const DeviceAddress address = it->second.front();
  it->second.pop_front();
  if (it->second.empty()) by_size_.erase(it);
  bytes_ -= bytes;
  return address;
}

bool AddressPool::Keep(DeviceAddress address, int64_t bytes) {
  if (bytes <= 0 || bytes_ + bytes > max_bytes_) return false;
  by_size_[bytes].push_back(address);
  bytes_ += bytes;
  return true;
}

std::vector<std::pair<DeviceAddress, int64_t>> AddressPool::TakeAll() {
  std::vector<std::pair<DeviceAddress, int64_t>> all;
  for (const auto& [bytes, addresses] : by_size_) {
    for (DeviceAddress address : addresses) all.emplace_back(address, bytes);
  }
  by_size_.clear();
  bytes_ = 0;
  return all;
}

}  // namespace pooch
