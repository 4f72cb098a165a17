// runtime_hooks.cc: the CUDA runtime hooks under a residency policy (intercept.h): allocation
// goes to the manager, every copy, set and kernel launch makes the memory it touches resident
// first. Without a policy these are not called (the generated hooks forward).
#include <cstring>

#include "interpose/process/managed.h"
#include "interpose/process/streams.h"
#include "interpose/symbols/hook_table.h"
#include "interpose/symbols/intercept.h"

namespace pooch::interpose::intercept {
namespace {

using Mode = pooch::AccessRange::Mode;

// The bytes a pitched 2D region spans, from its first byte to its last: pitch * (height - 1) +
// width; 0 for an empty region, and for one whose span overflows (the real call rejects it).
size_t Span2D(size_t pitch, size_t width, size_t height) {
  if (width == 0 || height == 0) return 0;
  size_t rows = 0, span = 0;
  if (__builtin_mul_overflow(pitch, height - 1, &rows) ||
      __builtin_add_overflow(rows, width, &span)) {
    return 0;
  }
  return span;
}

// Ranges of a 2D copy; none when either region is empty or overflows. RunOp may point *src at
// a host copy and set *kind (Ranges::AddSource).
Ranges Copy2DRanges(void* dst, size_t dpitch, const void** src, size_t spitch, size_t width,
                    size_t height, cudaMemcpyKind* kind) {
  Ranges r;
  const size_t dst_span = Span2D(dpitch, width, height);
  const size_t src_span = Span2D(spitch, width, height);
  if (dst_span == 0 || src_span == 0) return r;
  r.AddExact(dst, dst_span, Mode::kWrite);
  r.AddSource(src, src_span, kind);
  return r;
}

}  // namespace

cudaError_t cudaMalloc(void** devPtr, size_t size) {
  return ManagedAlloc(reinterpret_cast<uintptr_t*>(devPtr), size, cudaSuccess,
                      [&] { return real::cudaMalloc()(devPtr, size); });
}

cudaError_t cudaFree(void* devPtr) {
  return ManagedFree(reinterpret_cast<uintptr_t>(devPtr), cudaSuccess,
                     [&] { return real::cudaFree()(devPtr); });
}

// Stream-ordered allocation: a free waits for the last use it recorded, so the stream order is
// kept; the reuse cache may hand an allocation on hStream memory whose last uses are queued on
// hStream (Note [Reuse on the allocating stream] in core/residency/parts/reuse_cache.h).
cudaError_t cudaMallocAsync(void** devPtr, size_t size, cudaStream_t hStream) {
  return ManagedAlloc(
      reinterpret_cast<uintptr_t*>(devPtr), size, cudaSuccess,
      [&] { return real::cudaMallocAsync()(devPtr, size, hStream); }, StreamAsInteger(hStream));
}

cudaError_t cudaFreeAsync(void* devPtr, cudaStream_t hStream) {
  return ManagedFree(reinterpret_cast<uintptr_t>(devPtr), cudaSuccess,
                     [&] { return real::cudaFreeAsync()(devPtr, hStream); });
}

cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  if (Process::Get().MemoryInfo(free, total)) return cudaSuccess;
  return real::cudaMemGetInfo()(free, total);
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind) {
  Ranges r;
  r.AddOverwritten(dst, count);
  const bool read_back = kind == cudaMemcpyDeviceToHost;  // RunOp may change kind
  const OpEffects effects = RuntimeCopyEffects(kind, dst, src, count);
  r.AddSource(&src, count, &kind);
  const cudaError_t e = RunOp<cudaError_t>(
      0, r, [&] { return real::cudaMemcpy()(dst, src, count, kind); }, effects);
  if (e == cudaSuccess && read_back) NoteReadBack(dst, count);
  return e;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream) {
  Ranges r;
  r.AddOverwritten(dst, count);
  const OpEffects effects = RuntimeCopyEffects(kind, dst, src, count);
  r.AddSource(&src, count, &kind);
  return RunOp<cudaError_t>(
      StreamAsInteger(stream), r,
      [&] { return real::cudaMemcpyAsync()(dst, src, count, kind, stream); }, effects);
}

cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                         size_t height, enum cudaMemcpyKind kind) {
  const OpEffects effects = RuntimeCopyEffects(kind, dst, src, Span2D(width, width, height));
  const Ranges r = Copy2DRanges(dst, dpitch, &src, spitch, width, height, &kind);
  return RunOp<cudaError_t>(
      0, r, [&] { return real::cudaMemcpy2D()(dst, dpitch, src, spitch, width, height, kind); },
      effects);
}

cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch,
                              size_t width, size_t height, enum cudaMemcpyKind kind,
                              cudaStream_t stream) {
  const OpEffects effects = RuntimeCopyEffects(kind, dst, src, Span2D(width, width, height));
  const Ranges r = Copy2DRanges(dst, dpitch, &src, spitch, width, height, &kind);
  return RunOp<cudaError_t>(
      StreamAsInteger(stream), r,
      [&] {
        return real::cudaMemcpy2DAsync()(dst, dpitch, src, spitch, width, height, kind, stream);
      },
      effects);
}

cudaError_t cudaMemset(void* devPtr, int value, size_t count) {
  Ranges r;
  r.AddOverwritten(devPtr, count);
  return RunOp<cudaError_t>(0, r, [&] { return real::cudaMemset()(devPtr, value, count); });
}

cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  Ranges r;
  r.AddOverwritten(devPtr, count);
  return RunOp<cudaError_t>(StreamAsInteger(stream), r,
                            [&] { return real::cudaMemsetAsync()(devPtr, value, count, stream); });
}

cudaError_t cudaMemset2D(void* devPtr, size_t pitch, int value, size_t width, size_t height) {
  Ranges r;
  if (const size_t span = Span2D(pitch, width, height); span > 0) {
    r.AddExact(devPtr, span, Mode::kWrite);
  }
  return RunOp<cudaError_t>(
      0, r, [&] { return real::cudaMemset2D()(devPtr, pitch, value, width, height); });
}

cudaError_t cudaMemset2DAsync(void* devPtr, size_t pitch, int value, size_t width, size_t height,
                              cudaStream_t stream) {
  Ranges r;
  if (const size_t span = Span2D(pitch, width, height); span > 0) {
    r.AddExact(devPtr, span, Mode::kWrite);
  }
  return RunOp<cudaError_t>(StreamAsInteger(stream), r, [&] {
    return real::cudaMemset2DAsync()(devPtr, pitch, value, width, height, stream);
  });
}

// Kernel launches: interpose/hooks/launch/launch_hooks.cc.

// Synchronisation points are a good time to reclaim finished swaps and frees.
// With POOCH_ITERATION_MARKER=sync, each device-wide synchronisation also ends an iteration.
cudaError_t cudaDeviceSynchronize() {
  const cudaError_t result = real::cudaDeviceSynchronize()();
  NoteResult(result);  // an asynchronous fault surfaces here (Note [Sticky errors])
  if (pooch::ResidencyManager* m = Process::Get().existing_manager()) {
    m->Poll().IgnoreError();
    if (Process::Get().config().iteration_marker == pooch::IterationMarker::kSync) {
      Process::Get().MarkIteration();
    }
  }
  return result;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  const cudaError_t result = real::cudaStreamSynchronize()(stream);
  NoteResult(result);
  if (pooch::ResidencyManager* m = Process::Get().existing_manager()) m->Poll().IgnoreError();
  return result;
}

// Non-blocking streams are not ordered by the legacy default stream, so the sub-allocator
// orders the reuse of freed small blocks after their work too (Note [Reuse after free] in
// core/small_alloc/small_allocator.h).
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags) {
  const cudaError_t result = real::cudaStreamCreateWithFlags()(pStream, flags);
  if (result == cudaSuccess && (flags & cudaStreamNonBlocking) != 0) {
    Process::Get().NoteNonBlockingStream(StreamAsInteger(*pStream));
  }
  return result;
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* pStream, unsigned int flags, int priority) {
  const cudaError_t result = real::cudaStreamCreateWithPriority()(pStream, flags, priority);
  if (result == cudaSuccess && (flags & cudaStreamNonBlocking) != 0) {
    Process::Get().NoteNonBlockingStream(StreamAsInteger(*pStream));
  }
  return result;
}

// A destroyed stream's queued work still runs, and the real cudaFree of a buffer it uses would
// wait for it; once the stream is forgotten nothing orders reuse after that work, so wait for
// it here (programs destroy streams rarely).
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (Process::Get().ForgetNonBlockingStream(StreamAsInteger(stream))) {
    const cudaError_t synced = real::cudaStreamSynchronize()(stream);
    if (synced != cudaSuccess) return synced;
  }
  return real::cudaStreamDestroy()(stream);
}

}  // namespace pooch::interpose::intercept
