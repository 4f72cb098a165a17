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

#include "interpose/symbols/nccl_api.h"

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

// CUDA 13's launch entry of nvcc's host stubs (crt/device_functions.h declares it only for nvcc)
// and the per-thread-default-stream exports, which the headers declare only as the base name
// under __CUDART_API_PER_THREAD_DEFAULT_STREAM / CUDA_API_PER_THREAD_DEFAULT_STREAM: each has
// its base function's signature (Note [Per-thread default stream] in interpose/process/streams.h).
extern "C" {
// nvcc's registration of a program's fat binaries and kernels (crt/host_runtime.h, for nvcc),
// and the stub's handle look-up (crt/device_functions.h).
void** __cudaRegisterFatBinary(void* fatCubin);
void __cudaUnregisterFatBinary(void** fatCubinHandle);
void __cudaRegisterFunction(void** fatCubinHandle, const char* hostFun, char* deviceFun,
                            const char* deviceName, int thread_limit, uint3* tid, uint3* bid,
                            dim3* bDim, dim3* gDim, int* wSize);
cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* hostFun);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                               size_t sharedMem, cudaStream_t stream);
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                                    size_t sharedMem, cudaStream_t stream);
cudaError_t cudaLaunchKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                  size_t sharedMem, cudaStream_t stream);
cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config, const void* func,
                                     void** args);
cudaError_t cudaLaunchCooperativeKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim,
                                             void** args, size_t sharedMem, cudaStream_t stream);
cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind,
                                 cudaStream_t stream);
cudaError_t cudaMemcpy2D_ptds(void* dst, size_t dpitch, const void* src, size_t spitch,
                              size_t width, size_t height, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpy2DAsync_ptsz(void* dst, size_t dpitch, const void* src, size_t spitch,
                                   size_t width, size_t height, enum cudaMemcpyKind kind,
                                   cudaStream_t stream);
cudaError_t cudaMemset_ptds(void* devPtr, int value, size_t count);
cudaError_t cudaMemsetAsync_ptsz(void* devPtr, int value, size_t count, cudaStream_t stream);
cudaError_t cudaMemset2D_ptds(void* devPtr, size_t pitch, int value, size_t width, size_t height);
cudaError_t cudaMemset2DAsync_ptsz(void* devPtr, size_t pitch, int value, size_t width,
                                   size_t height, cudaStream_t stream);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
cudaError_t cudaMallocAsync_ptsz(void** devPtr, size_t size, cudaStream_t hStream);
cudaError_t cudaFreeAsync_ptsz(void* devPtr, cudaStream_t hStream);
cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, enum cudaStreamCaptureMode mode);
cudaError_t cudaStreamBeginCaptureToGraph_ptsz(cudaStream_t stream, cudaGraph_t graph,
                                               const cudaGraphNode_t* dependencies,
                                               const cudaGraphEdgeData* dependencyData,
                                               size_t numDependencies,
                                               enum cudaStreamCaptureMode mode);
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream);
CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                             unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                             unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                             void** kernelParams, void** extra);
CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                               void** extra);
CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream);
CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode);
CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream);
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
                                   CUstream hStream);
CUresult cuMemcpyDtoHAsync_v2_ptsz(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                   CUstream hStream);
CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                                   CUstream hStream);
CUresult cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream);
CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount);
CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount);
CUresult cuMemcpyDtoH_v2_ptds(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount);
CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount);
CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N);
}

#endif  // POOCH_INTERPOSE_SYMBOLS_CUDA_API_H_
