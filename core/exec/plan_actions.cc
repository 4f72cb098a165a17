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
                              const absl::flat_hash_set<TensorId>& maps, const ReplayFacts& facts,
                              const Position& op_position, PlanActions& a) {
  std::vector<OpIndex> pending = {producer};
  absl::flat_hash_set<OpIndex> seen = {producer};
  while (!pending.empty()) {
    const Op& op = built.profile.ops[static_cast<size_t>(pending.back())];
    pending.pop_back();
    for (TensorId t : op.reads) {
      const int ordinal = built.tensor_alloc_ordinal[static_cast<size_t>(t)];
      // What it holds when freed: its last writer's chain (Note [Chains] in candidates.cc).
      const absl::Span<const OpIndex> links = facts.Chain(t, facts.LastWriter(t));
      if (ordinal < 0 || maps.contains(t) || links.empty()) continue;
      for (OpIndex writer : links) {
        if (!seen.insert(writer).second) continue;
        const int64_t position = op_position(writer);
        if (position < 0) continue;
        a.record_at[position] = {ordinal,
                                 built.profile.ops[static_cast<size_t>(writer)].duration_us};
        pending.push_back(writer);
      }
    }
  }
}

template <typename T>
std::vector<T> SortedUnique(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
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

namespace {

// MakePlanActions' steps. Slots are handed out as decisions and swap-ins name tensors, in that
// order: the allocation ordinal, or one after them for a tensor that outlives the iteration.
class ActionsAssembly {
 public:
  ActionsAssembly(const BuiltProfile& built, const OpStreamRecorder::Positions& positions,
                  const PlanResult& plan)
      : built_(built),
        positions_(positions),
        plan_(plan),
        next_slot_(static_cast<int>(positions.managed_allocs.size())) {
    for (size_t i = 0; i < positions.managed_allocs.size(); ++i) {
      a_.slot_at[positions.managed_allocs[i]] = static_cast<int>(i);
    }
    // The recorder's id of each managed allocation of the reference, by ordinal (its slot).
    successor_allocation_.assign(positions.managed_allocs.size(), 0);
    for (size_t t = 0; t < built.tensor_alloc_ordinal.size(); ++t) {
      const int ordinal = built.tensor_alloc_ordinal[t];
      if (ordinal >= 0 && static_cast<size_t>(ordinal) < successor_allocation_.size()) {
        successor_allocation_[static_cast<size_t>(ordinal)] = built.tensor_allocation[t];
      }
    }
    for (const Candidate& c : plan.candidates) {
      if (!c.tail) maps_.insert(c.tensor);  // a tensor with a tail only is still a transient's
    }
    facts_ = ComputeReplayFacts(built.profile);
  }

  // Swap-outs after the interval opens; recomputations as a recipe taken at the producer and a
  // drop after the interval opens.
  void AddDecisions() {
    const std::vector<Candidate>& candidates = plan_.candidates;
    for (CandidateId id = 0; id < static_cast<CandidateId>(candidates.size()); ++id) {
      const Candidate& c = candidates[static_cast<size_t>(id)];
      const Decision decision = DecisionOf(plan_.plan, id);
      if (decision == Decision::kKeep) continue;
      const int slot = SlotFor(c.tensor);
      const int64_t after = OpPosition(c.open);
      if (slot < 0 || after < 0) continue;
      if (decision == Decision::kRecompute) {
        AddRecompute(c, slot, after);
        continue;
      }
      a_.offload_after[after].push_back(slot);
      ++a_.swapped;
    }
  }

  void AddPrefetches() {
    const std::vector<Candidate>& candidates = plan_.candidates;
    const OpIndex op_count = static_cast<OpIndex>(built_.profile.ops.size());
    for (const Plan::SwapIn& s : plan_.plan.swap_ins) {
      if (s.candidate < 0 || static_cast<size_t>(s.candidate) >= candidates.size()) continue;
      const Candidate& c = candidates[static_cast<size_t>(s.candidate)];
      const int slot = SlotFor(c.tensor);
      if (slot < 0) continue;
      // Note [Prefetch at the closing op]
      // ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
      // The prefetches "before" an op are issued once that op's own allocations are resident
      // (RunOp makes them resident, then the plan executor sees the op), so a prefetch at the
      // closing op would come after its demand swap-in. A swap-in the schedule issues there (one
      // forced at its need, as for a weight whose only use is the first op: an interval that
      // opens and closes at op 0 and wraps) is issued with the op before it instead, the last op
      // of the previous iteration for op 0, unless that op opens the interval.
      if (s.issue_at == c.close) {
        const OpIndex before = c.close > 0 ? c.close - 1 : op_count - 1;
        if (before != c.open && (c.wraps || before > c.open))
          AddPrefetch(before, slot, s.candidate);
        continue;
      }
      // Issue at the scheduled op, and retry at each op up to (not including) the closing one.
      for (OpIndex op = s.issue_at; op < c.close; ++op) AddPrefetch(op, slot, s.candidate);
    }
    AddKeptPrefetches();
  }

  // Note [Kept across a new plan]
  // ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
  // A re-plan (Note [Headroom]) or a plan switch takes effect at an iteration start, when the
  // weights and optimizer state the previous plan swapped (intervals that wrap) may still be on
  // the host, to come back only in the next iteration. If the new plan keeps such an interval,
  // nothing of it brings the tensor back, and its first use swaps it in on demand: counted as the
  // safety net's, it reads as a miss of the new plan and triggers the next re-plan. So a kept
  // interval that wraps is prefetched from the iteration's first op up to its closing one; on a
  // resident tensor the prefetch is a no-op, done once per iteration (PlanActions::prefetched),
  // and, as any prefetch, it never evicts. (One that closes at op 0 comes back on demand then.)
  void AddKeptPrefetches() {
    const std::vector<Candidate>& candidates = plan_.candidates;
    for (CandidateId id = 0; id < static_cast<CandidateId>(candidates.size()); ++id) {
      const Candidate& c = candidates[static_cast<size_t>(id)];
      if (!c.wraps || c.tail || DecisionOf(plan_.plan, id) != Decision::kKeep) continue;
      const int slot = SlotFor(c.tensor);
      if (slot < 0) continue;
      for (OpIndex op = 0; op < c.close; ++op) AddPrefetch(op, slot, id);
    }
  }

  // Note [Diverged iterations]: per op, the allocations older than the iteration it touched;
  // Note [Left-out accesses] (plan_executor.cc): and the slots of those made in it.
  void AddTouched() {
    const Profile& profile = built_.profile;
    a_.made_slots = static_cast<int>(positions_.managed_allocs.size());
    for (size_t op = 0; op < profile.ops.size(); ++op) {
      const int64_t position = OpPosition(static_cast<OpIndex>(op));
      if (position < 0) continue;
      std::vector<uint64_t> touched;
      std::vector<int> made;
      for (const std::vector<TensorId>* ts : {&profile.ops[op].reads, &profile.ops[op].writes}) {
        for (TensorId t : *ts) {
          const uint64_t allocation = built_.tensor_allocation[static_cast<size_t>(t)];
          const int ordinal = built_.tensor_alloc_ordinal[static_cast<size_t>(t)];
          if (ordinal >= 0) made.push_back(ordinal);
          if (profile.tensors[static_cast<size_t>(t)].alloc_before == kBeforeIteration &&
              allocation != kOtherAllocation) {
            touched.push_back(allocation);
          }
        }
      }
      if (!made.empty()) a_.made_touched[position] = SortedUnique(std::move(made));
      if (!touched.empty()) a_.persistent_touched[position] = SortedUnique(std::move(touched));
    }
  }

  PlanActions Finish() && {
    a_.address.assign(static_cast<size_t>(next_slot_), 0);
    a_.prefetched.assign(plan_.candidates.size(), false);
    return std::move(a_);
  }

 private:
  void AddPrefetch(OpIndex op, int slot, CandidateId candidate) {
    const int64_t before = OpPosition(op);
    if (before >= 0) a_.prefetch_before[before].push_back({slot, candidate});
  }

  int64_t OpPosition(OpIndex op) const {
    return op >= 0 && static_cast<size_t>(op) < positions_.ops.size()
               ? positions_.ops[static_cast<size_t>(op)]
               : -1;
  }

  // The tensor's slot; -1 for "other". A tensor that outlives the iteration gets a new slot,
  // carried (Note [Carried slots]) or persistent.
  int SlotFor(TensorId t) {
    const int ordinal = built_.tensor_alloc_ordinal[static_cast<size_t>(t)];
    if (ordinal >= 0) return ordinal;
    const uint64_t allocation = built_.tensor_allocation[static_cast<size_t>(t)];
    if (allocation == kOtherAllocation) return -1;
    auto [it, added] = persistent_slot_.try_emplace(t, next_slot_);
    if (added) {
      auto carried = positions_.carried.find(allocation);
      auto successor =
          carried == positions_.carried.end() ? a_.slot_at.end() : a_.slot_at.find(carried->second);
      if (successor != a_.slot_at.end()) {
        a_.carried.push_back(
            {next_slot_++, successor->second, successor_allocation_[successor->second]});
      } else {
        a_.persistent.push_back({next_slot_++, allocation});
      }
    }
    return it->second;
  }

  // Take the producer's recipe when it runs; drop after the interval opens. The rebuild happens
  // when the tensor is next touched (Note [Replay], recomputer.h).
  // A map written by a chain of calls takes each link's recipe as it runs (Note [Chained
  // recipes] in core/lineage/lineage.cc).
  void AddRecompute(const Candidate& c, int slot, int64_t after) {
    absl::Span<const OpIndex> links = facts_.Chain(c.tensor, c.producer);
    if (links.empty()) links = absl::MakeConstSpan(&c.producer, 1);
    for (OpIndex link : links) {
      if (OpPosition(link) < 0) return;
    }
    for (OpIndex link : links) {
      a_.record_at[OpPosition(link)] = {slot,
                                        built_.profile.ops[static_cast<size_t>(link)].duration_us};
    }
    a_.drop_after[after].push_back(slot);
    ++a_.recomputed;
    for (OpIndex link : links) {
      RecordTransientProducers(
          built_, link, maps_, facts_, [this](OpIndex op) { return OpPosition(op); }, a_);
    }
  }

  const BuiltProfile& built_;
  const OpStreamRecorder::Positions& positions_;
  const PlanResult& plan_;
  PlanActions a_;
  std::vector<uint64_t> successor_allocation_;
  int next_slot_;
  absl::flat_hash_map<TensorId, int> persistent_slot_;
  absl::flat_hash_set<TensorId> maps_;  // the candidates' tensors (Note [Kept inputs])
  ReplayFacts facts_;                   // the chains (Note [Chains] in core/model/candidates.cc)
};

}  // namespace

PlanActions MakePlanActions(const BuiltProfile& built, const OpStreamRecorder::Positions& positions,
                            const PlanResult& plan) {
  ActionsAssembly assembly(built, positions, plan);
  assembly.AddDecisions();
  assembly.AddPrefetches();
  assembly.AddTouched();
  return std::move(assembly).Finish();
}

}  // namespace pooch
