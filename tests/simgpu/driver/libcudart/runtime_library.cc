// libcudart.so.13: libraries loaded by the program itself (cudaLibraryLoadData and friends),
// over the driver's cuLibrary* (cuda_modules.cc). A cudaLibrary_t is the driver's CUlibrary and
// a cudaKernel_t its CUkernel, so they mix with cudaLaunchKernel and cudaGetKernel's handles.
#include "tests/simgpu/driver/libcudart/runtime_driver.h"
#include "tests/simgpu/driver/libcudart/runtime_kernels.h"

using simgpu::runtime::KernelDriver;
using simgpu::runtime::KernelDriverTable;
using simgpu::runtime::KernelError;
using simgpu::runtime::Record;

static_assert(static_cast<int>(cudaLibraryBinaryIsPreserved) ==
              static_cast<int>(CU_LIBRARY_BINARY_IS_PRESERVED));

namespace {

CUlibrary L(cudaLibrary_t lib) { return reinterpret_cast<CUlibrary>(lib); }

}  // namespace

#define SIMGPU_KERNEL_TABLE()                             \
  cudaError_t table_err_ = cudaSuccess;                   \
  const KernelDriverTable* t = KernelDriver(&table_err_); \
  if (t == nullptr) return Record(table_err_)

// JIT options steer PTX compilation, which simgpu never does: they are not passed on.
SIMGPU_RT_EXPORT cudaError_t cudaLibraryLoadData(cudaLibrary_t* library, const void* code,
                                                 cudaJitOption*, void**, unsigned int,
                                                 cudaLibraryOption* options, void** values,
                                                 unsigned int n_options) {
  SIMGPU_KERNEL_TABLE();
  return Record(KernelError(
      t->cuLibraryLoadData(reinterpret_cast<CUlibrary*>(library), code, nullptr, nullptr, 0,
                           reinterpret_cast<CUlibraryOption*>(options), values, n_options)));
}

SIMGPU_RT_EXPORT cudaError_t cudaLibraryLoadFromFile(cudaLibrary_t* library, const char* file,
                                                     cudaJitOption*, void**, unsigned int,
                                                     cudaLibraryOption* options, void** values,
                                                     unsigned int n_options) {
  SIMGPU_KERNEL_TABLE();
  return Record(KernelError(
      t->cuLibraryLoadFromFile(reinterpret_cast<CUlibrary*>(library), file, nullptr, nullptr, 0,
                               reinterpret_cast<CUlibraryOption*>(options), values, n_options)));
}

SIMGPU_RT_EXPORT cudaError_t cudaLibraryUnload(cudaLibrary_t library) {
  SIMGPU_KERNEL_TABLE();
  return Record(KernelError(t->cuLibraryUnload(L(library))));
}

SIMGPU_RT_EXPORT cudaError_t cudaLibraryGetKernel(cudaKernel_t* kernel, cudaLibrary_t library,
                                                  const char* name) {
  SIMGPU_KERNEL_TABLE();
  return Record(
      KernelError(t->cuLibraryGetKernel(reinterpret_cast<CUkernel*>(kernel), L(library), name)));
}

SIMGPU_RT_EXPORT cudaError_t cudaLibraryGetGlobal(void** dptr, size_t* bytes, cudaLibrary_t library,
                                                  const char* name) {
  SIMGPU_KERNEL_TABLE();
  CUdeviceptr p = 0;
  CUresult r = t->cuLibraryGetGlobal(&p, bytes, L(library), name);
  if (r == CUDA_SUCCESS && dptr != nullptr) *dptr = reinterpret_cast<void*>(p);
  return Record(r == CUDA_ERROR_NOT_FOUND ? cudaErrorSymbolNotFound : KernelError(r));
}

SIMGPU_RT_EXPORT cudaError_t cudaLibraryGetManaged(void** dptr, size_t* bytes,
                                                   cudaLibrary_t library, const char* name) {
  SIMGPU_KERNEL_TABLE();
  CUdeviceptr p = 0;
  CUresult r = t->cuLibraryGetManaged(&p, bytes, L(library), name);
  if (r == CUDA_SUCCESS && dptr != nullptr) *dptr = reinterpret_cast<void*>(p);
  return Record(KernelError(r));
}

SIMGPU_RT_EXPORT cudaError_t cudaLibraryGetUnifiedFunction(void** fptr, cudaLibrary_t library,
                                                           const char* symbol) {
  SIMGPU_KERNEL_TABLE();
  return Record(KernelError(t->cuLibraryGetUnifiedFunction(fptr, L(library), symbol)));
}

SIMGPU_RT_EXPORT cudaError_t cudaLibraryGetKernelCount(unsigned int* count, cudaLibrary_t lib) {
  SIMGPU_KERNEL_TABLE();
  return Record(KernelError(t->cuLibraryGetKernelCount(count, L(lib))));
}

SIMGPU_RT_EXPORT cudaError_t cudaLibraryEnumerateKernels(cudaKernel_t* kernels, unsigned int n,
                                                         cudaLibrary_t lib) {
  SIMGPU_KERNEL_TABLE();
  return Record(
      KernelError(t->cuLibraryEnumerateKernels(reinterpret_cast<CUkernel*>(kernels), n, L(lib))));
}
