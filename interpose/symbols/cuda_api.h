// cuda_api.h: the toolkit headers as the interposer sees them. Include this instead of cuda.h,
// cuda_runtime_api.h, cudnn.h, cublas_v2.h or cublasLt.h in interpose/.
//
// cuda.h #defines base driver names to their current form (cuMemAlloc -> cuMemAlloc_v2). The
// real libcuda.so.1 exports both names, and so does libpooch.so, so the defines are undone
// here and the base (CUDA 2.x-era, 32-bit) forms are declared the way cudaTypedefs.h's
// PFN_<name>_v2000 typedefs describe them.
#ifndef POOCH_INTERPOSE_SYMBOLS_CUDA_API_H_
#define POOCH_INTERPOSE_SYMBOLS_CUDA_API_H_

// pooch hooks deprecated entry points too (cudaGetDriverEntryPoint): no deprecation warnings.
#ifndef CUDA_ENABLE_DEPRECATED
#define CUDA_ENABLE_DEPRECATED 1
#endif

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#undef cuMemAlloc
#undef cuMemFree
#undef cuMemGetInfo
#undef cuMemcpyHtoDAsync
#undef cuMemcpyDtoHAsync
#undef cuMemcpyDtoDAsync
#undef cuMemsetD8
#undef cuGetProcAddress

// The 32-bit device pointer of the base forms (cuda.h declares it only for its own build).
typedef unsigned int CUdeviceptr_v1;

extern "C" {
CUresult cuMemAlloc(CUdeviceptr_v1* dptr, unsigned int bytesize);
CUresult cuMemFree(CUdeviceptr_v1 dptr);
CUresult cuMemGetInfo(unsigned int* free, unsigned int* total);
CUresult cuMemcpyHtoDAsync(CUdeviceptr_v1 dstDevice, const void* srcHost, unsigned int ByteCount,
                           CUstream hStream);
CUresult cuMemcpyDtoHAsync(void* dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount,
                           CUstream hStream);
CUresult cuMemcpyDtoDAsync(CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice,
                           unsigned int ByteCount, CUstream hStream);
CUresult cuMemsetD8(CUdeviceptr_v1 dstDevice, unsigned char uc, unsigned int N);
CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags);
}

#endif  // POOCH_INTERPOSE_SYMBOLS_CUDA_API_H_
