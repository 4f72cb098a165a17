// MakePlanActions (plan_actions.h; Note [Carrying out the plan]).
#include "core/exec/plan_actions.h"

#include "absl/container/flat_hash_set.h"
#include "core/model/candidates.h"

namespace pooch {
namespace {

// Note [Kept inputs] (recomputer.h): a recomputed map's producer may read intermediates the
// program frees in forward (not feature maps); their producers' recipes are taken too,
// recursively, so that the chain can be replayed. Only replayable producers: the planner
// recomputes through no other (sim.cc). `maps`: the feature maps (their recipes, if any, are
// the plan's own decisions).
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

PlanActions MakePlanActions(const BuiltProfile& built, const OpStreamRecorder::Positions& positions,
                            const PlanResult& plan) {
  PlanActions a;
  a.address.assign(positions.managed_allocs.size(), 0);
  for (size_t i = 0; i < positions.managed_allocs.size(); ++i) {
    a.ordinal_at[positions.managed_allocs[i]] = static_cast<int>(i);
  }
  auto op_position = [&](OpIndex op) -> int64_t {
    return op >= 0 && static_cast<size_t>(op) < positions.ops.size()
               ? positions.ops[static_cast<size_t>(op)]
               : -1;
  };
  absl::flat_hash_map<TensorId, OpIndex> first_backward_use;
  const std::vector<FeatureMapInfo> candidates = FindCandidates(built.profile);
  absl::flat_hash_set<TensorId> maps;
  for (const FeatureMapInfo& f : candidates) maps.insert(f.tensor);
  std::vector<OpIndex> first_writer(built.profile.tensors.size(), -1);
  for (size_t op = built.profile.ops.size(); op-- > 0;) {
    for (TensorId t : built.profile.ops[op].writes) {
      first_writer[static_cast<size_t>(t)] = static_cast<OpIndex>(op);
    }
  }
  for (const FeatureMapInfo& f : candidates) {
    const int ordinal = built.tensor_alloc_ordinal[static_cast<size_t>(f.tensor)];
    if (ordinal < 0) continue;
    const Decision decision = plan.plan.decisions[static_cast<size_t>(f.tensor)];
    if (decision == Decision::kRecompute) {
      // Take the producer's recipe when it runs; drop after the last forward use. The
      // rebuild happens when the map is next touched (Note [Replay], recomputer.h).
      const int64_t made = op_position(f.producer);
      const int64_t after = op_position(f.last_forward_use);
      if (made < 0 || after < 0) continue;
      a.record_at[made] = {ordinal, built.profile.ops[static_cast<size_t>(f.producer)].duration_us};
      a.drop_after[after].push_back(ordinal);
      ++a.recomputed;
      RecordTransientProducers(built, f.producer, maps, first_writer, op_position, a);
      continue;
    }
    if (decision != Decision::kSwap) continue;
    const int64_t after = op_position(f.last_forward_use);
    if (after >= 0) a.offload_after[after].push_back(ordinal);
    if (!f.backward_uses.empty()) first_backward_use[f.tensor] = f.backward_uses.front();
    ++a.swapped;
  }
  for (const Plan::SwapIn& s : plan.plan.swap_ins) {
    auto use = first_backward_use.find(s.tensor);
    if (use == first_backward_use.end()) continue;
    const int ordinal = built.tensor_alloc_ordinal[static_cast<size_t>(s.tensor)];
    // Issue at the scheduled op, and retry at each op up to (not including) the first use.
    for (OpIndex op = s.issue_at; op < use->second; ++op) {
      const int64_t before = op_position(op);
      if (before >= 0) a.prefetch_before[before].push_back(ordinal);
    }
  }
  return a;
}

}  // namespace pooch
