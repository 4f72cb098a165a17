// FindCandidates, replay facts, copy durations and decision counts (candidates.h): the static
// facts the simulator and the planner derive from a profile before any plan exists.
//
// Note [Idle intervals]
// ~~~~~~~~~~~~~~~~~~~~~
// What an op reads and writes, and when, is the whole truth the planner uses; no op's name or
// phase enters it (Capuchin's view, Peng et al., ASPLOS 2020: a tensor's access sequence and its
// idle time). For every tensor, its uses (ops that read or write it) in op order cut the
// iteration into idle intervals: between two consecutive uses `open` and `close` with at least
// one op in between, nothing touches it, so it may leave the device after `open` (swap-out
// issued when open ends, or dropped) and must be back before `close` (swapped in, or rebuilt by
// replaying its producer). A tensor that exists for the whole iteration (allocated before it,
// freed after it: parameters, gradients kept across iterations, optimizer state) has one more
// interval, which wraps from its last use in this iteration to its first use in the next one:
// that is how a weight whose model state does not fit leaves the device between its optimizer
// update and its next forward use. An activation of a classic CNN has the familiar interval from
// its last forward use to its first backward use; a U-Net encoder map has one from its encoder
// use to the decoder's skip addition, all within forward; a gradient has one from the backward
// op that writes it to the optimizer step. The time before a tensor's first use is not an
// interval: before the first write there is no data to keep.
//
// Note [Tails]
// ~~~~~~~~~~~~
// A program may hold a tensor after its last use: cnn_train frees a block's maps a few ops after
// backward last read them, a framework may free saved tensors only at the end of backward. That
// tail, from the last use to the op after which the program frees it, is one more interval
// (Candidate::tail): swapped, the tensor leaves the device when its swap-out completes and is
// never brought back; the free releases the host copy. It cannot be recomputed (nothing needs
// the value). The copy is still made, though the profile says nothing reads the tensor again:
// a profile that is wrong must cost time, never data, and the runtime's demand swap-in brings
// it back if something does read it. Without tails, a map held from its last use to a later free
// can make a plan infeasible where demand swapping runs the program.
// Tails are offered with the short intervals, when no plan fits without them (Note [Short
// intervals] in core/plan/plan.cc), and always without a machine: offered from the start, they
// change the swap-all the PoocH search starts from and can end it worse where a plan fits anyway.
// The cases behind both rules: docs/measurements.md, "Candidates".
//
// Note [Sound replays]
// ~~~~~~~~~~~~~~~~~~~~
// Replaying op w before op q rebuilds tensor t exactly when:
//   - w is t's only writer in the whole iteration (a second writer may have written part of t:
//     a concatenation's copies into slices, an in-place skip addition; replaying one of them
//     would not rebuild the whole value), w does not read t itself, and w is replayable (its
//     write set is known and it has no side effect replay cannot suppress, Op::replayable); a
//     tensor with more than one writer is rebuilt by a chain of them instead (Note [Chains]);
//   - no op in (w, q) writes any tensor w reads (other than what w writes itself): else the
//     replay reads changed data (ReplayFacts::stable_until[w] is the first such write, or
//     earlier when what w read outside the profile changes first: Op::unprofiled_inputs_until);
//   - every input of w is available at q: it is still allocated then (the plan makes it
//     resident if one of its intervals covers q), or it was freed but can itself be rebuilt at q
//     by such a replay (a ReLU's input that only the ReLU read: ReplayFacts::remat_until).
// An interval is `recomputable` when its tensor's only writer w precedes `open` (or a chain ends
// at its last write before `open`) and replaying w (the chain) before `close` is sound; an
// interval that wraps never is (its value was made in the previous iteration). The simulator
// re-checks what is resident at replay time (Note [Recomputation] in sim.cc); at run time the
// Recomputer's lineage enforces the same rules on the actual calls (Note [Replay] in
// core/recompute/recomputer.h), so a wrong profile costs time, never data.
//
// Note [Chains]
// ~~~~~~~~~~~~~
// A tensor written by more than one call (a convolution's output, then its bias added in place;
// a decoder map, then the encoder's skip summed into it; `out += identity; relu_(out)` in a
// ResNet block) is rebuilt by the chain of its writes since the last one that overwrote it
// whole (Op::overwrites): replayed in order, the first makes the whole map again and each later
// link, in place or not, does to it what it did then (a link that reads the map reads the
// chain's previous state, as it did). The chain that ends at write w of t exists when every link
// is replayable and its first is in Op::overwrites, or w is t's only writer and does not read it
// (Note [Sound replays]: a one-link chain). Replaying it before op q is sound when, for every
// link, no op in (link, q) writes any tensor it reads other than t (ReplayFacts::stable_until)
// and each of those inputs is available at q, as for one producer; what the chain wrote of t
// in between is its own business, never seen by the program (the Recomputer replays the whole
// chain before the op that needs t). Its cost is the sum of its links' (ReplayFacts::ReplayUs).
// The interval's producer is the chain's last link (Candidate::producer), which with t names it.
//
// Note [Intervals that matter]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Planning for a machine considers only the intervals that can pay on it:
//   - over capacity: taking a tensor off the device lowers memory only at the ops inside its
//     interval, and the in-core iteration shows where memory is short. An interval none of whose
//     inner ops holds more than the device's memory in-core cannot make a plan fit, and keeping
//     it costs nothing. A weight's wrap interval reaches the planner when memory is short
//     anywhere between its optimizer update and its next forward use; intervals where memory is
//     plentiful (the start and end of a ResNet-50 iteration) never do.
//   - long enough: its inner ops take at least the tensor's copy out and back
//     (SwapOutUs + SwapInUs). A shorter one cannot hide its own copies, and offering it misleads
//     the search, which starts from every interval swapped (§4.4; docs/measurements.md,
//     "Candidates"). (Such an
//     interval is typically a block input between its first use and the addition a few ops
//     later; its tensor still has the long interval to backward that the planner sees.) When no
//     plan fits without them, MakePlan plans again with them (Note [Short intervals] in
//     core/plan/plan.cc): a plan that stalls beats demand swapping.
//   - or cheap to rebuild: a short interval that is recomputable is offered anyway
//     (Candidate::recompute_only, to the policies that recompute: pooch and optimal) when one
//     rebuild of its tensor (ReplayFacts::ReplayUs) takes less than the copy out and back. That
//     copy is what freeing the same memory by swapping costs; on a memory-bound network over a
//     slow link (a U-Net over PCIe gen3: a 512 MiB ReLU output is rebuilt in 1.2 ms and takes
//     67 ms to move out and back) almost no interval is long enough, and recomputation is the
//     only way to free memory that does not stall. Swapping it is not offered: it cannot hide
//     its copies, and the search starts from every offered swap.
//   - big enough: tensors below the runtime's POOCH_MIN_SWAP_BYTES (1 MiB by default) are
//     sub-allocated and never moved at run time, so they are never offered; the analytic zoo has
//     hundreds (batch-norm scales, saved statistics, small weights). A measured profile has none
//     (they are "other").
// (Replays add memory at their need point; that memory comes from intervals that are themselves
// offered.)
#include "core/model/candidates.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace pooch {

