// driver_hooks.cc: the CUDA driver hooks under a residency policy (intercept.h). The 32-bit base
// forms (cuMemAlloc, ...) keep forwarding: their addresses cannot be the manager's.
#include "interpose/process/managed.h"
#include "interpose/process/streams.h"
#include "interpose/symbols/hook_table.h"
#include "interpose/symbols/intercept.h"

namespace pooch::interpose::intercept {
namespace {

using Mode = pooch::AccessRange::Mode;

// A host pointer as the CUdeviceptr the driver's copies take (unified addressing).
CUdeviceptr AsDevicePointer(void* host) {
  return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(host));
}

}  // namespace

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  return ManagedAlloc(reinterpret_cast<uintptr_t*>(dptr), bytesize, CUDA_SUCCESS,
                      [&] { return real::cuMemAlloc_v2()(dptr, bytesize); });
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
  return ManagedFree(static_cast<uintptr_t>(dptr), CUDA_SUCCESS,
                     [&] { return real::cuMemFree_v2()(dptr); });
}

CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  if (Process::Get().MemoryInfo(free, total)) return CUDA_SUCCESS;
  return real::cuMemGetInfo_v2()(free, total);
}

// The synchronous copies: on the legacy default stream (0), as cudaMemcpy.
CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount) {
  Ranges r;
  r.AddOverwritten(dstDevice, ByteCount);
  return RunOp<CUresult>(
      0, r, [&] { return real::cuMemcpyHtoD_v2()(dstDevice, srcHost, ByteCount); },
      CopyToDevice(ByteCount));
}

CUresult cuMemcpyDtoH_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  Ranges r;
  bool from_host = false;
  r.AddSource(&srcDevice, ByteCount, &from_host);
  const CUresult e = RunOp<CUresult>(
      0, r,
      [&] {
        return from_host ? real::cuMemcpy()(AsDevicePointer(dstHost), srcDevice, ByteCount)
                         : real::cuMemcpyDtoH_v2()(dstHost, srcDevice, ByteCount);
      },
      CopyToHost(ByteCount));
  if (e == CUDA_SUCCESS) NoteReadBack(dstHost, ByteCount);
  return e;
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  Ranges r;
  bool from_host = false;
  r.AddOverwritten(dstDevice, ByteCount);
  r.AddSource(&srcDevice, ByteCount, &from_host);
  return RunOp<CUresult>(0, r, [&] {
    return from_host ? real::cuMemcpy()(dstDevice, srcDevice, ByteCount)
                     : real::cuMemcpyDtoD_v2()(dstDevice, srcDevice, ByteCount);
  });
}

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  Ranges r;
  r.AddOverwritten(dst, ByteCount);
  const OpEffects effects = RuntimeCopyEffects(cudaMemcpyDefault, dst, src, ByteCount);
  r.AddSource(&src, ByteCount, nullptr);
  return RunOp<CUresult>(
      0, r, [&] { return real::cuMemcpy()(dst, src, ByteCount); }, effects);
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
                              CUstream hStream) {
  Ranges r;
  r.AddOverwritten(dstDevice, ByteCount);
  return RunOp<CUresult>(
      StreamAsInteger(hStream), r,
      [&] { return real::cuMemcpyHtoDAsync_v2()(dstDevice, srcHost, ByteCount, hStream); },
      CopyToDevice(ByteCount));
}

CUresult cuMemcpyDtoHAsync_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                              CUstream hStream) {
  Ranges r;
  bool from_host = false;
  r.AddSource(&srcDevice, ByteCount, &from_host);
  return RunOp<CUresult>(
      StreamAsInteger(hStream), r,
      [&] {
        return from_host
                   ? real::cuMemcpyAsync()(AsDevicePointer(dstHost), srcDevice, ByteCount, hStream)
                   : real::cuMemcpyDtoHAsync_v2()(dstHost, srcDevice, ByteCount, hStream);
      },
      CopyToHost(ByteCount));
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                              CUstream hStream) {
  Ranges r;
  bool from_host = false;
  r.AddOverwritten(dstDevice, ByteCount);
  r.AddSource(&srcDevice, ByteCount, &from_host);
  return RunOp<CUresult>(StreamAsInteger(hStream), r, [&] {
    return from_host ? real::cuMemcpyAsync()(dstDevice, srcDevice, ByteCount, hStream)
                     : real::cuMemcpyDtoDAsync_v2()(dstDevice, srcDevice, ByteCount, hStream);
  });
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream) {
  Ranges r;
  r.AddOverwritten(dst, ByteCount);
  const OpEffects effects = RuntimeCopyEffects(cudaMemcpyDefault, dst, src, ByteCount);
  r.AddSource(&src, ByteCount, nullptr);
  return RunOp<CUresult>(
      StreamAsInteger(hStream), r,
      [&] { return real::cuMemcpyAsync()(dst, src, ByteCount, hStream); }, effects);
}

CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  Ranges r;
  r.AddOverwritten(dstDevice, N);
  return RunOp<CUresult>(0, r, [&] { return real::cuMemsetD8_v2()(dstDevice, uc, N); });
}

CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
  Ranges r;
  r.AddOverwritten(dstDevice, N);
  return RunOp<CUresult>(StreamAsInteger(hStream), r,
                         [&] { return real::cuMemsetD8Async()(dstDevice, uc, N, hStream); });
}

// cuLaunchKernel, cuLaunchKernelEx: interpose/hooks/launch/launch_hooks.cc.

}  // namespace pooch::interpose::intercept
