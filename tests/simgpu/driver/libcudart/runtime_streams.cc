// libcudart.so.13: streams and events, over the driver table. cudaStream_t and cudaEvent_t are
// the driver's CUstream and CUevent.
#include "tests/simgpu/driver/libcudart/runtime_driver.h"

using simgpu::runtime::Record;

SIMGPU_RT_EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  if (stream == nullptr) return Record(cudaErrorInvalidValue);
  if (flags != cudaStreamDefault && flags != cudaStreamNonBlocking) {
    return Record(cudaErrorInvalidValue);
  }
  SIMGPU_RT_ENTER();
  return Record(drv->cuStreamCreate(stream, flags));
}

SIMGPU_RT_EXPORT cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  return cudaStreamCreateWithFlags(stream, cudaStreamDefault);
}

SIMGPU_RT_EXPORT cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  SIMGPU_RT_ENTER();
  const cudaError_t e = Record(drv->cuStreamDestroy(stream));
  if (e == cudaSuccess) simgpu::runtime::ForgetStream(stream);
  return e;
}

SIMGPU_RT_EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  SIMGPU_RT_ENTER();
  return Record(drv->cuStreamSynchronize(stream));
}

SIMGPU_RT_EXPORT cudaError_t cudaStreamQuery(cudaStream_t stream) {
  SIMGPU_RT_ENTER();
  return Record(drv->cuStreamQuery(stream));
}

SIMGPU_RT_EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event,
                                                 unsigned int flags) {
  SIMGPU_RT_ENTER();
  return Record(drv->cuStreamWaitEvent(stream, event, flags));
}

SIMGPU_RT_EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  if (event == nullptr) return Record(cudaErrorInvalidValue);
  SIMGPU_RT_ENTER();
  // cudaEvent* flags have the values of CU_EVENT_*.
  return Record(drv->cuEventCreate(event, flags));
}

SIMGPU_RT_EXPORT cudaError_t cudaEventCreate(cudaEvent_t* event) {
  return cudaEventCreateWithFlags(event, cudaEventDefault);
}

SIMGPU_RT_EXPORT cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  SIMGPU_RT_ENTER();
  return Record(drv->cuEventRecord(event, stream));
}

SIMGPU_RT_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  SIMGPU_RT_ENTER();
  return Record(drv->cuEventSynchronize(event));
}

SIMGPU_RT_EXPORT cudaError_t cudaEventQuery(cudaEvent_t event) {
  SIMGPU_RT_ENTER();
  return Record(drv->cuEventQuery(event));
}

SIMGPU_RT_EXPORT cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (ms == nullptr) return Record(cudaErrorInvalidValue);
  SIMGPU_RT_ENTER();
  return Record(drv->cuEventElapsedTime(ms, start, end));
}

SIMGPU_RT_EXPORT cudaError_t cudaEventDestroy(cudaEvent_t event) {
  SIMGPU_RT_ENTER();
  return Record(drv->cuEventDestroy(event));
}

SIMGPU_RT_EXPORT cudaError_t cudaStreamCreateWithPriority(cudaStream_t* stream, unsigned int flags,
                                                          int priority) {
  // The device model ignores priorities (one compute engine in issue order); the runtime
  // remembers them for cudaStreamGetPriority.
  const cudaError_t e = cudaStreamCreateWithFlags(stream, flags);
  if (e == cudaSuccess) simgpu::runtime::RememberPriority(*stream, priority);
  return e;
}

SIMGPU_RT_EXPORT cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream,
                                                      unsigned int flags) {
  // cudaEventRecordExternal only matters inside a graph capture, which never happens here.
  if (flags != cudaEventRecordDefault && flags != cudaEventRecordExternal) {
    return Record(cudaErrorInvalidValue);
  }
  return cudaEventRecord(event, stream);
}
