// HostPool: pinned host buffers for swapped-out data, under POOCH_HOST_MEMORY_LIMIT.
//
// Pinning is slow (cuMemHostAlloc costs milliseconds), so released buffers are kept and handed
// out again to a request of the same size; kept buffers count against the limit and are given
// back to the device (cuMemFreeHost) when a new request would not fit otherwise.
//
// Acquire fails with ResourceExhausted when the limit would be exceeded or the device cannot pin
// more; the caller then leaves the allocation resident (Note [Swap-out failure]).
//
// Thread safety: not thread-safe; the residency manager calls it under its mutex.
#ifndef POOCH_CORE_RESIDENCY_PARTS_RESIDENCY_HOST_POOL_H_
#define POOCH_CORE_RESIDENCY_PARTS_RESIDENCY_HOST_POOL_H_

#include <cstdint>
#include <map>
#include <optional>

#include "absl/status/statusor.h"
#include "core/device/device.h"

namespace pooch {

class HostPool {
 public:
  // `limit`: bytes of pinned memory in use plus kept; nullopt = unlimited.
  HostPool(Device& device, std::optional<int64_t> limit) : device_(device), limit_(limit) {}
  ~HostPool();
  HostPool(const HostPool&) = delete;
  HostPool& operator=(const HostPool&) = delete;

  absl::StatusOr<void*> Acquire(int64_t bytes);
  // REQUIRES: `host` came from Acquire(bytes) and no queued copy uses it any more.
  void Release(void* host, int64_t bytes);
  // Gives every kept buffer back to the device.
  void Trim();

  int64_t in_use_bytes() const { return in_use_; }
  int64_t kept_bytes() const { return kept_; }

 private:
  Device& device_;
  const std::optional<int64_t> limit_;
  std::multimap<int64_t, void*> kept_buffers_;  // size -> buffer
  int64_t in_use_ = 0;
  int64_t kept_ = 0;
};

}  // namespace pooch

#endif  // POOCH_CORE_RESIDENCY_PARTS_RESIDENCY_HOST_POOL_H_
