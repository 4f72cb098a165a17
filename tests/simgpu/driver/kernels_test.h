// kernels_test.h: the host side of kernels_test.cu (compiled by nvcc; included by the C++ tests
// too). The argument structs' layout is the host compiler's, which nvcc matches on the device.
#ifndef SIMGPU_DRIVER_KERNELS_TEST_H_
#define SIMGPU_DRIVER_KERNELS_TEST_H_

#include <cuda_runtime_api.h>

#include <cstdint>

struct SmallArg {
  int a;
  float b;
};

// Shaped like torch's OffsetCalculator<25>: sizes and strides of up to 25 dimensions.
struct BigArg {
  int64_t sizes[25];
  int64_t strides[25][3];
  int dims;
};

// Shaped like torch's TensorListMetadata for its multi_tensor_apply kernels: over 4 KiB, which
// only the large-parameter layout record describes (Note [Cubin info]).
struct HugeArg {
  float* addresses[4][110];
  int64_t numel[110];
  unsigned char block_to_tensor[320];
  int block_to_chunk[320];
  int start_tensor;
};

// Like the `data` array torch passes its elementwise kernels: pointers only.
struct PtrArray {
  float* p[3];
};

constexpr int kSharedFloats = 2048;     // k_shared's static shared memory: 8 KiB
constexpr int kTableFloats = 64;        // g_table: 256 bytes
constexpr int kConstInts = 4;           // c_small: 16 bytes, initialised to {1, 2, 3, 4}
constexpr int kSharedMaxThreads = 128;  // k_shared's __launch_bounds__

extern "C" {
// The kernels' host stubs (what cudaLaunchKernel and cudaGetFuncBySymbol take).
const void* KernelCopy();      // k_copy(float* dst, const float* src, int n)
const void* KernelStruct();    // k_struct(SmallArg, double, char, float*)
const void* KernelBig();       // k_big(BigArg, float*, short)
const void* KernelShared();    // k_shared(float*): 8 KiB static shared memory, 128 threads at most
const void* KernelNone();      // k_none()
const void* KernelPtrArray();  // k_ptr_array(PtrArray, int): p[0][i] = p[1][i] + p[2][i]
const void* KernelHuge();      // k_huge(HugeArg, char, float*): a parameter buffer over 4 KiB
const void* SymbolTable();     // __device__ float g_table[64]
const void* SymbolConst();     // __constant__ int c_small[4] = {1, 2, 3, 4}

// Launches through <<<>>> (__cudaPushCallConfiguration, __cudaGetKernel, __cudaLaunchKernel).
cudaError_t LaunchCopyChevrons(float* dst, const float* src, int n, cudaStream_t stream);
cudaError_t LaunchBigChevrons(const BigArg* b, float* out, short h);
}

#endif  // SIMGPU_DRIVER_KERNELS_TEST_H_
