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

void PlanCache::Put(uint64_t key, Entry entry) {
  auto [it, inserted] = entries_.insert_or_assign(key, std::move(entry));
  if (!inserted) return;
  order_.push_back(key);
  while (order_.size() > kMaxEntries) {
    entries_.erase(order_.front());
    order_.pop_front();
  }
}

}  // namespace pooch
