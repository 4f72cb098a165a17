// libcudart.so.13: kernel launches (<<<>>>'s __cudaPushCallConfiguration / __cudaLaunchKernel,
// cudaLaunchKernel, cudaLaunchKernelExC, cudaLaunchCooperativeKernel), function attributes and
// occupancy, over the driver's cuLaunchKernel family (cuda_launch.cc).
//
// The runtime checks the launch shape first, as NVIDIA's runtime does, so a bad shape is
// cudaErrorInvalidConfiguration; everything else is the driver's verdict.
#include <cstdio>
#include <vector>

#include "tests/simgpu/driver/libcudart/runtime_driver.h"
#include "tests/simgpu/driver/libcudart/runtime_kernels.h"

using simgpu::runtime::KernelDriver;
using simgpu::runtime::KernelDriverTable;
using simgpu::runtime::KernelError;
using simgpu::runtime::Record;

static_assert(sizeof(cudaLaunchAttribute) == sizeof(CUlaunchAttribute));
static_assert(static_cast<int>(cudaFuncAttributeMaxDynamicSharedMemorySize) ==
              static_cast<int>(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES));
static_assert(static_cast<int>(cudaFuncAttributeClusterSchedulingPolicyPreference) ==
              static_cast<int>(CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE));
static_assert(static_cast<int>(cudaLaunchAttributePreferredSharedMemoryCarveout) ==
              static_cast<int>(CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT));

namespace {

// The stream argument of a _ptsz entry point: the default stream there is the per-thread one.
cudaStream_t PerThread(cudaStream_t s) { return s == nullptr ? cudaStreamPerThread : s; }

// A shape no GPU launches: a zero dimension, more than 1024 threads or a block dimension past
// the device's limit (1024, 1024, 64), a grid past (2^31 - 1, 65535, 65535).
bool BadShape(dim3 grid, dim3 block) {
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 || block.z == 0) {
    return true;
  }
  if (block.x > 1024 || block.y > 1024 || block.z > 64) return true;
  if (uint64_t{block.x} * block.y * block.z > 1024) return true;
  return grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535;
}

cudaError_t Launch(const void* func, dim3 grid, dim3 block, void** args, size_t shared,
                   cudaStream_t stream, bool cooperative) {
  if (BadShape(grid, block)) return Record(cudaErrorInvalidConfiguration);
  cudaError_t err = cudaSuccess;
  const KernelDriverTable* t = KernelDriver(&err);
  if (t == nullptr) return Record(err);
  CUfunction f = nullptr;
  if (cudaError_t e = simgpu::runtime::FunctionOf(func, &f); e != cudaSuccess) return Record(e);
  auto shm = static_cast<unsigned int>(shared);
  CUresult r = cooperative ? t->cuLaunchCooperativeKernel(f, grid.x, grid.y, grid.z, block.x,
                                                          block.y, block.z, shm, stream, args)
                           : t->cuLaunchKernel(f, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                               shm, stream, args, nullptr);
  return Record(KernelError(r));
}

cudaError_t LaunchEx(const cudaLaunchConfig_t* config, const void* func, void** args,
                     bool per_thread) {
  if (config == nullptr) return Record(cudaErrorInvalidValue);
  if (BadShape(config->gridDim, config->blockDim)) return Record(cudaErrorInvalidConfiguration);
  cudaError_t err = cudaSuccess;
  const KernelDriverTable* t = KernelDriver(&err);
  if (t == nullptr) return Record(err);
  CUfunction f = nullptr;
  if (cudaError_t e = simgpu::runtime::FunctionOf(func, &f); e != cudaSuccess) return Record(e);
  CUlaunchConfig c{};
  c.gridDimX = config->gridDim.x;
  c.gridDimY = config->gridDim.y;
  c.gridDimZ = config->gridDim.z;
  c.blockDimX = config->blockDim.x;
  c.blockDimY = config->blockDim.y;
  c.blockDimZ = config->blockDim.z;
  c.sharedMemBytes = static_cast<unsigned int>(config->dynamicSmemBytes);
  c.hStream = per_thread ? PerThread(config->stream) : config->stream;
  // The runtime's attributes have the driver's layout and numbering (asserted above).
  c.attrs = reinterpret_cast<CUlaunchAttribute*>(config->attrs);
  c.numAttrs = config->numAttrs;
  return Record(KernelError(t->cuLaunchKernelEx(&c, f, args, nullptr)));
}

// The launch configuration <<<grid, block, shared, stream>>> pushes and the stub pops, per
// thread (a stub may launch from any thread; pushes and pops pair up on one).
struct CallConfig {
  dim3 grid;
  dim3 block;
  size_t shared;
  cudaStream_t stream;
};
thread_local std::vector<CallConfig> t_configs;

}  // namespace

