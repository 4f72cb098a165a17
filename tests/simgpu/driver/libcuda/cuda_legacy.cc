// libcuda.so.1: the base names of versioned entry points (driver_legacy.h).
#include "tests/simgpu/driver/libcuda/driver_common.h"
#include "tests/simgpu/driver/libcuda/driver_legacy.h"

using simgpu::driver::Unsupported;

namespace {

CUresult ThirtyTwoBit(const char* api) {
  Unsupported(api, "the 32-bit-pointer form (use the _v2 entry point)");
  return CUDA_ERROR_NOT_SUPPORTED;
}

}  // namespace

SIMGPU_EXPORT CUresult cuMemGetInfo(unsigned int*, unsigned int*) {
  return ThirtyTwoBit("cuMemGetInfo");
}
SIMGPU_EXPORT CUresult cuMemAlloc(unsigned int*, unsigned int) {
  return ThirtyTwoBit("cuMemAlloc");
}
SIMGPU_EXPORT CUresult cuMemFree(unsigned int) { return ThirtyTwoBit("cuMemFree"); }
SIMGPU_EXPORT CUresult cuMemGetAddressRange(unsigned int*, unsigned int*, unsigned int) {
  return ThirtyTwoBit("cuMemGetAddressRange");
}
SIMGPU_EXPORT CUresult cuDeviceTotalMem(unsigned int*, CUdevice) {
  return ThirtyTwoBit("cuDeviceTotalMem");
}
SIMGPU_EXPORT CUresult cuMemcpyHtoD(unsigned int, const void*, unsigned int) {
  return ThirtyTwoBit("cuMemcpyHtoD");
}
SIMGPU_EXPORT CUresult cuMemcpyDtoH(void*, unsigned int, unsigned int) {
  return ThirtyTwoBit("cuMemcpyDtoH");
}
SIMGPU_EXPORT CUresult cuMemcpyDtoD(unsigned int, unsigned int, unsigned int) {
  return ThirtyTwoBit("cuMemcpyDtoD");
}
SIMGPU_EXPORT CUresult cuMemcpyHtoDAsync(unsigned int, const void*, unsigned int, CUstream) {
  return ThirtyTwoBit("cuMemcpyHtoDAsync");
}
SIMGPU_EXPORT CUresult cuMemcpyDtoHAsync(void*, unsigned int, unsigned int, CUstream) {
  return ThirtyTwoBit("cuMemcpyDtoHAsync");
}
SIMGPU_EXPORT CUresult cuMemcpyDtoDAsync(unsigned int, unsigned int, unsigned int, CUstream) {
  return ThirtyTwoBit("cuMemcpyDtoDAsync");
}
SIMGPU_EXPORT CUresult cuMemsetD8(unsigned int, unsigned char, unsigned int) {
  return ThirtyTwoBit("cuMemsetD8");
}

// Same signatures as their successors.
SIMGPU_EXPORT CUresult cuMemAllocHost(void** pp, unsigned int bytes) {
  return cuMemAllocHost_v2(pp, bytes);
}
SIMGPU_EXPORT CUresult cuStreamDestroy(CUstream stream) { return cuStreamDestroy_v2(stream); }
SIMGPU_EXPORT CUresult cuEventDestroy(CUevent event) { return cuEventDestroy_v2(event); }
SIMGPU_EXPORT CUresult cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  return cuEventElapsedTime_v2(ms, start, end);
}
SIMGPU_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  return cuDevicePrimaryCtxRelease_v2(dev);
}
