// The timeline and memory simulator (sim.h).
//
// Note [Engines]
// ~~~~~~~~~~~~~~
// Three engines, each a FIFO: compute (ops in profile order, recomputation inserted before the op
// that needs it; the program's own copies too: Note [Program copies]), D2H (swap-outs) and H2D
// (swap-ins). With !machine.duplex the two copy directions share one engine. Work starts when its
// engine is free and its dependencies are done; it never preempts. Because every engine is FIFO,
// swap-out completions are non-decreasing in time, which lets memory freed by swap-outs be kept in
// a simple queue.
//
// Note [Swap-out]
// ~~~~~~~~~~~~~~~
// A swapped interval's swap-out is issued when the op that opens it ends (Note [Idle
// intervals], core/model/candidates.cc); the tensor's device memory is freed when the copy
// completes. Computation does not wait for swap-outs, except when an allocation needs the memory
// they will free (Note [Memory accounting]). A recomputed interval's tensor is dropped (freed) as
// soon as the opening op ends. An interval that wraps starts the iteration on the host (its
// swap-out was the previous iteration's) and is swapped out again after its opening op, the
// tensor's last use: the iteration simulated is the steady state.
//
// Note [Swap-in scheduling]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// Swap-ins are issued at op boundaries: "issued at op j" means when the compute engine becomes
// free for op j (the previous op ended), which is what Plan::SwapIn::issue_at records. Never
// before the interval's swap-out was issued (issue_at > open; from op 0 for an interval that
// wraps). The interval's *need* is its closing op, or an earlier replay that reads the tensor
// (Note [Recomputation]).
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
// A swap-in copy never starts before the same interval's swap-out completed: the runtime moves
// data through the host copy, as PoocH does; this is what makes swap-outs still in flight at the
// end of forward costly (L_O, Figure 11). If the swap-in is issued while the swap-out is still in
// flight the device copy was never freed, so the pending free is cancelled and no memory is
// allocated.
//
// Note [Recomputation]
// ~~~~~~~~~~~~~~~~~~~~
// A recomputed interval of tensor Z is rematerialised at its need q by replaying Z's producer p
// on the compute engine just before op q, costing p's duration. The replay needs p's inputs at q:
// an input in a swapped interval at q gets q as a need (so it is swapped in by then); one in a
// recomputed interval is itself recomputed at q, recursively (this is how a chain is recomputed
// from the nearest kept tensor, as checkpointing does); one the profile still holds at q is
// there; one the profile freed before q (a ReLU's input that only the ReLU read) is rebuilt by an
// earlier replay at q when that is sound (ReplayFacts::remat_until), and held that way; anything
// else makes the plan infeasible. Replays at q run in producer order, one per producer and chain
// (all intervals p rebuilds at q by the same links come from one replay). A map written by a
// chain of calls is rebuilt by replaying the chain (Note [Chains] in core/model/candidates.cc):
// one replay whose producer is the last link, taking the links' durations summed, needing every
// link's inputs but the map itself, and the largest link workspace. Two maps whose chains end at
// the same op but differ in their links (a call that writes one map whole and adds to a slice of
// another) are two replays, each costed and fed as its own chain. Z is then resident until its next
// interval that is not kept, or until the program frees it. A replay also needs p's workspace
// (freed when it ends) and memory for those outputs of p that are not resident at q (freed after
// the last replay before op q that reads them).
//
// Note [Program copies]
// ~~~~~~~~~~~~~~~~~~~~~
// An op of the program that copies between host and device memory (Op::to_host_bytes,
// to_device_bytes) takes its bytes' time at the machine's bandwidth and latency (OpUs), not the
// profile's measured duration_us: a profile measured under swapping has the copy's wait behind
// the swaps queued before it in that, which is no work of the op's. It stays in the compute
// engine's order: the program's next op waits for it either way (stream order), and nothing else
// runs on the compute engine meanwhile. (On a GPU the copy runs on its copy engine, FIFO with the
// swaps; modelling it so made the plans slower on simgpu, not faster: docs/measurements.md,
// "Program copies".)
//
// Note [Memory accounting]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// Memory is exact in time: a tensor is allocated when the op before which it is allocated starts
// (alloc_before), freed when the op after which it is freed ends (free_after); op workspaces are
// held while the op runs. Every tensor lives as in the profile except in its intervals that are
// not kept, which are holes: a swapped interval's tensor leaves when its swap-out completes and
// returns when its swap-in is issued; a recomputed one leaves when its opening op ends and
// returns with its replay. An allocation that does not fit waits for in-flight swap-outs
// to free memory; if it still does not fit, the plan is infeasible at that op (with
// SimOptions::allow_overflow it proceeds and memory overflows).
// For kWhenMemoryAllows the simulator also builds, per op, the memory the plan holds during the
// op apart from prefetches and in-flight swap-outs ("base"); a swap-in may be issued early at op
// j only if base[k] + earlier prefetches[k] + its bytes <= capacity for every k from j to its
// need. A segment tree (range add, range max) answers that in O(log n).
#include "core/sim/sim.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/base/units.h"