namespace {

constexpr OpIndex kNever = std::numeric_limits<OpIndex>::max();

bool Reads(const Op& op, TensorId t) {
  return std::find(op.reads.begin(), op.reads.end(), t) != op.reads.end();
}
bool Writes(const Op& op, TensorId t) {
  return std::find(op.writes.begin(), op.writes.end(), t) != op.writes.end();
}

}  // namespace

ReplayFacts ComputeReplayFacts(const Profile& profile) {
  const OpIndex n = static_cast<OpIndex>(profile.ops.size());
  const int32_t tensor_count = static_cast<int32_t>(profile.tensors.size());
  ReplayFacts f;
  f.writers.assign(tensor_count, {});
  for (OpIndex i = 0; i < n; ++i) {
    for (TensorId t : profile.ops[i].writes) {
      if (f.writers[t].empty() || f.writers[t].back() != i) f.writers[t].push_back(i);
    }
  }
  f.stable_until.assign(n, kNever);
  for (OpIndex w = 0; w < n; ++w) {
    const Op& op = profile.ops[w];
    if (op.unprofiled_inputs_until >= 0) f.stable_until[w] = op.unprofiled_inputs_until;
    for (TensorId in : op.reads) {
      if (Writes(op, in)) continue;
      const std::vector<OpIndex>& ws = f.writers[in];
      const auto later = std::upper_bound(ws.begin(), ws.end(), w);
      if (later != ws.end()) f.stable_until[w] = std::min(f.stable_until[w], *later);
    }
  }
  f.chain_begin.assign(tensor_count, {});
  f.chain_until.assign(tensor_count, {});
  for (TensorId t = 0; t < tensor_count; ++t) {
    f.chain_begin[t].assign(f.writers[t].size(), -1);
    f.chain_until[t].assign(f.writers[t].size(), -1);
  }
  // Tensors are written before they are read (Profile::Validate), so a writer's inputs come
  // earlier in op order than the writer, and one pass in op order settles remat_until: an input
  // written again after a link is past that link's stable_until anyway.
  f.remat_until.assign(tensor_count, -1);
  std::vector<int32_t> written(tensor_count, 0);  // per tensor: its writes seen so far
  for (OpIndex w = 0; w < n; ++w) {
    const Op& op = profile.ops[w];
    for (TensorId t : op.writes) {
      const std::vector<OpIndex>& ws = f.writers[t];
      if (written[t] >= static_cast<int32_t>(ws.size()) || ws[written[t]] != w) continue;
      const int32_t k = written[t]++;
      // Note [Chains]: starts here (overwritten whole, or the one-link chain of a sole writer
      // that does not read it), continues the chain of the write before, or there is none.
      int32_t begin = -1;
      if (op.replayable) {
        const bool whole =
            std::find(op.overwrites.begin(), op.overwrites.end(), t) != op.overwrites.end();
        if (whole || (ws.size() == 1 && !Reads(op, t))) {
          begin = k;
        } else if (k > 0) {
          begin = f.chain_begin[t][k - 1];
        }
      }
      f.chain_begin[t][k] = begin;
      if (begin < 0) continue;
      OpIndex until = kNever;
      for (int32_t l = begin; l <= k; ++l) {
        const Op& link = profile.ops[ws[l]];
        until = std::min(until, f.stable_until[ws[l]]);
        for (TensorId in : link.reads) {
          if (!Writes(link, in)) until = std::min(until, f.AvailableUntil(profile, in));
        }
      }
      f.chain_until[t][k] = until;
      if (k + 1 == static_cast<int32_t>(ws.size())) f.remat_until[t] = until;
    }
  }
  return f;
}

