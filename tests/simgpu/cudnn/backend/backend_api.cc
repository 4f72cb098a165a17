// The backend API's entry points: create, destroy, set, get, finalize and execute descriptors
// (Note [Backend API] in backend.h). CUDA graph capture of a plan is not supported.
#include <new>

#include "backend.h"
#include "backend_attr.h"

namespace simgpu::cudnn::backend {

Desc* FromHandle(cudnnBackendDescriptor_t d) {
  Desc* desc = static_cast<Desc*>(d);
  return desc != nullptr && desc->magic == Desc::kMagic ? desc : nullptr;
}

cudnnStatus_t SetDescs(const SetArgs& a, int64_t lo, int64_t hi, std::vector<Desc*>* out) {
  if (a.type != CUDNN_TYPE_BACKEND_DESCRIPTOR || a.count < lo || a.count > hi) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  if (a.count > 0 && a.data == nullptr) return CUDNN_STATUS_BAD_PARAM;
  out->clear();
  const auto* handles = static_cast<const cudnnBackendDescriptor_t*>(a.data);
  for (int64_t i = 0; i < a.count; ++i) {
    Desc* d = FromHandle(handles[i]);
    if (d == nullptr) return CUDNN_STATUS_BAD_PARAM;
    if (!d->object->finalized) return CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
    out->push_back(d);
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t SetDesc(const SetArgs& a, cudnnBackendDescriptorType_t want,
                      std::shared_ptr<Object>* out) {
  std::vector<Desc*> descs;
  SIMGPU_RETURN_IF_ERROR(SetDescs(a, 1, 1, &descs));
  if (descs[0]->type != want) return CUDNN_STATUS_BAD_PARAM;
  *out = descs[0]->object;
  return CUDNN_STATUS_SUCCESS;
}

namespace {

// Fills the caller's descriptors with `objects`, each of the descriptor type `types[i]`.
cudnnStatus_t Fill(const GetArgs& a, const std::vector<cudnnBackendDescriptorType_t>& types,
                   const std::vector<std::shared_ptr<Object>>& objects) {
  if (a.type != CUDNN_TYPE_BACKEND_DESCRIPTOR || a.requested < 0) return CUDNN_STATUS_BAD_PARAM;
  if (a.data == nullptr && a.count == nullptr) return CUDNN_STATUS_BAD_PARAM;
  const int64_t n = static_cast<int64_t>(objects.size());
  if (a.data != nullptr) {
    auto* handles = static_cast<cudnnBackendDescriptor_t*>(a.data);
    const int64_t m = std::min(a.requested, n);
    // Check them all before touching any, so a failed call changes nothing.
    for (int64_t i = 0; i < m; ++i) {
      Desc* d = FromHandle(handles[i]);
      if (d == nullptr || d->type != types[i]) return CUDNN_STATUS_BAD_PARAM;
    }
    for (int64_t i = 0; i < m; ++i) FromHandle(handles[i])->object = objects[i];
  }
  if (a.count != nullptr) *a.count = a.data != nullptr ? std::min(a.requested, n) : n;
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace

cudnnStatus_t GetDescs(const GetArgs& a, cudnnBackendDescriptorType_t type,
                       const std::vector<std::shared_ptr<Object>>& objects) {
  return Fill(a, std::vector<cudnnBackendDescriptorType_t>(objects.size(), type), objects);
}

cudnnStatus_t GetOpDescs(const GetArgs& a, const std::vector<std::shared_ptr<const OpInfo>>& ops) {
  std::vector<cudnnBackendDescriptorType_t> types;
  std::vector<std::shared_ptr<Object>> objects;
  for (const auto& op : ops) {
    types.push_back(op->kind);
    objects.push_back(OpObjectFor(op));
  }
  return Fill(a, types, objects);
}

}  // namespace simgpu::cudnn::backend

using simgpu::cudnn::NotSupported;
using simgpu::cudnn::backend::Desc;
using simgpu::cudnn::backend::FromHandle;

extern "C" {

cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type,
                                           cudnnBackendDescriptor_t* descriptor) {
  if (descriptor == nullptr) return CUDNN_STATUS_BAD_PARAM;
  simgpu::CheckConfigOrExit();
  std::shared_ptr<simgpu::cudnn::backend::Object> object = simgpu::cudnn::backend::NewObject(type);
  if (object == nullptr) return CUDNN_STATUS_NOT_SUPPORTED;  // line printed by NewObject
  Desc* d = new (std::nothrow) Desc;
  if (d == nullptr) return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
  d->type = type;
  d->object = std::move(object);
  *descriptor = d;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor) {
  Desc* d = FromHandle(descriptor);
  if (d == nullptr) return CUDNN_STATUS_BAD_PARAM;
  d->magic = 0;  // a second destroy, or a use after destroy, is caught (as far as memory allows)
  delete d;
  return CUDNN_STATUS_SUCCESS;
}

// Deprecated: puts the descriptor back to its state after creation.
cudnnStatus_t cudnnBackendInitialize(cudnnBackendDescriptor_t descriptor) {
  Desc* d = FromHandle(descriptor);
  if (d == nullptr) return CUDNN_STATUS_BAD_PARAM;
  std::shared_ptr<simgpu::cudnn::backend::Object> object =
      simgpu::cudnn::backend::NewObject(d->type);
  if (object == nullptr) return CUDNN_STATUS_NOT_SUPPORTED;
  d->object = std::move(object);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor) {
  Desc* d = FromHandle(descriptor);
  if (d == nullptr || d->object->finalized) return CUDNN_STATUS_BAD_PARAM;
  return d->object->Finalize();
}

cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t count,
                                       const void* elements) {
  Desc* d = FromHandle(descriptor);
  if (d == nullptr || d->object->finalized) return CUDNN_STATUS_BAD_PARAM;
  return d->object->Set(name, {type, count, elements});
}

cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const descriptor,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t requested,
                                       int64_t* count, void* elements) {
  Desc* d = FromHandle(descriptor);
  if (d == nullptr) return CUDNN_STATUS_BAD_PARAM;
  return d->object->Get(name, {type, requested, count, elements});
}

cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                  cudnnBackendDescriptor_t pack) {
  Desc* p = FromHandle(plan);
  Desc* v = FromHandle(pack);
  if (handle == nullptr || p == nullptr || v == nullptr) return CUDNN_STATUS_BAD_PARAM;
  if (p->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR ||
      v->type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  if (!p->object->finalized || !v->object->finalized) {
    return CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
  }
  return simgpu::cudnn::backend::Execute(handle, *simgpu::cudnn::backend::PlanOf(p->object),
                                         *simgpu::cudnn::backend::VariantPackOf(v->object));
}

cudnnStatus_t cudnnBackendPopulateCudaGraph(cudnnHandle_t, cudnnBackendDescriptor_t,
                                            cudnnBackendDescriptor_t, cudaGraph_t) {
  return NotSupported("cudnnBackendPopulateCudaGraph", "native CUDA graph capture of a plan");
}

cudnnStatus_t cudnnBackendUpdateCudaGraph(cudnnHandle_t, cudnnBackendDescriptor_t,
                                          cudnnBackendDescriptor_t, cudaGraph_t) {
  return NotSupported("cudnnBackendUpdateCudaGraph", "native CUDA graph capture of a plan");
}

}  // extern "C"
