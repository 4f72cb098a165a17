// cudnn_backend_hooks.cc: the cuDNN backend API under a residency policy. The descriptor calls
// forward and, when they succeed, tell the BackendModel what was built (Note [Backend graphs] in
// cudnn_backend_model.h); cudnnBackendExecute runs as an op over the memory the model names, with
// a replay recipe when the plan is replayable.
//
// An execute the model cannot account for (a plan or graph pooch did not see built, an operation
// it does not model) is an opaque call (Note [Opaque calls] in interpose/process/opaque.h): every
// allocation resident around it. Running it over memory pooch may unmap is the race issue 15
// describes.
//
// Note [Backend replay]
// ~~~~~~~~~~~~~~~~~~~~~
// A finalized plan is bound to the handle it was built with
// (CUDNN_ATTR_EXECUTION_PLAN_HANDLE), so a replay re-executes it on the handle of the recorded
// call, with that handle's stream set to the replay stream for the call and set back after it
// (cudnn_replay.cc's own handle cannot run another handle's plan). The variant pack is a new one
// of pooch's, with the recorded UIDs and pointers and the Recomputer's scratch workspace. The
// program may destroy the plan after the call: a plan a recipe holds is destroyed when the last
// such recipe goes (PlanHold), not when the program asks. Torch keeps one handle per thread and
// device; a replay from another thread than the handle's would share it for the call's duration.
#include <atomic>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/base/log.h"
#include "core/base/mutex.h"
#include "interpose/hooks/cudnn/cudnn_backend_model.h"
#include "interpose/process/managed.h"
#include "interpose/process/opaque.h"
#include "interpose/symbols/hook_table.h"
#include "interpose/symbols/intercept.h"

namespace pooch::interpose::intercept {
namespace {

using Mode = pooch::AccessRange::Mode;
constexpr cudnnStatus_t kOk = CUDNN_STATUS_SUCCESS;

// A plan kept alive for its recipes (Note [Backend replay]).
struct PlanHold {
  cudnnBackendDescriptor_t plan = nullptr;
  std::atomic<bool> program_destroyed{false};
  ~PlanHold() {
    if (program_destroyed.load() && real::cudnnBackendDestroyDescriptor() != nullptr) {
      real::cudnnBackendDestroyDescriptor()(plan);
    }
  }
};

Mutex g_holds_mu;
absl::flat_hash_map<uintptr_t, std::shared_ptr<PlanHold>>& Holds() {
  static auto* holds = new absl::flat_hash_map<uintptr_t, std::shared_ptr<PlanHold>>;
  return *holds;
}

std::shared_ptr<PlanHold> HoldPlan(cudnnBackendDescriptor_t plan) {
  MutexLock lock(&g_holds_mu);
  std::shared_ptr<PlanHold>& h = Holds()[reinterpret_cast<uintptr_t>(plan)];
  if (h == nullptr) {
    h = std::make_shared<PlanHold>();
    h->plan = plan;
  }
  return h;
}

uintptr_t HandleStream(cudnnHandle_t handle) {
  cudaStream_t stream = nullptr;
  if (const auto get = real::cudnnGetStream()) get(handle, &stream);
  return reinterpret_cast<uintptr_t>(stream);
}

Mode ModeOf(UidRole role) {
  switch (role) {
    case UidRole::kRead:
      return Mode::kRead;
    case UidRole::kWrite:
      return Mode::kWrite;
    default:
      return Mode::kReadWrite;
  }
}

// Executes `plan` on `handle` with a pack of pooch's own: the recorded UIDs and pointers and
// `workspace`, on `stream` (Note [Backend replay]).
bool Reexecute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan, const ExecuteModel& m,
               uintptr_t stream, void* workspace) {
  const auto create = real::cudnnBackendCreateDescriptor();
  const auto set = real::cudnnBackendSetAttribute();
  const auto finalize = real::cudnnBackendFinalize();
  const auto destroy = real::cudnnBackendDestroyDescriptor();
  const auto execute = real::cudnnBackendExecute();
  const auto get_stream = real::cudnnGetStream();
  const auto set_stream = real::cudnnSetStream();
  if (!create || !set || !finalize || !destroy || !execute || !get_stream || !set_stream) {
    return false;
  }
  cudnnBackendDescriptor_t pack = nullptr;
  if (create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack) != kOk) return false;
  std::vector<void*> pointers;
  for (uintptr_t p : m.pointers) pointers.push_back(reinterpret_cast<void*>(p));
  const auto n = static_cast<int64_t>(m.uids.size());
  bool ok =
      set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, m.uids.data()) == kOk &&
      set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, pointers.data()) ==
          kOk &&
      set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace) == kOk &&
      finalize(pack) == kOk;
  cudaStream_t program_stream = nullptr;
  ok = ok && get_stream(handle, &program_stream) == kOk &&
       set_stream(handle, reinterpret_cast<cudaStream_t>(stream)) == kOk;
  if (ok) {
    ok = execute(handle, plan, pack) == kOk;
    ok = set_stream(handle, program_stream) == kOk && ok;
  }
  destroy(pack);
  return ok;
}