namespace pooch {

namespace {

constexpr OpIndex kNever = std::numeric_limits<OpIndex>::max();

// Range add over [0, n) and "last position above a threshold"; buffers reused between Build
// calls. A node holds the maximum of its subtree, including its own pending add but not its
// ancestors' (a bottom-up tree without push-down).
class MaxTree {
 public:
  void Build(const std::vector<int64_t>& values, int n) {
    size_t size = 1;
    while (size < static_cast<size_t>(std::max(n, 1))) size <<= 1;
    size_ = size;
    nodes_.assign(2 * size, {std::numeric_limits<int64_t>::min() / 4, 0});
    for (int i = 0; i < n; ++i) nodes_[size + i].max = values[i];
    for (size_t i = size - 1; i >= 1; --i) Pull(i);
  }
  // REQUIRES: 0 <= lo <= hi < n. Bottom-up: the nodes that cover [lo, hi] take the delta, then
  // the maxima above the two ends are rebuilt, once above the point where their paths meet (the
  // hottest loop of planning, in perf).
  void Add(int lo, int hi, int64_t delta) {
    size_t l = size_ + static_cast<size_t>(lo);
    size_t r = size_ + static_cast<size_t>(hi) + 1;
    size_t l0 = l >> 1, r0 = (r - 1) >> 1;
    for (; l < r; l >>= 1, r >>= 1) {
      if (l & 1) Shift(l++, delta);
      if (r & 1) Shift(--r, delta);
    }
    for (; l0 != r0; l0 >>= 1, r0 >>= 1) {
      Pull(l0);
      Pull(r0);
    }
    for (; l0 >= 1; l0 >>= 1) Pull(l0);
  }
  // The largest k in [lo, hi] whose value exceeds `threshold`, or -1.
  int LastAbove(int lo, int hi, int64_t threshold) const {
    return LastAbove(1, 0, static_cast<int>(size_) - 1, lo, hi, threshold, 0);
  }

 private:
  struct Node {
    int64_t max;  // of the subtree, with `add`
    int64_t add;  // added to the whole subtree
  };
  void Shift(size_t node, int64_t delta) {
    nodes_[node].max += delta;
    nodes_[node].add += delta;
  }
  void Pull(size_t node) {
    nodes_[node].max = std::max(nodes_[2 * node].max, nodes_[2 * node + 1].max) + nodes_[node].add;
  }
  int LastAbove(size_t node, int nlo, int nhi, int lo, int hi, int64_t threshold,
                int64_t above) const {
    if (hi < nlo || nhi < lo || nodes_[node].max + above <= threshold) return -1;
    if (nlo == nhi) return nlo;
    const int mid = (nlo + nhi) / 2;
    const int64_t inner = above + nodes_[node].add;
    const int right = LastAbove(2 * node + 1, mid + 1, nhi, lo, hi, threshold, inner);
    return right >= 0 ? right : LastAbove(2 * node, nlo, mid, lo, hi, threshold, inner);
  }
  size_t size_ = 1;
  std::vector<Node> nodes_;
};

// A swap-out whose completion frees device memory at t_us, unless a swap-in cancelled it (Note
// [Swap-in after swap-out]).
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

// A replay still to be processed (Simulator::Impl::ProcessReplayRequests); a max-heap on
// producer.
struct Request {
  OpIndex producer;
  OpIndex q;
  int32_t who;
  bool operator<(const Request& o) const { return producer < o.producer; }
};

// Identifies the replay of `producer` before op q; sorting keys orders replays by q, then producer.
uint64_t ReplayKey(OpIndex q, OpIndex producer) {
  return (static_cast<uint64_t>(q) << 32) | static_cast<uint32_t>(producer);
}

// One request for a replay: the replay (ReplayKey), the links it runs (Impl::ChainKey) and whom
// it is for (candidate index, or -(tensor+1) for a dead intermediate). Sorted, one replay's
// requests are consecutive.
struct ReplayRequestKey {
  uint64_t key;
  TensorId chain;
  int32_t who;
  friend auto operator<=>(const ReplayRequestKey&, const ReplayRequestKey&) = default;
};

}  // namespace

struct Simulator::Impl {
  Impl(const Profile& profile, const MachineModel& machine, CandidateFilter filter);
  const SimResult& Run(const Plan& plan, const SimOptions& options);

  // --- Constant after construction.
  const Profile& profile_;
  const MachineModel& machine_;
  int32_t op_count_ = 0;
  std::vector<Candidate> candidates_;
  ReplayFacts facts_;
  std::vector<std::vector<CandidateId>> of_tensor_;  // per tensor: its candidates
  std::vector<double> swap_out_us_, swap_in_us_;     // per candidate
  std::vector<int64_t> candidate_bytes_;
  std::vector<OpIndex> earliest_;  // per candidate: the first op its swap-in may be issued at
  // Per op j, the candidates it closes (close_list_[close_begin_[j], close_begin_[j+1])) and
  // opens (open_list_ likewise).
  std::vector<int32_t> close_begin_, open_begin_;
  std::vector<CandidateId> close_list_, open_list_;
  std::vector<int64_t> alloc_bytes_;  // bytes allocated before op j (all tensors)
  std::vector<int32_t> free_begin_;   // tensors freed after op j
  std::vector<TensorId> free_list_;
  int64_t initial_bytes_ = 0;                  // allocated before the iteration
  std::vector<int64_t> static_base_;           // per op: the in-core iteration's bytes during op j
  std::vector<OpIndex> prev_conv_;             // last conv op index < j, or -1
  std::vector<CandidateId> by_producer_desc_;  // recomputable candidates, producer descending
  std::vector<OpIndex> op_ids_;                // 0, 1, ...: LinksOf's one-op chains

