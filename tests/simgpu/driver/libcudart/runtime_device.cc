// libcudart.so.13: versions, the device and its properties, device synchronisation and the
// driver entry-point look-ups.
#include <cstdio>
#include <cstring>

#include "tests/simgpu/driver/libcudart/runtime_driver.h"

using simgpu::runtime::Record;

SIMGPU_RT_EXPORT cudaError_t cudaRuntimeGetVersion(int* version) {
  if (version == nullptr) return Record(cudaErrorInvalidValue);
  *version = CUDART_VERSION;
  return cudaSuccess;
}

SIMGPU_RT_EXPORT cudaError_t cudaDriverGetVersion(int* version) {
  if (version == nullptr) return Record(cudaErrorInvalidValue);
  SIMGPU_RT_ENTER();
  return Record(drv->cuDriverGetVersion(version));
}

SIMGPU_RT_EXPORT cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return Record(cudaErrorInvalidValue);
  SIMGPU_RT_ENTER();
  return Record(drv->cuDeviceGetCount(count));
}

SIMGPU_RT_EXPORT cudaError_t cudaSetDevice(int device) {
  SIMGPU_RT_ENTER();
  return device == 0 ? cudaSuccess : Record(cudaErrorInvalidDevice);
}

SIMGPU_RT_EXPORT cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return Record(cudaErrorInvalidValue);
  SIMGPU_RT_ENTER();
  *device = 0;
  return cudaSuccess;
}

SIMGPU_RT_EXPORT cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (prop == nullptr) return Record(cudaErrorInvalidValue);
  SIMGPU_RT_ENTER();
  if (device != 0) return Record(cudaErrorInvalidDevice);
  std::memset(prop, 0, sizeof(*prop));
  CUresult r = drv->cuDeviceGetName(prop->name, sizeof(prop->name), 0);
  if (r == CUDA_SUCCESS) r = drv->cuDeviceTotalMem(&prop->totalGlobalMem, 0);
  auto attr = [&](CUdevice_attribute a) {
    int v = 0;
    if (r == CUDA_SUCCESS) r = drv->cuDeviceGetAttribute(&v, a, 0);
    return v;
  };
  prop->sharedMemPerBlock = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  prop->regsPerBlock = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  prop->warpSize = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  prop->memPitch = attr(CU_DEVICE_ATTRIBUTE_MAX_PITCH);
  prop->maxThreadsPerBlock = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  prop->maxThreadsDim[0] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
  prop->maxThreadsDim[1] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y);
  prop->maxThreadsDim[2] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z);
  prop->maxGridSize[0] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
  prop->maxGridSize[1] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
  prop->maxGridSize[2] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
  prop->totalConstMem = attr(CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY);
  prop->major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  prop->minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  prop->textureAlignment = attr(CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT);
  prop->multiProcessorCount = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  prop->integrated = attr(CU_DEVICE_ATTRIBUTE_INTEGRATED);
  prop->canMapHostMemory = attr(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY);
  prop->concurrentKernels = attr(CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS);
  prop->ECCEnabled = attr(CU_DEVICE_ATTRIBUTE_ECC_ENABLED);
  prop->asyncEngineCount = attr(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT);
  prop->unifiedAddressing = attr(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING);
  prop->memoryBusWidth = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  prop->l2CacheSize = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  prop->maxThreadsPerMultiProcessor = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  prop->streamPrioritiesSupported = attr(CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED);
  prop->globalL1CacheSupported = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED);
  prop->localL1CacheSupported = attr(CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED);
  prop->sharedMemPerMultiprocessor = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  prop->regsPerMultiprocessor = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  prop->managedMemory = attr(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY);
  prop->cooperativeLaunch = attr(CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH);
  prop->sharedMemPerBlockOptin = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  prop->maxBlocksPerMultiProcessor = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  prop->memoryPoolsSupported = attr(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED);
  return Record(r);
}

SIMGPU_RT_EXPORT cudaError_t cudaDeviceSynchronize() {
  SIMGPU_RT_ENTER();
  return Record(drv->cuCtxSynchronize(nullptr));
}

SIMGPU_RT_EXPORT cudaError_t cudaGetDriverEntryPointByVersion(
    const char* symbol, void** func, unsigned int cuda_version, unsigned long long flags,
    cudaDriverEntryPointQueryResult* status) {
  if (symbol == nullptr || func == nullptr) return Record(cudaErrorInvalidValue);
  SIMGPU_RT_ENTER();
  // Through the driver's own cuGetProcAddress, so that a hook on it sees this look-up too.
  CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult r = drv->cuGetProcAddress(symbol, func, static_cast<int>(cuda_version), flags, &found);
  if (status != nullptr) *status = static_cast<cudaDriverEntryPointQueryResult>(found);
  // A symbol that is not found is not an error: *func is NULL and status says why.
  if (r == CUDA_ERROR_NOT_FOUND) {
    *func = nullptr;
    return cudaSuccess;
  }
  return Record(r);
}

SIMGPU_RT_EXPORT cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** func,
                                                     unsigned long long flags,
                                                     cudaDriverEntryPointQueryResult* status) {
  return cudaGetDriverEntryPointByVersion(symbol, func, CUDART_VERSION, flags, status);
}

SIMGPU_RT_EXPORT cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (value == nullptr) return Record(cudaErrorInvalidValue);
  SIMGPU_RT_ENTER();
  // cudaDeviceAttr values are those of CUdevice_attribute.
  return Record(drv->cuDeviceGetAttribute(value, static_cast<CUdevice_attribute>(attr), device));
}

SIMGPU_RT_EXPORT cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  SIMGPU_RT_ENTER();
  // Priorities are accepted and ignored (one compute engine in issue order).
  if (least != nullptr) *least = 0;
  if (greatest != nullptr) *greatest = -5;
  return cudaSuccess;
}