// --- What nvcc's generated code calls (crt/device_functions.h, crt/host_runtime.h). ---

SIMGPU_RT_EXPORT unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared,
                                                      struct CUstream_st* stream) {
  t_configs.push_back(CallConfig{grid, block, shared, stream});
  return 0;
}

SIMGPU_RT_EXPORT cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shared,
                                                        void* stream) {
  if (t_configs.empty()) return cudaErrorMissingConfiguration;
  CallConfig c = t_configs.back();
  t_configs.pop_back();
  if (grid != nullptr) *grid = c.grid;
  if (block != nullptr) *block = c.block;
  if (shared != nullptr) *shared = c.shared;
  if (stream != nullptr) *static_cast<cudaStream_t*>(stream) = c.stream;
  return cudaSuccess;
}

SIMGPU_RT_EXPORT cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* func) {
  if (kernel == nullptr) return Record(cudaErrorInvalidValue);
  CUkernel k = nullptr;
  cudaError_t e = simgpu::runtime::KernelOf(func, &k);
  if (e == cudaSuccess) *kernel = reinterpret_cast<cudaKernel_t>(k);
  return Record(e);
}

SIMGPU_RT_EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block,
                                                void** args, size_t shared, cudaStream_t stream) {
  // The stub passes a null kernel when its __cudaGetKernel failed.
  if (kernel == nullptr) return Record(cudaErrorInvalidDeviceFunction);
  return Launch(kernel, grid, block, args, shared, stream, false);
}

SIMGPU_RT_EXPORT cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid, dim3 block,
                                                     void** args, size_t shared,
                                                     cudaStream_t stream) {
  if (kernel == nullptr) return Record(cudaErrorInvalidDeviceFunction);
  return Launch(kernel, grid, block, args, shared, PerThread(stream), false);
}

// --- The runtime API. ---

SIMGPU_RT_EXPORT cudaError_t cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args,
                                              size_t shared, cudaStream_t stream) {
  return Launch(func, grid, block, args, shared, stream, false);
}

SIMGPU_RT_EXPORT cudaError_t cudaLaunchKernel_ptsz(const void* func, dim3 grid, dim3 block,
                                                   void** args, size_t shared,
                                                   cudaStream_t stream) {
  return Launch(func, grid, block, args, shared, PerThread(stream), false);
}

SIMGPU_RT_EXPORT cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func,
                                                 void** args) {
  return LaunchEx(config, func, args, false);
}

SIMGPU_RT_EXPORT cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config,
                                                      const void* func, void** args) {
  return LaunchEx(config, func, args, true);
}

SIMGPU_RT_EXPORT cudaError_t cudaLaunchCooperativeKernel(const void* func, dim3 grid, dim3 block,
                                                         void** args, size_t shared,
                                                         cudaStream_t stream) {
  return Launch(func, grid, block, args, shared, stream, true);
}

SIMGPU_RT_EXPORT cudaError_t cudaLaunchCooperativeKernel_ptsz(const void* func, dim3 grid,
                                                              dim3 block, void** args,
                                                              size_t shared, cudaStream_t stream) {
  return Launch(func, grid, block, args, shared, PerThread(stream), true);
}

SIMGPU_RT_EXPORT cudaError_t cudaGetFuncBySymbol(cudaFunction_t* function, const void* symbol) {
  if (function == nullptr) return Record(cudaErrorInvalidValue);
  CUfunction f = nullptr;
  cudaError_t e = simgpu::runtime::FunctionOf(symbol, &f);
  if (e == cudaSuccess) *function = reinterpret_cast<cudaFunction_t>(f);
  return Record(e);
}

SIMGPU_RT_EXPORT cudaError_t cudaGetKernel(cudaKernel_t* kernel, const void* entry) {
  return __cudaGetKernel(kernel, entry);
}

