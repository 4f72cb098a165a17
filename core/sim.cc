// The timeline and memory simulator (sim.h).
//
// Note [Engines]
// ~~~~~~~~~~~~~~
// Three engines, each a FIFO: compute (ops in profile order, recomputation inserted before the op
// that needs it), D2H (swap-outs) and H2D (swap-ins). With !machine.duplex the two copy
// directions share one engine. Work starts when its engine is free and its dependencies are done;
// it never preempts. Because every engine is FIFO, swap-out completions are non-decreasing in
// time, which lets memory freed by swap-outs be kept in a simple queue.
//
// Note [Swap-out]
// ~~~~~~~~~~~~~~~
// A swapped map's swap-out is issued when its last forward use ends (Note [Feature map uses],
// sim_candidates.cc); its device memory is freed when the copy completes. Forward computation does
// not wait for swap-outs, except when an allocation needs the memory they will free (Note [Memory
// accounting]). A recomputed map is dropped (freed) as soon as its last forward use ends.
//
// Note [Swap-in scheduling]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// Swap-ins are issued at op boundaries: "issued at op j" means when the compute engine becomes
// free for op j (the previous op ended), which is what Plan::SwapIn::issue_at records. Never
// before the map's swap-out was issued (issue_at > last forward use). The map's *need* is the
// first op (or replay, Note [Recomputation]) that reads it after its last forward use.
//   kWithPreviousOp    issue_at = need - 1: together with the computation just before the need
//                      (PoocH's "swap-all w/o scheduling", Figure 10 left).
//   kWithPreviousConv  issue_at = the last convolution op before the need (SuperNeurons), or
//                      need - 1 when there is none after the swap-out.
//   kWhenMemoryAllows  PoocH §4.3: swap-ins are considered in order of need; the next one is
//                      issued at the first op boundary where its bytes fit both now and at every
//                      op until its need, given what the plan will hold there (the "profile" of
//                      memory §4.3 speaks of: Note [Memory accounting]). A swap-in that has not
//                      been issued when its need arrives is issued then (forced), waiting for
//                      swap-out frees if it must. So memory never exceeds capacity because of a
//                      prefetch.
// For the first two, a swap-in is issued regardless of memory: if it does not fit at that moment
// the plan is infeasible ("swap-in of X at op Y exceeds capacity by Z"), which is how SuperNeurons
// fails on ResNet-50 at batch 640 (§5.2).
//
// Note [Swap-in after swap-out]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A swap-in copy never starts before the same map's swap-out completed: the runtime moves data
// through the host copy, as PoocH does; this is what makes swap-outs still in flight at the end of
// forward costly (L_O, Figure 11). If the swap-in is issued while the swap-out is still in flight
// the device copy was never freed, so the pending free is cancelled and no memory is allocated.
//
// Note [Recomputation]
// ~~~~~~~~~~~~~~~~~~~~
// A recomputed map Z is rematerialised at its need q by replaying its producer p on the compute
// engine just before op q, costing p's duration. The replay needs p's inputs at q: a kept input is
// held until q if the profile freed it earlier; a swapped input gets q as a need (so it is swapped
// in by then); a recomputed input is itself recomputed at q, recursively (this is how a chain is
// recomputed from the nearest kept map, as checkpointing does); any other input must be live at q
// in the profile, else the plan is rejected. Replays at q run in producer order, one per producer
// (all maps of p needed at q come from one replay). Z is held from its replay until its last need,
// then freed. A replay also needs p's workspace (freed when it ends) and memory for those outputs
// of p that nothing keeps (freed after the last replay before op q that reads them). A dead
// intermediate that a replay needs (a ReLU's input, freed in forward) is itself rebuilt by an
// earlier replay at q when its writer can be replayed, and held that way.
//
// Note [Memory accounting]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// Memory is exact in time: a tensor is allocated when the op before which it is allocated starts
// (alloc_before), freed when the op after which it is freed ends (free_after); op workspaces are
// held while the op runs. Kept maps live as in the profile (extended to their last need by a
// replay); swapped maps leave when their swap-out completes and return when their swap-in is
// issued; recomputed maps as above. An allocation that does not fit waits for in-flight swap-outs
// to free memory; if it still does not fit, the plan is infeasible at that op (with
// SimOptions::allow_overflow it proceeds and memory overflows).
// For kWhenMemoryAllows the simulator also builds, per op, the memory the plan holds during the
// op apart from prefetches and in-flight swap-outs ("base"); a swap-in may be issued early at op
// j only if base[k] + earlier prefetches[k] + its bytes <= capacity for every k from j to its
// need. A segment tree (range add, range max) answers that in O(log n).
#include "core/sim.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "core/units.h"