// The recipe of a replayable execute: its one written tensor is the output.
std::optional<ReplayRecipe> BackendRecipe(const Ranges& r, cudnnHandle_t handle,
                                          cudnnBackendDescriptor_t plan, const ExecuteModel& m) {
  ReplayRecipe recipe;
  recipe.name = "cudnnBackendExecute";
  for (const BackendAccess& a : m.accesses) {
    if (a.role == UidRole::kWrite && a.uid >= 0) {
      recipe.output = a.address;
      recipe.output_bytes = a.bytes;
    }
  }
  for (const pooch::AccessRange& a : r.get()) {
    if (a.mode == Mode::kRead) recipe.inputs.push_back(a);
  }
  if (recipe.output == 0 || recipe.output_bytes <= 0) return std::nullopt;
  recipe.workspace_bytes = m.plan->workspace_bytes;
  recipe.issue = [handle, hold = HoldPlan(plan), m](uintptr_t stream, void* workspace) {
    return Reexecute(handle, hold->plan, m, stream, workspace);
  };
  return recipe;
}

// True when the written tensor overlaps no read range (an in-place execute cannot be replayed).
bool OutputApart(const ExecuteModel& m) {
  for (const BackendAccess& w : m.accesses) {
    if (w.role != UidRole::kWrite) continue;
    for (const BackendAccess& a : m.accesses) {
      if (a.role != UidRole::kWrite && a.address < w.address + w.bytes &&
          w.address < a.address + a.bytes) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t descriptorType,
                                           cudnnBackendDescriptor_t* descriptor) {
  const cudnnStatus_t s = real::cudnnBackendCreateDescriptor()(descriptorType, descriptor);
  if (s == kOk && descriptor != nullptr) BackendModel::Get().Created(*descriptor, descriptorType);
  return s;
}

cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor) {
  BackendModel::Get().Destroyed(descriptor);
  {
    MutexLock lock(&g_holds_mu);
    auto it = Holds().find(reinterpret_cast<uintptr_t>(descriptor));
    if (it != Holds().end()) {
      std::shared_ptr<PlanHold> hold = std::move(it->second);
      Holds().erase(it);
      if (hold.use_count() > 1) {  // recipes still replay it: destroyed with the last one
        hold->program_destroyed.store(true);
        return kOk;
      }
    }
  }
  return real::cudnnBackendDestroyDescriptor()(descriptor);
}

cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor) {
  const cudnnStatus_t s = real::cudnnBackendFinalize()(descriptor);
  cudnnBackendDescriptorType_t type;
  if (s != kOk || !BackendModel::Get().TypeOf(descriptor, &type)) return s;
  int64_t workspace = -1, count = 0;
  if (type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR &&
      (real::cudnnBackendGetAttribute()(descriptor, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                        CUDNN_TYPE_INT64, 1, &count, &workspace) != kOk ||
       count != 1)) {
    workspace = -1;
  }
  BackendModel::Get().Finalized(descriptor, workspace);
  return s;
}

cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor,
                                       cudnnBackendAttributeName_t attributeName,
                                       cudnnBackendAttributeType_t attributeType,
                                       int64_t elementCount, const void* arrayOfElements) {
  const cudnnStatus_t s = real::cudnnBackendSetAttribute()(descriptor, attributeName, attributeType,
                                                           elementCount, arrayOfElements);
  if (s == kOk) {
    BackendModel::Get().Set(descriptor, attributeName, attributeType, elementCount,
                            arrayOfElements);
  }
  return s;
}

cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const descriptor,
                                       cudnnBackendAttributeName_t attributeName,
                                       cudnnBackendAttributeType_t attributeType,
                                       int64_t requestedElementCount, int64_t* elementCount,
                                       void* arrayOfElements) {
  const cudnnStatus_t s =
      real::cudnnBackendGetAttribute()(descriptor, attributeName, attributeType,
                                       requestedElementCount, elementCount, arrayOfElements);
  if (s == kOk && attributeType == CUDNN_TYPE_BACKEND_DESCRIPTOR && arrayOfElements != nullptr &&
      elementCount != nullptr) {
    const int64_t n = *elementCount < requestedElementCount ? *elementCount : requestedElementCount;
    BackendModel::Get().Returned(descriptor, static_cast<void* const*>(arrayOfElements), n);
  }
  return s;
}

cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t executionPlan,
                                  cudnnBackendDescriptor_t variantPack) {
  absl::StatusOr<ExecuteModel> m = BackendModel::Get().Execute(executionPlan, variantPack);
  const auto forward = [&] {
    return real::cudnnBackendExecute()(handle, executionPlan, variantPack);
  };
  if (!m.ok()) {
    // Note [Opaque calls]: pooch cannot name what the plan touches, so everything is resident.
    POOCH_LOG_AT(kInfo, "cudnnBackendExecute: %.*s: run as an opaque call",
                 static_cast<int>(m.status().message().size()), m.status().message().data());
    return RunOpaque<cudnnStatus_t>("cudnnBackendExecute", HandleStream(handle),
                                    /*stream_known=*/true, forward);
  }
  Ranges r;
  for (const BackendAccess& a : m->accesses) r.Add(a.address, a.bytes, ModeOf(a.role));
  const bool replayable = m->plan->replayable && OutputApart(*m);
  const auto make_recipe = [&] { return BackendRecipe(r, handle, executionPlan, *m); };
  const ReplaySource replay(make_recipe);
  return RunOp<cudnnStatus_t>(HandleStream(handle), r, forward,
                              {.replay = replayable ? &replay : nullptr});
}

}  // namespace pooch::interpose::intercept
