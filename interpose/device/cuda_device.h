// cuda_device.h: core's Device (core/device/device.h) on the CUDA driver's virtual memory
// management API, through the real driver functions (interpose/symbols/hook_table.h), never
// through pooch's own hooks.
//
//   absl::StatusOr<std::unique_ptr<CudaDevice>> device = CudaDevice::Create();
//   auto manager = ResidencyManager::Create(**device, options);
//
// Create() must run on a thread whose current context is the program's (the runtime's primary
// context, made current by a runtime call); the device remembers that context and makes it
// current on any other thread that calls it. Physical memory is pinned device memory on the
// context's device (CU_MEM_ALLOCATION_TYPE_PINNED); host memory is portable pinned memory.
//
// Thread safety: every method may be called concurrently (the driver calls are thread-safe).
#ifndef POOCH_INTERPOSE_DEVICE_CUDA_DEVICE_H_
#define POOCH_INTERPOSE_DEVICE_CUDA_DEVICE_H_

#include <memory>

#include "core/device/device.h"
#include "interpose/symbols/cuda_api.h"

namespace pooch::interpose {

class CudaDevice final : public pooch::Device {
 public:
  static absl::StatusOr<std::unique_ptr<CudaDevice>> Create();

  // The context and device the memory lives on.
  CUcontext context() const { return context_; }
  CUdevice device() const { return device_; }
  // Makes context_ current on the calling thread if no context is (checked once per thread). A
  // thread that has not yet called the runtime has none: the runtime binds its context lazily.
  absl::Status EnsureContext() const;

  int64_t Granularity() const override { return granularity_; }
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
  CudaDevice(CUcontext context, CUdevice device, int64_t granularity)
      : context_(context), device_(device), granularity_(granularity) {}
  CUmemAllocationProp Prop() const;

  // Constant after construction.
  const CUcontext context_;
  const CUdevice device_;
  const int64_t granularity_;
};

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_DEVICE_CUDA_DEVICE_H_
