// libcuda.so.1: virtual memory management (cuMemCreate, cuMemAddressReserve, cuMemMap, ...).
// Only what pooch and PyTorch use: pinned device memory on device 0, no shareable handles.
#include "tests/simgpu/driver/libcuda/driver_common.h"

using simgpu::Device;
using simgpu::Err;
using simgpu::driver::ToCU;
using simgpu::driver::Unsupported;

namespace {

void* P(CUdeviceptr d) { return reinterpret_cast<void*>(static_cast<uintptr_t>(d)); }

// kOk for the only allocation kind simgpu has: pinned memory on device 0.
CUresult CheckProp(const char* api, const CUmemAllocationProp* prop) {
  if (prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED) {
    Unsupported(api, "an allocation type other than CU_MEM_ALLOCATION_TYPE_PINNED");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    Unsupported(api, "a location other than CU_MEM_LOCATION_TYPE_DEVICE");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  if (prop->location.id != 0) return CUDA_ERROR_INVALID_DEVICE;
  if (prop->requestedHandleTypes != CU_MEM_HANDLE_TYPE_NONE) {
    Unsupported(api, "shareable handle types");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  return CUDA_SUCCESS;
}

}  // namespace

SIMGPU_EXPORT CUresult cuMemGetAllocationGranularity(size_t* granularity,
                                                     const CUmemAllocationProp* prop,
                                                     CUmemAllocationGranularity_flags option) {
  SIMGPU_DRIVER_ENTER();
  if (granularity == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = CheckProp("cuMemGetAllocationGranularity", prop); r != CUDA_SUCCESS) return r;
  if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
      option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *granularity = Device::kGranularity;
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                                   const CUmemAllocationProp* prop, unsigned long long flags) {
  SIMGPU_DRIVER_ENTER_CTX();
  if (handle == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = CheckProp("cuMemCreate", prop); r != CUDA_SUCCESS) return r;
  if (Device::Get().FailNow("cuMemCreate")) return CUDA_ERROR_OUT_OF_MEMORY;
  uint64_t h = 0;
  Err e = Device::Get().PhysCreate(size, &h);
  if (e == Err::kOk) *handle = h;
  return ToCU(e);
}

SIMGPU_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  SIMGPU_DRIVER_ENTER_CTX();
  return ToCU(Device::Get().PhysRelease(handle));
}

SIMGPU_EXPORT CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment,
                                           CUdeviceptr addr, unsigned long long flags) {
  SIMGPU_DRIVER_ENTER_CTX();
  if (ptr == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (Device::Get().FailNow("cuMemAddressReserve")) return CUDA_ERROR_OUT_OF_MEMORY;
  void* p = nullptr;
  Err e = Device::Get().AddressReserve(size, alignment, addr, &p);
  if (e == Err::kOk) *ptr = reinterpret_cast<uintptr_t>(p);
  return ToCU(e);
}

SIMGPU_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  SIMGPU_DRIVER_ENTER_CTX();
  return ToCU(Device::Get().AddressFree(P(ptr), size));
}

SIMGPU_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                                CUmemGenericAllocationHandle handle, unsigned long long flags) {
  SIMGPU_DRIVER_ENTER_CTX();
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (Device::Get().FailNow("cuMemMap")) return CUDA_ERROR_OUT_OF_MEMORY;
  return ToCU(Device::Get().Map(P(ptr), size, offset, handle));
}

SIMGPU_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  SIMGPU_DRIVER_ENTER_CTX();
  return ToCU(Device::Get().Unmap(P(ptr), size));
}

SIMGPU_EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc,
                                      size_t count) {
  SIMGPU_DRIVER_ENTER_CTX();
  if (desc == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  bool read = false, write = false;
  for (size_t i = 0; i < count; ++i) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
      Unsupported("cuMemSetAccess", "a location other than CU_MEM_LOCATION_TYPE_DEVICE");
      return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (desc[i].location.id != 0) return CUDA_ERROR_INVALID_DEVICE;
    switch (desc[i].flags) {
      case CU_MEM_ACCESS_FLAGS_PROT_NONE:
        read = write = false;
        break;
      case CU_MEM_ACCESS_FLAGS_PROT_READ:
        read = true;
        write = false;
        break;
      case CU_MEM_ACCESS_FLAGS_PROT_READWRITE:
        read = write = true;
        break;
      default:
        return CUDA_ERROR_INVALID_VALUE;
    }
  }
  return ToCU(Device::Get().SetAccess(P(ptr), size, read, write));
}
