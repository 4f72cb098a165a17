// ForwardingDevice: a Device that passes every call to another one, for test doubles that change
// a few calls (count events, refuse a record) and leave the rest to a FakeDevice.
//
//   class CountingDevice final : public ForwardingDevice {
//    public:
//     CountingDevice() : ForwardingDevice(fake_) {}
//     absl::StatusOr<EventHandle> CreateTimingEvent() override {
//       ++made;
//       return inner().CreateTimingEvent();
//     }
//     ...
//   };
//
// Thread safety: as the inner device's.
#ifndef POOCH_CORE_TESTING_FORWARDING_DEVICE_H_
#define POOCH_CORE_TESTING_FORWARDING_DEVICE_H_

#include <cstdint>

#include "core/device/device.h"

namespace pooch {

class ForwardingDevice : public Device {
 public:
  // `inner` must outlive this device; it may be a member of the derived class (not used before
  // the first call).
  explicit ForwardingDevice(Device& inner) : inner_(inner) {}

  int64_t Granularity() const override { return inner_.Granularity(); }
  absl::StatusOr<DeviceMemoryInfo> MemoryInfo() override { return inner_.MemoryInfo(); }
  absl::StatusOr<DeviceAddress> ReserveAddress(int64_t bytes) override {
    return inner_.ReserveAddress(bytes);
  }
  absl::Status FreeAddress(DeviceAddress address, int64_t bytes) override {
    return inner_.FreeAddress(address, bytes);
  }
  absl::StatusOr<PhysicalHandle> CreatePhysical(int64_t bytes) override {
    return inner_.CreatePhysical(bytes);
  }
  absl::Status ReleasePhysical(PhysicalHandle handle) override {
    return inner_.ReleasePhysical(handle);
  }
  absl::Status Map(DeviceAddress address, int64_t bytes, PhysicalHandle handle) override {
    return inner_.Map(address, bytes, handle);
  }
  absl::Status Unmap(DeviceAddress address, int64_t bytes) override {
    return inner_.Unmap(address, bytes);
  }
  absl::StatusOr<void*> AllocHost(int64_t bytes) override { return inner_.AllocHost(bytes); }
  absl::Status FreeHost(void* host) override { return inner_.FreeHost(host); }
  absl::StatusOr<StreamHandle> CreateStream() override { return inner_.CreateStream(); }
  absl::Status DestroyStream(StreamHandle stream) override { return inner_.DestroyStream(stream); }
  absl::Status CopyToHostAsync(void* host, DeviceAddress device, int64_t bytes,
                               StreamHandle stream) override {
    return inner_.CopyToHostAsync(host, device, bytes, stream);
  }
  absl::Status CopyToDeviceAsync(DeviceAddress device, const void* host, int64_t bytes,
                                 StreamHandle stream) override {
    return inner_.CopyToDeviceAsync(device, host, bytes, stream);
  }
  absl::StatusOr<EventHandle> CreateEvent() override { return inner_.CreateEvent(); }
  absl::Status DestroyEvent(EventHandle event) override { return inner_.DestroyEvent(event); }
  absl::Status RecordEvent(EventHandle event, StreamHandle stream) override {
    return inner_.RecordEvent(event, stream);
  }
  absl::StatusOr<bool> QueryEvent(EventHandle event) override { return inner_.QueryEvent(event); }
  absl::Status SynchronizeEvent(EventHandle event) override {
    return inner_.SynchronizeEvent(event);
  }
  absl::Status StreamWaitEvent(StreamHandle stream, EventHandle event) override {
    return inner_.StreamWaitEvent(stream, event);
  }
  absl::StatusOr<EventHandle> CreateTimingEvent() override { return inner_.CreateTimingEvent(); }
  absl::StatusOr<double> ElapsedMicroseconds(EventHandle start, EventHandle end) override {
    return inner_.ElapsedMicroseconds(start, end);
  }

 protected:
  Device& inner() { return inner_; }

 private:
  Device& inner_;
};

}  // namespace pooch

#endif  // POOCH_CORE_TESTING_FORWARDING_DEVICE_H_
