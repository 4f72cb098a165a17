// A kernel with a CPU twin (Note [CPU twins]), for kernel_launch_test, which defines the twin.
// Apart from kernels_test.cu so that the modules fatbin_test reads keep their kernels.
#include <cuda_runtime_api.h>

__global__ void k_twin(float* dst, const float* src, float scale, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i] * scale;
}

extern "C" {

// k_twin(float* dst, const float* src, float scale, int n)
const void* KernelTwin() { return reinterpret_cast<const void*>(k_twin); }

cudaError_t LaunchTwinChevrons(float* dst, const float* src, float scale, int n) {
  k_twin<<<(n + 255) / 256, 256>>>(dst, src, scale, n);
  return cudaGetLastError();
}

}  // extern "C"
