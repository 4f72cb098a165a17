// mem_pool.h: what pooch answers for the device's memory pool (Note [Memory pools]).
//
// Thread safety: thread-safe (the settable attributes are atomics).
#ifndef POOCH_INTERPOSE_HOOKS_RUNTIME_MEM_POOL_H_
#define POOCH_INTERPOSE_HOOKS_RUNTIME_MEM_POOL_H_

#include <atomic>
#include <cstdint>

#include "core/residency/residency.h"
#include "interpose/symbols/cuda_api.h"

namespace pooch::interpose {

// Note [Memory pools]
// ~~~~~~~~~~~~~~~~~~~
// PyTorch's cudaMallocAsync backend (PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync,
// c10/cuda/CUDAMallocAsyncAllocator.cpp) allocates every tensor with cudaMallocAsync and frees it
// with cudaFreeAsync, which pooch serves from its own memory (runtime_hooks.cc), and it asks the
// device's default pool about that memory: cudaDeviceGetDefaultMemPool, then
// cudaMemPoolSetAttribute(ReleaseThreshold, UINT64_MAX) once per device, cudaMemPoolGetAttribute
// (Reserved/UsedMemCurrent/High) for torch.cuda.memory_stats, SetAttribute(Reserved/UsedMemHigh,
// 0) for reset_peak_memory_stats, cudaMemPoolTrimTo(pool, 0) for empty_cache and before retrying
// an allocation that ran out of memory, cudaMemPoolSetAccess for peer devices. The real pool
// holds none of pooch's memory, so its answers would be wrong (and simgpu has no pools). So the
// current device's default pool is pooch's: cudaDeviceGet(Default)MemPool returns a handle of
// pooch's own (never dereferenced), and the pool calls on it answer about pooch's memory:
//   ReservedMemCurrent  the device bytes pooch holds (chunks, small-allocation slabs, the reuse
//                       cache), the figure POOCH_MEMORY_LIMIT bounds;
//   UsedMemCurrent      those less the reuse cache (what holds live data);
//   Reserved/UsedMemHigh the peak of the device bytes since start-up or the last reset (setting
//                       either to 0 restarts both; pooch does not keep a separate "used" peak,
//                       so UsedMemHigh is an upper bound);
//   ReleaseThreshold, Reuse*  kept and read back; they change nothing, since pooch's reuse is
//                       ordered by its own events (Note [Reuse after free]) and its cache is
//                       spilled under its own budget (Note [Reuse cache]);
//   TrimTo              succeeds without effect, for the same reason;
//   SetAccess           succeeds for the current device, is refused (not supported, one line)
//                       for any other, since pooch manages one device.
// Any other attribute is refused with not-supported and one `pooch:` line. Other pools (created
// by the program) go to the real functions.
class PoolAnswers {
 public:
  // *value for `attr`; cudaErrorNotSupported for an attribute pooch does not answer.
  cudaError_t Get(cudaMemPoolAttr attr, const pooch::ResidencyStats& stats, void* value) const;
  // Sets `attr` from *value. *reset_peak: the watermark must restart (ResetWindowPeak).
  // cudaErrorInvalidValue for a read-only attribute or a non-zero watermark, as the runtime.
  cudaError_t Set(cudaMemPoolAttr attr, const void* value, bool* reset_peak);

 private:
  std::atomic<int> follow_event_dependencies_{1};
  std::atomic<int> allow_opportunistic_{1};
  std::atomic<int> allow_internal_dependencies_{1};
  std::atomic<uint64_t> release_threshold_{0};
};

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_HOOKS_RUNTIME_MEM_POOL_H_
