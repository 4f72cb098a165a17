// FindCandidates, copy durations and KeepAllPlan (candidates.h): the static facts the simulator and
// the planner derive from a profile before any plan exists.
//
// Note [Feature map uses]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A tensor is a swap/recompute candidate when the profile flags it feature_map, some
// forward-phase op reads or writes it, and some op after the last such forward use reads or
// writes it again. Its *last forward use* is where it may leave the device (swap-out issued when
// that op ends, or dropped for recomputation); its *backward uses* are the ops after it, which
// need it resident again. Defining the turn per tensor (rather than at the global end of the
// forward phase) keeps the rule right for profiles whose loss or bookkeeping ops are labelled
// "other".
//
// The *producer* of a candidate is the op that wrote it in forward. Replaying the producer
// recomputes the map only when that is sound: the producer is replayable, it is the map's only
// writer in the whole iteration, it does not read the map itself (in-place), and no op from the
// producer up to the map's last use writes any of the producer's inputs (else the replay would
// read changed data). Its inputs must be available too: other candidates (the plan makes them
// resident), tensors that live until the map's last use, or intermediates that were freed but can
// themselves be rebuilt by such replays (a ReLU's output needs the batch-norm output before it,
// which backward does not keep). That makes the map `recomputable`; the simulator re-checks at
// replay time, where the plan decides what is resident (Note [Recomputation] in sim.cc).
#include "core/model/candidates.h"

#include <algorithm>
#include <vector>