  // --- Per run, reused.
  const SimOptions* options_ = nullptr;
  SimResult result_;
  std::vector<Decision> decisions_;  // per candidate
  // Per candidate that is not kept: the first op (or replay, Note [Recomputation]) that needs the
  // tensor back; kNever for kept ones.
  std::vector<OpIndex> first_need_;
  std::vector<Replay> replays_;           // in order of (at, producer)
  std::vector<CandidateId> replay_maps_;  // the candidates replays_ materialise
  // BuildReplays' table: per tensor, the last replay of a group that reads it, valid when
  // reader_group_ holds that group's stamp.
  std::vector<size_t> last_reader_;
  std::vector<int64_t> reader_group_;
  int64_t reader_stamp_ = 0;
  // Every replay request, duplicates included.
  std::vector<ReplayRequestKey> replay_keys_;
  std::vector<Request> replay_requests_;  // a max-heap on producer
  // The need points of the replays of processed_producer_ already processed: requests come in
  // non-increasing producer order (ProcessReplayRequests), so one producer's are consecutive.
  OpIndex processed_producer_ = -1;
  std::vector<std::pair<OpIndex, TensorId>> processed_needs_;  // (q, ChainKey)
  std::vector<CandidateId> swap_in_queue_;  // swapped candidates, in the order they are issued
  std::vector<int32_t> bucket_start_;       // SortByOp's buffers
  std::vector<CandidateId> sorted_;
  bool when_memory_allows_ = false;  // the plan's schedule is kWhenMemoryAllows
  std::vector<OpIndex> issue_at_;    // per swapped candidate; unused for kWhenMemoryAllows
  size_t swap_in_queue_head_ = 0;    // the next swap-in to issue
  OpIndex head_blocked_until_ = -1;  // the queue's head cannot be issued up to this op
  std::vector<double> swap_out_end_us_, swap_in_end_us_;  // per candidate
  std::vector<int32_t> pending_free_of_;    // per candidate: its index in pending_frees_, or -1
  std::vector<PendingFree> pending_frees_;  // in completion order (Note [Engines])
  size_t pending_head_ = 0;                 // pending_frees_[0, pending_head_) are applied
  std::vector<int64_t> base_bytes_;         // "base" per op (Note [Memory accounting])
  MaxTree held_tree_;                       // base_bytes_ plus the prefetches issued early, per op
  int64_t capacity_ = 0;
  int64_t bytes_in_use_ = 0;
  double last_alloc_us_ = 0;    // time of the latest allocation
  double compute_free_us_ = 0;  // when the compute engine is next free
  size_t next_replay_ = 0;      // into replays_

  void BuildUseLists();
  void BuildStaticMemory();
  bool Fail(OpIndex at, std::string why);
  void Sample(double t);
  void Advance(double t);
  bool Allocate(int64_t bytes, double* t, bool can_wait, OpIndex at, const char* what,
                TensorId tensor);
  void ResetResult();
  bool ReadDecisions(const Plan& plan);
  CandidateId HoleAt(TensorId tensor, OpIndex q) const;
  bool PrepareNeeds();
  bool ProcessReplay(OpIndex producer, OpIndex q, int32_t who);
  bool NeedInput(TensorId in, OpIndex q, TensorId target, OpIndex link);
  // The ops a replay of `producer` for `target` issues, in order: its chain (Note [Chains] in
  // core/model/candidates.cc), or the producer alone.
  absl::Span<const OpIndex> LinksOf(TensorId target, OpIndex producer) const {
    const absl::Span<const OpIndex> chain = facts_.Chain(target, producer);
    return chain.empty() ? absl::MakeConstSpan(op_ids_).subspan(producer, 1) : chain;
  }
  // Names the links a replay of `producer` for `target` runs: the first tensor `producer` writes
  // whose replay runs the same links. Replays that rebuild several maps by the same links are one.
  TensorId ChainKey(TensorId target, OpIndex producer) const {
    const absl::Span<const OpIndex> links = LinksOf(target, producer);
    for (TensorId t : profile_.ops[producer].writes) {
      if (t == target || LinksOf(t, producer) == links) return t;
    }
    return target;
  }
  bool ProcessReplayRequests();
  void BuildReplays();
  void BuildSwapInQueue(SwapInSchedule schedule);
  void SortByOp(const std::vector<OpIndex>& key);
  void BuildBase();
  bool ResidentAt(TensorId tensor, OpIndex q) const;
  bool StartTimeline();
  bool IssueSwapIns(OpIndex j, double ready);
  bool IssueSwapIn(CandidateId c, OpIndex j, double t, bool can_wait);
  bool RunReplays(OpIndex j);
  bool ComputeOp(OpIndex j, double* end);
  void FinishOp(OpIndex j, double end);
  std::string OpLabel(OpIndex j) const {
    if (j < 0 || j >= op_count_) return "the start of the iteration";
    return absl::StrFormat("op %d (%s)", j, profile_.ops[j].name);
  }
  void Record(SimEvent::Kind kind, OpIndex op, CandidateId c, TensorId tensor, OpIndex before,
              double start, double end) {
    if (options_->record) result_.events.push_back({kind, op, tensor, before, start, end, c});
  }

