// cudnn_backend_model.cc: the bookkeeping of Note [Backend graphs].
#include "interpose/hooks/cudnn/cudnn_backend_model.h"

#include <cstring>
#include <initializer_list>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace pooch::interpose {
namespace {

// The width of one element of the attribute types the model reads; 0 for the others (ignored).
size_t ElementSize(cudnnBackendAttributeType_t type) {
  switch (type) {
    case CUDNN_TYPE_BACKEND_DESCRIPTOR:
    case CUDNN_TYPE_VOID_PTR:
    case CUDNN_TYPE_HANDLE:
      return sizeof(void*);
    case CUDNN_TYPE_INT64:
      return sizeof(int64_t);
    case CUDNN_TYPE_DATA_TYPE:
      return sizeof(cudnnDataType_t);
    case CUDNN_TYPE_BOOLEAN:
      return sizeof(bool);
    case CUDNN_TYPE_FLOAT:
      return sizeof(float);
    case CUDNN_TYPE_DOUBLE:
      return sizeof(double);
    default:
      return 0;
  }
}

// Bytes of one element; 0 for a type the model does not know (the plan is then opaque).
int64_t DataTypeBytes(uint64_t type) {
  switch (static_cast<cudnnDataType_t>(type)) {
    case CUDNN_DATA_DOUBLE:
    case CUDNN_DATA_INT64:
      return 8;
    case CUDNN_DATA_FLOAT:
    case CUDNN_DATA_INT32:
      return 4;
    case CUDNN_DATA_HALF:
    case CUDNN_DATA_BFLOAT16:
      return 2;
    case CUDNN_DATA_INT8:
    case CUDNN_DATA_UINT8:
    case CUDNN_DATA_BOOLEAN:
    case CUDNN_DATA_FP8_E4M3:
    case CUDNN_DATA_FP8_E5M2:
      return 1;
    default:
      return 0;
  }
}

UidRole Merge(UidRole a, UidRole b) { return a == b ? a : UidRole::kReadWrite; }

}  // namespace

BackendModel& BackendModel::Get() {
  static BackendModel* const model = new BackendModel;  // never destroyed: hooks run at exit
  return *model;
}

void BackendModel::Created(const void* desc, cudnnBackendDescriptorType_t type) {
  MutexLock lock(&mu_);
  Desc d;
  d.type = type;
  descs_[reinterpret_cast<uintptr_t>(desc)] = std::move(d);
}

void BackendModel::Set(const void* desc, cudnnBackendAttributeName_t name,
                       cudnnBackendAttributeType_t type, int64_t count, const void* elements) {
  const size_t size = ElementSize(type);
  if (size == 0 || count < 0 || (count > 0 && elements == nullptr)) return;
  Attr a;
  a.type = type;
  const auto* bytes = static_cast<const unsigned char*>(elements);
  for (int64_t i = 0; i < count; ++i) {
    const unsigned char* e = bytes + static_cast<size_t>(i) * size;
    if (type == CUDNN_TYPE_FLOAT) {
      float f;
      std::memcpy(&f, e, sizeof f);
      a.reals.push_back(f);
    } else if (type == CUDNN_TYPE_DOUBLE) {
      double d;
      std::memcpy(&d, e, sizeof d);
      a.reals.push_back(d);
    } else {
      uint64_t v = 0;
      std::memcpy(&v, e, size);  // little-endian widening
      a.values.push_back(v);
    }
  }
  MutexLock lock(&mu_);
  auto it = descs_.find(reinterpret_cast<uintptr_t>(desc));
  if (it == descs_.end()) return;
  Desc& d = it->second;
  // A heuristics, engine, engine config or plan names the descriptor that leads to its graph:
  // take the graph's model now, while that descriptor is alive.
  if (type == CUDNN_TYPE_BACKEND_DESCRIPTOR && a.values.size() == 1 &&
      (name == CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH || name == CUDNN_ATTR_ENGINE_OPERATION_GRAPH ||
       name == CUDNN_ATTR_ENGINECFG_ENGINE || name == CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG)) {
    const Desc* from = FindDesc(static_cast<uintptr_t>(a.values[0]));
    d.graph = from == nullptr ? nullptr : from->graph;
    d.why = from == nullptr ? "a descriptor it names was not seen built" : from->why;
  }
  d.attrs[static_cast<int>(name)] = std::move(a);
}

