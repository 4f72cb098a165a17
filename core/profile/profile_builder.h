// BuildProfile: turns one measured training iteration, as the interposer records it (the API
// calls with the managed allocations they touch, and the allocations and frees between them),
// into the planner's Profile (model.h), plus the map from each TensorId back to the allocation the
// runtime knows it by.
//
//   pooch::RecordedIteration it;              // filled by the interposer during one iteration
//   absl::StatusOr<pooch::BuiltProfile> b = pooch::BuildProfile(it);
//   if (!b.ok()) { /* InvalidArgument: the recording is inconsistent, one line naming why */ }
//   pooch::MakePlan(b->profile, machine, policy) ...
//
// How a recording maps onto the Profile is Note [Recorded lifetimes] and Note [Static replay
// check] in profile_builder.cc.
//
// Thread safety: pure functions of their arguments; reentrant.
#ifndef POOCH_CORE_PROFILE_PROFILE_BUILDER_H_
#define POOCH_CORE_PROFILE_PROFILE_BUILDER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/model/model.h"

namespace pooch {

// One allocation an op touches. Only allocations the runtime manages (at least
// POOCH_MIN_SWAP_BYTES) appear; smaller ones are counted in resident_other_bytes.
struct RecordedAccess {
  enum Mode { kRead, kWrite, kReadWrite };
  uint64_t allocation = 0;
  Mode mode = kRead;
  // A kWrite of the whole allocation (from its base, at least its size): the op overwrites it
  // whole (Op::overwrites, Note [Chains] in core/model/candidates.cc).
  bool whole = false;
};

// The bytes an op copies from device to host memory or from host to device memory, as the hook
// that made the copy knows them (Op::to_host_bytes, to_device_bytes).
struct HostCopyBytes {
  int64_t to_host = 0;
  int64_t to_device = 0;
};

struct RecordedOp {
  std::string name;  // API name: "cudnnConvolutionForward", "cublasSgemm_v2", "cudaMemcpyAsync"
  double duration_us = 0;  // measured with events
  std::vector<RecordedAccess> accesses;
  // The interposer can replay this call: its write set is known and it has no side effect that
  // replay cannot suppress (DESIGN.md decision 5).
  bool replay_capable = false;
  int64_t workspace_bytes = 0;
  // Note [Unprofiled inputs]: the last op (an index into RecordedIteration::ops) before which a
  // replay of this op still reads what it read outside the profile; -1: to the end.
  int unprofiled_inputs_until = -1;
  HostCopyBytes copy;
};

struct RecordedIteration {
  // One entry of the program-order stream. (Named Event rather than RecordedEvent because
  // residency_events.h already has a pooch::RecordedEvent.)
  struct Event {
    enum Kind { kOp, kAlloc, kFree };
    Kind kind = kOp;
    int op_index = 0;         // kOp: index into ops; every op appears once, in index order
    uint64_t allocation = 0;  // kAlloc, kFree
    int64_t bytes = 0;        // kAlloc: the bytes the program asked for
  };
  // Allocations alive when the iteration started that it touches or frees (an allocation freed
  // in the iteration must be listed here or allocated in it, so that its size is known).
  struct Persistent {
    uint64_t allocation = 0;
    int64_t bytes = 0;
  };
  std::vector<RecordedOp> ops;
  std::vector<Event> events;  // ops, allocations and frees in program order
  std::vector<Persistent> persistent;
  // Memory not modelled per tensor (small allocations, the reuse cache): a constant.
  int64_t resident_other_bytes = 0;
  // Kernel accesses left out because another recorded iteration did not make them (Note [Stable
  // kernel accesses] in core/profile/stable_accesses.cc); not used by BuildProfile.
  int64_t unstable_accesses = 0;
};

struct BuiltProfile {
  Profile profile;
  // Indexed by TensorId: the allocation the tensor is (kOtherAllocation for "other").
  std::vector<uint64_t> tensor_allocation;
  // Indexed by TensorId: for tensors allocated inside the iteration, their ordinal among the
  // iteration's kAlloc events (0, 1, ...), by which the runtime identifies the allocation in
  // later iterations; -1 for persistent tensors and "other".
  std::vector<int> tensor_alloc_ordinal;
};

// The allocation id BuiltProfile gives the "other" tensor (resident_other_bytes): 0 is never one
// of the runtime's allocations (the residency manager numbers them from 1).
inline constexpr uint64_t kOtherAllocation = 0;

struct ProfileBuildOptions {
  std::string name = "measured";  // Profile::name
  // The residency manager's mapping granularity (Note [Mapped bytes] in profile_builder.cc);
  // 1: no rounding.
  int64_t granularity = 1;
};

// OpKind from the API name (cudnnConvolution* -> kConv, cuBLAS gemm -> kFullyConnected, ...).
OpKind OpKindFromApiName(const std::string& name);

// InvalidArgument (one line) when the recording is inconsistent: no ops, ops out of order in
// `events`, an access to or free of an unknown allocation, a double allocation, a negative size,
// or a result that fails Profile::Validate().
absl::StatusOr<BuiltProfile> BuildProfile(const RecordedIteration& iteration,
                                          const ProfileBuildOptions& options = {});

}  // namespace pooch

#endif  // POOCH_CORE_PROFILE_PROFILE_BUILDER_H_
