#include "interpose/hooks/runtime/mem_pool.h"

#include <algorithm>
#include <cstring>

namespace pooch::interpose {
namespace {

uint64_t U(int64_t bytes) { return static_cast<uint64_t>(std::max<int64_t>(0, bytes)); }

template <typename T>
void Put(void* value, T v) {
  std::memcpy(value, &v, sizeof(v));
}

template <typename T>
T Take(const void* value) {
  T v{};
  std::memcpy(&v, value, sizeof(v));
  return v;
}

}  // namespace

cudaError_t PoolAnswers::Get(cudaMemPoolAttr attr, const pooch::ResidencyStats& stats,
                             void* value) const {
  if (value == nullptr) return cudaErrorInvalidValue;
  switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies:
      Put<int>(value, follow_event_dependencies_.load());
      return cudaSuccess;
    case cudaMemPoolReuseAllowOpportunistic:
      Put<int>(value, allow_opportunistic_.load());
      return cudaSuccess;
    case cudaMemPoolReuseAllowInternalDependencies:
      Put<int>(value, allow_internal_dependencies_.load());
      return cudaSuccess;
    case cudaMemPoolAttrReleaseThreshold:
      Put<uint64_t>(value, release_threshold_.load());
      return cudaSuccess;
    case cudaMemPoolAttrReservedMemCurrent:
      Put<uint64_t>(value, U(stats.device_bytes));
      return cudaSuccess;
    case cudaMemPoolAttrUsedMemCurrent:
      Put<uint64_t>(value, U(stats.device_bytes - stats.cached_bytes));
      return cudaSuccess;
    case cudaMemPoolAttrReservedMemHigh:
    case cudaMemPoolAttrUsedMemHigh:
      Put<uint64_t>(value, U(stats.window_peak_device_bytes));
      return cudaSuccess;
    default:
      return cudaErrorNotSupported;
  }
}

cudaError_t PoolAnswers::Set(cudaMemPoolAttr attr, const void* value, bool* reset_peak) {
  *reset_peak = false;
  if (value == nullptr) return cudaErrorInvalidValue;
  switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies:
      follow_event_dependencies_.store(Take<int>(value) != 0 ? 1 : 0);
      return cudaSuccess;
    case cudaMemPoolReuseAllowOpportunistic:
      allow_opportunistic_.store(Take<int>(value) != 0 ? 1 : 0);
      return cudaSuccess;
    case cudaMemPoolReuseAllowInternalDependencies:
      allow_internal_dependencies_.store(Take<int>(value) != 0 ? 1 : 0);
      return cudaSuccess;
    case cudaMemPoolAttrReleaseThreshold:
      release_threshold_.store(Take<uint64_t>(value));
      return cudaSuccess;
    case cudaMemPoolAttrReservedMemHigh:
    case cudaMemPoolAttrUsedMemHigh:
      // The runtime accepts only 0 here: "reset the watermark".
      if (Take<uint64_t>(value) != 0) return cudaErrorInvalidValue;
      *reset_peak = true;
      return cudaSuccess;
    case cudaMemPoolAttrReservedMemCurrent:
    case cudaMemPoolAttrUsedMemCurrent:
      return cudaErrorInvalidValue;  // read-only
    default:
      return cudaErrorNotSupported;
  }
}

}  // namespace pooch::interpose