namespace pooch {

std::vector<FeatureMapInfo> FindCandidates(const Profile& profile) {
  const int32_t num_tensors = static_cast<int32_t>(profile.tensors.size());
  std::vector<OpIndex> last_forward(num_tensors, -1);
  std::vector<std::vector<OpIndex>> writers(num_tensors);
  for (OpIndex i = 0; i < static_cast<OpIndex>(profile.ops.size()); ++i) {
    const Op& op = profile.ops[i];
    for (TensorId t : op.writes) {
      if (writers[t].empty() || writers[t].back() != i) writers[t].push_back(i);
    }
    if (op.phase != Phase::kForward) continue;
    for (TensorId t : op.reads) last_forward[t] = i;
    for (TensorId t : op.writes) last_forward[t] = i;
  }
  std::vector<FeatureMapInfo> out;
  std::vector<int32_t> index_of(num_tensors, -1);
  for (TensorId t = 0; t < num_tensors; ++t) {
    if (!profile.tensors[t].feature_map || last_forward[t] < 0) continue;
    FeatureMapInfo info;
    info.tensor = t;
    info.last_forward_use = last_forward[t];
    index_of[t] = static_cast<int32_t>(out.size());
    out.push_back(std::move(info));
  }
  // Backward uses, in op order.
  for (OpIndex i = 0; i < static_cast<OpIndex>(profile.ops.size()); ++i) {
    const Op& op = profile.ops[i];
    for (int pass = 0; pass < 2; ++pass) {
      for (TensorId t : pass == 0 ? op.reads : op.writes) {
        const int32_t c = index_of[t];
        if (c < 0 || i <= out[c].last_forward_use) continue;
        std::vector<OpIndex>& uses = out[c].backward_uses;
        if (uses.empty() || uses.back() != i) uses.push_back(i);
      }
    }
  }
  std::erase_if(out, [](const FeatureMapInfo& f) { return f.backward_uses.empty(); });
  OpIndex last_backward = -1;
  for (OpIndex i = 0; i < static_cast<OpIndex>(profile.ops.size()); ++i) {
    if (profile.ops[i].phase == Phase::kBackward) last_backward = i;
  }
  std::vector<bool> candidate(num_tensors, false);
  for (const FeatureMapInfo& f : out) candidate[f.tensor] = true;
  // Whether replaying `writer` to produce `t` is sound, with inputs stable until `until`.
  auto sound = [&](OpIndex writer, TensorId t, OpIndex until) {
    const Op& op = profile.ops[writer];
    if (op.phase != Phase::kForward || !op.replayable || writers[t].size() != 1) return false;
    if (std::find(op.reads.begin(), op.reads.end(), t) != op.reads.end()) return false;
    for (TensorId in : op.reads) {
      for (OpIndex i : writers[in]) {
        if (i >= writer && i <= until) return false;
      }
    }
    return true;
  };
  // rematerialisable[t] for a non-candidate t: it can be rebuilt by replays alone when a
  // recomputation needs it after it was freed (1 yes, 0 no, -1 not yet known). Inputs must be
  // candidates (the plan provides them), never freed, or rematerialisable themselves.
  std::vector<int8_t> rematerialisable(num_tensors, -1);
  auto remat = [&](auto& self, TensorId t) -> bool {
    if (rematerialisable[t] >= 0) return rematerialisable[t] == 1;
    rematerialisable[t] = 0;  // cycles (impossible in a valid profile) resolve to no
    bool ok = !writers[t].empty() && sound(writers[t][0], t, last_backward);
    if (ok) {
      for (TensorId in : profile.ops[writers[t][0]].reads) {
        const Tensor& x = profile.tensors[in];
        const bool permanent =
            x.alloc_before == kBeforeIteration && x.free_after == kAfterIteration;
        if (!candidate[in] && !permanent && !self(self, in)) ok = false;
      }
    }
    rematerialisable[t] = ok ? 1 : 0;
    return ok;
  };
  for (FeatureMapInfo& f : out) {
    const std::vector<OpIndex>& w = writers[f.tensor];
    for (OpIndex i : w) {
      if (i <= f.last_forward_use && profile.ops[i].phase == Phase::kForward) {
        f.producer = i;
        break;
      }
    }
    if (f.producer < 0) continue;
    const OpIndex last_use = f.backward_uses.back();
    bool ok = sound(f.producer, f.tensor, last_use);
    for (TensorId in : profile.ops[f.producer].reads) {
      if (!ok) break;
      if (candidate[in]) continue;
      const Tensor& x = profile.tensors[in];
      const bool live_through =
          (x.alloc_before == kBeforeIteration || x.alloc_before <= f.producer) &&
          (x.free_after == kAfterIteration || x.free_after >= last_use);
      if (!live_through && !remat(remat, in)) ok = false;
    }
    f.recomputable = ok;
  }
  std::sort(out.begin(), out.end(), [](const FeatureMapInfo& a, const FeatureMapInfo& b) {
    return a.last_forward_use != b.last_forward_use ? a.last_forward_use < b.last_forward_use
                                                    : a.tensor < b.tensor;
  });
  return out;
}

namespace {

double CopyUs(int64_t bytes, double gbps, double latency_us) {
  if (gbps <= 0) return latency_us;
  return static_cast<double>(bytes) / (gbps * 1e3) + latency_us;  // GB/s = 1e3 bytes/us
}

}  // namespace

double SwapOutUs(const Tensor& tensor, const MachineModel& machine) {
  if (tensor.swap_out_us >= 0) return tensor.swap_out_us;
  return CopyUs(tensor.bytes, machine.d2h_gbps, machine.d2h_latency_us);
}

double SwapInUs(const Tensor& tensor, const MachineModel& machine) {
  if (tensor.swap_in_us >= 0) return tensor.swap_in_us;
  return CopyUs(tensor.bytes, machine.h2d_gbps, machine.h2d_latency_us);
}

Plan KeepAllPlan(const Profile& profile) {
  Plan plan;
  plan.policy = "in-core";
  plan.decisions.assign(profile.tensors.size(), Decision::kKeep);
  return plan;
}

Decision DecisionOf(const Plan& plan, TensorId tensor) {
  return tensor >= 0 && static_cast<size_t>(tensor) < plan.decisions.size()
             ? plan.decisions[static_cast<size_t>(tensor)]
             : Decision::kKeep;
}

DecisionCounts CountDecisions(const Plan& plan, const std::vector<FeatureMapInfo>& candidates) {
  DecisionCounts c;
  for (const FeatureMapInfo& f : candidates) {
    switch (DecisionOf(plan, f.tensor)) {
      case Decision::kKeep:
        ++c.keep;
        break;
      case Decision::kSwap:
        ++c.swap;
        break;
      case Decision::kRecompute:
        ++c.recompute;
        break;
    }
  }
  return c;
}

}  // namespace pooch
