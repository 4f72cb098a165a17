// libcuda.so.1: streams and events.
#include "tests/simgpu/driver/libcuda/driver_common.h"

using simgpu::Device;
using simgpu::Err;
using simgpu::driver::ToCU;
using simgpu::driver::Unsupported;

SIMGPU_EXPORT CUresult cuStreamCreate(CUstream* stream, unsigned int flags) {
  SIMGPU_DRIVER_ENTER_CTX();
  if (stream == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (flags != CU_STREAM_DEFAULT && flags != CU_STREAM_NON_BLOCKING) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  void* s = nullptr;
  Err e = Device::Get().StreamCreate(flags == CU_STREAM_NON_BLOCKING, &s);
  if (e == Err::kOk) *stream = static_cast<CUstream>(s);
  return ToCU(e);
}

SIMGPU_EXPORT CUresult cuStreamCreateWithPriority(CUstream* stream, unsigned int flags,
                                                  int priority) {
  // simgpu has one compute engine in issue order: priorities do not change the schedule.
  (void)priority;
  return cuStreamCreate(stream, flags);
}

SIMGPU_EXPORT CUresult cuStreamDestroy_v2(CUstream stream) {
  SIMGPU_DRIVER_ENTER_CTX();
  return ToCU(Device::Get().StreamDestroy(stream));
}

SIMGPU_EXPORT CUresult cuStreamSynchronize(CUstream stream) {
  SIMGPU_DRIVER_ENTER_CTX();
  return ToCU(Device::Get().StreamSynchronize(stream));
}

SIMGPU_EXPORT CUresult cuStreamQuery(CUstream stream) {
  SIMGPU_DRIVER_ENTER_CTX();
  return ToCU(Device::Get().StreamQuery(stream));
}

SIMGPU_EXPORT CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags) {
  SIMGPU_DRIVER_ENTER_CTX();
  if (flags != CU_EVENT_WAIT_DEFAULT) {
    Unsupported("cuStreamWaitEvent", "a flag other than CU_EVENT_WAIT_DEFAULT");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  return ToCU(Device::Get().StreamWaitEvent(stream, event));
}

SIMGPU_EXPORT CUresult cuEventCreate(CUevent* event, unsigned int flags) {
  SIMGPU_DRIVER_ENTER_CTX();
  if (event == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if ((flags & ~(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if ((flags & CU_EVENT_INTERPROCESS) != 0) {
    Unsupported("cuEventCreate", "CU_EVENT_INTERPROCESS");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  void* e = nullptr;
  Err r = Device::Get().EventCreate((flags & CU_EVENT_DISABLE_TIMING) == 0, &e);
  if (r == Err::kOk) *event = static_cast<CUevent>(e);
  return ToCU(r);
}

SIMGPU_EXPORT CUresult cuEventRecord(CUevent event, CUstream stream) {
  SIMGPU_DRIVER_ENTER_CTX();
  return ToCU(Device::Get().EventRecord(event, stream));
}

SIMGPU_EXPORT CUresult cuEventSynchronize(CUevent event) {
  SIMGPU_DRIVER_ENTER_CTX();
  return ToCU(Device::Get().EventSynchronize(event));
}

SIMGPU_EXPORT CUresult cuEventQuery(CUevent event) {
  SIMGPU_DRIVER_ENTER_CTX();
  return ToCU(Device::Get().EventQuery(event));
}

SIMGPU_EXPORT CUresult cuEventElapsedTime_v2(float* ms, CUevent start, CUevent end) {
  SIMGPU_DRIVER_ENTER_CTX();
  return ToCU(Device::Get().EventElapsed(start, end, ms));
}

SIMGPU_EXPORT CUresult cuEventDestroy_v2(CUevent event) {
  SIMGPU_DRIVER_ENTER_CTX();
  return ToCU(Device::Get().EventDestroy(event));
}