OpIndex ReplayFacts::SoleWriter(TensorId t) const {
  return writers[t].size() == 1 ? writers[t][0] : -1;
}

OpIndex ReplayFacts::LastWriter(TensorId t) const {
  return writers[t].empty() ? -1 : writers[t].back();
}

OpIndex ReplayFacts::WriterAtOrBefore(TensorId t, OpIndex at) const {
  const std::vector<OpIndex>& ws = writers[t];
  const auto after = std::upper_bound(ws.begin(), ws.end(), at);
  return after == ws.begin() ? -1 : *(after - 1);
}

namespace {

// The position of op w in writers, or -1.
int32_t WritePosition(const std::vector<OpIndex>& writers, OpIndex w) {
  const auto it = std::lower_bound(writers.begin(), writers.end(), w);
  return it != writers.end() && *it == w ? static_cast<int32_t>(it - writers.begin()) : -1;
}

}  // namespace

absl::Span<const OpIndex> ReplayFacts::Chain(TensorId t, OpIndex w) const {
  const int32_t k = WritePosition(writers[t], w);
  if (k < 0 || chain_begin[t][k] < 0) return {};
  const int32_t begin = chain_begin[t][k];
  return absl::MakeConstSpan(writers[t]).subspan(begin, k - begin + 1);
}

OpIndex ReplayFacts::AvailableUntil(const Profile& profile, TensorId t) const {
  const Tensor& x = profile.tensors[t];
  if (x.free_after == kAfterIteration) return kNever;
  return std::max(x.free_after, remat_until[t]);
}

bool ReplayFacts::SoundAt(OpIndex w, TensorId t, OpIndex q) const {
  const int32_t k = WritePosition(writers[t], w);
  return k >= 0 && chain_begin[t][k] >= 0 && q <= chain_until[t][k];  // every other rule
}

double ReplayFacts::ReplayUs(const Profile& profile, const MachineModel* machine, TensorId t,
                             OpIndex w) const {
  double us = 0;
  for (OpIndex link : Chain(t, w)) {
    const Op& op = profile.ops[link];
    us += machine != nullptr ? OpUs(op, *machine) : op.duration_us;
  }
  return us;
}

