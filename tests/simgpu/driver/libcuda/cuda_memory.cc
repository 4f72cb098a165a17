// libcuda.so.1: device and pinned allocations, pointer attributes, copies and memsets.
#include <cstring>

#include "tests/simgpu/driver/libcuda/driver_common.h"

using simgpu::CopyDir;
using simgpu::Device;
using simgpu::Err;
using simgpu::PtrInfo;
using simgpu::PtrKind;
using simgpu::driver::ToCU;

namespace {

void* P(CUdeviceptr d) { return reinterpret_cast<void*>(static_cast<uintptr_t>(d)); }
CUdeviceptr D(const void* p) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); }

CUresult Copy(const char* op, void* dst, const void* src, size_t bytes, CopyDir dir,
              CUstream stream, bool sync) {
  return ToCU(Device::Get().Memcpy(op, dst, src, bytes, dir, stream, sync));
}

}  // namespace

SIMGPU_EXPORT CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  SIMGPU_DRIVER_ENTER_CTX();
  if (free_bytes == nullptr || total_bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uint64_t f = 0, t = 0;
  Device::Get().MemInfo(&f, &t);
  *free_bytes = f;
  *total_bytes = t;
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytes) {
  SIMGPU_DRIVER_ENTER_CTX();
  if (dptr == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (Device::Get().FailNow("cuMemAlloc")) return CUDA_ERROR_OUT_OF_MEMORY;
  void* p = nullptr;
  Err e = Device::Get().MemAlloc(bytes, &p);
  if (e == Err::kOk) *dptr = D(p);
  return ToCU(e);
}

SIMGPU_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  SIMGPU_DRIVER_ENTER_CTX();
  return ToCU(Device::Get().MemFree(P(dptr)));
}

SIMGPU_EXPORT CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytes, CUstream stream) {
  SIMGPU_DRIVER_ENTER_CTX();
  if (dptr == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (Device::Get().FailNow("cuMemAllocAsync")) return CUDA_ERROR_OUT_OF_MEMORY;
  void* p = nullptr;
  Err e = Device::Get().MemAllocAsync(bytes, stream, &p);
  if (e == Err::kOk) *dptr = D(p);
  return ToCU(e);
}

SIMGPU_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream) {
  SIMGPU_DRIVER_ENTER_CTX();
  return ToCU(Device::Get().MemFreeAsync(P(dptr), stream));
}

SIMGPU_EXPORT CUresult cuMemHostAlloc(void** pp, size_t bytes, unsigned int flags) {
  SIMGPU_DRIVER_ENTER_CTX();
  if (pp == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  constexpr unsigned kKnown =
      CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
  if ((flags & ~kKnown) != 0) return CUDA_ERROR_INVALID_VALUE;
  if (Device::Get().FailNow("cuMemHostAlloc")) return CUDA_ERROR_OUT_OF_MEMORY;
  return ToCU(Device::Get().HostAlloc(bytes, pp));
}

SIMGPU_EXPORT CUresult cuMemAllocHost_v2(void** pp, size_t bytes) {
  SIMGPU_DRIVER_ENTER_CTX();
  if (pp == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (Device::Get().FailNow("cuMemAllocHost")) return CUDA_ERROR_OUT_OF_MEMORY;
  return ToCU(Device::Get().HostAlloc(bytes, pp));
}

SIMGPU_EXPORT CUresult cuMemFreeHost(void* p) {
  SIMGPU_DRIVER_ENTER_CTX();
  return ToCU(Device::Get().HostFree(p));
}

SIMGPU_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr* base, size_t* bytes, CUdeviceptr dptr) {
  SIMGPU_DRIVER_ENTER_CTX();
  PtrInfo info = Device::Get().Classify(P(dptr));
  if (info.kind != PtrKind::kDevice) return CUDA_ERROR_NOT_FOUND;
  if (base != nullptr) *base = info.base;
  if (bytes != nullptr) *bytes = info.bytes;
  return CUDA_SUCCESS;
}

namespace {

// One pointer attribute; `known` false for memory CUDA does not know (plain host memory).
CUresult PointerAttribute(void* data, CUpointer_attribute attr, CUdeviceptr ptr, bool lenient) {
  PtrInfo info = Device::Get().Classify(P(ptr));
  bool known = info.kind != PtrKind::kUnregistered;
  if (!known && !lenient) return CUDA_ERROR_INVALID_VALUE;
  switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext*>(data) = known ? simgpu::driver::PrimaryContext() : nullptr;
      break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned int*>(data) = info.kind == PtrKind::kDevice       ? CU_MEMORYTYPE_DEVICE
                                          : info.kind == PtrKind::kPinnedHost ? CU_MEMORYTYPE_HOST
                                                                              : 0;
      break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      *static_cast<CUdeviceptr*>(data) = known ? ptr : 0;
      break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      *static_cast<void**>(data) = info.kind == PtrKind::kPinnedHost ? P(ptr) : nullptr;
      break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      *static_cast<unsigned int*>(data) = 0;
      break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      *static_cast<int*>(data) = known ? 0 : -2;
      break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      *static_cast<CUdeviceptr*>(data) = info.base;
      break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      *static_cast<size_t*>(data) = info.bytes;
      break;
    case CU_POINTER_ATTRIBUTE_MAPPED:
      *static_cast<unsigned int*>(data) = known ? 1 : 0;
      break;
    default:
      simgpu::driver::Unsupported("cuPointerGetAttribute", "this attribute");
      return CUDA_ERROR_NOT_SUPPORTED;
  }
  return CUDA_SUCCESS;
}

}  // namespace

