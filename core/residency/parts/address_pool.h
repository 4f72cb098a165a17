// AddressPool: reserved address ranges with nothing mapped in them, kept by size for the next
// allocation of that size (Note [Address pool]).
//
//   AddressPool pool(/*max_bytes=*/4 * limit);
//   std::optional<DeviceAddress> va = pool.Take(bytes);  // else device.ReserveAddress(bytes)
//   if (!pool.Keep(va, bytes)) device.FreeAddress(va, bytes);  // once nothing is mapped there
//
// Note [Address pool]
// ~~~~~~~~~~~~~~~~~~~
// Every swappable allocation has its own reserved range, so an allocation the reuse cache cannot
// serve costs a cuMemAddressReserve and its free a cuMemAddressFree (19 us each on an A100;
// issue 38), and a training loop allocates the same sizes in every iteration. A range holds no
// memory, so a range whose chunk was unmapped is kept here instead of freed, and the next
// allocation of exactly its size takes it: a steady iteration reserves and frees no address
// space once the pool holds, for each size, as many ranges as the iteration has of it at once.
// A range is kept only once nothing is mapped in it (the manager keeps it after the unmap that
// follows its last user's work, Note [Swap-out ordering]), so its next owner maps its own chunk
// there as in a new range; that a stale pointer to the old allocation now falls in the new one
// is what any allocator's address reuse gives (cudaMalloc's too). Bound: at most max_bytes of
// address space (<= 0: none kept), the oldest of a size handed out first; the manager frees
// what is left when it closes.
//
// Invariants: bytes() is the sum of the kept ranges' sizes, at most max_bytes.
//
// Thread safety: not thread-safe; the residency manager calls it under its mutex.
#ifndef POOCH_CORE_RESIDENCY_PARTS_ADDRESS_POOL_H_
#define POOCH_CORE_RESIDENCY_PARTS_ADDRESS_POOL_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/device/device.h"

namespace pooch {

class AddressPool {
 public:
  explicit AddressPool(int64_t max_bytes) : max_bytes_(max_bytes) {}

  // A kept range of exactly `bytes`, no longer kept; nullopt when there is none.
  std::optional<DeviceAddress> Take(int64_t bytes);
  // Keeps the reserved range [address, address + bytes), which has nothing mapped; false when
  // that would exceed max_bytes (the caller frees it).
  bool Keep(DeviceAddress address, int64_t bytes);
  // Every kept range (address, bytes), no longer kept: the caller frees them.
  std::vector<std::pair<DeviceAddress, int64_t>> TakeAll();
  int64_t bytes() const { return bytes_; }

 private:
  const int64_t max_bytes_;
  absl::flat_hash_map<int64_t, std::deque<DeviceAddress>> by_size_;  // oldest first
  int64_t bytes_ = 0;
};

}  // namespace pooch

#endif  // POOCH_CORE_RESIDENCY_PARTS_ADDRESS_POOL_H_
