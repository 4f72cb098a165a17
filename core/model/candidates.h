// candidates.h: what the simulator and every planner derive from a profile before any plan
// exists: the swap/recompute candidates, which are idle intervals of tensors (Note [Idle
// intervals] in candidates.cc), each tensor's copy durations, and decision counting.
//
// Thread safety: plain functions, reentrant.
#ifndef POOCH_CORE_MODEL_CANDIDATES_H_
#define POOCH_CORE_MODEL_CANDIDATES_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "core/model/model.h"

namespace pooch {

// One idle interval of one tensor: between a use (`open`) and the next use (`close`), no op
// touches it, so it may leave the device after `open` and must be back before `close`
// (Note [Idle intervals]).
struct Candidate {
  TensorId tensor = 0;
  OpIndex open = 0;  // the use after which it may leave (swap-out issued, or dropped)
  // The next use, which needs it back (in the next iteration when wraps); for a tail, the op
  // after which the program frees it.
  OpIndex close = 0;
  // The interval runs from the tensor's last use in the iteration to its first use in the next
  // one (a persistent tensor: weights, optimizer state). Then close < open.
  bool wraps = false;
  // Note [Tails]: the interval runs from the tensor's last use to the program's free of it, after
  // op `close` (Tensor::free_after); nothing needs it back (a replay that reads it, if any).
  bool tail = false;
  // The op whose replay rebuilds the tensor's value in this interval (its only writer), or the
  // last link of the chain of writes that does (Note [Chains]; ReplayFacts::Chain), or -1.
  OpIndex producer = -1;
  // Replaying `producer` (its chain) right before `close` is sound (Note [Sound replays]).
  // Whether every input is resident then depends on the plan and is checked by the simulator.
  bool recomputable = false;
  // Offered for recomputation only: too short to hide its own copies, but recomputing it costs
  // less than moving its bytes out and back (Note [Intervals that matter]). Plans keep or
  // recompute it, never swap it.
  bool recompute_only = false;

  friend bool operator==(const Candidate&, const Candidate&) = default;
};

// When replaying an op, or a chain of ops, rebuilds a tensor (Notes [Sound replays] and [Chains]
// in candidates.cc).
struct ReplayFacts {
  std::vector<std::vector<OpIndex>> writers;  // per tensor: the ops that write it, ascending
  // Per op w: the first op after w that writes one of w's inputs (kNever-like INT32_MAX if none);
  // a replay of w before op q reads unchanged inputs iff q <= stable_until[w].
  std::vector<OpIndex> stable_until;
  // Per tensor t, parallel to writers[t]: the position in writers[t] of the first link of the
  // chain that ends at that write (Note [Chains]), or -1 when no chain of replayable links does.
  std::vector<std::vector<int32_t>> chain_begin;
  // Per tensor t, parallel to writers[t]: the last op before which replaying the chain that ends
  // at that write rebuilds t, every link's other inputs unchanged and still to be had; -1: none.
  std::vector<std::vector<OpIndex>> chain_until;
  // Per tensor: chain_until of its last writer (the value it holds once written for the last
  // time, the one a freed input of a replay is rebuilt to); -1 when no replay can.
  std::vector<OpIndex> remat_until;

  // The tensor's only writer in the iteration, or -1.
  OpIndex SoleWriter(TensorId t) const;
  // The tensor's last writer in the iteration, or -1.
  OpIndex LastWriter(TensorId t) const;
  // The last op at or before `at` that writes t, or -1.
  OpIndex WriterAtOrBefore(TensorId t, OpIndex at) const;
  // The links of the chain that rebuilds what t holds after op w wrote it, first to last (w is
  // last); empty when w does not write t or no chain does.
  absl::Span<const OpIndex> Chain(TensorId t, OpIndex w) const;
  // The last op at which `t` can be had: while allocated, or by rebuilding it.
  OpIndex AvailableUntil(const Profile& profile, TensorId t) const;
  // Replaying the chain that ends at op w right before op q rebuilds t.
  bool SoundAt(OpIndex w, TensorId t, OpIndex q) const;
  // The compute time one rebuild of t by the chain that ends at w takes: the sum of its links'
  // OpUs (with a machine, else duration_us).
  double ReplayUs(const Profile& profile, const MachineModel* machine, TensorId t, OpIndex w) const;
};
ReplayFacts ComputeReplayFacts(const Profile& profile);

// The tensors' idle intervals, ordered by `open`, then tensor, then close (so "from the output
// layer" is reverse order). With a machine, only the intervals that matter on it are kept
// (Note [Intervals that matter]): those during which the in-core iteration holds more than its
// memory at some op, and (with long_only) that are long enough to hide their own copy out and
// back, or (with short_recomputable) are recomputable at a cost below that copy
// (Candidate::recompute_only); without one, every interval. Tensors smaller than min_bytes are
// never candidates (the runtime does not move them: POOCH_MIN_SWAP_BYTES).
std::vector<Candidate> FindCandidates(const Profile& profile, const MachineModel* machine = nullptr,
                                      int64_t min_bytes = 0, bool long_only = true,
                                      bool short_recomputable = false);

// The planner's default min_bytes: POOCH_MIN_SWAP_BYTES's default (allocations below it are
// sub-allocated and never swapped at run time, so a plan for them could not be carried out).
inline constexpr int64_t kDefaultMinCandidateBytes = int64_t{1} << 20;

// Device memory the in-core iteration holds during each op: the tensors allocated then, plus the
// op's workspace.
std::vector<int64_t> InCoreBytesPerOp(const Profile& profile);

// Labels Op::phase for traces and summaries from the access pattern alone: the ops up to the
// in-core memory peak (the first op where InCoreBytesPerOp is largest) are forward, the rest
// backward. No planning decision reads it (Note [Idle intervals] in candidates.cc).
void LabelPhasesByPeak(Profile& profile);

// Copy durations the simulator uses for a tensor: the profile's measured value when >= 0, else
// bytes / bandwidth + latency.
double SwapOutUs(const Tensor& tensor, const MachineModel& machine);
double SwapInUs(const Tensor& tensor, const MachineModel& machine);
// bytes / bandwidth + latency of a copy of `bytes` to the host, or to the device.
double ToHostUs(int64_t bytes, const MachineModel& machine);
double ToDeviceUs(int64_t bytes, const MachineModel& machine);
// The time the simulator gives an op (Note [Program copies] in core/sim/sim.cc): a copy between
// host and device takes its bytes' time at the machine's bandwidth, any other op its duration_us.
double OpUs(const Op& op, const MachineModel& machine);
// The sum of OpUs over the profile's ops: the iteration with every op back to back, which no plan
// beats (Note [Swap-opt search] in core/plan/plan_swap.cc).
double BackToBackUs(const Profile& profile, const MachineModel& machine);

// How a plan decides over the candidates: the keep/swap/recompute split that `pooch plan`, the
// plan's JSON and the run-time summary show. A candidate beyond the plan's decisions is kept.
struct DecisionCounts {
  int keep = 0;
  int swap = 0;
  int recompute = 0;
};
// The decision for candidate `c` in `plan` (kKeep when the plan has none for it).
Decision DecisionOf(const Plan& plan, CandidateId c);
DecisionCounts CountDecisions(const Plan& plan, const std::vector<Candidate>& candidates);

// A plan whose decisions are all kKeep (in-core), for `candidates` candidates.
Plan KeepAllPlan(size_t candidates);

}  // namespace pooch

#endif  // POOCH_CORE_MODEL_CANDIDATES_H_
