// kernel_verdict_kernels.cu: the kernels of kernel_verdict_probe.cc, built by nvcc for sm_90
// (tests/interpose/CMakeLists.txt). k_scale takes its pointers in a struct passed by value, as
// PyTorch's TensorIterator does, with one (`stale`) it never uses: its verdict is exact (writes
// word 0x0, reads 0x8). k_chase writes through a pointer it loads from memory: unknown.
#include <cuda_runtime.h>

struct ScaleArgs {
  float* out;
  const float* in;
  float* stale;
  int n;
};

__global__ void k_scale(ScaleArgs a) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < a.n) a.out[i] = 2.0f * a.in[i];
}

__global__ void k_chase(float* const* slots, float* also, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) slots[0][i] = also[i];
}

extern "C" cudaError_t LaunchScale(float* out, const float* in, float* stale, int n) {
  k_scale<<<(n + 255) / 256, 256>>>(ScaleArgs{out, in, stale, n});
  return cudaGetLastError();
}

extern "C" cudaError_t LaunchChase(float* const* slots, float* also, int n) {
  k_chase<<<(n + 255) / 256, 256>>>(slots, also, n);
  return cudaGetLastError();
}
