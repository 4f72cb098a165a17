// managed.h: the residency manager inside the host program (POOCH_POLICY other than "off"), and
// the helpers every managed hook uses.
//
// The manager is created on the first call that needs it (an allocation or an op on the
// program's own path): the runtime is initialised first (a real cudaFree(nullptr), which makes
// the primary context current), then core's ResidencyManager over a CudaDevice with the
// configured limit (unset: the device's free memory). If that fails, pooch says so once and
// passes every call through from then on.
//
// Note [Small allocations]: allocations below POOCH_MIN_SWAP_BYTES go to the real allocator and
// stay resident; their bytes are charged to the manager's budget (ChargeExternal) so that the
// limit covers everything the program holds. Larger ones are the manager's: a reserved address
// range, backed by a physical chunk while resident (DESIGN.md, decision 1).
//
// Thread safety: all functions may be called from any thread.
#ifndef POOCH_INTERPOSE_MANAGED_H_
#define POOCH_INTERPOSE_MANAGED_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/residency.h"
#include "interpose/errors.h"
#include "interpose/log.h"

namespace pooch::interpose {

// The manager, created on first use; nullptr when the policy is "off" or creation failed.
pooch::ResidencyManager* GetManager();
// The manager if it has been created (for the summary and for Poll on synchronisation).
pooch::ResidencyManager* ExistingManager();

// POOCH_MIN_SWAP_BYTES.
int64_t MinSwapBytes();

// Terminates the POOCH_TRACE file, if one is being written (at exit).
void CloseTrace();

// Remembers a small (pass-through) allocation, and forgets it returning its size (0 if unknown).
void RememberSmall(uintptr_t address, size_t bytes);
size_t ForgetSmall(uintptr_t address);

// The ranges an op touches; entries with a null address are dropped.
class Ranges {
 public:
  using Mode = pooch::AccessRange::Mode;
  void Add(const void* address, size_t bytes, Mode mode) {
    Add(reinterpret_cast<uintptr_t>(address), bytes, mode);
  }
  void Add(uintptr_t address, size_t bytes, Mode mode) {
    if (address == 0) return;
    ranges_.push_back({address, static_cast<int64_t>(bytes == 0 ? 1 : bytes), mode});
  }
  const std::vector<pooch::AccessRange>& get() const { return ranges_; }

 private:
  std::vector<pooch::AccessRange> ranges_;
};

// Makes the ranges resident on `stream`, runs `forward` (the real call), records the op's
// use. Returns what `forward` returned, or the API's error for a failed swap-in.
template <typename Ret, typename Forward>
Ret RunOp(uintptr_t stream, const Ranges& ranges, Forward&& forward) {
  pooch::ResidencyManager* manager = GetManager();
  if (manager == nullptr || ranges.get().empty()) return forward();
  absl::StatusOr<pooch::OpTicket> ticket = manager->BeforeOp(stream, ranges.get());
  if (!ticket.ok()) {
    POOCH_LOG_AT(kError, "cannot make an op's memory resident: %.*s",
                 static_cast<int>(ticket.status().message().size()),
                 ticket.status().message().data());
    return StatusTo<Ret>(ticket.status());
  }
  const Ret result = forward();
  if (absl::Status s = manager->AfterOp(*std::move(ticket)); !s.ok()) {
    POOCH_LOG_AT(kError, "after an op: %.*s", static_cast<int>(s.message().size()),
                 s.message().data());
  }
  return result;
}

// What a small (pass-through) allocation of `bytes` costs on the device: rounded up to
// kSmallGranule, the unit in which cudaMalloc sizes count against capacity (simgpu models the
// same 512 bytes; CUDA's own allocator aligns to at least 256 and sub-allocates in such units).
inline constexpr int64_t kSmallGranule = 512;
constexpr int64_t SmallChargeBytes(size_t bytes) {
  return (static_cast<int64_t>(bytes) + kSmallGranule - 1) / kSmallGranule * kSmallGranule;
}

// cudaMalloc-like: the manager's for large sizes, the real allocator (charged) for small ones.
// `real_alloc()` performs the real allocation into *out and returns the API's code.
template <typename Ret, typename RealAlloc>
Ret ManagedAlloc(uintptr_t* out, size_t bytes, Ret success, RealAlloc&& real_alloc) {
  pooch::ResidencyManager* manager = GetManager();
  if (manager == nullptr || out == nullptr || bytes == 0) return real_alloc();
  if (static_cast<int64_t>(bytes) >= MinSwapBytes()) {
    absl::StatusOr<pooch::DeviceAddress> address = manager->Allocate(static_cast<int64_t>(bytes));
    if (!address.ok()) {
      POOCH_LOG_AT(kInfo, "allocation of %zu bytes failed: %.*s", bytes,
                   static_cast<int>(address.status().message().size()),
                   address.status().message().data());
      return StatusTo<Ret>(address.status());
    }
    *out = *address;
    return success;
  }
  // The real allocator spends whole granules on each allocation, so charging the requested
  // bytes under-counts: a program with hundreds of small tensors (a BN layer's 64-float scale,
  // shift, statistics, gradients, momentum) then finds the device full while the budget says
  // there is room, and the real cudaMalloc fails with nothing left to evict.
  const int64_t charged = SmallChargeBytes(bytes);
  if (absl::Status s = manager->ChargeExternal(charged); !s.ok()) {
    return StatusTo<Ret>(s);
  }
  const Ret result = real_alloc();
  if (result == success) {
    RememberSmall(*out, static_cast<size_t>(charged));
  } else {
    manager->UnchargeExternal(charged);
  }
  return result;
}

// cudaFree-like: `real_free()` frees through the real allocator.
template <typename Ret, typename RealFree>
Ret ManagedFree(uintptr_t address, Ret success, RealFree&& real_free) {
  pooch::ResidencyManager* manager = GetManager();
  if (manager == nullptr || address == 0) return real_free();
  if (std::optional<pooch::AllocationInfo> info = manager->Lookup(address);
      info.has_value() && info->address == address) {
    return StatusTo<Ret>(manager->Free(address));
  }
  const size_t small = ForgetSmall(address);
  const Ret result = real_free();
  if (result == success && small > 0) manager->UnchargeExternal(static_cast<int64_t>(small));
  return result;
}

// The limit and what is in use, for cudaMemGetInfo/cuMemGetInfo. False when unmanaged.
bool ManagedMemoryInfo(size_t* free_bytes, size_t* total_bytes);

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_MANAGED_H_
