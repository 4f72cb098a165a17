// Device: what the residency manager needs from a GPU, one method per CUDA driver call.
//
// interpose/device implements it on the CUDA driver's virtual memory management (VMM) API;
// core/testing/fake_device.h implements it over host memory for tests. The mapping to the driver is
// meant to be direct; each method names the call it stands for. Handles are opaque 64-bit values
// (CUstream, CUevent and CUmemGenericAllocationHandle cast to an integer); device addresses are
// uintptr_t (CUdeviceptr).
//
// Errors: every method returns absl::Status(Or). A device out of memory (CUDA_ERROR_OUT_OF_MEMORY
// from cuMemCreate, cuMemHostAlloc, cuMemAddressReserve) is ResourceExhausted, which the runtime
// reacts to (evicts, or reports an ordinary out-of-memory to the program); any other failure is
// Internal/InvalidArgument/FailedPrecondition and is passed on.
//
// Ordering (DESIGN.md, decision 8): copies and event records are asynchronous, ordered on their
// stream like the CUDA calls. An event that was never recorded counts as complete, and
// StreamWaitEvent waits for the most recent RecordEvent before it, as in CUDA.
//
// Thread safety: every method may be called concurrently from any thread.
#ifndef POOCH_CORE_DEVICE_DEVICE_H_
#define POOCH_CORE_DEVICE_DEVICE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace pooch {

using StreamHandle = uint64_t;    // CUstream; 0 is the legacy default stream
using EventHandle = uint64_t;     // CUevent
using PhysicalHandle = uint64_t;  // CUmemGenericAllocationHandle
using DeviceAddress = uintptr_t;  // CUdeviceptr

inline constexpr StreamHandle kDefaultStream = 0;

struct DeviceMemoryInfo {
  int64_t free_bytes = 0;  // cuMemGetInfo
  int64_t total_bytes = 0;
};

class Device {
 public:
  virtual ~Device() = default;

  // cuMemGetAllocationGranularity(CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) for pinned device memory
  // on the current device: sizes of reservations, physical allocations and mappings are
  // multiples of it, and addresses are aligned to it.
  virtual int64_t Granularity() const = 0;

  // cuMemGetInfo: the runtime's default limit is the free memory at start-up.
  virtual absl::StatusOr<DeviceMemoryInfo> MemoryInfo() = 0;

  // cuMemAddressReserve / cuMemAddressFree. `bytes` is a multiple of Granularity(). A reserved
  // range has no memory behind it until Map.
  virtual absl::StatusOr<DeviceAddress> ReserveAddress(int64_t bytes) = 0;
  virtual absl::Status FreeAddress(DeviceAddress address, int64_t bytes) = 0;

  // cuMemCreate (CU_MEM_ALLOCATION_TYPE_PINNED on the current device) / cuMemRelease.
  // ResourceExhausted when the device has no room. REQUIRES for Release: no mapping of the
  // handle remains, and every copy or kernel that used it has completed.
  virtual absl::StatusOr<PhysicalHandle> CreatePhysical(int64_t bytes) = 0;
  virtual absl::Status ReleasePhysical(PhysicalHandle handle) = 0;

  // cuMemMap at offset 0 of `handle` followed by cuMemSetAccess(read-write, current device).
  // REQUIRES: [address, address + bytes) lies in a reservation and is not mapped.
  virtual absl::Status Map(DeviceAddress address, int64_t bytes, PhysicalHandle handle) = 0;
  // cuMemUnmap. REQUIRES: the range was mapped by one Map call, and nothing queued still uses it.
  virtual absl::Status Unmap(DeviceAddress address, int64_t bytes) = 0;

  // cuMemHostAlloc (portable, pinned) / cuMemFreeHost. ResourceExhausted when pinning fails.
  virtual absl::StatusOr<void*> AllocHost(int64_t bytes) = 0;
  virtual absl::Status FreeHost(void* host) = 0;

  // cuStreamCreate(CU_STREAM_NON_BLOCKING), for pooch's own copy streams.
  virtual absl::StatusOr<StreamHandle> CreateStream() = 0;
  virtual absl::Status DestroyStream(StreamHandle stream) = 0;

  // cuMemcpyDtoHAsync / cuMemcpyHtoDAsync on `stream`. The host side must be AllocHost memory.
  virtual absl::Status CopyToHostAsync(void* host, DeviceAddress device, int64_t bytes,
                                       StreamHandle stream) = 0;
  virtual absl::Status CopyToDeviceAsync(DeviceAddress device, const void* host, int64_t bytes,
                                         StreamHandle stream) = 0;

  // cuEventCreate(CU_EVENT_DISABLE_TIMING) / cuEventDestroy / cuEventRecord.
  virtual absl::StatusOr<EventHandle> CreateEvent() = 0;
  virtual absl::Status DestroyEvent(EventHandle event) = 0;
  virtual absl::Status RecordEvent(EventHandle event, StreamHandle stream) = 0;
  // cuEventQuery: true when complete, false for CUDA_ERROR_NOT_READY.
  virtual absl::StatusOr<bool> QueryEvent(EventHandle event) = 0;
  // cuEventSynchronize: blocks the calling host thread until the event completes.
  virtual absl::Status SynchronizeEvent(EventHandle event) = 0;
  // cuStreamWaitEvent: work queued on `stream` after this call waits for `event`.
  virtual absl::Status StreamWaitEvent(StreamHandle stream, EventHandle event) = 0;

  // cuEventCreate(0): like CreateEvent, but the event also records when it completed on the
  // device, for measuring copies while profiling (timing costs a little, so only when asked).
  virtual absl::StatusOr<EventHandle> CreateTimingEvent() = 0;
  // cuEventElapsedTime, in microseconds: from the completion of `start`'s latest record to that
  // of `end`'s. REQUIRES: both come from CreateTimingEvent, were recorded and completed (an
  // error otherwise: FailedPrecondition on the fake device, the driver's on a GPU).
  virtual absl::StatusOr<double> ElapsedMicroseconds(EventHandle start, EventHandle end) = 0;
};

}  // namespace pooch

#endif  // POOCH_CORE_DEVICE_DEVICE_H_