std::vector<int64_t> InCoreBytesPerOp(const Profile& profile) {
  const OpIndex n = static_cast<OpIndex>(profile.ops.size());
  std::vector<int64_t> diff(n + 1, 0);
  for (const Tensor& t : profile.tensors) {
    if (n == 0) break;
    const OpIndex lo = std::max<OpIndex>(t.alloc_before, 0);
    const OpIndex hi = t.free_after == kAfterIteration ? n - 1 : t.free_after;
    diff[lo] += DeviceBytes(t);
    diff[hi + 1] -= DeviceBytes(t);
  }
  std::vector<int64_t> bytes(n, 0);
  int64_t run = 0;
  for (OpIndex j = 0; j < n; ++j) {
    run += diff[j];
    bytes[j] = run + profile.ops[j].workspace_bytes;
  }
  return bytes;
}

void LabelPhasesByPeak(Profile& profile) {
  const std::vector<int64_t> bytes = InCoreBytesPerOp(profile);
  const auto peak = std::max_element(bytes.begin(), bytes.end()) - bytes.begin();
  for (size_t i = 0; i < profile.ops.size(); ++i) {
    profile.ops[i].phase = static_cast<ptrdiff_t>(i) <= peak ? Phase::kForward : Phase::kBackward;
  }
}

std::vector<Candidate> FindCandidates(const Profile& profile, const MachineModel* machine,
                                      int64_t min_bytes, bool long_only, bool short_recomputable) {
  const OpIndex n = static_cast<OpIndex>(profile.ops.size());
  const int32_t tensor_count = static_cast<int32_t>(profile.tensors.size());
  std::vector<std::vector<OpIndex>> uses(tensor_count);
  for (OpIndex i = 0; i < n; ++i) {
    const Op& op = profile.ops[i];
    for (const std::vector<TensorId>* set : {&op.reads, &op.writes}) {
      for (TensorId t : *set) {
        if (uses[t].empty() || uses[t].back() != i) uses[t].push_back(i);
      }
    }
  }
  // over_before[j]: how many ops before j hold more than capacity in-core (Note [Intervals that
  // matter]); an interval matters when one of its inner ops does.
  const int64_t capacity = machine != nullptr ? machine->memory_bytes : 0;
  std::vector<int32_t> over_before(n + 1, 0);
  if (capacity > 0) {
    const std::vector<int64_t> in_core = InCoreBytesPerOp(profile);
    for (OpIndex j = 0; j < n; ++j) over_before[j + 1] = over_before[j] + (in_core[j] > capacity);
  }
  auto over_in = [&](OpIndex lo, OpIndex hi) {  // an over-capacity op in [lo, hi]
    if (capacity <= 0) return true;
    if (lo > hi) return false;
    return over_before[hi + 1] - over_before[lo] > 0;
  };
  std::vector<double> us_before(n + 1, 0);  // compute time of the ops before j
  for (OpIndex j = 0; j < n; ++j) {
    const Op& op = profile.ops[j];
    us_before[j + 1] = us_before[j] + (machine != nullptr ? OpUs(op, *machine) : op.duration_us);
  }
  auto us_in = [&](OpIndex lo, OpIndex hi) {
    return lo > hi ? 0.0 : us_before[hi + 1] - us_before[lo];
  };
  auto copies_us = [&](TensorId t) {
    const Tensor& x = profile.tensors[t];
    return SwapOutUs(x, *machine) + SwapInUs(x, *machine);
  };
  // Long enough to hide the tensor's copy out and back (Note [Intervals that matter]).
  auto long_enough = [&](TensorId t, double idle_us) {
    if (machine == nullptr || !long_only) return true;
    return idle_us >= copies_us(t);
  };
  const ReplayFacts facts = ComputeReplayFacts(profile);
  // Or short, and cheaper to rebuild than to move (Note [Intervals that matter]).
  auto cheap_to_rebuild = [&](const Candidate& c) {
    return short_recomputable && c.recomputable &&
           facts.ReplayUs(profile, machine, c.tensor, c.producer) < copies_us(c.tensor);
  };
  std::vector<Candidate> out;
  for (TensorId t = 0; t < tensor_count; ++t) {
    const std::vector<OpIndex>& u = uses[t];
    if (u.empty() || profile.tensors[t].bytes <= 0 || profile.tensors[t].bytes < min_bytes) {
      continue;
    }
    for (size_t k = 0; k + 1 < u.size(); ++k) {
      if (u[k + 1] <= u[k] + 1 || !over_in(u[k] + 1, u[k + 1] - 1)) continue;
      Candidate c;
      c.tensor = t;
      c.open = u[k];
      c.close = u[k + 1];
      // The value it holds since its last write before open: its only writer's, or a chain's
      // (Note [Chains]).
      const OpIndex w = facts.WriterAtOrBefore(t, c.open);
      if (w >= 0 && (facts.SoleWriter(t) == w || !facts.Chain(t, w).empty())) {
        c.producer = w;
        c.recomputable = facts.SoundAt(w, t, c.close);
      }
      if (!long_enough(t, us_in(u[k] + 1, u[k + 1] - 1))) {
        if (!cheap_to_rebuild(c)) continue;
        c.recompute_only = true;
      }
      out.push_back(c);
    }
    const Tensor& x = profile.tensors[t];
    const bool whole_iteration =
        x.alloc_before == kBeforeIteration && x.free_after == kAfterIteration;
    if (whole_iteration && (u.back() < n - 1 || u.front() > 0) &&
        (over_in(u.back() + 1, n - 1) || over_in(0, u.front() - 1)) &&
        long_enough(t, us_in(u.back() + 1, n - 1) + us_in(0, u.front() - 1))) {
      Candidate c;
      c.tensor = t;
      c.open = u.back();
      c.close = u.front();
      c.wraps = true;
      out.push_back(c);
    }
  }
  // Note [Tails]: from the last use to the program's free, when memory is short in between;
  // with the short intervals.
  for (TensorId t = 0; t < tensor_count && (machine == nullptr || !long_only); ++t) {
    const std::vector<OpIndex>& u = uses[t];
    const Tensor& x = profile.tensors[t];
    if (u.empty() || x.bytes <= 0 || x.bytes < min_bytes || x.free_after == kAfterIteration ||
        x.free_after <= u.back() || !over_in(u.back() + 1, x.free_after)) {
      continue;
    }
    out.push_back({.tensor = t, .open = u.back(), .close = x.free_after, .tail = true});
  }
  std::sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) {
    if (a.open != b.open) return a.open < b.open;
    if (a.tensor != b.tensor) return a.tensor < b.tensor;
    return a.close < b.close;
  });
  return out;
}

