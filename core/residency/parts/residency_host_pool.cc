#include "core/residency/parts/residency_host_pool.h"

#include "absl/strings/str_cat.h"
#include "core/base/units.h"

namespace pooch {

HostPool::~HostPool() { Trim(); }

absl::StatusOr<void*> HostPool::Acquire(int64_t bytes) {
  if (auto it = kept_buffers_.find(bytes); it != kept_buffers_.end()) {
    void* host = it->second;
    kept_buffers_.erase(it);
    kept_ -= bytes;
    in_use_ += bytes;
    return host;
  }
  if (limit_.has_value() && in_use_ + bytes > *limit_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "pinned host memory limit reached (POOCH_HOST_MEMORY_LIMIT=", FormatBytes(*limit_), ", ",
        FormatBytes(in_use_), " in use)"));
  }
  // Give kept buffers of other sizes back until the new one fits under the limit.
  while (limit_.has_value() && in_use_ + kept_ + bytes > *limit_ && !kept_buffers_.empty()) {
    auto it = kept_buffers_.begin();
    device_.FreeHost(it->second).IgnoreError();
    kept_ -= it->first;
    kept_buffers_.erase(it);
  }
  absl::StatusOr<void*> host = device_.AllocHost(bytes);
  if (!host.ok() && absl::IsResourceExhausted(host.status()) && !kept_buffers_.empty()) {
    Trim();
    host = device_.AllocHost(bytes);
  }
  if (!host.ok()) return host.status();
  in_use_ += bytes;
  return *host;
}

void HostPool::Release(void* host, int64_t bytes) {
  in_use_ -= bytes;
  kept_buffers_.emplace(bytes, host);
  kept_ += bytes;
}

void HostPool::Trim() {
  for (auto& [bytes, host] : kept_buffers_) device_.FreeHost(host).IgnoreError();
  kept_buffers_.clear();
  kept_ = 0;
}

}  // namespace pooch
