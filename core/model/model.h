// The planner's view of one training iteration, of the machine it runs on, and of a plan.
//
// A Profile is what pooch measures during its profiling iterations (the interposer fills it in)
// or what the zoo derives analytically from a network's layer shapes. It is an ordered list of
// ops, each reading and writing tensors, plus each tensor's lifetime. The planner (plan.h)
// decides for every idle interval of every tensor whether to keep, swap or recompute it; the
// simulator (sim.h) predicts the iteration time and peak memory of a plan on a MachineModel.
//
// Its JSON form ("pooch-profile", version 1) is documented in docs/usage.md and read and written by
// model_json.h; `pooch plan --profile` reads it and POOCH_PROFILE_OUT writes it.
//
// Thread safety: plain values; no internal synchronisation.
#ifndef POOCH_CORE_MODEL_MODEL_H_
#define POOCH_CORE_MODEL_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace pooch {

using OpIndex = int32_t;   // position of an op in Profile::ops
using TensorId = int32_t;  // position of a tensor in Profile::tensors
// Position of a swap/recompute candidate (an idle interval of a tensor) in the list
// FindCandidates returns (core/model/candidates.h); Plan::decisions is indexed by it.
using CandidateId = int32_t;

inline constexpr OpIndex kBeforeIteration = -1;  // Tensor::alloc_before: exists at the start
inline constexpr OpIndex kAfterIteration = -1;   // Tensor::free_after: outlives the iteration

// For traces and summaries only: no planning decision depends on it (Note [Idle intervals] in
// candidates.cc). The zoo knows it; a measured profile gets it from LabelPhasesByPeak.
enum class Phase { kForward, kBackward, kOther };

// What an op computes, as far as the planner cares. SuperNeurons' rule keys on it (convolution
// outputs are swapped, the others recomputed); the zoo sets it from the layer; the interposer
// derives it from the API that was called.
enum class OpKind {
  kConv,
  kBatchNorm,
  kActivation,
  kPool,
  kFullyConnected,
  kAdd,
  kSoftmax,
  kLoss,
  kCopy,
  kOptimizer,
  kOther,
};

struct Tensor {
  TensorId id = 0;  // equals its position in Profile::tensors
  std::string name;
  int64_t bytes = 0;  // what the program asked for; what a swap copies
  // The device memory it takes: its size rounded up to the runtime's mapping granularity
  // (Note [Mapped bytes] in core/profile/profile_builder.cc); 0: the same as `bytes`.
  int64_t device_bytes = 0;
  // Allocated just before ops[alloc_before] runs (kBeforeIteration: allocated before the
  // iteration starts, as parameters are); freed just after ops[free_after] (kAfterIteration:
  // still allocated when the iteration ends).
  OpIndex alloc_before = kBeforeIteration;
  OpIndex free_after = kAfterIteration;
  // Copy times measured during profiling, in microseconds; negative when not measured, in which
  // case the simulator derives them from the MachineModel's bandwidth and latency.
  double swap_out_us = -1;
  double swap_in_us = -1;

  friend bool operator==(const Tensor&, const Tensor&) = default;
};

// The device memory `t` takes (Tensor::device_bytes, else its size).
inline int64_t DeviceBytes(const Tensor& t) {
  return t.device_bytes > 0 ? t.device_bytes : t.bytes;
}

struct Op {
  std::string name;
  OpKind kind = OpKind::kOther;
  Phase phase = Phase::kOther;
  double duration_us = 0;  // measured, or from the roofline model for zoo profiles
  std::vector<TensorId> reads;
  std::vector<TensorId> writes;
  // The written tensors the op overwrites whole without reading them: a chain of writes that
  // rebuilds a tensor starts at such a write (Note [Chains] in candidates.cc). Empty when not
  // known: a tensor with one writer is rebuilt by that writer as before.
  std::vector<TensorId> overwrites;
  int64_t workspace_bytes = 0;  // temporary memory held only while the op runs
  // False when the op's outputs cannot be recomputed by replaying it: its write set is not fully
  // known, or it has a side effect that replay cannot suppress (DESIGN.md, decision 5).
  bool replayable = true;
  // A replay of this op before op q reads what it read from memory outside the profile
  // (allocations below POOCH_MIN_SWAP_BYTES) unchanged iff q <= unprofiled_inputs_until; -1: for
  // every q (Note [Unprofiled inputs] in core/profile/op_stream_recorder.cc).
  OpIndex unprofiled_inputs_until = -1;
  // The bytes the op copies from device to host memory (a read-back) or from host to device
  // memory (an input's upload); at most one is not 0. Such an op runs on that direction's copy
  // engine, behind the swaps queued before it, for the time the machine's bandwidth gives it
  // (Note [Program copies] in core/sim/sim.cc).
  int64_t to_host_bytes = 0;
  int64_t to_device_bytes = 0;

  friend bool operator==(const Op&, const Op&) = default;
};

struct Profile {
  std::string name;
  std::vector<Tensor> tensors;
  std::vector<Op> ops;

  // Checks internal consistency: ids equal positions, sizes are non-negative, lifetimes and
  // read/write sets refer to existing ops and tensors, no op reads a tensor before it is
  // allocated or after it is freed, and no non-persistent tensor is read before an op writes
  // it. Returns InvalidArgument naming the first offending op or tensor.
  absl::Status Validate() const;

  friend bool operator==(const Profile&, const Profile&) = default;
};

// The machine a plan is made for and simulated on. Bandwidths are in GB/s (1e9 bytes/s),
// latencies in microseconds, compute in TFLOP/s (1e12 flop/s).
struct MachineModel {
  std::string name;
  int64_t memory_bytes = 0;  // device memory the plan may use
  double h2d_gbps = 0;       // host to device (swap-in)
  double d2h_gbps = 0;       // device to host (swap-out)
  double h2d_latency_us = 0;
  double d2h_latency_us = 0;
  bool duplex = true;  // both copy directions run at once (two copy engines)
  // For the zoo's roofline durations only; a measured profile carries its own durations.
  double compute_tflops = 0;
  double memory_gbps = 0;
  double launch_us = 0;
};

enum class Decision { kKeep, kSwap, kRecompute };

// When a swapped interval's swap-in is issued.
enum class SwapInSchedule {
  kWithPreviousOp,    // together with the computation just before the use that needs it
  kWithPreviousConv,  // together with the preceding convolution (SuperNeurons)
  kWhenMemoryAllows,  // as early as free memory allows (PoocH §4.3)
};

struct Plan {
  std::string policy;
  // Indexed by CandidateId: one decision per idle interval (Note [Idle intervals] in
  // core/model/candidates.cc). Empty means every interval kept.
  std::vector<Decision> decisions;
  SwapInSchedule schedule = SwapInSchedule::kWhenMemoryAllows;
  // The swap-in schedule the simulator derived: the swap-in that ends `candidate`'s interval is
  // issued when op `issue_at` starts. Filled by the simulator; the runtime follows it.
  struct SwapIn {
    CandidateId candidate = 0;
    OpIndex issue_at = 0;
  };
  std::vector<SwapIn> swap_ins;
};

const char* PhaseName(Phase phase);
const char* OpKindName(OpKind kind);
const char* DecisionName(Decision decision);

}  // namespace pooch

#endif  // POOCH_CORE_MODEL_MODEL_H_
