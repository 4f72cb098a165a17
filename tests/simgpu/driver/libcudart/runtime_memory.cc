// libcudart.so.13: allocations, pointer attributes, copies and memsets, over the driver table.
#include <cstdint>

#include "tests/simgpu/device/device.h"
#include "tests/simgpu/driver/libcudart/runtime_driver.h"

using simgpu::runtime::Record;

namespace {

CUdeviceptr D(const void* p) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); }

// SIMGPU_FAIL for runtime API names (the driver counts its own names).
bool FailNow(const char* api) { return simgpu::Device::Get().FailNow(api); }

}  // namespace

SIMGPU_RT_EXPORT cudaError_t cudaMalloc(void** ptr, size_t size) {
  if (ptr == nullptr) return Record(cudaErrorInvalidValue);
  SIMGPU_RT_ENTER();
  if (size == 0) {
    *ptr = nullptr;
    return cudaSuccess;
  }
  if (FailNow("cudaMalloc")) return Record(cudaErrorMemoryAllocation);
  CUdeviceptr d = 0;
  CUresult r = drv->cuMemAlloc(&d, size);
  if (r == CUDA_SUCCESS) *ptr = reinterpret_cast<void*>(static_cast<uintptr_t>(d));
  return Record(r);
}

SIMGPU_RT_EXPORT cudaError_t cudaFree(void* ptr) {
  SIMGPU_RT_ENTER();
  if (ptr == nullptr) return cudaSuccess;
  return Record(drv->cuMemFree(D(ptr)));
}

SIMGPU_RT_EXPORT cudaError_t cudaMallocAsync(void** ptr, size_t size, cudaStream_t stream) {
  if (ptr == nullptr) return Record(cudaErrorInvalidValue);
  SIMGPU_RT_ENTER();
  if (size == 0) {
    *ptr = nullptr;
    return cudaSuccess;
  }
  if (FailNow("cudaMallocAsync")) return Record(cudaErrorMemoryAllocation);
  CUdeviceptr d = 0;
  CUresult r = drv->cuMemAllocAsync(&d, size, stream);
  if (r == CUDA_SUCCESS) *ptr = reinterpret_cast<void*>(static_cast<uintptr_t>(d));
  return Record(r);
}

SIMGPU_RT_EXPORT cudaError_t cudaFreeAsync(void* ptr, cudaStream_t stream) {
  SIMGPU_RT_ENTER();
  if (ptr == nullptr) return cudaSuccess;
  return Record(drv->cuMemFreeAsync(D(ptr), stream));
}

SIMGPU_RT_EXPORT cudaError_t cudaHostAlloc(void** ptr, size_t size, unsigned int flags) {
  if (ptr == nullptr) return Record(cudaErrorInvalidValue);
  SIMGPU_RT_ENTER();
  if (size == 0) {
    *ptr = nullptr;
    return cudaSuccess;
  }
  if (FailNow("cudaHostAlloc")) return Record(cudaErrorMemoryAllocation);
  // cudaHostAlloc* flags have the values of CU_MEMHOSTALLOC_*.
  return Record(drv->cuMemHostAlloc(ptr, size, flags));
}

SIMGPU_RT_EXPORT cudaError_t cudaMallocHost(void** ptr, size_t size) {
  if (ptr == nullptr) return Record(cudaErrorInvalidValue);
  SIMGPU_RT_ENTER();
  if (size == 0) {
    *ptr = nullptr;
    return cudaSuccess;
  }
  if (FailNow("cudaMallocHost")) return Record(cudaErrorMemoryAllocation);
  return Record(drv->cuMemHostAlloc(ptr, size, 0));
}

SIMGPU_RT_EXPORT cudaError_t cudaFreeHost(void* ptr) {
  SIMGPU_RT_ENTER();
  if (ptr == nullptr) return cudaSuccess;
  return Record(drv->cuMemFreeHost(ptr));
}

SIMGPU_RT_EXPORT cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  if (free_bytes == nullptr || total_bytes == nullptr) return Record(cudaErrorInvalidValue);
  SIMGPU_RT_ENTER();
  return Record(drv->cuMemGetInfo(free_bytes, total_bytes));
}

SIMGPU_RT_EXPORT cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attr,
                                                      const void* ptr) {
  if (attr == nullptr) return Record(cudaErrorInvalidValue);
  SIMGPU_RT_ENTER();
  unsigned int type = 0;
  int ordinal = -2;
  CUdeviceptr dev_ptr = 0;
  void* host_ptr = nullptr;
  CUpointer_attribute which[] = {
      CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
      CU_POINTER_ATTRIBUTE_DEVICE_POINTER, CU_POINTER_ATTRIBUTE_HOST_POINTER};
  void* data[] = {&type, &ordinal, &dev_ptr, &host_ptr};
  CUresult r = drv->cuPointerGetAttributes(4, which, data, D(ptr));
  if (r != CUDA_SUCCESS) return Record(r);
  *attr = cudaPointerAttributes{};
  attr->type = type == CU_MEMORYTYPE_DEVICE ? cudaMemoryTypeDevice
               : type == CU_MEMORYTYPE_HOST ? cudaMemoryTypeHost
                                            : cudaMemoryTypeUnregistered;
  attr->device = attr->type == cudaMemoryTypeUnregistered ? -2 : ordinal;
  attr->devicePointer = reinterpret_cast<void*>(static_cast<uintptr_t>(dev_ptr));
  attr->hostPointer = attr->type == cudaMemoryTypeUnregistered ? const_cast<void*>(ptr) : host_ptr;
  return cudaSuccess;
}

