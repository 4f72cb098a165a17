// runtime_kernels.h: libcudart.so.13's registry of the kernels and variables that nvcc-compiled
// code registers (__cudaRegisterFatBinary and friends), and its way to the driver's modules.
//
// Note [Lazy registration]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// nvcc emits a static constructor per translation unit that calls __cudaRegisterFatBinary with the
// unit's fat binary, then __cudaRegisterFunction per kernel and __cudaRegisterVar per device
// variable. torch's libtorch_cuda.so runs thousands of these at `import torch` (336 MB of fat
// binaries), before any CUDA call and often in processes that never use the GPU. Registration
// therefore only remembers pointers: the wrapper, and a host address -> (module, device name)
// entry. Nothing is decompressed or parsed, and the driver is not touched, until the first launch
// of (or query about) one of the module's kernels: then the module is loaded once into the driver
// (cuLibraryLoadData with CU_LIBRARY_BINARY_IS_PRESERVED: the fat binary lives in the program's
// image) and the kernel looked up by name (cuLibraryGetKernel), which parses the cubin
// (cuda_modules.h).
//
// Thread safety: the registry is guarded by one mutex; each module's load and each kernel's
// look-up happen once (std::call_once).
#ifndef SIMGPU_DRIVER_RUNTIME_KERNELS_H_
#define SIMGPU_DRIVER_RUNTIME_KERNELS_H_

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

// The driver entry points for kernels, looked up once through the runtime's cuGetProcAddress:
// X(name, PFN type). Kept apart from runtime_driver.h's table, which the runtime needs at
// start-up: these are needed only by programs that launch kernels.
#define SIMGPU_RUNTIME_KERNEL_CALLS(X)                                   \
  X(cuLibraryLoadData, PFN_cuLibraryLoadData_v12000)                     \
  X(cuLibraryGetKernel, PFN_cuLibraryGetKernel_v12000)                   \
  X(cuLibraryGetGlobal, PFN_cuLibraryGetGlobal_v12000)                   \
  X(cuLibraryLoadFromFile, PFN_cuLibraryLoadFromFile_v12000)             \
  X(cuLibraryUnload, PFN_cuLibraryUnload_v12000)                         \
  X(cuLibraryGetManaged, PFN_cuLibraryGetManaged_v12000)                 \
  X(cuLibraryGetUnifiedFunction, PFN_cuLibraryGetUnifiedFunction_v12000) \
  X(cuLibraryGetKernelCount, PFN_cuLibraryGetKernelCount_v12040)         \
  X(cuLibraryEnumerateKernels, PFN_cuLibraryEnumerateKernels_v12040)     \
  X(cuKernelGetFunction, PFN_cuKernelGetFunction_v12000)                 \
  X(cuKernelGetAttribute, PFN_cuKernelGetAttribute_v12000)               \
  X(cuKernelSetAttribute, PFN_cuKernelSetAttribute_v12000)               \
  X(cuFuncGetAttribute, PFN_cuFuncGetAttribute_v2020)                    \
  X(cuFuncSetAttribute, PFN_cuFuncSetAttribute_v9000)                    \
  X(cuFuncSetCacheConfig, PFN_cuFuncSetCacheConfig_v3000)                \
  X(cuFuncGetParamInfo, PFN_cuFuncGetParamInfo_v12040)                   \
  X(cuLaunchKernel, PFN_cuLaunchKernel_v4000)                            \
  X(cuLaunchKernelEx, PFN_cuLaunchKernelEx_v11060)                       \
  X(cuLaunchCooperativeKernel, PFN_cuLaunchCooperativeKernel_v9000)      \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags,                \
    PFN_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags_v7000)      \
  X(cuOccupancyAvailableDynamicSMemPerBlock, PFN_cuOccupancyAvailableDynamicSMemPerBlock_v10020)

namespace simgpu::runtime {

struct KernelDriverTable {
#define SIMGPU_MEMBER(name, type) type name = nullptr;
  SIMGPU_RUNTIME_KERNEL_CALLS(SIMGPU_MEMBER)
#undef SIMGPU_MEMBER
};

// The table (the driver loaded and this thread's context current, as Driver() does), or nullptr
// with *err set.
const KernelDriverTable* KernelDriver(cudaError_t* err);

// Registration (Note [Lazy registration]); never calls the driver.
void** RegisterModule(const void* fat_cubin);
void UnregisterModule(void** handle);
void RegisterFunction(void** handle, const void* host_fun, const char* device_name);
void RegisterVar(void** handle, const void* host_var, const char* device_name, size_t bytes);
void MarkManaged(void** handle);  // the module has __managed__ variables
bool HasManaged(void** handle);

// The driver kernel of a registered host function, loading its module on first use. Also
// accepts a cudaKernel_t (a CUkernel) given where a host function is expected, as CUDA 12's
// runtime does. cudaErrorInvalidDeviceFunction if `host_fun` is neither.
cudaError_t KernelOf(const void* host_fun, CUkernel* out);

// The driver function of a registered host function or a cudaKernel_t.
cudaError_t FunctionOf(const void* host_fun, CUfunction* out);

// The device address and size of a registered variable (cudaErrorInvalidSymbol if unknown).
cudaError_t SymbolOf(const void* host_var, CUdeviceptr* ptr, size_t* bytes);

// Driver codes of kernel calls as runtime codes (those ToRuntime does not know first).
cudaError_t KernelError(CUresult r);

}  // namespace simgpu::runtime

#endif  // SIMGPU_DRIVER_RUNTIME_KERNELS_H_