namespace pooch {

const char* SimEventKindName(SimEvent::Kind kind) {
  switch (kind) {
    case SimEvent::Kind::kCompute:
      return "compute";
    case SimEvent::Kind::kRecompute:
      return "recompute";
    case SimEvent::Kind::kSwapOut:
      return "swap-out";
    case SimEvent::Kind::kSwapIn:
      return "swap-in";
  }
  return "?";
}

namespace {

constexpr OpIndex kNever = std::numeric_limits<OpIndex>::max();

// Range add over [0, n) and "last position above a threshold"; buffers reused between Build
// calls.
class MaxTree {
 public:
  void Build(const std::vector<int64_t>& values, int n) {
    size_t size = 1;
    while (size < static_cast<size_t>(std::max(n, 1))) size <<= 1;
    size_ = size;
    max_.assign(2 * size, std::numeric_limits<int64_t>::min() / 4);
    add_.assign(2 * size, 0);
    for (int i = 0; i < n; ++i) max_[size + i] = values[i];
    for (size_t i = size - 1; i >= 1; --i) max_[i] = std::max(max_[2 * i], max_[2 * i + 1]);
  }
  // REQUIRES: 0 <= lo <= hi < n.
  void Add(int lo, int hi, int64_t delta) { Add(1, 0, static_cast<int>(size_) - 1, lo, hi, delta); }
  // The largest k in [lo, hi] whose value exceeds `threshold`, or -1.
  int LastAbove(int lo, int hi, int64_t threshold) const {
    return LastAbove(1, 0, static_cast<int>(size_) - 1, lo, hi, threshold, 0);
  }

 private:
  void Add(size_t node, int nlo, int nhi, int lo, int hi, int64_t delta) {
    if (hi < nlo || nhi < lo) return;
    if (lo <= nlo && nhi <= hi) {
      max_[node] += delta;
      add_[node] += delta;
      return;
    }
    const int mid = (nlo + nhi) / 2;
    Add(2 * node, nlo, mid, lo, hi, delta);
    Add(2 * node + 1, mid + 1, nhi, lo, hi, delta);
    max_[node] = std::max(max_[2 * node], max_[2 * node + 1]) + add_[node];
  }
  int LastAbove(size_t node, int nlo, int nhi, int lo, int hi, int64_t threshold,
                int64_t above) const {
    if (hi < nlo || nhi < lo || max_[node] + above <= threshold) return -1;
    if (nlo == nhi) return nlo;
    const int mid = (nlo + nhi) / 2;
    const int64_t inner = above + add_[node];
    const int right = LastAbove(2 * node + 1, mid + 1, nhi, lo, hi, threshold, inner);
    return right >= 0 ? right : LastAbove(2 * node, nlo, mid, lo, hi, threshold, inner);
  }
  size_t size_ = 1;
  std::vector<int64_t> max_;
  std::vector<int64_t> add_;
};

struct PendingFree {
  double t_us;
  int64_t bytes;
  bool cancelled;
};

// One replay of `producer` before op `at`, materialising candidates [first, last) of
// Impl::replay_maps_.
struct Replay {
  OpIndex at;
  OpIndex producer;
  int32_t first;
  int32_t last;
  int64_t transient_bytes;  // workspace plus outputs nothing else keeps
  int64_t free_after = 0;   // transient bytes (of this or earlier replays at `at`) freed after it
  TensorId label;           // the map it is for (a dead intermediate when first == last)
};

// A replay still to be processed (Simulator::Impl::PrepareNeeds); a max-heap on producer.
struct Request {
  OpIndex producer;
  OpIndex q;
  int32_t who;
  bool operator<(const Request& o) const { return producer < o.producer; }
};

}  // namespace

struct Simulator::Impl {
  Impl(const Profile& profile, const MachineModel& machine);
  const SimResult& Run(const Plan& plan, const SimOptions& options);