void BackendModel::Returned(const void* desc, const void* const* returned, int64_t count) {
  MutexLock lock(&mu_);
  const Desc* from = FindDesc(reinterpret_cast<uintptr_t>(desc));
  if (from == nullptr) return;
  for (int64_t i = 0; i < count; ++i) {
    auto it = descs_.find(reinterpret_cast<uintptr_t>(returned[i]));
    if (it != descs_.end() && it->second.type != CUDNN_BACKEND_TENSOR_DESCRIPTOR) {
      it->second.graph = from->graph;
      it->second.why = from->why;
    }
  }
}

void BackendModel::Finalized(const void* desc, int64_t workspace_bytes) {
  MutexLock lock(&mu_);
  auto it = descs_.find(reinterpret_cast<uintptr_t>(desc));
  if (it == descs_.end()) return;
  Desc& d = it->second;
  if (d.type == CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR) {
    absl::StatusOr<PlanModel> graph = Resolve(d);
    if (graph.ok()) {
      d.graph = std::make_shared<const PlanModel>(*std::move(graph));
    } else {
      d.why = std::string(graph.status().message());
    }
  } else if (d.type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR) {
    if (d.graph == nullptr) {
      if (d.why.empty()) d.why = "its operation graph was not seen built";
    } else if (workspace_bytes < 0) {
      d.graph = nullptr;
      d.why = "the plan's workspace size is unknown";
    } else {
      auto plan = std::make_shared<PlanModel>(*d.graph);
      plan->workspace_bytes = workspace_bytes;
      d.graph = std::move(plan);
      d.plan = true;
    }
  }
}

void BackendModel::Destroyed(const void* desc) {
  MutexLock lock(&mu_);
  descs_.erase(reinterpret_cast<uintptr_t>(desc));
}

const BackendModel::Attr* BackendModel::Find(const Desc& d,
                                             cudnnBackendAttributeName_t name) const {
  auto it = d.attrs.find(static_cast<int>(name));
  return it == d.attrs.end() ? nullptr : &it->second;
}

const BackendModel::Desc* BackendModel::FindDesc(uintptr_t handle) const {
  auto it = descs_.find(handle);
  return it == descs_.end() ? nullptr : &it->second;
}

uintptr_t BackendModel::SingleHandle(const Desc& d, cudnnBackendAttributeName_t name) const {
  const Attr* a = Find(d, name);
  return a == nullptr || a->values.size() != 1 ? 0 : static_cast<uintptr_t>(a->values[0]);
}

// Resolve's model of one operation graph, built operation by operation: each operation adds its
// non-virtual tensors in their roles (the table of Note [Backend graphs]), a tensor named twice
// getting both roles and the larger extent.
class BackendModel::GraphBuilder {
 public:
  explicit GraphBuilder(const BackendModel& descs) : descs_(descs) { model_.replayable = true; }

  // Adds `op`'s tensors; its name (for PlanModel::ops), or why it cannot be modelled.
  absl::StatusOr<const char*> AddOperation(const Desc& op);
  // The model, its replayability settled by the tensors' roles.
  PlanModel Finish() &&;

 private:
  using Names = std::initializer_list<cudnnBackendAttributeName_t>;

  // Adds the tensor `handle` in `role`; an error when it is unknown or cannot be sized.
  absl::Status AddTensor(uintptr_t handle, UidRole role);
  // The extent of tensor `id` (`t`) in bytes, from its first element to one past its last.
  absl::StatusOr<int64_t> TensorBytes(const Desc& t, int64_t id) const;
  // Adds the tensors `names` of `op` (absent ones skipped) in `role`.
  absl::Status AddAll(const Desc& op, Names names, UidRole role);
  // A convolution: `in` read; `out` written, and read too unless its `beta` is zero.
  absl::Status AddConvolution(const Desc& op, const char* name, Names in,
                              cudnnBackendAttributeName_t out, cudnnBackendAttributeName_t beta);
  absl::Status AddPointwise(const Desc& op);
  absl::Status AddReduction(const Desc& op);
  absl::Status AddMatmul(const Desc& op);
  // BETA of a convolution: zero means the output is overwritten. Absent counts as non-zero.
  bool Overwrites(const Desc& op, cudnnBackendAttributeName_t beta) const;

