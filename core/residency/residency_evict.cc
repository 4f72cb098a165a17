// ResidencyManager's choice of victims: least recently used first, or DTR's heuristic (Note [DTR
// eviction]), and how one victim is evicted.
#include <algorithm>

#include "core/residency/residency.h"

namespace pooch {
namespace {

// Note [DTR eviction]: whether eviction drops `a` rather than swapping it.
bool Droppable(const Allocation& a) {
  return a.recompute_us >= 0 && a.holds == 0 && a.state == ResidencyState::kResident;
}

}  // namespace

// Note [Eviction candidates]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// Any swappable allocation that is mapped (resident, or still being
// swapped in), not pinned by an op in progress and not waiting to be freed. Restricting this to
// feature maps (DESIGN.md decision 3; Note [Feature-map knowledge]) is a later policy's job: the
// demand policy stays correct with any choice of victims, only slower when it evicts weights.
// Linear in the number of allocations per eviction round.
//
// Note [DTR eviction]
// ~~~~~~~~~~~~~~~~~~~
// POOCH_POLICY=dtr is Dynamic Tensor Rematerialization (Kirisame et al. 2021) as a baseline: no
// profile and no plan; when room is needed, the candidate with the lowest
//     h(t) = cost(t) / (size(t) x staleness(t))
// goes first, and one that can be rebuilt exactly is dropped (no copy) and rematerialised on
// demand by replaying the call that produced it. Here:
//   - cost: for a droppable allocation, the measured device time of the call that produced it
//     (core/recompute/recomputer.h times every producer it keeps a recipe of; an estimate until the
//     timing events complete), set by SetRecomputeCost. This is DTR's local cost, not h_DTR's
//     cost of the whole evicted neighbourhood: the neighbourhood lives in the lineage, a layer
//     above this one, and changes with every drop of an eviction round, so it would have to be
//     re-derived under this lock for every candidate of every round. The local cost can thrash
//     at tight limits (rebuilds that chain into rebuilds), which the neighbourhood cost would
//     prevent.
//   - everything else that is swappable (weights, gradients, momentum, maps written by calls
//     pooch cannot replay, maps whose recipe went stale) cannot be rebuilt, so DTR proper would
//     never evict it; a limit below the model state would then fail outright. pooch swaps it as
//     demand does (never losing data), priced in the same heuristic by its copy out and back
//     at ResidencyOptions::dtr_link_bytes_per_us, so a large, long idle weight can go before a
//     small, fresh map that is cheap to rebuild, and vice versa.
//   - size: the mapped bytes the eviction frees; staleness: allocation touches (lru_tick) since
//     its last use, plus one: DTR's "time since last access" counted in ops, which is
//     deterministic on every device.
// Only a kResident allocation is dropped (one being swapped in is swapped out again, which
// cancels nothing and loses nothing). A drop is the planned Drop's (Note [Planned residency]):
// the chunk goes once its last uses complete, and a read fails in BeforeOp until a replay
// restores it; the recomputer learns of it through TakeEvictionDrops and rebuilds it before an
// op touches it (Note [Replay]). SetRecomputeCost(nullopt) is how the recomputer withdraws a
// recipe that went stale; it answers whether the allocation was already dropped, so that the
// data can be rebuilt while the recipe still holds. Hold marks an op's operands while the
// recomputer rebuilds some of them, so that a replay's eviction never drops an operand already
// rebuilt (or about to be read); a held allocation may still be swapped, so that the room a replay
// needs can come from the operands themselves (BeforeOp brings them back), never from their loss.
std::vector<Allocation*> ResidencyManager::EvictionCandidatesLocked() const {
  std::vector<Allocation*> candidates;
  table_.ForEach([&](Allocation& a) {
    if (!a.swappable || a.pins > 0 || a.free_requested) return;
    if (a.state != ResidencyState::kResident && a.state != ResidencyState::kSwappingIn) return;
    candidates.push_back(&a);
  });
  if (options_.eviction == ResidencyOptions::Eviction::kLru) {
    std::sort(candidates.begin(), candidates.end(),
              [](const Allocation* x, const Allocation* y) { return x->lru_tick < y->lru_tick; });
    return candidates;
  }
  std::vector<std::pair<double, Allocation*>> scored;
  scored.reserve(candidates.size());
  for (Allocation* a : candidates) {
    const bool drop = Droppable(*a);
    const double cost = drop ? a->recompute_us
                             : 2.0 * static_cast<double>(a->bytes) / options_.dtr_link_bytes_per_us;
    scored.emplace_back(DtrScore(cost, a->mapped_bytes, tick_ + 1 - a->lru_tick), a);
  }
  // Ties (equal h) go least recently used first, so that the order is the same every run.
  std::sort(scored.begin(), scored.end(), [](const auto& x, const auto& y) {
    return x.first != y.first ? x.first < y.first : x.second->lru_tick < y.second->lru_tick;
  });
  for (size_t i = 0; i < scored.size(); ++i) candidates[i] = scored[i].second;
  return candidates;
}

double ResidencyManager::DtrScore(double cost_us, int64_t bytes, uint64_t staleness) {
  return std::max(cost_us, 0.0) / (static_cast<double>(std::max<int64_t>(bytes, 1)) *
                                   static_cast<double>(std::max<uint64_t>(staleness, 1)));
}

absl::Status ResidencyManager::EvictLocked(Allocation& a) {
  if (options_.eviction == ResidencyOptions::Eviction::kDtr && Droppable(a)) {
    DropLocked(a);
    ++stats_.eviction_drops;
    eviction_drops_.push_back(a.id);
    return absl::OkStatus();
  }
  absl::Status s = StartSwapOutLocked(a);
  if (s.ok()) ++stats_.demand_swap_outs;
  return s;
}

absl::StatusOr<bool> ResidencyManager::SetRecomputeCost(DeviceAddress base,
                                                        std::optional<double> cost_us) {
  MutexLock lock(&mu_);
  absl::StatusOr<Allocation*> found = FindBaseLocked(base, "SetRecomputeCost");
  if (!found.ok()) return found.status();
  (*found)->recompute_us = cost_us.has_value() ? std::max(*cost_us, 0.0) : -1;
  return (*found)->state == ResidencyState::kDropped;
}

std::vector<DeviceAddress> ResidencyManager::TakeEvictionDrops() {
  MutexLock lock(&mu_);
  std::vector<DeviceAddress> dropped;
  for (AllocationId id : eviction_drops_) {
    // Freed since, or rebuilt already (a replay's write restores it): nothing to learn.
    const Allocation* a = table_.Find(id);
    if (a != nullptr && a->state == ResidencyState::kDropped) dropped.push_back(a->address);
  }
  eviction_drops_.clear();
  return dropped;
}

std::vector<AllocationId> ResidencyManager::Hold(absl::Span<const AccessRange> ranges) {
  MutexLock lock(&mu_);
  std::vector<AllocationId> held;
  for (const AccessRange& range : ranges) {
    table_.ForEachOverlapping(range.address, range.bytes,
                              [&](Allocation& a) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                if (std::find(held.begin(), held.end(), a.id) != held.end()) {
                                  return;
                                }
                                held.push_back(a.id);
                                ++a.holds;
                              });
  }
  return held;
}

