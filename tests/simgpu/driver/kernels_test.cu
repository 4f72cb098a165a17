// Kernels for simgpu's kernel tests, compiled by nvcc at build time (CMakeLists.txt): into an
// object linked into kernel_launch_test (registered through the real runtime's
// __cudaRegisterFatBinary), and into fat binaries and a cubin that fatbin_test parses.
// The parameter kinds cover what the cubin's parameter info must describe: pointers, ints, a
// small struct, a double, a char, a struct of 808 bytes like torch's OffsetCalculator, an
// array of pointers like the `data` array of torch's elementwise kernels, and a struct over 4 KiB
// like torch's TensorListMetadata.
#include <cuda_runtime_api.h>

#include "tests/simgpu/driver/kernels_test.h"

__global__ void k_copy(float* dst, const float* src, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i];
}

__global__ void k_struct(SmallArg s, double d, char c, float* out) { out[0] = s.a + s.b + d + c; }

__global__ void k_big(BigArg b, float* out, short h) {
  out[0] = static_cast<float>(b.sizes[b.dims] + b.strides[1][2] + h);
}

__global__ void __launch_bounds__(128) k_shared(float* out) {
  __shared__ float tile[kSharedFloats];
  tile[threadIdx.x] = out[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = tile[(threadIdx.x + 1) % blockDim.x];
}

__global__ void k_none() {}

__global__ void k_ptr_array(PtrArray a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a.p[0][i] = a.p[1][i] + a.p[2][i];
}

__global__ void k_huge(HugeArg h, char c, float* out) {
  out[0] = h.addresses[c & 3][h.block_to_tensor[blockIdx.x]][h.block_to_chunk[blockIdx.x]] +
           static_cast<float>(h.numel[h.start_tensor]);
}

__device__ float g_table[kTableFloats];
__constant__ int c_small[kConstInts] = {1, 2, 3, 4};

extern "C" {

const void* KernelCopy() { return reinterpret_cast<const void*>(k_copy); }
const void* KernelStruct() { return reinterpret_cast<const void*>(k_struct); }
const void* KernelBig() { return reinterpret_cast<const void*>(k_big); }
const void* KernelShared() { return reinterpret_cast<const void*>(k_shared); }
const void* KernelNone() { return reinterpret_cast<const void*>(k_none); }
const void* KernelPtrArray() { return reinterpret_cast<const void*>(k_ptr_array); }
const void* KernelHuge() { return reinterpret_cast<const void*>(k_huge); }
const void* SymbolTable() { return &g_table; }
const void* SymbolConst() { return &c_small; }

cudaError_t LaunchCopyChevrons(float* dst, const float* src, int n, cudaStream_t stream) {
  k_copy<<<(n + 255) / 256, 256, 0, stream>>>(dst, src, n);
  return cudaGetLastError();
}

cudaError_t LaunchBigChevrons(const BigArg* b, float* out, short h) {
  k_big<<<1, 1>>>(*b, out, h);
  return cudaGetLastError();
}

}  // extern "C"
