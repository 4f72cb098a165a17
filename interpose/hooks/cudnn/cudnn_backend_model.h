// cudnn_backend_model.h: what pooch learns of the cuDNN backend API's descriptors as the program
// builds them, and what one cudnnBackendExecute reads and writes (Note [Backend graphs]).
//
// Note [Backend graphs]
// ~~~~~~~~~~~~~~~~~~~~~
// A backend call names its memory only through a chain of descriptors the program built before:
//   execution plan -> engine config -> (engine ->) operation graph -> operations -> tensors (UIDs)
// and, at cudnnBackendExecute, a variant pack: UID -> data pointer, plus a workspace of the plan's
// size. The hooks (cudnn_backend_hooks.cc) record every cudnnBackendSetAttribute of a descriptor
// created through them. The program may destroy the tensors, operations and graph as soon as the
// next link is built (PyTorch's cuDNN frontend does: the addresses are then reused for new
// descriptors), so each link takes its model when it is made: an operation graph is resolved when
// it is finalized; a heuristics or engine takes its graph's model when its OPERATION_GRAPH is set,
// an engine config its engine's, a plan its config's, and the descriptors cuDNN fills
// (cudnnBackendGetAttribute: ENGINEHEUR_RESULTS, ENGINECFG_ENGINE) take the model of the one they
// came from; a finalized plan adds its workspace size. The resolved model holds each non-virtual
// tensor's UID, its extent (dims x strides x data type) and whether the graph reads it, writes it
// or both. Roles by operation:
//   conv forward   X, W read;  Y written (read too when BETA != 0 or unknown)
//   conv bwd data  W, DY read; DX written (same rule)
//   conv bwd filt  X, DY read; DW written (same rule)
//   pointwise      X, B, T, DY read; Y, DX written
//   reduction      X read; Y written and read (a reduction may accumulate)
//   matmul         A, B read; C written
// Any other operation, a plan whose chain pooch did not see, a tensor of unknown data type or a
// vectorised one, a variant pack with a UID the graph does not have, with intermediates or shape
// overrides: the call is opaque, and the hook must not guess (cudnn_backend_hooks.cc says what it
// does then). By-value tensors are host scalars, not memory.
//
// A plan is replayable (Note [Replay] in core/recompute/recomputer.h) when every operation's output
// is a function of its inputs (BETA = 0 where there is one; no reduction) and the graph writes
// exactly one non-virtual tensor, which it does not read, and has no by-value tensor (its pointer
// is host memory the program may reuse): re-executing the same plan with the same
// pointers then writes that tensor again and nothing else.
//
// The model is plain bookkeeping over descriptor handles (no cuDNN call), so that the unit test
// can drive it with fake handles.
//
// Thread safety: all methods may be called from any thread.
#ifndef POOCH_INTERPOSE_HOOKS_CUDNN_CUDNN_BACKEND_MODEL_H_
#define POOCH_INTERPOSE_HOOKS_CUDNN_CUDNN_BACKEND_MODEL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/base/mutex.h"
#include "interpose/symbols/cuda_api.h"

namespace pooch::interpose {

enum class UidRole : uint8_t { kRead, kWrite, kReadWrite };

struct BackendTensor {
  int64_t uid = 0;
  int64_t bytes = 0;  // from the first to one past the last element
  UidRole role = UidRole::kRead;
};

// A finalized plan, resolved (Note [Backend graphs]).
struct PlanModel {
  std::vector<BackendTensor> tensors;  // non-virtual, not by value
  std::vector<int64_t> by_value;       // host scalars' UIDs: in the pack, not memory
  int64_t workspace_bytes = 0;
  bool replayable = false;
  std::string ops;  // "conv_fwd" / "conv_fwd+pointwise", for messages
};

// One memory range an execute touches.
struct BackendAccess {
  uintptr_t address = 0;
  int64_t bytes = 0;
  UidRole role = UidRole::kRead;
  int64_t uid = 0;
};

struct ExecuteModel {
  std::shared_ptr<const PlanModel> plan;
  std::vector<BackendAccess> accesses;  // the tensors, then the workspace (uid -1) if any
  std::vector<int64_t> uids;            // the pack as given, for a replay
  std::vector<uintptr_t> pointers;
  uintptr_t workspace = 0;
};

class BackendModel {
 public:
  static BackendModel& Get();

  void Created(const void* desc, cudnnBackendDescriptorType_t type);
  // A successful cudnnBackendSetAttribute; attributes of types the model does not read are
  // ignored.
  void Set(const void* desc, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
           int64_t count, const void* elements);
  // A successful cudnnBackendGetAttribute that filled `count` descriptors of the program's
  // (`returned`) from `desc`: heuristics' engine configs (ENGINEHEUR_RESULTS), a config's engine
  // (ENGINECFG_ENGINE). cuDNN set their attributes, not the program, so they inherit the
  // operation graph `desc` belongs to.
  void Returned(const void* desc, const void* const* returned, int64_t count);
  // A successful cudnnBackendFinalize. An operation graph is resolved then (its operations and
  // tensors may be destroyed right after); a plan takes its graph's model with `workspace_bytes`
  // (its CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, -1 when unknown: opaque).
  void Finalized(const void* desc, int64_t workspace_bytes);
  void Destroyed(const void* desc);

  // The ranges of cudnnBackendExecute(plan, pack): an error (its message says why) when the call
  // is opaque.
  absl::StatusOr<ExecuteModel> Execute(const void* plan, const void* pack) const;

  // For tests: the resolved plan, or null.
  std::shared_ptr<const PlanModel> Plan(const void* plan) const;
  // The type `desc` was created with; false when unknown.
  bool TypeOf(const void* desc, cudnnBackendDescriptorType_t* type) const;

 private:
  struct Attr {
    cudnnBackendAttributeType_t type = CUDNN_TYPE_HANDLE;
    std::vector<uint64_t> values;  // each element widened (pointers, integers, enums, bools)
    std::vector<double> reals;     // FLOAT / DOUBLE elements
  };
  struct Desc {
    cudnnBackendDescriptorType_t type = CUDNN_BACKEND_POINTWISE_DESCRIPTOR;
    absl::flat_hash_map<int, Attr> attrs;
    // The model of the operation graph it is (finalized), leads to or was filled from; for a
    // finalized plan (`plan`), with its workspace. Null: `why`.
    std::shared_ptr<const PlanModel> graph;
    bool plan = false;
    std::string why;
  };

  const Attr* Find(const Desc& d, cudnnBackendAttributeName_t name) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  const Desc* FindDesc(uintptr_t handle) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The handle attribute `name` of `d` holds, when it holds exactly one; 0 otherwise.
  uintptr_t SingleHandle(const Desc& d, cudnnBackendAttributeName_t name) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  class GraphBuilder;
  absl::StatusOr<PlanModel> Resolve(const Desc& graph) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable Mutex mu_;
  absl::flat_hash_map<uintptr_t, Desc> descs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_HOOKS_CUDNN_CUDNN_BACKEND_MODEL_H_
