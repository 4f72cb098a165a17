#include "interpose/device/cuda_device.h"

#include "absl/strings/str_cat.h"
#include "interpose/symbols/errors.h"
#include "interpose/symbols/hook_table.h"

namespace pooch::interpose {
namespace {

// Calls real::<name>() with the arguments, or fails with FailedPrecondition when the driver
// lacks it.
#define POOCH_DRIVER_CALL(name, ...)                                              \
  do {                                                                            \
    const auto fn = real::name();                                                 \
    if (fn == nullptr) {                                                          \
      return absl::FailedPreconditionError("the CUDA driver has no " #name);      \
    }                                                                             \
    if (absl::Status s = DriverStatus(fn(__VA_ARGS__), #name); !s.ok()) return s; \
  } while (0)

CUstream Stream(StreamHandle s) { return reinterpret_cast<CUstream>(s); }
CUevent Event(EventHandle e) { return reinterpret_cast<CUevent>(e); }

}  // namespace

absl::Status DriverStatus(CUresult result, const char* call) {
  if (result == CUDA_SUCCESS) return absl::OkStatus();
  NoteResult(result);  // Note [Sticky errors] in interpose/symbols/errors.h
  const std::string message =
      absl::StrCat(call, " failed with CUresult ", static_cast<int>(result));
  if (result == CUDA_ERROR_OUT_OF_MEMORY) return absl::ResourceExhaustedError(message);
  if (result == CUDA_ERROR_INVALID_VALUE) return absl::InvalidArgumentError(message);
  return absl::InternalError(message);
}

absl::StatusOr<std::unique_ptr<CudaDevice>> CudaDevice::Create() {
  CUcontext context = nullptr;
  POOCH_DRIVER_CALL(cuCtxGetCurrent, &context);
  if (context == nullptr) return absl::FailedPreconditionError("no current CUDA context");
  CUdevice device = 0;
  POOCH_DRIVER_CALL(cuCtxGetDevice, &device);
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  size_t granularity = 0;
  POOCH_DRIVER_CALL(cuMemGetAllocationGranularity, &granularity, &prop,
                    CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
  if (granularity == 0) return absl::InternalError("the driver reports granularity 0");
  return std::unique_ptr<CudaDevice>(
      new CudaDevice(context, device, static_cast<int64_t>(granularity)));
}

absl::Status CudaDevice::EnsureContext() const {
  thread_local bool checked = false;
  if (checked) return absl::OkStatus();
  CUcontext current = nullptr;
  POOCH_DRIVER_CALL(cuCtxGetCurrent, &current);
  if (current == nullptr) POOCH_DRIVER_CALL(cuCtxSetCurrent, context_);
  checked = true;
  return absl::OkStatus();
}

CUmemAllocationProp CudaDevice::Prop() const {
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device_;
  return prop;
}

#define POOCH_ENSURE_CONTEXT() \
  if (absl::Status s = EnsureContext(); !s.ok()) return s

absl::StatusOr<DeviceMemoryInfo> CudaDevice::MemoryInfo() {
  POOCH_ENSURE_CONTEXT();
  size_t free_bytes = 0, total_bytes = 0;
  POOCH_DRIVER_CALL(cuMemGetInfo_v2, &free_bytes, &total_bytes);
  return DeviceMemoryInfo{static_cast<int64_t>(free_bytes), static_cast<int64_t>(total_bytes)};
}

absl::StatusOr<DeviceAddress> CudaDevice::ReserveAddress(int64_t bytes) {
  POOCH_ENSURE_CONTEXT();
  CUdeviceptr address = 0;
  POOCH_DRIVER_CALL(cuMemAddressReserve, &address, static_cast<size_t>(bytes),
                    static_cast<size_t>(granularity_), 0, 0);
  return static_cast<DeviceAddress>(address);
}

absl::Status CudaDevice::FreeAddress(DeviceAddress address, int64_t bytes) {
  POOCH_ENSURE_CONTEXT();
  POOCH_DRIVER_CALL(cuMemAddressFree, address, static_cast<size_t>(bytes));
  return absl::OkStatus();
}

absl::StatusOr<PhysicalHandle> CudaDevice::CreatePhysical(int64_t bytes) {
  POOCH_ENSURE_CONTEXT();
  CUmemGenericAllocationHandle handle = 0;
  const CUmemAllocationProp prop = Prop();
  POOCH_DRIVER_CALL(cuMemCreate, &handle, static_cast<size_t>(bytes), &prop, 0);
  return static_cast<PhysicalHandle>(handle);
}

absl::Status CudaDevice::ReleasePhysical(PhysicalHandle handle) {
  POOCH_ENSURE_CONTEXT();
  POOCH_DRIVER_CALL(cuMemRelease, handle);
  return absl::OkStatus();
}

absl::Status CudaDevice::Map(DeviceAddress address, int64_t bytes, PhysicalHandle handle) {
  POOCH_ENSURE_CONTEXT();
  POOCH_DRIVER_CALL(cuMemMap, address, static_cast<size_t>(bytes), 0, handle, 0);
  CUmemAccessDesc access = {};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device_;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  const auto set_access = real::cuMemSetAccess();
  const CUresult r = set_access != nullptr
                         ? set_access(address, static_cast<size_t>(bytes), &access, 1)
                         : CUDA_ERROR_NOT_FOUND;
  if (r != CUDA_SUCCESS) {
    if (const auto unmap = real::cuMemUnmap()) unmap(address, static_cast<size_t>(bytes));
    return DriverStatus(r, "cuMemSetAccess");
  }
  return absl::OkStatus();
}

absl::Status CudaDevice::Unmap(DeviceAddress address, int64_t bytes) {
  POOCH_ENSURE_CONTEXT();
  POOCH_DRIVER_CALL(cuMemUnmap, address, static_cast<size_t>(bytes));
  return absl::OkStatus();
}

absl::StatusOr<void*> CudaDevice::AllocHost(int64_t bytes) {
  POOCH_ENSURE_CONTEXT();
  void* host = nullptr;
  POOCH_DRIVER_CALL(cuMemHostAlloc, &host, static_cast<size_t>(bytes), CU_MEMHOSTALLOC_PORTABLE);
  return host;
}

absl::Status CudaDevice::FreeHost(void* host) {
  POOCH_ENSURE_CONTEXT();
  POOCH_DRIVER_CALL(cuMemFreeHost, host);
  return absl::OkStatus();
}

absl::StatusOr<StreamHandle> CudaDevice::CreateStream() {
  POOCH_ENSURE_CONTEXT();
  CUstream stream = nullptr;
  POOCH_DRIVER_CALL(cuStreamCreate, &stream, CU_STREAM_NON_BLOCKING);
  return reinterpret_cast<StreamHandle>(stream);
}

absl::Status CudaDevice::DestroyStream(StreamHandle stream) {
  POOCH_ENSURE_CONTEXT();
  POOCH_DRIVER_CALL(cuStreamDestroy_v2, Stream(stream));
  return absl::OkStatus();
}

absl::Status CudaDevice::CopyToHostAsync(void* host, DeviceAddress device, int64_t bytes,
                                         StreamHandle stream) {
  POOCH_ENSURE_CONTEXT();
  POOCH_DRIVER_CALL(cuMemcpyDtoHAsync_v2, host, device, static_cast<size_t>(bytes), Stream(stream));
  return absl::OkStatus();
}

absl::Status CudaDevice::CopyToDeviceAsync(DeviceAddress device, const void* host, int64_t bytes,
                                           StreamHandle stream) {
  POOCH_ENSURE_CONTEXT();
  POOCH_DRIVER_CALL(cuMemcpyHtoDAsync_v2, device, host, static_cast<size_t>(bytes), Stream(stream));
  return absl::OkStatus();
}

absl::StatusOr<EventHandle> CudaDevice::CreateEvent() {
  POOCH_ENSURE_CONTEXT();
  CUevent event = nullptr;
  POOCH_DRIVER_CALL(cuEventCreate, &event, CU_EVENT_DISABLE_TIMING);
  return reinterpret_cast<EventHandle>(event);
}

absl::StatusOr<EventHandle> CudaDevice::CreateTimingEvent() {
  POOCH_ENSURE_CONTEXT();
  CUevent event = nullptr;
  POOCH_DRIVER_CALL(cuEventCreate, &event, CU_EVENT_DEFAULT);  // timing enabled
  return reinterpret_cast<EventHandle>(event);
}

absl::StatusOr<double> CudaDevice::ElapsedMicroseconds(EventHandle start, EventHandle end) {
  POOCH_ENSURE_CONTEXT();
  float ms = 0;
  // cuEventElapsedTime is a macro for the _v2 entry point (CUDA 12.8+), which cuda.h declares.
  POOCH_DRIVER_CALL(cuEventElapsedTime_v2, &ms, Event(start), Event(end));
  return static_cast<double>(ms) * 1000.0;
}

absl::Status CudaDevice::DestroyEvent(EventHandle event) {
  POOCH_ENSURE_CONTEXT();
  POOCH_DRIVER_CALL(cuEventDestroy_v2, Event(event));
  return absl::OkStatus();
}

absl::Status CudaDevice::RecordEvent(EventHandle event, StreamHandle stream) {
  POOCH_ENSURE_CONTEXT();
  POOCH_DRIVER_CALL(cuEventRecord, Event(event), Stream(stream));
  return absl::OkStatus();
}

absl::StatusOr<bool> CudaDevice::QueryEvent(EventHandle event) {
  POOCH_ENSURE_CONTEXT();
  const auto query = real::cuEventQuery();
  if (query == nullptr) return absl::FailedPreconditionError("the CUDA driver has no cuEventQuery");
  const CUresult r = query(Event(event));
  if (r == CUDA_SUCCESS) return true;
  if (r == CUDA_ERROR_NOT_READY) return false;
  return DriverStatus(r, "cuEventQuery");
}

absl::Status CudaDevice::SynchronizeEvent(EventHandle event) {
  POOCH_ENSURE_CONTEXT();
  POOCH_DRIVER_CALL(cuEventSynchronize, Event(event));
  return absl::OkStatus();
}

absl::Status CudaDevice::StreamWaitEvent(StreamHandle stream, EventHandle event) {
  POOCH_ENSURE_CONTEXT();
  POOCH_DRIVER_CALL(cuStreamWaitEvent, Stream(stream), Event(event), 0);
  return absl::OkStatus();
}

}  // namespace pooch::interpose
