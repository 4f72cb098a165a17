// runtime_driver.h: how simgpu's libcudart.so.13 reaches the driver, and its runtime state.
//
// As NVIDIA's runtime does, it dlopen()s libcuda.so.1, looks up only cuGetProcAddress_v2 with
// dlsym, and obtains every other driver entry point through it (FIELD-NOTES, "Interposing
// CUDA"), so that an interposer hooking cuGetProcAddress sees every driver call the runtime
// makes. The runtime keeps only runtime state: the table, the last error of each thread and
// whether each thread has made the primary context current. It links libsimgpu_device.so only
// for SIMGPU_FAIL (simgpu::Device::FailNow) and the configuration check.
//
// Thread safety: the table is built once (std::call_once) and immutable afterwards; the last
// error and the context flag are thread_local.
#ifndef SIMGPU_DRIVER_RUNTIME_DRIVER_H_
#define SIMGPU_DRIVER_RUNTIME_DRIVER_H_

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

// Marks a function exported from libcudart.so.13.
#define SIMGPU_RT_EXPORT extern "C" __attribute__((visibility("default")))

// The driver entry points the runtime uses: X(name, PFN type of the version it resolves to at
// CUDART_VERSION). One list generates the table's members and its look-ups.
#define SIMGPU_RUNTIME_DRIVER_CALLS(X)                            \
  X(cuInit, PFN_cuInit_v2000)                                     \
  X(cuGetProcAddress, PFN_cuGetProcAddress_v12000)                \
  X(cuDriverGetVersion, PFN_cuDriverGetVersion_v2020)             \
  X(cuDeviceGetCount, PFN_cuDeviceGetCount_v2000)                 \
  X(cuDeviceGet, PFN_cuDeviceGet_v2000)                           \
  X(cuDeviceGetName, PFN_cuDeviceGetName_v2000)                   \
  X(cuDeviceTotalMem, PFN_cuDeviceTotalMem_v3020)                 \
  X(cuDeviceGetAttribute, PFN_cuDeviceGetAttribute_v2000)         \
  X(cuDevicePrimaryCtxRetain, PFN_cuDevicePrimaryCtxRetain_v7000) \
  X(cuCtxSetCurrent, PFN_cuCtxSetCurrent_v4000)                   \
  X(cuCtxSynchronize, PFN_cuCtxSynchronize_v13000)                \
  X(cuMemGetInfo, PFN_cuMemGetInfo_v3020)                         \
  X(cuMemAlloc, PFN_cuMemAlloc_v3020)                             \
  X(cuMemFree, PFN_cuMemFree_v3020)                               \
  X(cuMemAllocAsync, PFN_cuMemAllocAsync_v11020)                  \
  X(cuMemFreeAsync, PFN_cuMemFreeAsync_v11020)                    \
  X(cuMemHostAlloc, PFN_cuMemHostAlloc_v2020)                     \
  X(cuMemFreeHost, PFN_cuMemFreeHost_v2000)                       \
  X(cuPointerGetAttributes, PFN_cuPointerGetAttributes_v7000)     \
  X(cuMemcpy, PFN_cuMemcpy_v4000)                                 \
  X(cuMemcpyAsync, PFN_cuMemcpyAsync_v4000)                       \
  X(cuMemcpyHtoD, PFN_cuMemcpyHtoD_v3020)                         \
  X(cuMemcpyDtoH, PFN_cuMemcpyDtoH_v3020)                         \
  X(cuMemcpyDtoD, PFN_cuMemcpyDtoD_v3020)                         \
  X(cuMemcpyHtoDAsync, PFN_cuMemcpyHtoDAsync_v3020)               \
  X(cuMemcpyDtoHAsync, PFN_cuMemcpyDtoHAsync_v3020)               \
  X(cuMemcpyDtoDAsync, PFN_cuMemcpyDtoDAsync_v3020)               \
  X(cuMemsetD8, PFN_cuMemsetD8_v3020)                             \
  X(cuMemsetD8Async, PFN_cuMemsetD8Async_v3020)                   \
  X(cuStreamCreate, PFN_cuStreamCreate_v2000)                     \
  X(cuStreamDestroy, PFN_cuStreamDestroy_v4000)                   \
  X(cuStreamSynchronize, PFN_cuStreamSynchronize_v2000)           \
  X(cuStreamQuery, PFN_cuStreamQuery_v2000)                       \
  X(cuStreamWaitEvent, PFN_cuStreamWaitEvent_v3020)               \
  X(cuEventCreate, PFN_cuEventCreate_v2000)                       \
  X(cuEventRecord, PFN_cuEventRecord_v2000)                       \
  X(cuEventSynchronize, PFN_cuEventSynchronize_v2000)             \
  X(cuEventQuery, PFN_cuEventQuery_v2000)                         \
  X(cuEventElapsedTime, PFN_cuEventElapsedTime_v12080)            \
  X(cuEventDestroy, PFN_cuEventDestroy_v4000)

namespace simgpu::runtime {

struct DriverTable {
#define SIMGPU_MEMBER(name, type) type name = nullptr;
  SIMGPU_RUNTIME_DRIVER_CALLS(SIMGPU_MEMBER)
#undef SIMGPU_MEMBER
};

// The driver, loaded and initialised (cuInit, primary context current on this thread) on first
// use. On failure returns nullptr and *err says why (cudaErrorInsufficientDriver when
// libcuda.so.1 cannot be loaded, cudaErrorInitializationError when it fails).
const DriverTable* Driver(cudaError_t* err);

// The one place where driver codes become runtime codes.
cudaError_t ToRuntime(CUresult r);

// Records `e` as this thread's last error (unless it is cudaSuccess or cudaErrorNotReady) and
// returns it.
cudaError_t Record(cudaError_t e);
cudaError_t Record(CUresult r);

// Each stream's priority as created (runtime_stream_info.cc), for cudaStreamGetPriority.
void RememberPriority(cudaStream_t stream, int priority);
void ForgetStream(cudaStream_t stream);

// Peeks at / takes this thread's last error.
cudaError_t PeekLastError();
cudaError_t TakeLastError();

}  // namespace simgpu::runtime

// First statement of runtime entry points that need the driver: declares `drv`.
#define SIMGPU_RT_ENTER()                                                             \
  cudaError_t enter_err_ = cudaSuccess;                                               \
  const ::simgpu::runtime::DriverTable* drv = ::simgpu::runtime::Driver(&enter_err_); \
  if (drv == nullptr) return ::simgpu::runtime::Record(enter_err_)

#endif  // SIMGPU_DRIVER_RUNTIME_DRIVER_H_
