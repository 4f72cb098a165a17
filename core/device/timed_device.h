// TimedDevice: a Device that forwards every call to another and adds up the host time each kind
// of call took, so that the summary can say where pooch's host time goes on a real GPU
// (Note [Host time]).
//
//   CudaDevice cuda = ...;
//   TimedDevice timed(cuda);
//   auto manager = ResidencyManager::Create(timed, options);
//   ...
//   DeviceCallTimes t = timed.Times();  // t[DeviceCallKind::kMap].calls, .nanoseconds
//   MemoryCallCounts m = timed.MemoryCalls();  // m[MemoryCall::kMemCreate]: cuMemCreate calls
//
// Note [Host time]
// ~~~~~~~~~~~~~~~~
// On simgpu the host's time costs nothing: the figures are virtual time. On a GPU, a hook that
// maps memory, waits for an event or pins host memory delays the program's next launch, and a
// plan whose copies all overlap can still run slower than predicted when the host falls behind
// the device (seen on an H200: torchvision's ResNet-50 planned at 116 ms ran at 386 ms). The
// summary's `host:` line adds up that time: the hooks' own work around the real calls
// (interpose/process/host_time.h) and, within it, the device calls pooch makes, by kind. Two
// clock reads per call (a few tens of nanoseconds) are the whole cost.
//
// Thread safety: as the wrapped device; the sums are atomic.
#ifndef POOCH_CORE_DEVICE_TIMED_DEVICE_H_
#define POOCH_CORE_DEVICE_TIMED_DEVICE_H_

#include <array>
#include <atomic>
#include <cstdint>

#include "core/base/call_sum.h"
#include "core/device/device.h"

namespace pooch {

// The kinds of device call, as the summary names them.
enum class DeviceCallKind {
  // The virtual memory management calls, in three kinds because their costs differ.
  kReserve,  // ReserveAddress, FreeAddress
  kCreate,   // CreatePhysical, ReleasePhysical
  kMap,      // Map (with its access setting), Unmap
  kPinned,   // AllocHost, FreeHost
  kCopy,     // CopyToHostAsync, CopyToDeviceAsync (queuing them, not their transfer)
  kEvent,    // the rest: events (create, destroy, record, query, stream waits, elapsed time),
             // streams, MemoryInfo
  kWait,     // SynchronizeEvent: the host blocked until the device got there
  kCount,
};

// "reserve", "create", "map", "pinned", ...
const char* DeviceCallKindName(DeviceCallKind kind);

// The driver memory calls, one by one (the summary's per-iteration host_steady: line): each
// Device method that manages memory is one driver call, but for Map, which is cuMemMap then
// cuMemSetAccess over the range it mapped (interpose/device/cuda_device.cc), so that both count
// one per Map.
enum class MemoryCall {
  kAddressReserve,  // ReserveAddress
  kAddressFree,     // FreeAddress
  kMemCreate,       // CreatePhysical
  kMemRelease,      // ReleasePhysical
  kMemMap,          // Map
  kMemSetAccess,    // Map
  kMemUnmap,        // Unmap
  kHostAlloc,       // AllocHost
  kFreeHost,        // FreeHost
  kCount,
};

// "cuMemAddressReserve", "cuMemCreate", ...: the driver function's name.
const char* MemoryCallName(MemoryCall call);

struct MemoryCallCounts {
  std::array<int64_t, static_cast<size_t>(MemoryCall::kCount)> of{};
  int64_t operator[](MemoryCall call) const { return of[static_cast<size_t>(call)]; }
};

struct DeviceCallTimes {
  std::array<CallSum, static_cast<size_t>(DeviceCallKind::kCount)> of{};
  const CallSum& operator[](DeviceCallKind kind) const { return of[static_cast<size_t>(kind)]; }
};

class TimedDevice final : public Device {
 public:
  // `inner` must outlive this.
  explicit TimedDevice(Device& inner) : inner_(inner) {}

  DeviceCallTimes Times() const;
  MemoryCallCounts MemoryCalls() const;

  int64_t Granularity() const override { return inner_.Granularity(); }
  absl::StatusOr<DeviceMemoryInfo> MemoryInfo() override;
  absl::StatusOr<DeviceAddress> ReserveAddress(int64_t bytes) override;
  absl::Status FreeAddress(DeviceAddress address, int64_t bytes) override;
  absl::StatusOr<PhysicalHandle> CreatePhysical(int64_t bytes) override;
  absl::Status ReleasePhysical(PhysicalHandle handle) override;
  absl::Status Map(DeviceAddress address, int64_t bytes, PhysicalHandle handle) override;
  absl::Status Unmap(DeviceAddress address, int64_t bytes) override;
  absl::StatusOr<void*> AllocHost(int64_t bytes) override;
  absl::Status FreeHost(void* host) override;
  absl::StatusOr<StreamHandle> CreateStream() override;
  absl::Status DestroyStream(StreamHandle stream) override;
  absl::Status CopyToHostAsync(void* host, DeviceAddress device, int64_t bytes,
                               StreamHandle stream) override;
  absl::Status CopyToDeviceAsync(DeviceAddress device, const void* host, int64_t bytes,
                                 StreamHandle stream) override;
  absl::StatusOr<EventHandle> CreateEvent() override;
  absl::Status DestroyEvent(EventHandle event) override;
  absl::Status RecordEvent(EventHandle event, StreamHandle stream) override;
  absl::StatusOr<bool> QueryEvent(EventHandle event) override;
  absl::Status SynchronizeEvent(EventHandle event) override;
  absl::Status StreamWaitEvent(StreamHandle stream, EventHandle event) override;
  absl::StatusOr<EventHandle> CreateTimingEvent() override;
  absl::StatusOr<double> ElapsedMicroseconds(EventHandle start, EventHandle end) override;

 private:
  // Runs `call` and adds its host time to `kind`'s sum.
  template <typename Call>
  auto Timed(DeviceCallKind kind, Call&& call);
  void Count(MemoryCall call) {
    memory_calls_[static_cast<size_t>(call)].fetch_add(1, std::memory_order_relaxed);
  }

  Device& inner_;
  std::array<AtomicCallSum, static_cast<size_t>(DeviceCallKind::kCount)> sums_;
  std::array<std::atomic<int64_t>, static_cast<size_t>(MemoryCall::kCount)> memory_calls_{};
};

}  // namespace pooch

#endif  // POOCH_CORE_DEVICE_TIMED_DEVICE_H_