  // When each copy engine is next free (Note [Engines]); one engine when !machine_.duplex.
  double copy_engine_free_us_[2] = {0, 0};
  double* d2h_free_us_ = &copy_engine_free_us_[0];
  double* h2d_free_us_ = &copy_engine_free_us_[1];
};

Simulator::Impl::Impl(const Profile& profile, const MachineModel& machine, CandidateFilter filter)
    : profile_(profile), machine_(machine) {
  op_count_ = static_cast<int32_t>(profile_.ops.size());
  candidates_ = FindCandidates(profile_, filter.matter_only ? &machine_ : nullptr, filter.min_bytes,
                               filter.long_only, filter.short_recomputable);
  facts_ = ComputeReplayFacts(profile_);
  op_ids_.resize(op_count_);
  for (OpIndex j = 0; j < op_count_; ++j) op_ids_[j] = j;
  of_tensor_.assign(profile_.tensors.size(), {});
  for (CandidateId c = 0; c < static_cast<CandidateId>(candidates_.size()); ++c) {
    const Candidate& k = candidates_[c];
    const Tensor& t = profile_.tensors[k.tensor];
    of_tensor_[t.id].push_back(c);
    swap_out_us_.push_back(SwapOutUs(t, machine_));
    swap_in_us_.push_back(SwapInUs(t, machine_));
    candidate_bytes_.push_back(DeviceBytes(t));
    earliest_.push_back(k.wraps ? 0 : k.open + 1);
    if (k.recomputable) by_producer_desc_.push_back(c);
  }
  BuildUseLists();
  BuildStaticMemory();
  prev_conv_.assign(op_count_, -1);
  for (OpIndex j = 1; j < op_count_; ++j) {
    prev_conv_[j] = profile_.ops[j - 1].kind == OpKind::kConv ? j - 1 : prev_conv_[j - 1];
  }
  std::sort(by_producer_desc_.begin(), by_producer_desc_.end(), [&](CandidateId a, CandidateId b) {
    return candidates_[a].producer != candidates_[b].producer
               ? candidates_[a].producer > candidates_[b].producer
               : a < b;
  });
  if (!machine_.duplex) h2d_free_us_ = &copy_engine_free_us_[0];
}

// The per-op lists of candidates: those each op closes and opens.
void Simulator::Impl::BuildUseLists() {
  const int32_t n = op_count_;
  auto build = [&](auto op_of, std::vector<int32_t>& begin, std::vector<CandidateId>& list) {
    std::vector<std::vector<CandidateId>> at(n);
    for (CandidateId c = 0; c < static_cast<CandidateId>(candidates_.size()); ++c) {
      at[op_of(candidates_[c])].push_back(c);
    }
    begin.assign(n + 1, 0);
    for (OpIndex j = 0; j < n; ++j) {
      begin[j] = static_cast<int32_t>(list.size());
      list.insert(list.end(), at[j].begin(), at[j].end());
    }
    begin[n] = static_cast<int32_t>(list.size());
  };
  build([](const Candidate& k) { return k.close; }, close_begin_, close_list_);
  build([](const Candidate& k) { return k.open; }, open_begin_, open_list_);
}

// What the profile allocates and frees: alloc_bytes_, the free lists, initial_bytes_ and
// static_base_. Holes are the plan's and are handled per run.
void Simulator::Impl::BuildStaticMemory() {
  const int32_t n = op_count_;
  alloc_bytes_.assign(n, 0);
  std::vector<std::vector<TensorId>> frees(n);
  for (const Tensor& t : profile_.tensors) {
    if (t.alloc_before == kBeforeIteration) {
      initial_bytes_ += DeviceBytes(t);
    } else {
      alloc_bytes_[t.alloc_before] += DeviceBytes(t);
    }
    if (t.free_after != kAfterIteration) frees[t.free_after].push_back(t.id);
  }
  free_begin_.assign(n + 1, 0);
  for (OpIndex j = 0; j < n; ++j) {
    free_begin_[j] = static_cast<int32_t>(free_list_.size());
    free_list_.insert(free_list_.end(), frees[j].begin(), frees[j].end());
  }
  free_begin_[n] = static_cast<int32_t>(free_list_.size());
  static_base_ = InCoreBytesPerOp(profile_);
}

bool Simulator::Impl::Fail(OpIndex at, std::string why) {
  if (result_.failure.empty()) {
    result_.feasible = false;
    result_.failure = std::move(why);
    result_.failed_at = at;
  }
  return false;
}

void Simulator::Impl::Sample(double t) {
  if (bytes_in_use_ > result_.peak_bytes) result_.peak_bytes = bytes_in_use_;
  if (!options_->record) return;
  if (!result_.memory.empty() && result_.memory.back().t_us == t) {
    result_.memory.back().bytes = bytes_in_use_;
  } else {
    result_.memory.push_back({t, bytes_in_use_});
  }
}

// Applies the swap-out frees that completed by time t.
void Simulator::Impl::Advance(double t) {
  while (pending_head_ < pending_frees_.size() && pending_frees_[pending_head_].t_us <= t) {
    const PendingFree& f = pending_frees_[pending_head_++];
    if (f.cancelled) continue;
    bytes_in_use_ -= f.bytes;
    Sample(f.t_us);
  }
}

// Allocates `bytes` at *t (Note [Memory accounting]); may move *t later to wait for swap-out
// frees when can_wait. Returns false when the simulation must stop.
bool Simulator::Impl::Allocate(int64_t bytes, double* t, bool can_wait, OpIndex at,
                               const char* what, TensorId tensor) {
  // Allocations happen in program order: one that had to wait for memory delays the next.
  *t = std::max(*t, last_alloc_us_);
  Advance(*t);
  if (bytes_in_use_ + bytes > capacity_ && can_wait) {
    while (pending_head_ < pending_frees_.size() && bytes_in_use_ + bytes > capacity_) {
      *t = std::max(*t, pending_frees_[pending_head_].t_us);
      Advance(*t);
    }
  }
  if (bytes_in_use_ + bytes > capacity_) {
    if (result_.failure.empty()) {  // only the first failure is reported: format it only then
      const std::string subject =
          tensor >= 0 ? absl::StrFormat("%s of %s", what, profile_.tensors[tensor].name) : what;
      Fail(at,
           absl::StrFormat("%s at %s: %s needed with %s in use exceeds capacity %s by %s", subject,
                           OpLabel(at), FormatBytes(bytes), FormatBytes(bytes_in_use_),
                           FormatBytes(capacity_), FormatBytes(bytes_in_use_ + bytes - capacity_)));
    }
    if (!options_->allow_overflow) return false;
  }
  bytes_in_use_ += bytes;
  last_alloc_us_ = *t;
  Sample(*t);
  return true;
}

// The candidate of `tensor` whose interval a need at op q lies in: after the op that opens it,
// up to the op that closes it (which needs the tensor back at the latest), or -1.
CandidateId Simulator::Impl::HoleAt(TensorId tensor, OpIndex q) const {
  for (CandidateId c : of_tensor_[tensor]) {
    const Candidate& k = candidates_[c];
    const bool inside = k.wraps ? (q <= k.close || q > k.open) : (k.open < q && q <= k.close);
    if (inside) return c;
  }
  return -1;
}

// Resident before op q in the static view (Note [Recomputation]: transient outputs).
bool Simulator::Impl::ResidentAt(TensorId tensor, OpIndex q) const {
  const Tensor& t = profile_.tensors[tensor];
  const bool allocated = (t.alloc_before == kBeforeIteration || t.alloc_before <= q) &&
                         (t.free_after == kAfterIteration || t.free_after >= q);
  if (!allocated) return false;
  const CandidateId c = HoleAt(tensor, q);
  if (c < 0 || decisions_[c] == Decision::kKeep) return true;
  return first_need_[c] <= q && !(candidates_[c].wraps && q > candidates_[c].open);
}

// Derives needs and replays from the decisions (Note [Recomputation]).
bool Simulator::Impl::PrepareNeeds() {
  const int32_t candidate_count = static_cast<int32_t>(candidates_.size());
  bool any_recompute = false;
  for (CandidateId c = 0; c < candidate_count; ++c) {
    // Note [Tails]: a tail is needed back only by a replay that reads it.
    first_need_[c] =
        decisions_[c] == Decision::kKeep || candidates_[c].tail ? kNever : candidates_[c].close;
    any_recompute |= decisions_[c] == Decision::kRecompute;
  }
  replay_keys_.clear();
  replay_requests_.clear();
  processed_producer_ = -1;
  processed_needs_.clear();
  if (any_recompute && !ProcessReplayRequests()) return false;
  BuildReplays();
  return true;
}

// Handles one replay of `producer` before op q for `who` (candidate index, or -(tensor+1) for
// a dead intermediate). Returns false on a plan that cannot be carried out.
bool Simulator::Impl::ProcessReplay(OpIndex producer, OpIndex q, int32_t who) {
  const TensorId target = who >= 0 ? candidates_[who].tensor : -who - 1;
  const TensorId chain = ChainKey(target, producer);
  replay_keys_.push_back({ReplayKey(q, producer), chain, who});
  if (producer != processed_producer_) {
    processed_producer_ = producer;
    processed_needs_.clear();
  }
  const std::pair<OpIndex, TensorId> need(q, chain);
  if (std::find(processed_needs_.begin(), processed_needs_.end(), need) != processed_needs_.end()) {
    return true;
  }
  processed_needs_.push_back(need);
  for (OpIndex link : LinksOf(target, producer)) {
    for (TensorId in : profile_.ops[link].reads) {
      if (in == target) continue;  // the chain's previous state (Note [Chains])
      if (!NeedInput(in, q, target, link)) return false;
    }
  }
  return true;
}

// One input `in` of `link` (of a replay that rebuilds `target`) needed at op q: made a need of
// its interval, left to the profile, or requested as a replay of its own.
bool Simulator::Impl::NeedInput(TensorId in, OpIndex q, TensorId target, OpIndex link) {
  const CandidateId c = HoleAt(in, q);
  if (c >= 0) {
    if (decisions_[c] == Decision::kKeep) return true;
    if (candidates_[c].wraps && q > candidates_[c].open) {
      return Fail(
          q, absl::StrFormat("plan: cannot recompute %s before %s: input %s is "
                             "swapped out until the next iteration",
                             profile_.tensors[target].name, OpLabel(q), profile_.tensors[in].name));
    }
    first_need_[c] = std::min(first_need_[c], q);
    return true;
  }
  const Tensor& t = profile_.tensors[in];
  const bool live = (t.alloc_before == kBeforeIteration || t.alloc_before <= q) &&
                    (t.free_after == kAfterIteration || t.free_after >= q);
  if (live) return true;
  if (facts_.remat_until[in] < q) {
    return Fail(q, absl::StrFormat("plan: cannot recompute %s before %s: input %s of %s is "
                                   "freed by then and cannot be replayed",
                                   profile_.tensors[target].name, OpLabel(q), t.name,
                                   profile_.ops[link].name));
  }
  replay_requests_.push_back({facts_.LastWriter(in), q, -in - 1});
  std::push_heap(replay_requests_.begin(), replay_requests_.end());
  return true;
}

// Replay requests (producer, need point) are processed in descending producer order: a request
// only creates requests for earlier producers (an input is written before the op that reads
// it), so when a candidate's own producer comes up, every need of that candidate is known.
bool Simulator::Impl::ProcessReplayRequests() {
  size_t next = 0;  // into by_producer_desc_
  while (true) {
    while (next < by_producer_desc_.size() &&
           decisions_[by_producer_desc_[next]] != Decision::kRecompute) {
      ++next;
    }
    const bool have_cand = next < by_producer_desc_.size();
    const bool have_req = !replay_requests_.empty();
    if (!have_cand && !have_req) break;
    if (have_cand && (!have_req || candidates_[by_producer_desc_[next]].producer >=
                                       replay_requests_.front().producer)) {
      const CandidateId c = by_producer_desc_[next++];
      if (!ProcessReplay(candidates_[c].producer, first_need_[c], c)) return false;
    } else {
      std::pop_heap(replay_requests_.begin(), replay_requests_.end());
      const Request r = replay_requests_.back();
      replay_requests_.pop_back();
      if (!ProcessReplay(r.producer, r.q, r.who)) return false;
    }
  }
  return true;
}

// Groups the replay requests into replays_ (one per producer, chain and need point) and sizes their
// transient memory.
void Simulator::Impl::BuildReplays() {
  const Profile& p = profile_;
  std::sort(replay_keys_.begin(), replay_keys_.end());
  replays_.clear();
  replay_maps_.clear();
  for (size_t i = 0; i < replay_keys_.size(); ++i) {
    const auto& [key, chain, who] = replay_keys_[i];
    const OpIndex at = static_cast<OpIndex>(key >> 32);
    const OpIndex producer = static_cast<OpIndex>(key & 0xffffffffu);
    if (i == 0 || replay_keys_[i - 1].key != key || replay_keys_[i - 1].chain != chain) {
      const int32_t first = static_cast<int32_t>(replay_maps_.size());
      replays_.push_back(
          {at, producer, first, first, 0, 0, who >= 0 ? candidates_[who].tensor : -who - 1});
    }
    Replay& r = replays_.back();
    if (who >= 0 && (r.last == r.first || replay_maps_[r.last - 1] != who)) {
      if (r.last == r.first) r.label = candidates_[who].tensor;
      replay_maps_.push_back(who);
      r.last = static_cast<int32_t>(replay_maps_.size());
    }
  }
  // Each group of replays before the same op is walked backwards, so that when replay k is
  // reached, last_reader_[t] holds the last later replay of the group that reads t (stamped with
  // the group, a count across runs, so that the table is never cleared): linear in the replays'
  // reads, where a chain of hundreds of replays before one op would make a forward scan per output
  // quadratic.
  last_reader_.resize(p.tensors.size(), 0);
  reader_group_.resize(p.tensors.size(), -1);
  for (size_t end = replays_.size(); end > 0;) {
    size_t begin = end - 1;
    while (begin > 0 && replays_[begin - 1].at == replays_[end - 1].at) --begin;
    const int64_t group = ++reader_stamp_;
    for (size_t k = end; k-- > begin;) {
      Replay& r = replays_[k];
      const absl::Span<const OpIndex> links = LinksOf(r.label, r.producer);
      int64_t workspace = 0;  // the links run one after the other
      for (OpIndex link : links) workspace = std::max(workspace, p.ops[link].workspace_bytes);
      r.transient_bytes = workspace;
      r.free_after += workspace;
      for (OpIndex link : links) {
        for (TensorId out : p.ops[link].writes) {
          bool materialised = false;
          for (int32_t i = r.first; i < r.last; ++i) {
            materialised |= candidates_[replay_maps_[i]].tensor == out;
          }
          if (materialised || ResidentAt(out, r.at)) continue;
          r.transient_bytes += DeviceBytes(p.tensors[out]);
          // Held until the last replay before the same op that reads it.
          const size_t last_reader = reader_group_[out] == group ? last_reader_[out] : k;
          replays_[last_reader].free_after += DeviceBytes(p.tensors[out]);
        }
      }
      for (OpIndex link : links) {
        for (TensorId in : p.ops[link].reads) {
          if (reader_group_[in] == group) continue;  // a later replay reads it already
          reader_group_[in] = group;
          last_reader_[in] = k;
        }
      }
    }
    end = begin;
  }
}

// The swap-in queue, in the order the schedule issues them.
void Simulator::Impl::BuildSwapInQueue(SwapInSchedule schedule) {
  const int32_t candidate_count = static_cast<int32_t>(candidates_.size());
  swap_in_queue_.clear();
  issue_at_.assign(candidate_count, kNever);
  for (CandidateId c = 0; c < candidate_count; ++c) {
    if (decisions_[c] != Decision::kSwap || first_need_[c] == kNever) continue;  // a tail
    swap_in_queue_.push_back(c);
    const OpIndex need = first_need_[c];
    OpIndex at = need - 1;
    if (schedule == SwapInSchedule::kWithPreviousConv && need > 0 &&
        prev_conv_[need] >= earliest_[c]) {
      at = prev_conv_[need];
    }
    issue_at_[c] = std::max(at, earliest_[c]);
  }
  when_memory_allows_ = schedule == SwapInSchedule::kWhenMemoryAllows;
  // Ordered by (issue_at, need, candidate), or (need, candidate) for kWhenMemoryAllows: stable
  // counting sorts by op index (the queue is built in candidate order), linear in ops.
  SortByOp(first_need_);
  if (!when_memory_allows_) SortByOp(issue_at_);
}

// Stable counting sort of swap_in_queue_ by key[c], an op index in [0, op_count_).
void Simulator::Impl::SortByOp(const std::vector<OpIndex>& key) {
  bucket_start_.assign(op_count_ + 1, 0);
  for (CandidateId c : swap_in_queue_) ++bucket_start_[key[c] + 1];
  for (OpIndex j = 0; j < op_count_; ++j) bucket_start_[j + 1] += bucket_start_[j];
  sorted_.resize(swap_in_queue_.size());
  for (CandidateId c : swap_in_queue_) sorted_[bucket_start_[key[c]]++] = c;
  swap_in_queue_.swap(sorted_);
}

// base_bytes_[k]: what the plan holds during op k apart from prefetches and in-flight swap-outs:
// the in-core iteration less the holes, plus the replays' transient memory.
void Simulator::Impl::BuildBase() {
  const int32_t n = op_count_;
  base_bytes_.assign(n + 1, 0);
  auto add = [&](OpIndex lo, OpIndex hi, int64_t bytes) {
    if (lo > hi) return;
    base_bytes_[lo] += bytes;
    base_bytes_[hi + 1] -= bytes;
  };
  for (CandidateId c = 0; c < static_cast<CandidateId>(candidates_.size()); ++c) {
    if (decisions_[c] == Decision::kKeep) continue;
    const Candidate& k = candidates_[c];
    // A tail not needed back is off the device until the program frees it (Note [Tails]).
    add(earliest_[c], first_need_[c] == kNever ? k.close : first_need_[c] - 1,
        -candidate_bytes_[c]);
    if (k.wraps) add(k.open + 1, n - 1, -candidate_bytes_[c]);
  }
  for (const Replay& r : replays_) add(r.at, r.at, r.transient_bytes);
  int64_t run = 0;
  for (OpIndex j = 0; j < n; ++j) {
    run += base_bytes_[j];
    base_bytes_[j] = run + static_base_[j];
  }
  held_tree_.Build(base_bytes_, n);
}

bool Simulator::Impl::IssueSwapIn(CandidateId c, OpIndex j, double t, bool can_wait) {
  const int64_t bytes = candidate_bytes_[c];
  const TensorId tensor = candidates_[c].tensor;
  Advance(t);
  const int32_t pi = pending_free_of_[c];
  if (pi >= 0 && static_cast<size_t>(pi) >= pending_head_) {
    pending_frees_[pi].cancelled = true;  // Note [Swap-in after swap-out]: never left the device
  } else if (!Allocate(bytes, &t, can_wait, j, "swap-in", tensor)) {
    return false;
  }
  const double start = std::max({t, *h2d_free_us_, swap_out_end_us_[c]});
  const double end = start + swap_in_us_[c];
  *h2d_free_us_ = end;
  swap_in_end_us_[c] = end;
  result_.swapped_in_bytes += bytes;
  result_.swap_ins.push_back({c, j});
  Record(SimEvent::Kind::kSwapIn, j, c, tensor, -1, start, end);
  return true;
}

const SimResult& Simulator::Impl::Run(const Plan& plan, const SimOptions& options) {
  options_ = &options;
  ResetResult();
  capacity_ = machine_.memory_bytes;

  if (!ReadDecisions(plan)) return result_;
  const int32_t candidate_count = static_cast<int32_t>(candidates_.size());
  first_need_.resize(candidate_count);
  if (!PrepareNeeds()) return result_;

  BuildSwapInQueue(plan.schedule);
  if (when_memory_allows_ && !swap_in_queue_.empty()) BuildBase();

  if (!StartTimeline()) return result_;
  for (OpIndex j = 0; j < op_count_; ++j) {
    const double ready = compute_free_us_;
    if (!IssueSwapIns(j, ready)) return result_;
    if (!RunReplays(j)) return result_;
    double end;
    if (!ComputeOp(j, &end)) return result_;
    FinishOp(j, end);
  }
  Advance(std::numeric_limits<double>::infinity());
  result_.iteration_us =
      std::max({compute_free_us_, copy_engine_free_us_[0], copy_engine_free_us_[1]});
  return result_;
}

void Simulator::Impl::ResetResult() {
  result_.feasible = true;
  result_.failure.clear();
  result_.failed_at = -1;
  result_.iteration_us = result_.compute_us = result_.recompute_us = result_.forward_end_us = 0;
  result_.peak_bytes = 0;
  result_.swapped_out_bytes = result_.swapped_in_bytes = 0;
  result_.recomputed_ops = 0;
  result_.swap_ins.clear();
  result_.events.clear();
  result_.memory.clear();
}

// Fills decisions_ from the plan's per-candidate decisions; false (after Fail) when the plan is
// malformed for this profile.
bool Simulator::Impl::ReadDecisions(const Plan& plan) {
  decisions_.assign(candidates_.size(), Decision::kKeep);
  if (!plan.decisions.empty() && plan.decisions.size() != candidates_.size()) {
    return Fail(0, absl::StrFormat("plan: %d decisions for %d candidates", plan.decisions.size(),
                                   candidates_.size()));
  }
  for (size_t c = 0; c < plan.decisions.size(); ++c) {
    const Decision d = plan.decisions[c];
    if (d == Decision::kRecompute && !candidates_[c].recomputable) {
      const Candidate& k = candidates_[c];
      return Fail(0, absl::StrFormat("plan: %s between ops %d and %d cannot be recomputed (no "
                                     "sound replay of a producer)",
                                     profile_.tensors[k.tensor].name, k.open, k.close));
    }
    decisions_[c] = d;
  }
  return true;
}

// Resets the engines and memory, then allocates what exists before the iteration (less the
// intervals that wrap and are not kept: those start on the host).
bool Simulator::Impl::StartTimeline() {
  const int32_t candidate_count = static_cast<int32_t>(candidates_.size());
  swap_out_end_us_.assign(candidate_count, 0);
  swap_in_end_us_.assign(candidate_count, 0);
  pending_free_of_.assign(candidate_count, -1);
  pending_frees_.clear();
  pending_head_ = 0;
  copy_engine_free_us_[0] = copy_engine_free_us_[1] = 0;
  bytes_in_use_ = 0;
  last_alloc_us_ = 0;
  compute_free_us_ = 0;
  swap_in_queue_head_ = 0;
  head_blocked_until_ = -1;
  next_replay_ = 0;
  int64_t initial = initial_bytes_;
  for (CandidateId c = 0; c < candidate_count; ++c) {
    if (candidates_[c].wraps && decisions_[c] != Decision::kKeep) initial -= candidate_bytes_[c];
  }
  double t0 = 0;
  return Allocate(initial, &t0, false, 0, "tensors that exist before the iteration", -1);
}

// Swap-ins issued at op j (Note [Swap-in scheduling]), when the compute engine is ready for it.
bool Simulator::Impl::IssueSwapIns(OpIndex j, double ready) {
  while (swap_in_queue_head_ < swap_in_queue_.size()) {
    const CandidateId c = swap_in_queue_[swap_in_queue_head_];
    if (!when_memory_allows_) {
      if (issue_at_[c] > j) break;
      if (!IssueSwapIn(c, j, ready, false)) return false;
    } else {
      if (earliest_[c] > j) break;
      const bool forced = first_need_[c] <= j;
      if (!forced) {
        // Memory held by the plan only grows at a given op as prefetches are added, so if op k
        // has no room, the head cannot be issued before op k + 1: skip until then.
        if (j <= head_blocked_until_) break;
        Advance(ready);
        if (bytes_in_use_ + candidate_bytes_[c] > capacity_) break;
        const int k = held_tree_.LastAbove(j, first_need_[c] - 1, capacity_ - candidate_bytes_[c]);
        if (k >= 0) {
          head_blocked_until_ = k;
          break;
        }
        held_tree_.Add(j, first_need_[c] - 1, candidate_bytes_[c]);
      }
      head_blocked_until_ = -1;
      if (!IssueSwapIn(c, j, ready, forced)) return false;
    }
    ++swap_in_queue_head_;
  }
  return true;
}

// Replays before op j (Note [Recomputation]).
bool Simulator::Impl::RunReplays(OpIndex j) {
  while (next_replay_ < replays_.size() && replays_[next_replay_].at == j) {
    const Replay& r = replays_[next_replay_++];
    double start = compute_free_us_;
    double duration_us = 0;
    for (OpIndex link : LinksOf(r.label, r.producer)) {
      duration_us += profile_.ops[link].duration_us;
      for (TensorId in : profile_.ops[link].reads) {
        const CandidateId w = HoleAt(in, j);
        if (w >= 0 && decisions_[w] == Decision::kSwap) {
          start = std::max(start, swap_in_end_us_[w]);
        }
      }
    }
    int64_t bytes = r.transient_bytes;
    for (int32_t k = r.first; k < r.last; ++k) bytes += candidate_bytes_[replay_maps_[k]];
    if (!Allocate(bytes, &start, true, j, "recomputation", r.label)) {
      return false;
    }
    const double end = start + duration_us;
    compute_free_us_ = end;
    Advance(end);
    bytes_in_use_ -= r.free_after;
    Sample(end);
    result_.compute_us += duration_us;
    result_.recompute_us += duration_us;
    ++result_.recomputed_ops;
    if (r.first == r.last) {
      Record(SimEvent::Kind::kRecompute, r.producer, -1, r.label, j, start, end);
    }
    for (int32_t k = r.first; k < r.last; ++k) {
      const CandidateId c = replay_maps_[k];
      Record(SimEvent::Kind::kRecompute, r.producer, c, candidates_[c].tensor, j, start, end);
    }
  }
  return true;
}

// The op itself: it starts when the swap-ins of the intervals it closes have arrived and its
// memory is allocated.
bool Simulator::Impl::ComputeOp(OpIndex j, double* end) {
  const Op& op = profile_.ops[j];
  double start = compute_free_us_;
  for (int32_t u = close_begin_[j]; u < close_begin_[j + 1]; ++u) {
    const CandidateId c = close_list_[u];
    if (decisions_[c] == Decision::kSwap) start = std::max(start, swap_in_end_us_[c]);
  }
  if (!Allocate(alloc_bytes_[j] + op.workspace_bytes, &start, true, j, "allocation", -1)) {
    return false;
  }
  const double duration = OpUs(op, machine_);  // Note [Program copies]
  *end = start + duration;
  compute_free_us_ = *end;
  result_.compute_us += duration;
  if (op.phase == Phase::kForward) result_.forward_end_us = *end;
  Record(SimEvent::Kind::kCompute, j, -1, -1, -1, start, *end);
  return true;
}

// After op j, which ended at `end`: frees, drops and swap-outs.
void Simulator::Impl::FinishOp(OpIndex j, double end) {
  Advance(end);
  bytes_in_use_ -= profile_.ops[j].workspace_bytes;
  for (int32_t f = free_begin_[j]; f < free_begin_[j + 1]; ++f) {
    // Note [Tails]: a tail swapped out and not needed back left (or leaves, when its swap-out
    // completes) through its pending free.
    const CandidateId tail = HoleAt(free_list_[f], j);
    if (tail >= 0 && candidates_[tail].tail && decisions_[tail] == Decision::kSwap &&
        first_need_[tail] == kNever) {
      continue;
    }
    bytes_in_use_ -= DeviceBytes(profile_.tensors[free_list_[f]]);
  }
  for (int32_t k = open_begin_[j]; k < open_begin_[j + 1]; ++k) {
    const CandidateId c = open_list_[k];
    if (decisions_[c] == Decision::kRecompute) {
      bytes_in_use_ -= candidate_bytes_[c];
    } else if (decisions_[c] == Decision::kSwap) {
      const double swap_start = std::max(end, *d2h_free_us_);
      const double swap_end = swap_start + swap_out_us_[c];
      *d2h_free_us_ = swap_end;
      swap_out_end_us_[c] = swap_end;
      pending_free_of_[c] = static_cast<int32_t>(pending_frees_.size());
      pending_frees_.push_back({swap_end, candidate_bytes_[c], false});
      result_.swapped_out_bytes += candidate_bytes_[c];
      Record(SimEvent::Kind::kSwapOut, j, c, candidates_[c].tensor, -1, swap_start, swap_end);
    }
  }
  Sample(end);
}

Simulator::Simulator(const Profile& profile, const MachineModel& machine, CandidateFilter filter)
    : impl_(std::make_unique<Impl>(profile, machine, filter)) {}
Simulator::~Simulator() = default;

const SimResult& Simulator::Run(const Plan& plan, const SimOptions& options) {
  return impl_->Run(plan, options);
}

const std::vector<Candidate>& Simulator::candidates() const { return impl_->candidates_; }

SimResult Simulate(const Profile& profile, const MachineModel& machine, const Plan& plan,
                   const SimOptions& options, CandidateFilter filter) {
  Simulator sim(profile, machine, filter);
  return sim.Run(plan, options);
}

}  // namespace pooch