  // --- Constant after construction.
  const Profile& p;
  const MachineModel& m;
  int32_t n = 0;  // ops
  std::vector<FeatureMapInfo> cands;
  std::vector<int32_t> cand_of;  // tensor -> candidate index, or -1
  std::vector<double> out_us, in_us;
  std::vector<int64_t> cand_bytes;
  // Candidates op j reads or writes after their last forward use (its backward uses):
  // use_list[use_begin[j], use_begin[j+1]).
  std::vector<int32_t> use_begin;
  std::vector<int32_t> use_list;
  std::vector<int64_t> alloc_bytes;  // bytes allocated before op j (all tensors)
  std::vector<int32_t> free_begin;   // non-candidates freed after op j
  std::vector<TensorId> free_list;
  std::vector<int32_t> turn_begin;  // candidates whose last forward use is op j
  std::vector<int32_t> turn_list;
  int64_t initial_bytes = 0;              // allocated before the iteration
  std::vector<int64_t> static_base;       // per op: non-candidates live during op j, plus workspace
  std::vector<OpIndex> prev_conv;         // last conv op index < j, or -1
  std::vector<int32_t> by_producer_desc;  // candidates with a producer, producer descending
  // Per tensor that is not a candidate: the op that can rematerialise it when a replay needs it
  // after it was freed (Note [Recomputation]), or -1.
  std::vector<OpIndex> transient_producer;

  // --- Per run, reused.
  const SimOptions* opt = nullptr;
  SimResult res;
  std::vector<Decision> dec;
  std::vector<OpIndex> first_need, last_need, release;
  std::vector<Replay> replays;
  std::vector<int32_t> replay_maps;
  std::vector<std::pair<uint64_t, int32_t>> replay_keys;
  std::vector<Request> requests;
  absl::flat_hash_set<uint64_t> processed;
  std::vector<int32_t> release_head, release_next;  // candidates freed after op j
  std::vector<int32_t> swap_queue;
  std::vector<OpIndex> issue_at;
  std::vector<double> swapout_end, swapin_end;
  std::vector<int32_t> pending_of;
  std::vector<PendingFree> pending;
  size_t pending_head = 0;
  std::vector<int64_t> base;
  MaxTree tree;
  int64_t cap = 0;
  int64_t mem = 0;
  double t_alloc = 0;  // time of the latest allocation

  bool Fail(OpIndex at, std::string why);
  void Sample(double t);
  void Advance(double t);
  bool Allocate(int64_t bytes, double* t, bool can_wait, OpIndex at, const char* what,
                TensorId tensor);
  bool PrepareNeeds();
  void BuildBase();
  bool ResidentAt(int32_t tensor, OpIndex q) const;
  bool IssueSwapIn(int32_t c, OpIndex j, double t, bool can_wait);
  std::string OpLabel(OpIndex j) const {
    if (j < 0 || j >= n) return "the start of the iteration";
    return absl::StrFormat("op %d (%s %s)", j, p.ops[j].name, PhaseName(p.ops[j].phase));
  }