  const BackendModel& descs_;
  PlanModel model_;
  absl::flat_hash_map<int64_t, size_t> index_;  // uid -> model_.tensors
};

absl::Status BackendModel::GraphBuilder::AddTensor(uintptr_t handle, UidRole role) {
  const Desc* t = descs_.FindDesc(handle);
  if (t == nullptr || t->type != CUDNN_BACKEND_TENSOR_DESCRIPTOR) {
    return absl::UnavailableError("an operation's tensor was not seen built");
  }
  const Attr* uid = descs_.Find(*t, CUDNN_ATTR_TENSOR_UNIQUE_ID);
  if (uid == nullptr || uid->values.size() != 1) {
    return absl::UnavailableError("a tensor has no unique id");
  }
  const int64_t id = static_cast<int64_t>(uid->values[0]);
  const Attr* is_virtual = descs_.Find(*t, CUDNN_ATTR_TENSOR_IS_VIRTUAL);
  if (is_virtual != nullptr && is_virtual->values.size() == 1 && is_virtual->values[0] != 0) {
    return absl::OkStatus();  // an intermediate inside the graph: no memory
  }
  const Attr* by_value = descs_.Find(*t, CUDNN_ATTR_TENSOR_IS_BY_VALUE);
  if (by_value != nullptr && by_value->values.size() == 1 && by_value->values[0] != 0) {
    if (role != UidRole::kRead) return absl::UnavailableError("a by-value tensor is written");
    model_.by_value.push_back(id);
    return absl::OkStatus();
  }
  const Attr* vector_count = descs_.Find(*t, CUDNN_ATTR_TENSOR_VECTOR_COUNT);
  if (vector_count != nullptr && vector_count->values.size() == 1 && vector_count->values[0] > 1) {
    return absl::UnavailableError("a tensor is vectorised");
  }
  absl::StatusOr<int64_t> bytes = TensorBytes(*t, id);
  if (!bytes.ok()) return bytes.status();
  auto [it, fresh] = index_.try_emplace(id, model_.tensors.size());
  if (fresh) {
    model_.tensors.push_back({id, *bytes, role});
  } else {
    BackendTensor& known = model_.tensors[it->second];
    known.role = Merge(known.role, role);
    if (*bytes > known.bytes) known.bytes = *bytes;
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> BackendModel::GraphBuilder::TensorBytes(const Desc& t, int64_t id) const {
  const Attr* dims = descs_.Find(t, CUDNN_ATTR_TENSOR_DIMENSIONS);
  const Attr* strides = descs_.Find(t, CUDNN_ATTR_TENSOR_STRIDES);
  const Attr* type = descs_.Find(t, CUDNN_ATTR_TENSOR_DATA_TYPE);
  if (dims == nullptr || strides == nullptr || type == nullptr || type->values.size() != 1 ||
      dims->values.empty() || dims->values.size() != strides->values.size()) {
    return absl::UnavailableError(absl::StrCat("tensor ", id, " has no shape"));
  }
  const int64_t element = DataTypeBytes(type->values[0]);
  if (element == 0) return absl::UnavailableError(absl::StrCat("tensor ", id, "'s data type"));
  int64_t last = 0;  // the last element's offset
  for (size_t i = 0; i < dims->values.size(); ++i) {
    const auto d = static_cast<int64_t>(dims->values[i]);
    const auto s = static_cast<int64_t>(strides->values[i]);
    if (d <= 0 || s < 0) return absl::UnavailableError(absl::StrCat("tensor ", id, "'s shape"));
    last += (d - 1) * s;
  }
  return (last + 1) * element;
}

absl::Status BackendModel::GraphBuilder::AddAll(const Desc& op, Names names, UidRole role) {
  for (cudnnBackendAttributeName_t n : names) {
    const uintptr_t h = descs_.SingleHandle(op, n);
    if (h == 0) continue;
    if (absl::Status s = AddTensor(h, role); !s.ok()) return s;
  }
  return absl::OkStatus();
}

bool BackendModel::GraphBuilder::Overwrites(const Desc& op,
                                            cudnnBackendAttributeName_t beta) const {
  const Attr* b = descs_.Find(op, beta);
  return b != nullptr && b->reals.size() == 1 && b->reals[0] == 0;
}

absl::Status BackendModel::GraphBuilder::AddConvolution(const Desc& op, const char* name, Names in,
                                                        cudnnBackendAttributeName_t out,
                                                        cudnnBackendAttributeName_t beta) {
  const bool fresh = Overwrites(op, beta);
  if (!fresh) model_.replayable = false;
  const uintptr_t output = descs_.SingleHandle(op, out);
  if (output == 0) return absl::UnavailableError(absl::StrCat(name, " has no output"));
  absl::Status s = AddAll(op, in, UidRole::kRead);
  if (s.ok()) s = AddTensor(output, fresh ? UidRole::kWrite : UidRole::kReadWrite);
  return s;
}

absl::Status BackendModel::GraphBuilder::AddPointwise(const Desc& op) {
  absl::Status s =
      AddAll(op,
             {CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_ATTR_OPERATION_POINTWISE_BDESC,
              CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_ATTR_OPERATION_POINTWISE_DYDESC},
             UidRole::kRead);
  if (!s.ok()) return s;
  return AddAll(op, {CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_ATTR_OPERATION_POINTWISE_DXDESC},
                UidRole::kWrite);
}

absl::Status BackendModel::GraphBuilder::AddReduction(const Desc& op) {
  // A reduction's output may be accumulated into (the reduction's beta is not an attribute
  // pooch can read): read and written, never replayed.
  model_.replayable = false;
  absl::Status s = AddAll(op, {CUDNN_ATTR_OPERATION_REDUCTION_XDESC}, UidRole::kRead);
  if (!s.ok()) return s;
  return AddAll(op, {CUDNN_ATTR_OPERATION_REDUCTION_YDESC}, UidRole::kReadWrite);
}

absl::Status BackendModel::GraphBuilder::AddMatmul(const Desc& op) {
  if (descs_.SingleHandle(op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC) != 0 ||
      descs_.SingleHandle(op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC) != 0 ||
      descs_.SingleHandle(op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC) != 0) {
    return absl::UnavailableError("a matmul has overridden extents");
  }
  absl::Status s = AddAll(
      op, {CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_ATTR_OPERATION_MATMUL_BDESC}, UidRole::kRead);
  if (!s.ok()) return s;
  return AddAll(op, {CUDNN_ATTR_OPERATION_MATMUL_CDESC}, UidRole::kWrite);
}

absl::StatusOr<const char*> BackendModel::GraphBuilder::AddOperation(const Desc& op) {
  absl::Status s;
  const char* name = "";
  switch (op.type) {
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
      name = "conv_fwd";
      s = AddConvolution(
          op, name,
          {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W},
          CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
          CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA);
      break;
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
      name = "conv_dgrad";
      s = AddConvolution(op, name,
                         {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY},
                         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
                         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA);
      break;
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
      name = "conv_wgrad";
      s = AddConvolution(op, name,
                         {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
                          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY},
                         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
                         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA);
      break;
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
      name = "pointwise";
      s = AddPointwise(op);
      break;
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
      name = "reduction";
      s = AddReduction(op);
      break;
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
      name = "matmul";
      s = AddMatmul(op);
      break;
    default:
      return absl::UnavailableError(absl::StrCat("it has an operation of backend type ",
                                                 static_cast<int>(op.type),
                                                 ", which pooch does not model"));
  }
  if (!s.ok()) return s;
  return name;
}

PlanModel BackendModel::GraphBuilder::Finish() && {
  int written = 0;
  for (const BackendTensor& t : model_.tensors) {
    if (t.role == UidRole::kWrite) ++written;
    if (t.role == UidRole::kReadWrite) model_.replayable = false;
  }
  if (written != 1) model_.replayable = false;
  // A by-value tensor's pointer is host memory the program may reuse before a replay.
  if (!model_.by_value.empty()) model_.replayable = false;
  return std::move(model_);
}

absl::StatusOr<PlanModel> BackendModel::Resolve(const Desc& graph) const {
  const Attr* ops = Find(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS);
  if (ops == nullptr || ops->values.empty()) {
    return absl::UnavailableError("its operation graph has no operations pooch saw");
  }
  GraphBuilder builder(*this);
  std::string names;
  for (uint64_t op_handle : ops->values) {
    const Desc* op = FindDesc(static_cast<uintptr_t>(op_handle));
    if (op == nullptr) return absl::UnavailableError("an operation was not seen built");
    absl::StatusOr<const char*> name = builder.AddOperation(*op);
    if (!name.ok()) return name.status();
    if (!names.empty()) names += "+";
    names += *name;
  }
  PlanModel model = std::move(builder).Finish();
  model.ops = std::move(names);
  return model;
}

absl::StatusOr<ExecuteModel> BackendModel::Execute(const void* plan, const void* pack) const {
  MutexLock lock(&mu_);
  const Desc* p = FindDesc(reinterpret_cast<uintptr_t>(plan));
  if (p == nullptr || p->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR) {
    return absl::UnavailableError("the execution plan was not seen built");
  }
  if (!p->plan || p->graph == nullptr) {
    return absl::UnavailableError(absl::StrCat("the execution plan cannot be modelled: ",
                                               p->why.empty() ? "not finalized" : p->why));
  }
  const Desc* v = FindDesc(reinterpret_cast<uintptr_t>(pack));
  if (v == nullptr || v->type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR) {
    return absl::UnavailableError("the variant pack was not seen built");
  }
  for (cudnnBackendAttributeName_t extra :
       {CUDNN_ATTR_VARIANT_PACK_INTERMEDIATES, CUDNN_ATTR_VARIANT_PACK_OVERRIDE_UNIQUE_IDS,
        CUDNN_ATTR_VARIANT_PACK_OVERRIDE_SHAPES, CUDNN_ATTR_VARIANT_PACK_OVERRIDE_STRIDES}) {
    const Attr* a = Find(*v, extra);
    if (a != nullptr && !a->values.empty()) {
      return absl::UnavailableError("the variant pack has intermediates or shape overrides");
    }
  }
  const Attr* uids = Find(*v, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
  const Attr* pointers = Find(*v, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
  if (uids == nullptr || pointers == nullptr || uids->values.size() != pointers->values.size()) {
    return absl::UnavailableError("the variant pack's UIDs and pointers do not match");
  }
  ExecuteModel m;
  m.plan = p->graph;
  m.workspace = SingleHandle(*v, CUDNN_ATTR_VARIANT_PACK_WORKSPACE);
  absl::flat_hash_map<int64_t, uintptr_t> by_uid;
  for (size_t i = 0; i < uids->values.size(); ++i) {
    const auto uid = static_cast<int64_t>(uids->values[i]);
    m.uids.push_back(uid);
    m.pointers.push_back(static_cast<uintptr_t>(pointers->values[i]));
    by_uid[uid] = m.pointers.back();
  }
  absl::flat_hash_map<int64_t, bool> known;
  for (const BackendTensor& t : m.plan->tensors) {
    known[t.uid] = true;
    auto it = by_uid.find(t.uid);
    if (it == by_uid.end()) {
      return absl::UnavailableError(absl::StrCat("the variant pack lacks tensor ", t.uid));
    }
    m.accesses.push_back({it->second, t.bytes, t.role, t.uid});
  }
  for (int64_t uid : m.plan->by_value) known[uid] = true;
  for (int64_t uid : m.uids) {
    if (!known.contains(uid)) {
      return absl::UnavailableError(
          absl::StrCat("the variant pack has UID ", uid, ", which the plan's graph does not name"));
    }
  }
  if (m.plan->workspace_bytes > 0) {
    // Note [Scratch workspaces] (interpose/hooks/cublas/cublas_hooks.cc): written, never read as
    // an input.
    m.accesses.push_back({m.workspace, m.plan->workspace_bytes, UidRole::kWrite, -1});
  }
  return m;
}

std::shared_ptr<const PlanModel> BackendModel::Plan(const void* plan) const {
  MutexLock lock(&mu_);
  const Desc* p = FindDesc(reinterpret_cast<uintptr_t>(plan));
  return p == nullptr || !p->plan ? nullptr : p->graph;
}

bool BackendModel::TypeOf(const void* desc, cudnnBackendDescriptorType_t* type) const {
  MutexLock lock(&mu_);
  const Desc* d = FindDesc(reinterpret_cast<uintptr_t>(desc));
  if (d == nullptr) return false;
  *type = d->type;
  return true;
}

}  // namespace pooch::interpose
