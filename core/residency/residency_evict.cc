// ResidencyManager's eviction policy: least recently used first.
#include <algorithm>

#include "core/residency/residency.h"

namespace pooch {

// Note [Eviction candidates]: any swappable allocation that is mapped (resident, or still being
// swapped in), not pinned by an op in progress and not waiting to be freed. Restricting this to
// feature maps (DESIGN.md decision 3; Note [Feature-map knowledge]) is a later policy's job: the
// demand policy stays correct with any choice of victims, only slower when it evicts weights.
// Linear in the number of allocations per eviction round; an intrusive LRU list is the obvious
// next step if profiles show it.
std::vector<Allocation*> ResidencyManager::EvictionCandidatesLocked() const {
  std::vector<Allocation*> candidates;
  table_.ForEach([&](Allocation& a) {
    if (!a.swappable || a.pins > 0 || a.free_requested) return;
    if (a.state != ResidencyState::kResident && a.state != ResidencyState::kSwappingIn) return;
    candidates.push_back(&a);
  });
  std::sort(candidates.begin(), candidates.end(),
            [](const Allocation* x, const Allocation* y) { return x->lru_tick < y->lru_tick; });
  return candidates;
}

}  // namespace pooch
