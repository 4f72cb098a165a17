// libcudart.so.13: registered __device__ and __constant__ variables (cudaGetSymbolAddress,
// cudaMemcpyToSymbol, ...). A variable's device memory is the driver's global of the module
// (cuLibraryGetGlobal), allocated when first asked for (Note [Lazy registration]).
#include <cstdint>

#include "tests/simgpu/driver/libcudart/runtime_driver.h"
#include "tests/simgpu/driver/libcudart/runtime_kernels.h"

using simgpu::runtime::Record;

namespace {

// The variable's device address plus `offset`, checked to hold `count` bytes.
cudaError_t Resolve(const void* symbol, size_t offset, size_t count, CUdeviceptr* out) {
  CUdeviceptr base = 0;
  size_t bytes = 0;
  if (cudaError_t e = simgpu::runtime::SymbolOf(symbol, &base, &bytes); e != cudaSuccess) return e;
  if (offset > bytes || count > bytes - offset) return cudaErrorInvalidValue;
  *out = base + offset;
  return cudaSuccess;
}

// Copies to or from a symbol, in the direction the pointers give (unified addressing); `kind`
// is checked against it as the runtime does.
cudaError_t Copy(CUdeviceptr dst, CUdeviceptr src, size_t count, cudaMemcpyKind kind,
                 cudaStream_t stream, bool async) {
  SIMGPU_RT_ENTER();
  (void)kind;
  if (count == 0) return cudaSuccess;
  CUresult r = async ? drv->cuMemcpyAsync(dst, src, count, stream) : drv->cuMemcpy(dst, src, count);
  return Record(r);
}

CUdeviceptr D(const void* p) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); }

bool ToSymbolKind(cudaMemcpyKind k) {
  return k == cudaMemcpyHostToDevice || k == cudaMemcpyDeviceToDevice || k == cudaMemcpyDefault;
}
bool FromSymbolKind(cudaMemcpyKind k) {
  return k == cudaMemcpyDeviceToHost || k == cudaMemcpyDeviceToDevice || k == cudaMemcpyDefault;
}

cudaError_t ToSymbol(const void* symbol, const void* src, size_t count, size_t offset,
                     cudaMemcpyKind kind, cudaStream_t stream, bool async) {
  if (!ToSymbolKind(kind)) return Record(cudaErrorInvalidMemcpyDirection);
  CUdeviceptr dst = 0;
  if (cudaError_t e = Resolve(symbol, offset, count, &dst); e != cudaSuccess) return Record(e);
  return Copy(dst, D(src), count, kind, stream, async);
}

cudaError_t FromSymbol(void* dst, const void* symbol, size_t count, size_t offset,
                       cudaMemcpyKind kind, cudaStream_t stream, bool async) {
  if (!FromSymbolKind(kind)) return Record(cudaErrorInvalidMemcpyDirection);
  CUdeviceptr src = 0;
  if (cudaError_t e = Resolve(symbol, offset, count, &src); e != cudaSuccess) return Record(e);
  return Copy(D(dst), src, count, kind, stream, async);
}

}  // namespace

SIMGPU_RT_EXPORT cudaError_t cudaGetSymbolAddress(void** dev_ptr, const void* symbol) {
  if (dev_ptr == nullptr) return Record(cudaErrorInvalidValue);
  CUdeviceptr p = 0;
  if (cudaError_t e = Resolve(symbol, 0, 0, &p); e != cudaSuccess) return Record(e);
  *dev_ptr = reinterpret_cast<void*>(static_cast<uintptr_t>(p));
  return cudaSuccess;
}

SIMGPU_RT_EXPORT cudaError_t cudaGetSymbolSize(size_t* size, const void* symbol) {
  if (size == nullptr) return Record(cudaErrorInvalidValue);
  CUdeviceptr p = 0;
  return Record(simgpu::runtime::SymbolOf(symbol, &p, size));
}

SIMGPU_RT_EXPORT cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count,
                                                size_t offset, cudaMemcpyKind kind) {
  return ToSymbol(symbol, src, count, offset, kind, nullptr, false);
}

SIMGPU_RT_EXPORT cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count,
                                                  size_t offset, cudaMemcpyKind kind) {
  return FromSymbol(dst, symbol, count, offset, kind, nullptr, false);
}

SIMGPU_RT_EXPORT cudaError_t cudaMemcpyToSymbolAsync(const void* symbol, const void* src,
                                                     size_t count, size_t offset,
                                                     cudaMemcpyKind kind, cudaStream_t stream) {
  return ToSymbol(symbol, src, count, offset, kind, stream, true);
}

SIMGPU_RT_EXPORT cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count,
                                                       size_t offset, cudaMemcpyKind kind,
                                                       cudaStream_t stream) {
  return FromSymbol(dst, symbol, count, offset, kind, stream, true);
}