SIMGPU_RT_EXPORT cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* func) {
  if (attr == nullptr) return Record(cudaErrorInvalidValue);
  cudaError_t err = cudaSuccess;
  const KernelDriverTable* t = KernelDriver(&err);
  if (t == nullptr) return Record(err);
  CUfunction f = nullptr;
  if (cudaError_t e = simgpu::runtime::FunctionOf(func, &f); e != cudaSuccess) return Record(e);
  *attr = cudaFuncAttributes{};
  struct Field {
    CUfunction_attribute a;
    int* out;
  };
  int shared = 0, constant = 0, local = 0;
  const Field fields[] = {
      {CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, &shared},
      {CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, &constant},
      {CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, &local},
      {CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &attr->maxThreadsPerBlock},
      {CU_FUNC_ATTRIBUTE_NUM_REGS, &attr->numRegs},
      {CU_FUNC_ATTRIBUTE_PTX_VERSION, &attr->ptxVersion},
      {CU_FUNC_ATTRIBUTE_BINARY_VERSION, &attr->binaryVersion},
      {CU_FUNC_ATTRIBUTE_CACHE_MODE_CA, &attr->cacheModeCA},
      {CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, &attr->maxDynamicSharedSizeBytes},
      {CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, &attr->preferredShmemCarveout},
      {CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET, &attr->clusterDimMustBeSet},
      {CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, &attr->requiredClusterWidth},
      {CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, &attr->requiredClusterHeight},
      {CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, &attr->requiredClusterDepth},
      {CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE,
       &attr->clusterSchedulingPolicyPreference},
      {CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, &attr->nonPortableClusterSizeAllowed},
  };
  for (const Field& fd : fields) {
    if (CUresult r = t->cuFuncGetAttribute(fd.out, fd.a, f); r != CUDA_SUCCESS) {
      return Record(KernelError(r));
    }
  }
  attr->sharedSizeBytes = static_cast<size_t>(shared);
  attr->constSizeBytes = static_cast<size_t>(constant);
  attr->localSizeBytes = static_cast<size_t>(local);
  return cudaSuccess;
}

SIMGPU_RT_EXPORT cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr,
                                                  int value) {
  cudaError_t err = cudaSuccess;
  const KernelDriverTable* t = KernelDriver(&err);
  if (t == nullptr) return Record(err);
  CUfunction f = nullptr;
  if (cudaError_t e = simgpu::runtime::FunctionOf(func, &f); e != cudaSuccess) return Record(e);
  return Record(
      KernelError(t->cuFuncSetAttribute(f, static_cast<CUfunction_attribute>(attr), value)));
}

SIMGPU_RT_EXPORT cudaError_t cudaKernelSetAttributeForDevice(cudaKernel_t kernel,
                                                             cudaFuncAttribute attr, int value,
                                                             int device) {
  cudaError_t err = cudaSuccess;
  const KernelDriverTable* t = KernelDriver(&err);
  if (t == nullptr) return Record(err);
  if (device != 0) return Record(cudaErrorInvalidDevice);
  return Record(KernelError(t->cuKernelSetAttribute(static_cast<CUfunction_attribute>(attr), value,
                                                    reinterpret_cast<CUkernel>(kernel), device)));
}

SIMGPU_RT_EXPORT cudaError_t cudaFuncSetCacheConfig(const void* func, cudaFuncCache config) {
  cudaError_t err = cudaSuccess;
  const KernelDriverTable* t = KernelDriver(&err);
  if (t == nullptr) return Record(err);
  CUfunction f = nullptr;
  if (cudaError_t e = simgpu::runtime::FunctionOf(func, &f); e != cudaSuccess) return Record(e);
  return Record(KernelError(t->cuFuncSetCacheConfig(f, static_cast<CUfunc_cache>(config))));
}

SIMGPU_RT_EXPORT cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    int* blocks, const void* func, int block_size, size_t dynamic_shared, unsigned int flags) {
  cudaError_t err = cudaSuccess;
  const KernelDriverTable* t = KernelDriver(&err);
  if (t == nullptr) return Record(err);
  CUfunction f = nullptr;
  if (cudaError_t e = simgpu::runtime::FunctionOf(func, &f); e != cudaSuccess) return Record(e);
  return Record(KernelError(t->cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
      blocks, f, block_size, dynamic_shared, flags)));
}

SIMGPU_RT_EXPORT cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks,
                                                                           const void* func,
                                                                           int block_size,
                                                                           size_t dynamic_shared) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(blocks, func, block_size,
                                                                dynamic_shared, 0);
}

SIMGPU_RT_EXPORT cudaError_t cudaOccupancyAvailableDynamicSMemPerBlock(size_t* dynamic_shared,
                                                                       const void* func,
                                                                       int num_blocks,
                                                                       int block_size) {
  cudaError_t err = cudaSuccess;
  const KernelDriverTable* t = KernelDriver(&err);
  if (t == nullptr) return Record(err);
  CUfunction f = nullptr;
  if (cudaError_t e = simgpu::runtime::FunctionOf(func, &f); e != cudaSuccess) return Record(e);
  return Record(KernelError(
      t->cuOccupancyAvailableDynamicSMemPerBlock(dynamic_shared, f, num_blocks, block_size)));
}

SIMGPU_RT_EXPORT cudaError_t cudaFuncGetParamInfo(const void* func, size_t index, size_t* offset,
                                                  size_t* size) {
  cudaError_t err = cudaSuccess;
  const KernelDriverTable* t = KernelDriver(&err);
  if (t == nullptr) return Record(err);
  CUfunction f = nullptr;
  if (cudaError_t e = simgpu::runtime::FunctionOf(func, &f); e != cudaSuccess) return Record(e);
  return Record(KernelError(t->cuFuncGetParamInfo(f, index, offset, size)));
}
