// MakePlanActions (plan_actions.h; Note [Carrying out the plan]).
#include "core/exec/plan_actions.h"

#include <algorithm>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "core/model/candidates.h"

namespace pooch {
namespace {

// Note [Kept inputs] (recomputer.h): a recomputed tensor's producer may read intermediates the
// program frees before the replay; their producers' recipes are taken too, recursively, so that
// the chain can be replayed. Only replayable producers: the planner recomputes through no other
// (sim.cc). `maps`: the candidates' tensors (their recipes, if any, are the plan's own
// decisions).
template <typename Position>
void RecordTransientProducers(const BuiltProfile& built, OpIndex producer,
                              const absl::flat_hash_set<TensorId>& maps,
                              const std::vector<OpIndex>& first_writer, const Position& op_position,
                              PlanActions& a) {
  std::vector<OpIndex> pending = {producer};
  absl::flat_hash_set<OpIndex> seen = {producer};
  while (!pending.empty()) {
    const Op& op = built.profile.ops[static_cast<size_t>(pending.back())];
    pending.pop_back();
    for (TensorId t : op.reads) {
      const int ordinal = built.tensor_alloc_ordinal[static_cast<size_t>(t)];
      const OpIndex writer = first_writer[static_cast<size_t>(t)];
      if (ordinal < 0 || maps.contains(t) || writer < 0 || !seen.insert(writer).second ||
          !built.profile.ops[static_cast<size_t>(writer)].replayable) {
        continue;
      }
      const int64_t position = op_position(writer);
      if (position < 0) continue;
      a.record_at[position] = {ordinal, built.profile.ops[static_cast<size_t>(writer)].duration_us};
      pending.push_back(writer);
    }
  }
}

}  // namespace

void PlanActions::StartIteration() {
  std::vector<DeviceAddress> carried_in(carried.size(), 0);
  for (size_t i = 0; i < carried.size(); ++i) {
    const DeviceAddress successor = address[static_cast<size_t>(carried[i].successor)];
    carried_in[i] = successor != 0 ? successor : address[static_cast<size_t>(carried[i].slot)];
  }
  std::fill(address.begin(), address.end(), 0);
  slot_of.clear();
  for (const auto& [slot, base] : fixed) {
    address[static_cast<size_t>(slot)] = base;
    slot_of[base] = slot;
  }
  for (size_t i = 0; i < carried.size(); ++i) {
    if (carried_in[i] == 0) continue;
    address[static_cast<size_t>(carried[i].slot)] = carried_in[i];
    slot_of[carried_in[i]] = carried[i].slot;
  }
  std::fill(prefetched.begin(), prefetched.end(), false);
  diverged = false;
}

PlanActions MakePlanActions(const BuiltProfile& built, const OpStreamRecorder::Positions& positions,
                            const PlanResult& plan) {
  PlanActions a;
  const std::vector<Candidate>& candidates = plan.candidates;
  for (size_t i = 0; i < positions.managed_allocs.size(); ++i) {
    a.slot_at[positions.managed_allocs[i]] = static_cast<int>(i);
  }
  auto op_position = [&](OpIndex op) -> int64_t {
    return op >= 0 && static_cast<size_t>(op) < positions.ops.size()
               ? positions.ops[static_cast<size_t>(op)]
               : -1;
  };
  // The recorder's id of each managed allocation of the reference, by ordinal (its slot).
  std::vector<uint64_t> successor_allocation(positions.managed_allocs.size(), 0);
  for (size_t t = 0; t < built.tensor_alloc_ordinal.size(); ++t) {
    const int ordinal = built.tensor_alloc_ordinal[t];
    if (ordinal >= 0 && static_cast<size_t>(ordinal) < successor_allocation.size()) {
      successor_allocation[static_cast<size_t>(ordinal)] = built.tensor_allocation[t];
    }
  }
  // Slots: the allocation ordinal, or one after them for a tensor that outlives the iteration.
  int next_slot = static_cast<int>(positions.managed_allocs.size());
  absl::flat_hash_map<TensorId, int> persistent_slot;
  auto slot_for = [&](TensorId t) -> int {
    const int ordinal = built.tensor_alloc_ordinal[static_cast<size_t>(t)];
    if (ordinal >= 0) return ordinal;
    const uint64_t allocation = built.tensor_allocation[static_cast<size_t>(t)];
    if (allocation == kOtherAllocation) return -1;
    auto [it, added] = persistent_slot.try_emplace(t, next_slot);
    if (added) {
      auto carried = positions.carried.find(allocation);
      auto successor =
          carried == positions.carried.end() ? a.slot_at.end() : a.slot_at.find(carried->second);
      if (successor != a.slot_at.end()) {
        a.carried.push_back(
            {next_slot++, successor->second, successor_allocation[successor->second]});
      } else {
        a.persistent.push_back({next_slot++, allocation});
      }
    }
    return it->second;
  };
  absl::flat_hash_set<TensorId> maps;
  for (const Candidate& c : candidates) {
    if (!c.tail) maps.insert(c.tensor);  // a tensor with a tail only is still a transient's
  }
  std::vector<OpIndex> first_writer(built.profile.tensors.size(), -1);
  for (size_t op = built.profile.ops.size(); op-- > 0;) {
    for (TensorId t : built.profile.ops[op].writes) {
      first_writer[static_cast<size_t>(t)] = static_cast<OpIndex>(op);
    }
  }
  for (CandidateId id = 0; id < static_cast<CandidateId>(candidates.size()); ++id) {
    const Candidate& c = candidates[static_cast<size_t>(id)];
    const Decision decision = DecisionOf(plan.plan, id);
    if (decision == Decision::kKeep) continue;
    const int slot = slot_for(c.tensor);
    const int64_t after = op_position(c.open);
    if (slot < 0 || after < 0) continue;
    if (decision == Decision::kRecompute) {
      // Take the producer's recipe when it runs; drop after the interval opens. The rebuild
      // happens when the tensor is next touched (Note [Replay], recomputer.h).
      const int64_t made = op_position(c.producer);
      if (made < 0) continue;
      a.record_at[made] = {slot, built.profile.ops[static_cast<size_t>(c.producer)].duration_us};
      a.drop_after[after].push_back(slot);
      ++a.recomputed;
      RecordTransientProducers(built, c.producer, maps, first_writer, op_position, a);
      continue;
    }
    a.offload_after[after].push_back(slot);
    ++a.swapped;
  }
  for (const Plan::SwapIn& s : plan.plan.swap_ins) {
    if (s.candidate < 0 || static_cast<size_t>(s.candidate) >= candidates.size()) continue;
    const Candidate& c = candidates[static_cast<size_t>(s.candidate)];
    const int slot = slot_for(c.tensor);
    if (slot < 0) continue;
    // Issue at the scheduled op, and retry at each op up to (not including) the closing one.
    for (OpIndex op = s.issue_at; op < c.close; ++op) {
      const int64_t before = op_position(op);
      if (before >= 0) a.prefetch_before[before].push_back({slot, s.candidate});
    }
  }
  // Note [Diverged iterations]
  for (size_t op = 0; op < built.profile.ops.size(); ++op) {
    const int64_t position = op_position(static_cast<OpIndex>(op));
    if (position < 0) continue;
    std::vector<uint64_t> touched;
    for (const std::vector<TensorId>* ts :
         {&built.profile.ops[op].reads, &built.profile.ops[op].writes}) {
      for (TensorId t : *ts) {
        const uint64_t allocation = built.tensor_allocation[static_cast<size_t>(t)];
        if (built.profile.tensors[static_cast<size_t>(t)].alloc_before == kBeforeIteration &&
            allocation != kOtherAllocation) {
          touched.push_back(allocation);
        }
      }
    }
    if (touched.empty()) continue;
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    a.persistent_touched[position] = std::move(touched);
  }
  a.address.assign(static_cast<size_t>(next_slot), 0);
  a.prefetched.assign(candidates.size(), false);
  return a;
}

}  // namespace pooch
