// A stand-in for libcudart with functions that do nothing, so that hook_overhead_bench measures
// what libpooch.so adds to a call and nothing else. Not a CUDA runtime.
#include <cuda_runtime_api.h>

extern "C" __attribute__((visibility("default"), noinline)) cudaError_t cudaEventRecord(
    cudaEvent_t, cudaStream_t) {
  asm volatile("");
  return cudaSuccess;
}
