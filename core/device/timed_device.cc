// TimedDevice (timed_device.h): each call forwarded, its host time added to its kind's sum.
#include "core/device/timed_device.h"

#include <chrono>
#include <utility>

namespace pooch {

const char* DeviceCallKindName(DeviceCallKind kind) {
  switch (kind) {
    case DeviceCallKind::kReserve:
      return "reserve";
    case DeviceCallKind::kCreate:
      return "create";
    case DeviceCallKind::kMap:
      return "map";
    case DeviceCallKind::kPinned:
      return "pinned";
    case DeviceCallKind::kCopy:
      return "copy";
    case DeviceCallKind::kEvent:
      return "event";
    case DeviceCallKind::kWait:
      return "wait";
    case DeviceCallKind::kCount:
      break;
  }
  return "?";
}

const char* MemoryCallName(MemoryCall call) {
  static constexpr const char* kNames[] = {
      "cuMemAddressReserve", "cuMemAddressFree", "cuMemCreate",    "cuMemRelease",
      "cuMemMap",            "cuMemSetAccess",   "cuMemUnmap",     "cuMemHostAlloc",
      "cuMemFreeHost",
  };
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<size_t>(MemoryCall::kCount));
  return kNames[static_cast<size_t>(call)];
}

MemoryCallCounts TimedDevice::MemoryCalls() const {
  MemoryCallCounts m;
  for (size_t i = 0; i < m.of.size(); ++i) {
    m.of[i] = memory_calls_[i].load(std::memory_order_relaxed);
  }
  return m;
}

DeviceCallTimes TimedDevice::Times() const {
  DeviceCallTimes t;
  for (size_t i = 0; i < sums_.size(); ++i) t.of[i] = sums_[i].Load();
  return t;
}

template <typename Call>
auto TimedDevice::Timed(DeviceCallKind kind, Call&& call) {
  const auto start = std::chrono::steady_clock::now();
  auto result = std::forward<Call>(call)();
  const auto elapsed = std::chrono::steady_clock::now() - start;
  sums_[static_cast<size_t>(kind)].Add(
      std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
  return result;
}

absl::StatusOr<DeviceMemoryInfo> TimedDevice::MemoryInfo() {
  return Timed(DeviceCallKind::kEvent, [&] { return inner_.MemoryInfo(); });
}
absl::StatusOr<DeviceAddress> TimedDevice::ReserveAddress(int64_t bytes) {
  Count(MemoryCall::kAddressReserve);
  return Timed(DeviceCallKind::kReserve, [&] { return inner_.ReserveAddress(bytes); });
}
absl::Status TimedDevice::FreeAddress(DeviceAddress address, int64_t bytes) {
  Count(MemoryCall::kAddressFree);
  return Timed(DeviceCallKind::kReserve, [&] { return inner_.FreeAddress(address, bytes); });
}
absl::StatusOr<PhysicalHandle> TimedDevice::CreatePhysical(int64_t bytes) {
  Count(MemoryCall::kMemCreate);
  return Timed(DeviceCallKind::kCreate, [&] { return inner_.CreatePhysical(bytes); });
}
absl::Status TimedDevice::ReleasePhysical(PhysicalHandle handle) {
  Count(MemoryCall::kMemRelease);
  return Timed(DeviceCallKind::kCreate, [&] { return inner_.ReleasePhysical(handle); });
}
absl::Status TimedDevice::Map(DeviceAddress address, int64_t bytes, PhysicalHandle handle) {
  Count(MemoryCall::kMemMap);
  Count(MemoryCall::kMemSetAccess);
  return Timed(DeviceCallKind::kMap, [&] { return inner_.Map(address, bytes, handle); });
}
absl::Status TimedDevice::Unmap(DeviceAddress address, int64_t bytes) {
  Count(MemoryCall::kMemUnmap);
  return Timed(DeviceCallKind::kMap, [&] { return inner_.Unmap(address, bytes); });
}
absl::StatusOr<void*> TimedDevice::AllocHost(int64_t bytes) {
  Count(MemoryCall::kHostAlloc);
  return Timed(DeviceCallKind::kPinned, [&] { return inner_.AllocHost(bytes); });
}
absl::Status TimedDevice::FreeHost(void* host) {
  Count(MemoryCall::kFreeHost);
  return Timed(DeviceCallKind::kPinned, [&] { return inner_.FreeHost(host); });
}
absl::StatusOr<StreamHandle> TimedDevice::CreateStream() {
  return Timed(DeviceCallKind::kEvent, [&] { return inner_.CreateStream(); });
}
absl::Status TimedDevice::DestroyStream(StreamHandle stream) {
  return Timed(DeviceCallKind::kEvent, [&] { return inner_.DestroyStream(stream); });
}
absl::Status TimedDevice::CopyToHostAsync(void* host, DeviceAddress device, int64_t bytes,
                                          StreamHandle stream) {
  return Timed(DeviceCallKind::kCopy,
               [&] { return inner_.CopyToHostAsync(host, device, bytes, stream); });
}
absl::Status TimedDevice::CopyToDeviceAsync(DeviceAddress device, const void* host, int64_t bytes,
                                            StreamHandle stream) {
  return Timed(DeviceCallKind::kCopy,
               [&] { return inner_.CopyToDeviceAsync(device, host, bytes, stream); });
}
absl::StatusOr<EventHandle> TimedDevice::CreateEvent() {
  return Timed(DeviceCallKind::kEvent, [&] { return inner_.CreateEvent(); });
}
absl::Status TimedDevice::DestroyEvent(EventHandle event) {
  return Timed(DeviceCallKind::kEvent, [&] { return inner_.DestroyEvent(event); });
}
absl::Status TimedDevice::RecordEvent(EventHandle event, StreamHandle stream) {
  return Timed(DeviceCallKind::kEvent, [&] { return inner_.RecordEvent(event, stream); });
}
absl::StatusOr<bool> TimedDevice::QueryEvent(EventHandle event) {
  return Timed(DeviceCallKind::kEvent, [&] { return inner_.QueryEvent(event); });
}
absl::Status TimedDevice::SynchronizeEvent(EventHandle event) {
  return Timed(DeviceCallKind::kWait, [&] { return inner_.SynchronizeEvent(event); });
}
absl::Status TimedDevice::StreamWaitEvent(StreamHandle stream, EventHandle event) {
  return Timed(DeviceCallKind::kEvent, [&] { return inner_.StreamWaitEvent(stream, event); });
}
absl::StatusOr<EventHandle> TimedDevice::CreateTimingEvent() {
  return Timed(DeviceCallKind::kEvent, [&] { return inner_.CreateTimingEvent(); });
}
absl::StatusOr<double> TimedDevice::ElapsedMicroseconds(EventHandle start, EventHandle end) {
  return Timed(DeviceCallKind::kEvent, [&] { return inner_.ElapsedMicroseconds(start, end); });
}

}  // namespace pooch
