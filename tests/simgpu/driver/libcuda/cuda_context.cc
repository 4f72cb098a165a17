// libcuda.so.1: initialisation, versions, the device, its attributes, contexts, and the shared
// helpers of driver_common.h.
#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

#include "tests/simgpu/driver/libcuda/driver_common.h"

// CUctx_st is opaque in cuda.h; simgpu's one context is an object of it.
struct CUctx_st {
  int device;
};

namespace simgpu::driver {
namespace {

std::atomic<bool> g_initialized{false};
std::atomic<int> g_primary_refs{0};
CUctx_st g_primary{0};
thread_local CUcontext t_current = nullptr;

}  // namespace

CUresult ToCU(Err e) {
  switch (e) {
    case Err::kOk:
      return CUDA_SUCCESS;
    case Err::kInvalidValue:
      return CUDA_ERROR_INVALID_VALUE;
    case Err::kOutOfMemory:
      return CUDA_ERROR_OUT_OF_MEMORY;
    case Err::kIllegalAddress:
      return CUDA_ERROR_ILLEGAL_ADDRESS;
    case Err::kNotSupported:
      return CUDA_ERROR_NOT_SUPPORTED;
    case Err::kHazard:
      return CUDA_ERROR_ILLEGAL_STATE;
    case Err::kInvalidHandle:
      return CUDA_ERROR_INVALID_HANDLE;
    case Err::kNotReady:
      return CUDA_ERROR_NOT_READY;
    case Err::kNotInitialized:
      return CUDA_ERROR_NOT_INITIALIZED;
    case Err::kConfig:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_ERROR_UNKNOWN;
}

bool Initialized() { return g_initialized.load(std::memory_order_acquire); }
void SetInitialized() { g_initialized.store(true, std::memory_order_release); }
CUcontext CurrentContext() { return t_current; }
void SetCurrentContext(CUcontext ctx) { t_current = ctx; }
CUcontext PrimaryContext() { return &g_primary; }
bool IsPrimaryContext(CUcontext ctx) { return ctx == &g_primary; }

void Unsupported(const char* api, const char* what) {
  static std::mutex mu;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> lock(mu);
  if (said.insert(std::string(api) + what).second) {
    std::fprintf(stderr, "simgpu: %s: %s is not supported\n", api, what);
  }
}

}  // namespace simgpu::driver

using simgpu::Device;
using namespace simgpu::driver;

SIMGPU_EXPORT CUresult cuInit(unsigned int flags) {
  simgpu::CheckConfigOrExit();
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  Device::Get();
  SetInitialized();
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuDriverGetVersion(int* version) {
  simgpu::CheckConfigOrExit();
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuDeviceGetCount(int* count) {
  SIMGPU_DRIVER_ENTER();
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = 1;
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  SIMGPU_DRIVER_ENTER();
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  SIMGPU_DRIVER_ENTER();
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  std::snprintf(name, static_cast<size_t>(len), "%s", Device::Get().config().machine.gpu_name);
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  SIMGPU_DRIVER_ENTER();
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = Device::Get().config().machine.capacity_bytes;
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attrib, CUdevice dev) {
  SIMGPU_DRIVER_ENTER();
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  const simgpu::Preset& m = Device::Get().config().machine;
  int l2 = m.cc_major >= 9 ? (50 << 20) : m.cc_major == 8 ? (40 << 20) : (6 << 20);
  switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *value = m.cc_major;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *value = m.cc_minor;
      break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *value = m.sm_count;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *value = 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
      *value = 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
      *value = 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
      *value = 64;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
      *value = 2147483647;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
      *value = 65535;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
      *value = 65535;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
      *value = 48 << 10;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      *value = m.smem_per_block_optin;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
      *value = m.smem_per_sm;
      break;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY:
      *value = 64 << 10;
      break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
      *value = 32;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH:
      *value = 2147483647;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
      *value = 65536;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
      *value = 65536;
      break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
      *value = 1380000;
      break;  // kHz
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
      *value = 877000;
      break;  // kHz
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
      *value = 4096;
      break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
      *value = l2;
      break;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT:
      *value = 512;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
      *value = 2048;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
      *value = 32;
      break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
      *value = 2;
      break;
    case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP:
      *value = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
      *value = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
      *value = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
      *value = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
      *value = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
      *value = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED:
      *value = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED:
      *value = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED:
      *value = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED:
      *value = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED:
      *value = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT:
      *value = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE:
      *value = CU_COMPUTEMODE_DEFAULT;
      break;
    case CU_DEVICE_ATTRIBUTE_TCC_DRIVER:
      *value = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
      *value = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
      *value = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
      *value = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
      *value = 0;
      break;  // no unified memory
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
      *value = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS:
      *value = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD:
      *value = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
      *value = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED:
      *value = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED:
      *value = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
      *value = 0;
      break;
    default:
      Unsupported("cuDeviceGetAttribute", ("attribute " + std::to_string(attrib)).c_str());
      return CUDA_ERROR_NOT_SUPPORTED;
  }
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
  SIMGPU_DRIVER_ENTER();
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  g_primary_refs.fetch_add(1);
  *ctx = PrimaryContext();
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  SIMGPU_DRIVER_ENTER();
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  // Releasing the last reference would reset the device on CUDA; simgpu keeps its state.
  int refs = g_primary_refs.load();
  while (refs > 0 && !g_primary_refs.compare_exchange_weak(refs, refs - 1)) {
  }
  return refs > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

SIMGPU_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  SIMGPU_DRIVER_ENTER();
  if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  *flags = 0;
  *active = g_primary_refs.load() > 0 ? 1 : 0;
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuCtxGetCurrent(CUcontext* ctx) {
  SIMGPU_DRIVER_ENTER();
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *ctx = CurrentContext();
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  SIMGPU_DRIVER_ENTER();
  if (ctx != nullptr && !IsPrimaryContext(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  SetCurrentContext(ctx);
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuCtxGetDevice(CUdevice* device) {
  SIMGPU_DRIVER_ENTER();
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CurrentContext() == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  *device = 0;
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuCtxGetDevice_v2(CUdevice* device, CUcontext ctx) {
  SIMGPU_DRIVER_ENTER();
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ctx == nullptr) ctx = CurrentContext();
  if (ctx == nullptr || !IsPrimaryContext(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  *device = 0;
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuCtxSynchronize() {
  SIMGPU_DRIVER_ENTER_CTX();
  return ToCU(Device::Get().Synchronize());
}

SIMGPU_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  SIMGPU_DRIVER_ENTER();
  if (ctx != nullptr && !IsPrimaryContext(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  return ToCU(Device::Get().Synchronize());
}