  double engine[2] = {0, 0};
  double* d2h = &engine[0];
  double* h2d = &engine[1];
};

Simulator::Impl::Impl(const Profile& profile, const MachineModel& machine)
    : p(profile), m(machine) {
  n = static_cast<int32_t>(p.ops.size());
  const int32_t nt = static_cast<int32_t>(p.tensors.size());
  cands = FindCandidates(p);
  cand_of.assign(nt, -1);
  for (int32_t c = 0; c < static_cast<int32_t>(cands.size()); ++c) {
    const Tensor& t = p.tensors[cands[c].tensor];
    cand_of[t.id] = c;
    out_us.push_back(SwapOutUs(t, m));
    in_us.push_back(SwapInUs(t, m));
    cand_bytes.push_back(t.bytes);
  }
  {
    std::vector<std::vector<int32_t>> uses(n);
    for (int32_t c = 0; c < static_cast<int32_t>(cands.size()); ++c) {
      for (OpIndex j : cands[c].backward_uses) uses[j].push_back(c);
    }
    use_begin.assign(n + 1, 0);
    for (OpIndex j = 0; j < n; ++j) {
      use_begin[j] = static_cast<int32_t>(use_list.size());
      use_list.insert(use_list.end(), uses[j].begin(), uses[j].end());
    }
    use_begin[n] = static_cast<int32_t>(use_list.size());
  }

  alloc_bytes.assign(n, 0);
  std::vector<std::vector<TensorId>> frees(n);
  std::vector<int64_t> diff(n + 1, 0);
  for (const Tensor& t : p.tensors) {
    if (t.alloc_before == kBeforeIteration) {
      initial_bytes += t.bytes;
    } else {
      alloc_bytes[t.alloc_before] += t.bytes;
    }
    if (cand_of[t.id] >= 0) continue;
    if (t.free_after != kAfterIteration) frees[t.free_after].push_back(t.id);
    const OpIndex lo = std::max<OpIndex>(t.alloc_before, 0);
    const OpIndex hi = t.free_after == kAfterIteration ? n - 1 : t.free_after;
    if (n > 0) {
      diff[lo] += t.bytes;
      diff[hi + 1] -= t.bytes;
    }
  }
  free_begin.assign(n + 1, 0);
  for (OpIndex j = 0; j < n; ++j) {
    free_begin[j] = static_cast<int32_t>(free_list.size());
    free_list.insert(free_list.end(), frees[j].begin(), frees[j].end());
  }
  free_begin[n] = static_cast<int32_t>(free_list.size());

  std::vector<std::vector<int32_t>> turns(n);
  for (int32_t c = 0; c < static_cast<int32_t>(cands.size()); ++c) {
    turns[cands[c].last_forward_use].push_back(c);
  }
  turn_begin.assign(n + 1, 0);
  for (OpIndex j = 0; j < n; ++j) {
    turn_begin[j] = static_cast<int32_t>(turn_list.size());
    turn_list.insert(turn_list.end(), turns[j].begin(), turns[j].end());
  }
  turn_begin[n] = static_cast<int32_t>(turn_list.size());

  static_base.assign(n, 0);
  int64_t run = 0;
  for (OpIndex j = 0; j < n; ++j) {
    run += diff[j];
    static_base[j] = run + p.ops[j].workspace_bytes;
  }
  prev_conv.assign(n, -1);
  for (OpIndex j = 1; j < n; ++j) {
    prev_conv[j] = p.ops[j - 1].kind == OpKind::kConv ? j - 1 : prev_conv[j - 1];
  }
  for (int32_t c = 0; c < static_cast<int32_t>(cands.size()); ++c) {
    if (cands[c].producer >= 0) by_producer_desc.push_back(c);
  }
  std::sort(by_producer_desc.begin(), by_producer_desc.end(), [&](int32_t a, int32_t b) {
    return cands[a].producer != cands[b].producer ? cands[a].producer > cands[b].producer : a < b;
  });
  // Dead intermediates a replay may rematerialise: the same soundness rules as a candidate's
  // producer (Note [Feature map uses]), with inputs stable until the end of backward.
  transient_producer.assign(nt, -1);
  std::vector<std::vector<OpIndex>> writers(nt);
  OpIndex last_backward = -1;
  for (OpIndex j = 0; j < n; ++j) {
    for (TensorId t : p.ops[j].writes) {
      if (writers[t].empty() || writers[t].back() != j) writers[t].push_back(j);
    }
    if (p.ops[j].phase == Phase::kBackward) last_backward = j;
  }
  for (TensorId t = 0; t < nt; ++t) {
    if (cand_of[t] >= 0 || writers[t].size() != 1) continue;
    const OpIndex w = writers[t][0];
    const Op& op = p.ops[w];
    if (op.phase != Phase::kForward || !op.replayable) continue;
    if (std::find(op.reads.begin(), op.reads.end(), t) != op.reads.end()) continue;
    bool stable = true;
    for (TensorId in : op.reads) {
      for (OpIndex i : writers[in]) stable &= i < w || i > last_backward;
    }
    if (stable) transient_producer[t] = w;
  }
  if (!m.duplex) h2d = &engine[0];
}

bool Simulator::Impl::Fail(OpIndex at, std::string why) {
  if (res.failure.empty()) {
    res.feasible = false;
    res.failure = std::move(why);
    res.failed_at = at;
  }
  return false;
}

void Simulator::Impl::Sample(double t) {
  if (mem > res.peak_bytes) res.peak_bytes = mem;
  if (!opt->record) return;
  if (!res.memory.empty() && res.memory.back().t_us == t) {
    res.memory.back().bytes = mem;
  } else {
    res.memory.push_back({t, mem});
  }
}

void Simulator::Impl::Advance(double t) {
  while (pending_head < pending.size() && pending[pending_head].t_us <= t) {
    const PendingFree& f = pending[pending_head++];
    if (f.cancelled) continue;
    mem -= f.bytes;
    Sample(f.t_us);
  }
}

// Allocates `bytes` at *t (Note [Memory accounting]); may move *t later to wait for swap-out
// frees when can_wait. Returns false when the simulation must stop.
bool Simulator::Impl::Allocate(int64_t bytes, double* t, bool can_wait, OpIndex at,
                               const char* what, TensorId tensor) {
  // Allocations happen in program order: one that had to wait for memory delays the next.
  *t = std::max(*t, t_alloc);
  Advance(*t);
  if (mem + bytes > cap && can_wait) {
    while (pending_head < pending.size() && mem + bytes > cap) {
      *t = std::max(*t, pending[pending_head].t_us);
      Advance(*t);
    }
  }
  if (mem + bytes > cap) {
    const std::string subject =
        tensor >= 0 ? absl::StrFormat("%s of %s", what, p.tensors[tensor].name) : what;
    Fail(at, absl::StrFormat("%s at %s: %s needed with %s in use exceeds capacity %s by %s",
                             subject, OpLabel(at), FormatBytes(bytes), FormatBytes(mem),
                             FormatBytes(cap), FormatBytes(mem + bytes - cap)));
    if (!opt->allow_overflow) return false;
  }
  mem += bytes;
  t_alloc = *t;
  Sample(*t);
  return true;
}

// Resident at replay point q in the static view (Note [Recomputation]: transient outputs).
bool Simulator::Impl::ResidentAt(int32_t tensor, OpIndex q) const {
  const Tensor& t = p.tensors[tensor];
  const int32_t c = cand_of[tensor];
  const bool allocated = t.alloc_before == kBeforeIteration || t.alloc_before <= q;
  if (!allocated) return false;
  if (c < 0 || dec[c] == Decision::kKeep) {
    const OpIndex until =
        c < 0 ? (t.free_after == kAfterIteration ? kNever : t.free_after) : release[c];
    return q <= until;
  }
  return q <= cands[c].last_forward_use || (first_need[c] <= q && q <= last_need[c]);
}

// Derives needs, release points and replays from the decisions (Note [Recomputation]).
// Replay requests (producer, need point) are processed in descending producer order: a request
// only creates requests for earlier producers, so when a candidate's own producer comes up, every
// need of that candidate is known.
bool Simulator::Impl::PrepareNeeds() {
  const int32_t nc = static_cast<int32_t>(cands.size());
  bool any_recompute = false;
  for (int32_t c = 0; c < nc; ++c) {
    if (dec[c] == Decision::kKeep) {
      first_need[c] = kNever;
      last_need[c] = -1;
    } else {
      first_need[c] = cands[c].backward_uses.front();
      last_need[c] = cands[c].backward_uses.back();
      any_recompute |= dec[c] == Decision::kRecompute;
    }
  }
  replay_keys.clear();
  requests.clear();
  processed.clear();
  auto key_of = [](OpIndex q, OpIndex producer) {
    return (static_cast<uint64_t>(q) << 32) | static_cast<uint32_t>(producer);
  };
  // Handles one replay of `producer` before op q for `who` (candidate index, or -(tensor+1) for
  // a dead intermediate). Returns false on a plan that cannot be carried out.
  auto process = [&](OpIndex producer, OpIndex q, int32_t who) {
    const uint64_t key = key_of(q, producer);
    replay_keys.push_back({key, who});
    if (!processed.insert(key).second) return true;
    for (TensorId in : p.ops[producer].reads) {
      const int32_t w = cand_of[in];
      if (w >= 0) {
        if (q <= cands[w].last_forward_use) continue;  // still resident from forward
        if (dec[w] != Decision::kKeep) first_need[w] = std::min(first_need[w], q);
        last_need[w] = std::max(last_need[w], q);
        continue;
      }
      const Tensor& t = p.tensors[in];
      const bool live = (t.alloc_before == kBeforeIteration || t.alloc_before <= q) &&
                        (t.free_after == kAfterIteration || t.free_after >= q);
      if (live) continue;
      if (transient_producer[in] < 0) {
        const TensorId target = who >= 0 ? cands[who].tensor : -who - 1;
        return Fail(
            q, absl::StrFormat("plan: cannot recompute %s before %s: input %s of %s is "
                               "freed by then and cannot be replayed",
                               p.tensors[target].name, OpLabel(q), t.name, p.ops[producer].name));
      }
      requests.push_back({transient_producer[in], q, -in - 1});
      std::push_heap(requests.begin(), requests.end());
    }
    return true;
  };
  if (any_recompute) {
    size_t next = 0;  // into by_producer_desc
    while (true) {
      while (next < by_producer_desc.size() &&
             dec[by_producer_desc[next]] != Decision::kRecompute) {
        ++next;
      }
      const bool have_cand = next < by_producer_desc.size();
      const bool have_req = !requests.empty();
      if (!have_cand && !have_req) break;
      if (have_cand &&
          (!have_req || cands[by_producer_desc[next]].producer >= requests.front().producer)) {
        const int32_t c = by_producer_desc[next++];
        if (!process(cands[c].producer, first_need[c], c)) return false;
      } else {
        std::pop_heap(requests.begin(), requests.end());
        const Request r = requests.back();
        requests.pop_back();
        if (!process(r.producer, r.q, r.who)) return false;
      }
    }
  }
  for (int32_t c = 0; c < nc; ++c) {
    if (dec[c] == Decision::kKeep) {
      const OpIndex free_after = p.tensors[cands[c].tensor].free_after;
      release[c] = free_after == kAfterIteration ? kNever : std::max(free_after, last_need[c]);
    } else {
      release[c] = last_need[c];
    }
  }
  std::sort(replay_keys.begin(), replay_keys.end());
  replays.clear();
  replay_maps.clear();
  for (const auto& [key, who] : replay_keys) {
    const OpIndex at = static_cast<OpIndex>(key >> 32);
    const OpIndex producer = static_cast<OpIndex>(key & 0xffffffffu);
    if (replays.empty() || replays.back().at != at || replays.back().producer != producer) {
      const int32_t first = static_cast<int32_t>(replay_maps.size());
      replays.push_back(
          {at, producer, first, first, 0, 0, who >= 0 ? cands[who].tensor : -who - 1});
    }
    Replay& r = replays.back();
    if (who >= 0 && (r.last == r.first || replay_maps[r.last - 1] != who)) {
      if (r.last == r.first) r.label = cands[who].tensor;
      replay_maps.push_back(who);
      r.last = static_cast<int32_t>(replay_maps.size());
    }
  }
  for (Replay& r : replays) r.free_after = 0;
  for (size_t k = 0; k < replays.size(); ++k) {
    Replay& r = replays[k];
    const Op& op = p.ops[r.producer];
    r.transient_bytes = op.workspace_bytes;
    r.free_after += op.workspace_bytes;
    for (TensorId out : op.writes) {
      const int32_t c = cand_of[out];
      bool materialised = false;
      for (int32_t i = r.first; i < r.last; ++i) materialised |= replay_maps[i] == c;
      if (c >= 0 && materialised) continue;
      if (ResidentAt(out, r.at)) continue;
      r.transient_bytes += p.tensors[out].bytes;
      // Held until the last replay before the same op that reads it.
      size_t last_reader = k;
      for (size_t i = k + 1; i < replays.size() && replays[i].at == r.at; ++i) {
        const std::vector<TensorId>& reads = p.ops[replays[i].producer].reads;
        if (std::find(reads.begin(), reads.end(), out) != reads.end()) last_reader = i;
      }
      replays[last_reader].free_after += p.tensors[out].bytes;
    }
  }
  // Release lists.
  release_head.assign(n, -1);
  for (int32_t c = 0; c < nc; ++c) {
    if (release[c] == kNever || release[c] < 0) continue;
    release_next[c] = release_head[release[c]];
    release_head[release[c]] = c;
  }
  return true;
}

// base[k]: what the plan holds during op k apart from prefetches and in-flight swap-outs.
void Simulator::Impl::BuildBase() {
  base.assign(n + 1, 0);
  auto add = [&](OpIndex lo, OpIndex hi, int64_t bytes) {
    if (lo > hi) return;
    base[lo] += bytes;
    base[hi + 1] -= bytes;
  };
  for (int32_t c = 0; c < static_cast<int32_t>(cands.size()); ++c) {
    const Tensor& t = p.tensors[cands[c].tensor];
    const OpIndex lo = std::max<OpIndex>(t.alloc_before, 0);
    if (dec[c] == Decision::kKeep) {
      add(lo, release[c] == kNever ? n - 1 : release[c], t.bytes);
    } else {
      add(lo, cands[c].last_forward_use, t.bytes);
      add(first_need[c], last_need[c], t.bytes);
    }
  }
  for (const Replay& r : replays) add(r.at, r.at, r.transient_bytes);
  int64_t run = 0;
  for (OpIndex j = 0; j < n; ++j) {
    run += base[j];
    base[j] = run + static_base[j];
  }
  tree.Build(base, n);
}

bool Simulator::Impl::IssueSwapIn(int32_t c, OpIndex j, double t, bool can_wait) {
  const int64_t bytes = cand_bytes[c];
  Advance(t);
  const int32_t pi = pending_of[c];
  if (pi >= 0 && static_cast<size_t>(pi) >= pending_head) {
    pending[pi].cancelled = true;  // Note [Swap-in after swap-out]: never left the device
  } else if (!Allocate(bytes, &t, can_wait, j, "swap-in", cands[c].tensor)) {
    return false;
  }
  const double start = std::max({t, *h2d, swapout_end[c]});
  const double end = start + in_us[c];
  *h2d = end;
  swapin_end[c] = end;
  res.swapped_in_bytes += bytes;
  res.swap_ins.push_back({cands[c].tensor, j});
  if (opt->record) {
    res.events.push_back({SimEvent::Kind::kSwapIn, j, cands[c].tensor, -1, start, end});
  }
  return true;
}

const SimResult& Simulator::Impl::Run(const Plan& plan, const SimOptions& options) {
  opt = &options;
  res.feasible = true;
  res.failure.clear();
  res.failed_at = -1;
  res.iteration_us = res.compute_us = res.recompute_us = res.forward_end_us = 0;
  res.peak_bytes = 0;
  res.swapped_out_bytes = res.swapped_in_bytes = 0;
  res.recomputed_ops = 0;
  res.swap_ins.clear();
  res.events.clear();
  res.memory.clear();
  cap = m.memory_bytes;

  const int32_t nc = static_cast<int32_t>(cands.size());
  dec.assign(nc, Decision::kKeep);
  if (!plan.decisions.empty() && plan.decisions.size() != p.tensors.size()) {
    Fail(0, absl::StrFormat("plan: %d decisions for %d tensors", plan.decisions.size(),
                            p.tensors.size()));
    return res;
  }
  for (size_t t = 0; t < plan.decisions.size(); ++t) {
    const Decision d = plan.decisions[t];
    if (d == Decision::kKeep) continue;
    const int32_t c = cand_of[t];
    if (c < 0) {
      Fail(0, absl::StrFormat("plan: tensor %d (%s) is not a swap/recompute candidate", t,
                              p.tensors[t].name));
      return res;
    }
    if (d == Decision::kRecompute && !cands[c].recomputable) {
      Fail(0, absl::StrFormat("plan: tensor %d (%s) cannot be recomputed (its producer cannot "
                              "be replayed)",
                              t, p.tensors[t].name));
      return res;
    }
    dec[c] = d;
  }
  first_need.resize(nc);
  last_need.resize(nc);
  release.resize(nc);
  release_next.assign(nc, -1);
  if (!PrepareNeeds()) return res;

  // The swap-in queue, in the order the schedule issues them.
  swap_queue.clear();
  issue_at.assign(nc, kNever);
  for (int32_t c = 0; c < nc; ++c) {
    if (dec[c] != Decision::kSwap) continue;
    swap_queue.push_back(c);
    const OpIndex need = first_need[c];
    const OpIndex earliest = cands[c].last_forward_use + 1;
    OpIndex at = need - 1;
    if (plan.schedule == SwapInSchedule::kWithPreviousConv && prev_conv[need] >= earliest) {
      at = prev_conv[need];
    }
    issue_at[c] = std::max(at, earliest);
  }
  const bool when_allows = plan.schedule == SwapInSchedule::kWhenMemoryAllows;
  std::sort(swap_queue.begin(), swap_queue.end(), [&](int32_t a, int32_t b) {
    const OpIndex ka = when_allows ? first_need[a] : issue_at[a];
    const OpIndex kb = when_allows ? first_need[b] : issue_at[b];
    if (ka != kb) return ka < kb;
    if (first_need[a] != first_need[b]) return first_need[a] < first_need[b];
    return a < b;
  });
  if (when_allows && !swap_queue.empty()) BuildBase();

  swapout_end.assign(nc, 0);
  swapin_end.assign(nc, 0);
  pending_of.assign(nc, -1);
  pending.clear();
  pending_head = 0;
  engine[0] = engine[1] = 0;
  mem = 0;
  t_alloc = 0;
  double t_comp = 0;
  size_t queue_head = 0;
  OpIndex head_blocked_until = -1;
  size_t replay_next = 0;
  {
    double t0 = 0;
    if (!Allocate(initial_bytes, &t0, false, 0, "tensors that exist before the iteration", -1)) {
      return res;
    }
  }
  for (OpIndex j = 0; j < n; ++j) {
    const Op& op = p.ops[j];
    const double ready = t_comp;
    // Swap-ins issued at op j (Note [Swap-in scheduling]).
    while (queue_head < swap_queue.size()) {
      const int32_t c = swap_queue[queue_head];
      if (!when_allows) {
        if (issue_at[c] > j) break;
        if (!IssueSwapIn(c, j, ready, false)) return res;
      } else {
        if (cands[c].last_forward_use >= j) break;
        const bool forced = first_need[c] <= j;
        if (!forced) {
          // Memory held by the plan only grows at a given op as prefetches are added, so if op k
          // has no room, the head cannot be issued before op k + 1: skip until then.
          if (j <= head_blocked_until) break;
          Advance(ready);
          if (mem + cand_bytes[c] > cap) break;
          const int k = tree.LastAbove(j, first_need[c] - 1, cap - cand_bytes[c]);
          if (k >= 0) {
            head_blocked_until = k;
            break;
          }
          tree.Add(j, first_need[c] - 1, cand_bytes[c]);
        }
        head_blocked_until = -1;
        if (!IssueSwapIn(c, j, ready, forced)) return res;
      }
      ++queue_head;
    }
    // Replays before op j (Note [Recomputation]).
    while (replay_next < replays.size() && replays[replay_next].at == j) {
      const Replay& r = replays[replay_next++];
      const Op& producer = p.ops[r.producer];
      double start = t_comp;
      for (TensorId in : producer.reads) {
        const int32_t w = cand_of[in];
        if (w >= 0 && dec[w] == Decision::kSwap && j > cands[w].last_forward_use) {
          start = std::max(start, swapin_end[w]);
        }
      }
      int64_t bytes = r.transient_bytes;
      for (int32_t k = r.first; k < r.last; ++k) bytes += cand_bytes[replay_maps[k]];
      if (!Allocate(bytes, &start, true, j, "recomputation", r.label)) {
        return res;
      }
      const double end = start + producer.duration_us;
      t_comp = end;
      Advance(end);
      mem -= r.free_after;
      Sample(end);
      res.compute_us += producer.duration_us;
      res.recompute_us += producer.duration_us;
      ++res.recomputed_ops;
      if (opt->record) {
        res.events.push_back({SimEvent::Kind::kRecompute, r.producer, r.label, j, start, end});
        for (int32_t k = r.first + 1; k < r.last; ++k) {
          res.events.push_back({SimEvent::Kind::kRecompute, r.producer,
                                cands[replay_maps[k]].tensor, j, start, end});
        }
      }
    }
    // The op itself.
    double start = t_comp;
    for (int32_t u = use_begin[j]; u < use_begin[j + 1]; ++u) {
      const int32_t c = use_list[u];
      if (dec[c] == Decision::kSwap) start = std::max(start, swapin_end[c]);
    }
    if (!Allocate(alloc_bytes[j] + op.workspace_bytes, &start, true, j, "allocation", -1)) {
      return res;
    }
    const double end = start + op.duration_us;
    t_comp = end;
    res.compute_us += op.duration_us;
    if (op.phase == Phase::kForward) res.forward_end_us = end;
    if (opt->record) res.events.push_back({SimEvent::Kind::kCompute, j, -1, -1, start, end});
    // After the op: frees, drops and swap-outs.
    Advance(end);
    mem -= op.workspace_bytes;
    for (int32_t f = free_begin[j]; f < free_begin[j + 1]; ++f)
      mem -= p.tensors[free_list[f]].bytes;
    for (int32_t c = release_head[j]; c >= 0; c = release_next[c]) mem -= cand_bytes[c];
    for (int32_t k = turn_begin[j]; k < turn_begin[j + 1]; ++k) {
      const int32_t c = turn_list[k];
      if (dec[c] == Decision::kRecompute) {
        mem -= cand_bytes[c];
      } else if (dec[c] == Decision::kSwap) {
        const double so_start = std::max(end, *d2h);
        const double so_end = so_start + out_us[c];
        *d2h = so_end;
        swapout_end[c] = so_end;
        pending_of[c] = static_cast<int32_t>(pending.size());
        pending.push_back({so_end, cand_bytes[c], false});
        res.swapped_out_bytes += cand_bytes[c];
        if (opt->record) {
          res.events.push_back(
              {SimEvent::Kind::kSwapOut, j, cands[c].tensor, -1, so_start, so_end});
        }
      }
    }
    Sample(end);
  }
  Advance(std::numeric_limits<double>::infinity());
  res.iteration_us = std::max({t_comp, engine[0], engine[1]});
  return res;
}

Simulator::Simulator(const Profile& profile, const MachineModel& machine)
    : impl_(std::make_unique<Impl>(profile, machine)) {}
Simulator::~Simulator() = default;

const SimResult& Simulator::Run(const Plan& plan, const SimOptions& options) {
  return impl_->Run(plan, options);
}

const std::vector<FeatureMapInfo>& Simulator::candidates() const { return impl_->cands; }

SimResult Simulate(const Profile& profile, const MachineModel& machine, const Plan& plan,
                   const SimOptions& options) {
  Simulator sim(profile, machine);
  return sim.Run(plan, options);
}

}  // namespace pooch
