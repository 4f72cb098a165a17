// ptsz_hooks.cc: the per-thread-default-stream forms (_ptsz, _ptds) of the copies, sets,
// allocations and synchronisations pooch hooks, and the peer copies, under a residency policy
// (intercept.h). Note [Per-thread default stream] (interpose/process/streams.h): a _ptsz call is
// its base intercept on the per-thread handle; a _ptds call is the asynchronous intercept on the
// per-thread handle, then a synchronisation of that stream, as the synchronous call would wait.
#include "interpose/process/managed.h"
#include "interpose/process/streams.h"
#include "interpose/symbols/hook_table.h"
#include "interpose/symbols/intercept.h"

namespace pooch::interpose::intercept {
namespace {

// The synchronous tail of a _ptds call: the per-thread stream's work is done when it returns.
cudaError_t ThenSynchronize(cudaError_t queued) {
  if (queued != cudaSuccess) return queued;
  return intercept::cudaStreamSynchronize(cudaStreamPerThread);
}

CUresult ThenSynchronize(CUresult queued) {
  if (queued != CUDA_SUCCESS) return queued;
  const auto sync = real::cuStreamSynchronize();
  if (sync == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult result = sync(CU_STREAM_PER_THREAD);
  NoteResult(result);
  if (pooch::ResidencyManager* m = Process::Get().existing_manager()) m->Poll().IgnoreError();
  return result;
}

}  // namespace

// ---- runtime ----------------------------------------------------------------------------------
cudaError_t cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                                 cudaStream_t stream) {
  return intercept::cudaMemcpyAsync(dst, src, count, kind, PerThread(stream));
}

cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return ThenSynchronize(intercept::cudaMemcpyAsync(dst, src, count, kind, cudaStreamPerThread));
}

cudaError_t cudaMemcpy2DAsync_ptsz(void* dst, size_t dpitch, const void* src, size_t spitch,
                                   size_t width, size_t height, cudaMemcpyKind kind,
                                   cudaStream_t stream) {
  return intercept::cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind,
                                      PerThread(stream));
}

cudaError_t cudaMemcpy2D_ptds(void* dst, size_t dpitch, const void* src, size_t spitch,
                              size_t width, size_t height, cudaMemcpyKind kind) {
  return ThenSynchronize(intercept::cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind,
                                                      cudaStreamPerThread));
}

cudaError_t cudaMemsetAsync_ptsz(void* devPtr, int value, size_t count, cudaStream_t stream) {
  return intercept::cudaMemsetAsync(devPtr, value, count, PerThread(stream));
}

cudaError_t cudaMemset_ptds(void* devPtr, int value, size_t count) {
  return ThenSynchronize(intercept::cudaMemsetAsync(devPtr, value, count, cudaStreamPerThread));
}

cudaError_t cudaMemset2DAsync_ptsz(void* devPtr, size_t pitch, int value, size_t width,
                                   size_t height, cudaStream_t stream) {
  return intercept::cudaMemset2DAsync(devPtr, pitch, value, width, height, PerThread(stream));
}

cudaError_t cudaMemset2D_ptds(void* devPtr, size_t pitch, int value, size_t width, size_t height) {
  return ThenSynchronize(
      intercept::cudaMemset2DAsync(devPtr, pitch, value, width, height, cudaStreamPerThread));
}

cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream) {
  return intercept::cudaStreamSynchronize(PerThread(stream));
}

cudaError_t cudaMallocAsync_ptsz(void** devPtr, size_t size, cudaStream_t hStream) {
  return intercept::cudaMallocAsync(devPtr, size, PerThread(hStream));
}

cudaError_t cudaFreeAsync_ptsz(void* devPtr, cudaStream_t hStream) {
  return intercept::cudaFreeAsync(devPtr, PerThread(hStream));
}

// Peer copies: pooch manages one device, so both ends are ranges of this op; the copy runs as
// the program asked (a peer's memory is never pooch's).
cudaError_t cudaMemcpyPeerAsync(void* dst, int dstDevice, const void* src, int srcDevice,
                                size_t count, cudaStream_t stream) {
  Ranges r;
  r.AddOverwritten(dst, count);
  r.AddExact(src, count, pooch::AccessRange::Mode::kRead);
  return RunOp<cudaError_t>(reinterpret_cast<uintptr_t>(stream), r, [&] {
    return real::cudaMemcpyPeerAsync()(dst, dstDevice, src, srcDevice, count, stream);
  });
}

cudaError_t cudaMemcpyPeer(void* dst, int dstDevice, const void* src, int srcDevice, size_t count) {
  Ranges r;
  r.AddOverwritten(dst, count);
  r.AddExact(src, count, pooch::AccessRange::Mode::kRead);
  return RunOp<cudaError_t>(
      0, r, [&] { return real::cudaMemcpyPeer()(dst, dstDevice, src, srcDevice, count); });
}

// ---- driver (handed out by per-thread look-ups: POOCH_DRIVER_HOOK_PT) -------------------------
CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream) {
  return intercept::cuMemcpyAsync(dst, src, ByteCount, PerThread(hStream));
}

CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
                                   CUstream hStream) {
  return intercept::cuMemcpyHtoDAsync_v2(dstDevice, srcHost, ByteCount, PerThread(hStream));
}

CUresult cuMemcpyDtoHAsync_v2_ptsz(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                   CUstream hStream) {
  return intercept::cuMemcpyDtoHAsync_v2(dstHost, srcDevice, ByteCount, PerThread(hStream));
}

CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                                   CUstream hStream) {
  return intercept::cuMemcpyDtoDAsync_v2(dstDevice, srcDevice, ByteCount, PerThread(hStream));
}

CUresult cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
  return intercept::cuMemsetD8Async(dstDevice, uc, N, PerThread(hStream));
}

CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  return ThenSynchronize(intercept::cuMemcpyAsync(dst, src, ByteCount, CU_STREAM_PER_THREAD));
}

CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount) {
  return ThenSynchronize(
      intercept::cuMemcpyHtoDAsync_v2(dstDevice, srcHost, ByteCount, CU_STREAM_PER_THREAD));
}

CUresult cuMemcpyDtoH_v2_ptds(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  return ThenSynchronize(
      intercept::cuMemcpyDtoHAsync_v2(dstHost, srcDevice, ByteCount, CU_STREAM_PER_THREAD));
}

CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  return ThenSynchronize(
      intercept::cuMemcpyDtoDAsync_v2(dstDevice, srcDevice, ByteCount, CU_STREAM_PER_THREAD));
}

CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  return ThenSynchronize(intercept::cuMemsetD8Async(dstDevice, uc, N, CU_STREAM_PER_THREAD));
}

}  // namespace pooch::interpose::intercept
