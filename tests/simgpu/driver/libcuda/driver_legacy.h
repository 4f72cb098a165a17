// driver_legacy.h: the base (pre-_v2) names of the driver entry points that cuda.h #defines to a
// versioned name. libcuda.so.1 exports both, as the real one does. Include only in files that
// define or take the address of these (the #undefs below would otherwise surprise).
//
// The base forms of cuMemAlloc, cuMemcpyHtoD, ... take 32-bit device pointers (CUDA 2.x era).
// simgpu's device addresses do not fit in 32 bits, so those return CUDA_ERROR_NOT_SUPPORTED with
// one stderr line; base forms whose signature did not change forward to the current one.
//
// Thread safety: as the functions they forward to.
#ifndef SIMGPU_DRIVER_DRIVER_LEGACY_H_
#define SIMGPU_DRIVER_DRIVER_LEGACY_H_

#include <cuda.h>

#undef cuMemGetInfo
#undef cuMemAlloc
#undef cuMemFree
#undef cuMemAllocHost
#undef cuMemGetAddressRange
#undef cuDeviceTotalMem
#undef cuMemcpyHtoD
#undef cuMemcpyDtoH
#undef cuMemcpyDtoD
#undef cuMemcpyHtoDAsync
#undef cuMemcpyDtoHAsync
#undef cuMemcpyDtoDAsync
#undef cuMemsetD8
#undef cuStreamDestroy
#undef cuEventDestroy
#undef cuEventElapsedTime
#undef cuDevicePrimaryCtxRelease
#undef cuGetProcAddress

extern "C" {
CUresult cuMemGetInfo(unsigned int* free_bytes, unsigned int* total_bytes);
CUresult cuMemAlloc(unsigned int* dptr, unsigned int bytes);
CUresult cuMemFree(unsigned int dptr);
CUresult cuMemAllocHost(void** pp, unsigned int bytes);
CUresult cuMemGetAddressRange(unsigned int* base, unsigned int* size, unsigned int dptr);
CUresult cuDeviceTotalMem(unsigned int* bytes, CUdevice dev);
CUresult cuMemcpyHtoD(unsigned int dst, const void* src, unsigned int bytes);
CUresult cuMemcpyDtoH(void* dst, unsigned int src, unsigned int bytes);
CUresult cuMemcpyDtoD(unsigned int dst, unsigned int src, unsigned int bytes);
CUresult cuMemcpyHtoDAsync(unsigned int dst, const void* src, unsigned int bytes, CUstream s);
CUresult cuMemcpyDtoHAsync(void* dst, unsigned int src, unsigned int bytes, CUstream s);
CUresult cuMemcpyDtoDAsync(unsigned int dst, unsigned int src, unsigned int bytes, CUstream s);
CUresult cuMemsetD8(unsigned int dst, unsigned char value, unsigned int n);
CUresult cuStreamDestroy(CUstream stream);
CUresult cuEventDestroy(CUevent event);
CUresult cuEventElapsedTime(float* ms, CUevent start, CUevent end);
CUresult cuDevicePrimaryCtxRelease(CUdevice dev);
CUresult cuGetProcAddress(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags);
}

#endif  // SIMGPU_DRIVER_DRIVER_LEGACY_H_