namespace {

cudaError_t Copy(const simgpu::runtime::DriverTable* drv, void* dst, const void* src, size_t count,
                 cudaMemcpyKind kind, cudaStream_t stream, bool async) {
  CUdeviceptr d = D(dst), s = D(src);
  switch (kind) {
    case cudaMemcpyHostToDevice:
      return Record(async ? drv->cuMemcpyHtoDAsync(d, src, count, stream)
                          : drv->cuMemcpyHtoD(d, src, count));
    case cudaMemcpyDeviceToHost:
      return Record(async ? drv->cuMemcpyDtoHAsync(dst, s, count, stream)
                          : drv->cuMemcpyDtoH(dst, s, count));
    case cudaMemcpyDeviceToDevice:
      return Record(async ? drv->cuMemcpyDtoDAsync(d, s, count, stream)
                          : drv->cuMemcpyDtoD(d, s, count));
    case cudaMemcpyHostToHost:
    case cudaMemcpyDefault:
      return Record(async ? drv->cuMemcpyAsync(d, s, count, stream) : drv->cuMemcpy(d, s, count));
  }
  return Record(cudaErrorInvalidMemcpyDirection);
}

}  // namespace

SIMGPU_RT_EXPORT cudaError_t cudaMemcpy(void* dst, const void* src, size_t count,
                                        cudaMemcpyKind kind) {
  SIMGPU_RT_ENTER();
  return Copy(drv, dst, src, count, kind, nullptr, false);
}

SIMGPU_RT_EXPORT cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count,
                                             cudaMemcpyKind kind, cudaStream_t stream) {
  SIMGPU_RT_ENTER();
  return Copy(drv, dst, src, count, kind, stream, true);
}

// 2D copies as one 1D copy per row, in order on the stream (the copies a real 2D copy makes are
// the same bytes). A pitch below the width is the API's invalid-pitch error.
namespace {

cudaError_t Copy2D(const simgpu::runtime::DriverTable* drv, void* dst, size_t dpitch,
                   const void* src, size_t spitch, size_t width, size_t height, cudaMemcpyKind kind,
                   cudaStream_t stream, bool async) {
  if (height > 1 && (dpitch < width || spitch < width)) {
    return Record(cudaErrorInvalidPitchValue);
  }
  for (size_t row = 0; row < height && width > 0; ++row) {
    cudaError_t e = Copy(drv, static_cast<char*>(dst) + row * dpitch,
                         static_cast<const char*>(src) + row * spitch, width, kind, stream, async);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

}  // namespace

SIMGPU_RT_EXPORT cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch,
                                          size_t width, size_t height, cudaMemcpyKind kind) {
  SIMGPU_RT_ENTER();
  return Copy2D(drv, dst, dpitch, src, spitch, width, height, kind, nullptr, false);
}

SIMGPU_RT_EXPORT cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src,
                                               size_t spitch, size_t width, size_t height,
                                               cudaMemcpyKind kind, cudaStream_t stream) {
  SIMGPU_RT_ENTER();
  return Copy2D(drv, dst, dpitch, src, spitch, width, height, kind, stream, true);
}

SIMGPU_RT_EXPORT cudaError_t cudaMemset(void* ptr, int value, size_t count) {
  SIMGPU_RT_ENTER();
  return Record(drv->cuMemsetD8(D(ptr), static_cast<unsigned char>(value), count));
}

SIMGPU_RT_EXPORT cudaError_t cudaMemsetAsync(void* ptr, int value, size_t count,
                                             cudaStream_t stream) {
  SIMGPU_RT_ENTER();
  return Record(drv->cuMemsetD8Async(D(ptr), static_cast<unsigned char>(value), count, stream));
}

// 2D memsets as one 1D memset per row, like the 2D copies.
SIMGPU_RT_EXPORT cudaError_t cudaMemset2D(void* ptr, size_t pitch, int value, size_t width,
                                          size_t height) {
  SIMGPU_RT_ENTER();
  if (height > 1 && pitch < width) return Record(cudaErrorInvalidPitchValue);
  for (size_t row = 0; row < height && width > 0; ++row) {
    CUresult r = drv->cuMemsetD8(D(static_cast<char*>(ptr) + row * pitch),
                                 static_cast<unsigned char>(value), width);
    if (r != CUDA_SUCCESS) return Record(r);
  }
  return cudaSuccess;
}

SIMGPU_RT_EXPORT cudaError_t cudaMemset2DAsync(void* ptr, size_t pitch, int value, size_t width,
                                               size_t height, cudaStream_t stream) {
  SIMGPU_RT_ENTER();
  if (height > 1 && pitch < width) return Record(cudaErrorInvalidPitchValue);
  for (size_t row = 0; row < height && width > 0; ++row) {
    CUresult r = drv->cuMemsetD8Async(D(static_cast<char*>(ptr) + row * pitch),
                                      static_cast<unsigned char>(value), width, stream);
    if (r != CUDA_SUCCESS) return Record(r);
  }
  return cudaSuccess;
}