namespace {

double CopyUs(int64_t bytes, double gbps, double latency_us) {
  if (gbps <= 0) return latency_us;
  return static_cast<double>(bytes) / (gbps * 1e3) + latency_us;  // GB/s = 1e3 bytes/us
}

}  // namespace

double ToHostUs(int64_t bytes, const MachineModel& machine) {
  return CopyUs(bytes, machine.d2h_gbps, machine.d2h_latency_us);
}

double ToDeviceUs(int64_t bytes, const MachineModel& machine) {
  return CopyUs(bytes, machine.h2d_gbps, machine.h2d_latency_us);
}

double OpUs(const Op& op, const MachineModel& machine) {
  if (op.to_host_bytes > 0) return ToHostUs(op.to_host_bytes, machine);
  if (op.to_device_bytes > 0) return ToDeviceUs(op.to_device_bytes, machine);
  return op.duration_us;
}

double BackToBackUs(const Profile& profile, const MachineModel& machine) {
  double us = 0;
  for (const Op& op : profile.ops) us += OpUs(op, machine);
  return us;
}

double SwapOutUs(const Tensor& tensor, const MachineModel& machine) {
  if (tensor.swap_out_us >= 0) return tensor.swap_out_us;
  return ToHostUs(tensor.bytes, machine);
}

double SwapInUs(const Tensor& tensor, const MachineModel& machine) {
  if (tensor.swap_in_us >= 0) return tensor.swap_in_us;
  return ToDeviceUs(tensor.bytes, machine);
}

Plan KeepAllPlan(size_t candidates) {
  Plan plan;
  plan.policy = "in-core";
  plan.decisions.assign(candidates, Decision::kKeep);
  return plan;
}

Decision DecisionOf(const Plan& plan, CandidateId c) {
  return c >= 0 && static_cast<size_t>(c) < plan.decisions.size()
             ? plan.decisions[static_cast<size_t>(c)]
             : Decision::kKeep;
}

DecisionCounts CountDecisions(const Plan& plan, const std::vector<Candidate>& candidates) {
  DecisionCounts c;
  for (CandidateId id = 0; id < static_cast<CandidateId>(candidates.size()); ++id) {
    switch (DecisionOf(plan, id)) {
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
