#include "core/exec/plan_cache.h"

#include <utility>

#include "absl/hash/hash.h"

namespace pooch {

uint64_t PlanCache::Key(const std::vector<StreamEvent>& reference) {
  size_t h = absl::HashOf(reference.size());
  for (const StreamEvent& e : reference) {
    h = absl::HashOf(h, static_cast<uint8_t>(e.kind), e.signature);
  }
  return static_cast<uint64_t>(h);
}

const PlanCache::Entry* PlanCache::Find(uint64_t key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  return &it->second;
}

const PlanCache::Entry* PlanCache::Peek(uint64_t key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

std::optional<uint64_t> PlanCache::Put(uint64_t key, Entry entry) {
  auto [it, inserted] = entries_.insert_or_assign(key, std::move(entry));
  if (!inserted || order_.size() < kMaxEntries) {
    if (inserted) order_.push_back(key);
    return std::nullopt;
  }
  const uint64_t oldest = order_.front();
  order_.pop_front();
  entries_.erase(oldest);
  order_.push_back(key);
  return oldest;
}

}  // namespace pooch
