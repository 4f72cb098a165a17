// simgpu libcudnn.so.9: checking and copying the attribute values of cudnnBackendSetAttribute
// and cudnnBackendGetAttribute, and the Object that keeps a draft until Finalize freezes it.
//
// cuDNN's rules, kept here in one place: the attribute type must be the one the attribute has,
// the element count within its bounds, and a descriptor-valued attribute must name a finalized
// descriptor of the right type; else CUDNN_STATUS_BAD_PARAM. A Get writes at most
// `requested` elements and reports how many it wrote; with no array it reports how many the
// attribute has.
#ifndef POOCH_TESTS_SIMGPU_CUDNN_BACKEND_ATTR_H_
#define POOCH_TESTS_SIMGPU_CUDNN_BACKEND_ATTR_H_

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "backend.h"

namespace simgpu::cudnn::backend {

// Copies between `lo` and `hi` elements of type `want` into `out`; the count into `n`.
template <typename T>
cudnnStatus_t SetValues(const SetArgs& a, cudnnBackendAttributeType_t want, int64_t lo, int64_t hi,
                        T* out, int* n = nullptr) {
  if (a.type != want || a.count < lo || a.count > hi) return CUDNN_STATUS_BAD_PARAM;
  if (a.count > 0 && a.data == nullptr) return CUDNN_STATUS_BAD_PARAM;
  std::copy_n(static_cast<const T*>(a.data), a.count, out);
  if (n != nullptr) *n = static_cast<int>(a.count);
  return CUDNN_STATUS_SUCCESS;
}

template <typename T>
cudnnStatus_t SetOne(const SetArgs& a, cudnnBackendAttributeType_t want, T* out) {
  return SetValues(a, want, 1, 1, out);
}

// `st`, and records in `*set` that the attribute was set when `st` is SUCCESS.
inline cudnnStatus_t Mark(cudnnStatus_t st, bool* set) {
  if (st == CUDNN_STATUS_SUCCESS) *set = true;
  return st;
}

// alpha and beta: one float or one double.
inline cudnnStatus_t SetScalar(const SetArgs& a, double* out) {
  if (a.count != 1 || a.data == nullptr) return CUDNN_STATUS_BAD_PARAM;
  if (a.type == CUDNN_TYPE_FLOAT) {
    *out = *static_cast<const float*>(a.data);
  } else if (a.type == CUDNN_TYPE_DOUBLE) {
    *out = *static_cast<const double*>(a.data);
  } else {
    return CUDNN_STATUS_BAD_PARAM;
  }
  return CUDNN_STATUS_SUCCESS;
}

template <typename T>
cudnnStatus_t GetValues(const GetArgs& a, cudnnBackendAttributeType_t want, const T* values,
                        int64_t n) {
  if (a.type != want || a.requested < 0) return CUDNN_STATUS_BAD_PARAM;
  if (a.data == nullptr && a.count == nullptr) return CUDNN_STATUS_BAD_PARAM;
  const int64_t m = a.data != nullptr ? std::min(a.requested, n) : n;
  if (a.data != nullptr && m > 0) std::copy(values, values + m, static_cast<T*>(a.data));
  if (a.count != nullptr) *a.count = m;
  return CUDNN_STATUS_SUCCESS;
}

template <typename T>
cudnnStatus_t GetOne(const GetArgs& a, cudnnBackendAttributeType_t want, T value) {
  return GetValues(a, want, &value, 1);
}

inline cudnnStatus_t GetScalar(const GetArgs& a, double v) {
  if (a.type == CUDNN_TYPE_FLOAT) return GetOne(a, CUDNN_TYPE_FLOAT, static_cast<float>(v));
  return GetOne(a, CUDNN_TYPE_DOUBLE, v);
}

// The Objects behind the descriptors a Set names: between `lo` and `hi` finalized descriptors.
// The caller checks their types.
cudnnStatus_t SetDescs(const SetArgs& a, int64_t lo, int64_t hi, std::vector<Desc*>* out);

// The Object behind the one finalized descriptor of type `want` a Set names.
cudnnStatus_t SetDesc(const SetArgs& a, cudnnBackendDescriptorType_t want,
                      std::shared_ptr<Object>* out);

// Makes the caller's descriptors (created with type `type`) share `objects`, finalized.
cudnnStatus_t GetDescs(const GetArgs& a, cudnnBackendDescriptorType_t type,
                       const std::vector<std::shared_ptr<Object>>& objects);

// The same for operations, whose descriptors are of each operation's own type.
cudnnStatus_t GetOpDescs(const GetArgs& a, const std::vector<std::shared_ptr<const OpInfo>>& ops);

// An Object whose attributes live in an Info: a draft until Finalize, then frozen and shared.
template <typename Info>
class InfoObject : public Object {
 public:
  InfoObject() : draft_(std::make_shared<Info>()) {}
  // A finalized copy, for a descriptor GetAttribute fills.
  explicit InfoObject(std::shared_ptr<const Info> frozen) : info_(std::move(frozen)) {
    finalized = true;
  }
  const std::shared_ptr<const Info>& info() const { return info_; }

 protected:
  Info& draft() { return *draft_; }
  const Info& current() const { return finalized ? *info_ : *draft_; }
  void Freeze() {
    info_ = draft_;
    finalized = true;
  }

 private:
  std::shared_ptr<Info> draft_;
  std::shared_ptr<const Info> info_;
};

}  // namespace simgpu::cudnn::backend

#endif  // POOCH_TESTS_SIMGPU_CUDNN_BACKEND_ATTR_H_