void ResidencyManager::Release(absl::Span<const AllocationId> held) {
  if (held.empty()) return;
  MutexLock lock(&mu_);
  for (AllocationId id : held) {
    if (Allocation* a = table_.Find(id)) --a->holds;  // ids are never reused
  }
}

// Note [Free reserve]
// ~~~~~~~~~~~~~~~~~~~
// Demand swapping makes room when an op needs it: the op's swap-in (or its new allocation) then
// waits for a victim's device-to-host copy before its own copy can start, two copies back to
// back on the program's critical path. A network whose next allocations are not known ahead
// (a mixture of experts' routing, read back just before the experts run) pays that at every
// miss. With a reserve,
// after each op the manager starts swap-outs of the least recently used allocations, without
// waiting for them, while the room free or on its way to being free (RoomLocked: free under the
// limit, memory held for reuse, releases pending) is below reserve_bytes_; the next miss finds
// its room made, or being made behind copies already queued, and its swap-in starts at once.
// The cost is swap-outs of allocations that might have been used again before the room was
// needed: the reserve bounds them. Only kResident allocations go (one swapping in is on its way
// to an op), and never the op's own (still pinned when AfterOp keeps the reserve: the next op
// most likely reads what this one wrote); under kDtr (no reserve is set) nothing changes. An op
// after which the room is short walks the candidates as an eviction round does (Note [Eviction
// candidates]); one after which it is not only polls.
// The plan executor sets a reserve of 15 % of the limit in the iterations Note [Measured choice]
// runs with their plan set aside under demand swapping alone (core/exec/plan_executor.cc); 0 (the
// initial value) turns it off, so the demand and dtr baselines, followed plans and the pilot's
// iterations (which make room by prediction: core/exec/pilot_actions.h) run without it.
int64_t ResidencyManager::RoomBytes() {
  MutexLock lock(&mu_);
  if (!PollLocked().ok()) return 0;
  return RoomLocked();
}

int64_t ResidencyManager::RoomLocked() {
  EventRef oldest;
  const int64_t pending = PendingReleaseBytesLocked(&oldest);
  return options_.memory_limit - device_bytes_ + pending + HeldForReuseBytesLocked();
}

void ResidencyManager::SetFreeReserve(int64_t bytes) {
  MutexLock lock(&mu_);
  reserve_bytes_ = std::max<int64_t>(bytes, 0);
}

void ResidencyManager::KeepReserveLocked() {
  if (reserve_bytes_ <= 0 || !PollLocked().ok()) return;
  int64_t room = RoomLocked();
  if (room >= reserve_bytes_) return;
  for (Allocation* a : EvictionCandidatesLocked()) {
    if (room >= reserve_bytes_) break;
    if (a->state != ResidencyState::kResident) continue;
    // Note [Swap-out failure]: an allocation that cannot go stays resident; try the next.
    if (!StartSwapOutLocked(*a).ok()) continue;
    room += a->mapped_bytes;
    ++stats_.reserve_swap_outs;
  }
}

}  // namespace pooch