SIMGPU_EXPORT CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute,
                                             CUdeviceptr ptr) {
  SIMGPU_DRIVER_ENTER_CTX();
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return PointerAttribute(data, attribute, ptr, /*lenient=*/false);
}

SIMGPU_EXPORT CUresult cuPointerGetAttributes(unsigned int count, CUpointer_attribute* attributes,
                                              void** data, CUdeviceptr ptr) {
  SIMGPU_DRIVER_ENTER_CTX();
  if (attributes == nullptr || data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned int i = 0; i < count; ++i) {
    if (data[i] == nullptr) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = PointerAttribute(data[i], attributes[i], ptr, /*lenient=*/true);
    if (r != CUDA_SUCCESS) return r;
  }
  return CUDA_SUCCESS;
}

// --- Copies ---

SIMGPU_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t bytes) {
  SIMGPU_DRIVER_ENTER_CTX();
  return Copy("cuMemcpyHtoD", P(dst), src, bytes, CopyDir::kHostToDevice, nullptr, true);
}

SIMGPU_EXPORT CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t bytes) {
  SIMGPU_DRIVER_ENTER_CTX();
  return Copy("cuMemcpyDtoH", dst, P(src), bytes, CopyDir::kDeviceToHost, nullptr, true);
}

SIMGPU_EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  SIMGPU_DRIVER_ENTER_CTX();
  // Device-to-device copies are asynchronous for the host even in their "synchronous" form.
  return Copy("cuMemcpyDtoD", P(dst), P(src), bytes, CopyDir::kDeviceToDevice, nullptr, false);
}

SIMGPU_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t bytes,
                                            CUstream stream) {
  SIMGPU_DRIVER_ENTER_CTX();
  return Copy("cuMemcpyHtoDAsync", P(dst), src, bytes, CopyDir::kHostToDevice, stream, false);
}

SIMGPU_EXPORT CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t bytes,
                                            CUstream stream) {
  SIMGPU_DRIVER_ENTER_CTX();
  return Copy("cuMemcpyDtoHAsync", dst, P(src), bytes, CopyDir::kDeviceToHost, stream, false);
}

SIMGPU_EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                                            CUstream stream) {
  SIMGPU_DRIVER_ENTER_CTX();
  return Copy("cuMemcpyDtoDAsync", P(dst), P(src), bytes, CopyDir::kDeviceToDevice, stream, false);
}

SIMGPU_EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  SIMGPU_DRIVER_ENTER_CTX();
  return Copy("cuMemcpy", P(dst), P(src), bytes, CopyDir::kDefault, nullptr, true);
}

SIMGPU_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                                     CUstream stream) {
  SIMGPU_DRIVER_ENTER_CTX();
  return Copy("cuMemcpyAsync", P(dst), P(src), bytes, CopyDir::kDefault, stream, false);
}

// --- Memsets ---

SIMGPU_EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t n) {
  SIMGPU_DRIVER_ENTER_CTX();
  // Memsets to device memory are asynchronous for the host (CUDA "API synchronization").
  return ToCU(Device::Get().Memset("cuMemsetD8", P(dst), value, n, nullptr, false));
}

SIMGPU_EXPORT CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n,
                                       CUstream stream) {
  SIMGPU_DRIVER_ENTER_CTX();
  return ToCU(Device::Get().Memset("cuMemsetD8Async", P(dst), value, n, stream, false));
}
