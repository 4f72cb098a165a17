// The backend API's data descriptors: tensors, convolution, pointwise, reduction and matmul
// descriptors, and the operations over them. Each checks its own attributes at Finalize; an
// operation checks its operands against each other (ValidateOp).
#include <algorithm>
#include <cmath>

#include "backend.h"
#include "backend_attr.h"

namespace simgpu::cudnn::backend {
namespace {

// ---- Tensor ----

class TensorObject : public InfoObject<TensorInfo> {
 public:
  using InfoObject::InfoObject;

  cudnnStatus_t Set(cudnnBackendAttributeName_t name, const SetArgs& a) override {
    TensorInfo& t = draft();
    switch (name) {
      case CUDNN_ATTR_TENSOR_DATA_TYPE:
        return Mark(SetOne(a, CUDNN_TYPE_DATA_TYPE, &t.type), &type_set_);
      case CUDNN_ATTR_TENSOR_DIMENSIONS:
        return SetValues(a, CUDNN_TYPE_INT64, 1, kMaxRank, t.dim, &dims_);
      case CUDNN_ATTR_TENSOR_STRIDES:
        return SetValues(a, CUDNN_TYPE_INT64, 1, kMaxRank, t.stride, &strides_);
      case CUDNN_ATTR_TENSOR_UNIQUE_ID:
        return Mark(SetOne(a, CUDNN_TYPE_INT64, &t.uid), &uid_set_);
      case CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT:
        return SetOne(a, CUDNN_TYPE_INT64, &t.alignment);
      case CUDNN_ATTR_TENSOR_IS_VIRTUAL:
        return SetOne(a, CUDNN_TYPE_BOOLEAN, &t.is_virtual);
      case CUDNN_ATTR_TENSOR_IS_BY_VALUE:
        return SetOne(a, CUDNN_TYPE_BOOLEAN, &t.by_value);
      case CUDNN_ATTR_TENSOR_VECTOR_COUNT: {
        int64_t v = 0;
        SIMGPU_RETURN_IF_ERROR(SetOne(a, CUDNN_TYPE_INT64, &v));
        if (v == 1) return CUDNN_STATUS_SUCCESS;
        return NotSupported("cudnnBackendSetAttribute", "vectorized tensor (vector count %lld)",
                            static_cast<long long>(v));
      }
      case CUDNN_ATTR_TENSOR_VECTORIZED_DIMENSION: {
        int64_t v = 0;
        return SetOne(a, CUDNN_TYPE_INT64, &v);  // meaningful only with a vector count > 1
      }
      case CUDNN_ATTR_TENSOR_REORDERING_MODE: {
        cudnnBackendTensorReordering_t r;
        SIMGPU_RETURN_IF_ERROR(SetOne(a, CUDNN_TYPE_TENSOR_REORDERING_MODE, &r));
        if (r == CUDNN_TENSOR_REORDERING_NONE) return CUDNN_STATUS_SUCCESS;
        return NotSupported("cudnnBackendSetAttribute", "tensor reordering mode %d",
                            static_cast<int>(r));
      }
      case CUDNN_ATTR_TENSOR_RAGGED_OFFSET_DESC:
        return NotSupported("cudnnBackendSetAttribute", "ragged tensors");
      default:
        return CUDNN_STATUS_BAD_PARAM;
    }
  }

  cudnnStatus_t Get(cudnnBackendAttributeName_t name, const GetArgs& a) const override {
    const TensorInfo& t = current();
    switch (name) {
      case CUDNN_ATTR_TENSOR_DATA_TYPE:
        return GetOne(a, CUDNN_TYPE_DATA_TYPE, t.type);
      case CUDNN_ATTR_TENSOR_DIMENSIONS:
        return GetValues(a, CUDNN_TYPE_INT64, t.dim, finalized ? t.rank : dims_);
      case CUDNN_ATTR_TENSOR_STRIDES:
        return GetValues(a, CUDNN_TYPE_INT64, t.stride, finalized ? t.rank : strides_);
      case CUDNN_ATTR_TENSOR_UNIQUE_ID:
        return GetOne(a, CUDNN_TYPE_INT64, t.uid);
      case CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT:
        return GetOne(a, CUDNN_TYPE_INT64, t.alignment);
      case CUDNN_ATTR_TENSOR_IS_VIRTUAL:
        return GetOne(a, CUDNN_TYPE_BOOLEAN, t.is_virtual);
      case CUDNN_ATTR_TENSOR_IS_BY_VALUE:
        return GetOne(a, CUDNN_TYPE_BOOLEAN, t.by_value);
      case CUDNN_ATTR_TENSOR_VECTOR_COUNT:
        return GetOne(a, CUDNN_TYPE_INT64, int64_t{1});
      case CUDNN_ATTR_TENSOR_VECTORIZED_DIMENSION:
        return GetOne(a, CUDNN_TYPE_INT64, int64_t{-1});
      case CUDNN_ATTR_TENSOR_REORDERING_MODE:
        return GetOne(a, CUDNN_TYPE_TENSOR_REORDERING_MODE, CUDNN_TENSOR_REORDERING_NONE);
      default:
        return CUDNN_STATUS_BAD_PARAM;
    }
  }

  // Required: type, dims and strides of one rank, uid, alignment; extents and strides positive.
  cudnnStatus_t Finalize() override {
    TensorInfo& t = draft();
    if (!type_set_ || !uid_set_ || dims_ == 0 || dims_ != strides_ || t.alignment <= 0) {
      return CUDNN_STATUS_BAD_PARAM;
    }
    for (int i = 0; i < dims_; ++i) {
      if (t.dim[i] <= 0 || t.stride[i] <= 0) return CUDNN_STATUS_BAD_PARAM;
    }
    if (ElementBytes(t.type) == 0) {
      return NotSupported("cudnnBackendFinalize", "tensor data type %d", static_cast<int>(t.type));
    }
    if (t.by_value && t.is_virtual) return CUDNN_STATUS_BAD_PARAM;
    t.rank = dims_;
    Freeze();
    return CUDNN_STATUS_SUCCESS;
  }

 private:
  bool type_set_ = false, uid_set_ = false;
  int dims_ = 0, strides_ = 0;
};

// ---- Convolution ----

class ConvObject : public InfoObject<ConvInfo> {
 public:
  using InfoObject::InfoObject;

  cudnnStatus_t Set(cudnnBackendAttributeName_t name, const SetArgs& a) override {
    ConvInfo& c = draft();
    switch (name) {
      case CUDNN_ATTR_CONVOLUTION_COMP_TYPE:
        return SetOne(a, CUDNN_TYPE_DATA_TYPE, &c.compute);
      case CUDNN_ATTR_CONVOLUTION_CONV_MODE:
        return SetOne(a, CUDNN_TYPE_CONVOLUTION_MODE, &c.mode);
      case CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS: {
        int64_t n = 0;
        SIMGPU_RETURN_IF_ERROR(SetOne(a, CUDNN_TYPE_INT64, &n));
        if (n < 1 || n > kMaxRank - 2) return CUDNN_STATUS_BAD_PARAM;
        c.spatial = static_cast<int>(n);
        return CUDNN_STATUS_SUCCESS;
      }
      case CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS:
        return SetValues(a, CUDNN_TYPE_INT64, 1, kMaxRank - 2, c.pre, &n_[0]);
      case CUDNN_ATTR_CONVOLUTION_POST_PADDINGS:
        return SetValues(a, CUDNN_TYPE_INT64, 1, kMaxRank - 2, c.post, &n_[1]);
      case CUDNN_ATTR_CONVOLUTION_DILATIONS:
        return SetValues(a, CUDNN_TYPE_INT64, 1, kMaxRank - 2, c.dilation, &n_[2]);
      case CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES:
        return SetValues(a, CUDNN_TYPE_INT64, 1, kMaxRank - 2, c.stride, &n_[3]);
      default:
        return CUDNN_STATUS_BAD_PARAM;
    }
  }

  cudnnStatus_t Get(cudnnBackendAttributeName_t name, const GetArgs& a) const override {
    const ConvInfo& c = current();
    switch (name) {
      case CUDNN_ATTR_CONVOLUTION_COMP_TYPE:
        return GetOne(a, CUDNN_TYPE_DATA_TYPE, c.compute);
      case CUDNN_ATTR_CONVOLUTION_CONV_MODE:
        return GetOne(a, CUDNN_TYPE_CONVOLUTION_MODE, c.mode);
      case CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS:
        return GetOne(a, CUDNN_TYPE_INT64, static_cast<int64_t>(c.spatial));
      case CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS:
        return GetValues(a, CUDNN_TYPE_INT64, c.pre, c.spatial);
      case CUDNN_ATTR_CONVOLUTION_POST_PADDINGS:
        return GetValues(a, CUDNN_TYPE_INT64, c.post, c.spatial);
      case CUDNN_ATTR_CONVOLUTION_DILATIONS:
        return GetValues(a, CUDNN_TYPE_INT64, c.dilation, c.spatial);
      case CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES:
        return GetValues(a, CUDNN_TYPE_INT64, c.stride, c.spatial);
      default:
        return CUDNN_STATUS_BAD_PARAM;
    }
  }

  cudnnStatus_t Finalize() override {
    ConvInfo& c = draft();
    if (c.spatial == 0) return CUDNN_STATUS_BAD_PARAM;
    for (int n : n_) {
      if (n != c.spatial) return CUDNN_STATUS_BAD_PARAM;
    }
    if (c.mode != CUDNN_CONVOLUTION && c.mode != CUDNN_CROSS_CORRELATION) {
      return CUDNN_STATUS_BAD_PARAM;
    }
    for (int i = 0; i < c.spatial; ++i) {
      if (c.pre[i] < 0 || c.post[i] < 0 || c.dilation[i] <= 0 || c.stride[i] <= 0) {
        return CUDNN_STATUS_BAD_PARAM;
      }
    }
    Freeze();
    return CUDNN_STATUS_SUCCESS;
  }

 private:
  int n_[4] = {};  // counts of pre, post, dilation, stride
};

// ---- Pointwise ----

class PointwiseObject : public InfoObject<PointwiseInfo> {
 public:
  using InfoObject::InfoObject;

  cudnnStatus_t Set(cudnnBackendAttributeName_t name, const SetArgs& a) override {
    PointwiseInfo& p = draft();
    switch (name) {
      case CUDNN_ATTR_POINTWISE_MODE:
        return Mark(SetOne(a, CUDNN_TYPE_POINTWISE_MODE, &p.mode), &mode_set_);
      case CUDNN_ATTR_POINTWISE_MATH_PREC:
        return SetOne(a, CUDNN_TYPE_DATA_TYPE, &p.precision);
      case CUDNN_ATTR_POINTWISE_NAN_PROPAGATION: {
        cudnnNanPropagation_t nan;
        return SetOne(a, CUDNN_TYPE_NAN_PROPOGATION, &nan);
      }
      case CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP:
        return SetOne(a, CUDNN_TYPE_DOUBLE, &p.relu_lower);
      case CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP:
        return SetOne(a, CUDNN_TYPE_DOUBLE, &p.relu_upper);
      case CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE:
        return SetOne(a, CUDNN_TYPE_DOUBLE, &p.relu_slope);
      case CUDNN_ATTR_POINTWISE_ELU_ALPHA:
        return SetOne(a, CUDNN_TYPE_DOUBLE, &p.elu_alpha);
      case CUDNN_ATTR_POINTWISE_SOFTPLUS_BETA:
        return SetOne(a, CUDNN_TYPE_DOUBLE, &p.softplus_beta);
      case CUDNN_ATTR_POINTWISE_SWISH_BETA:
        return SetOne(a, CUDNN_TYPE_DOUBLE, &p.swish_beta);
      case CUDNN_ATTR_POINTWISE_AXIS:
        return SetOne(a, CUDNN_TYPE_INT64, &p.axis);
      default:
        return CUDNN_STATUS_BAD_PARAM;
    }
  }

  cudnnStatus_t Get(cudnnBackendAttributeName_t name, const GetArgs& a) const override {
    const PointwiseInfo& p = current();
    switch (name) {
      case CUDNN_ATTR_POINTWISE_MODE:
        return GetOne(a, CUDNN_TYPE_POINTWISE_MODE, p.mode);
      case CUDNN_ATTR_POINTWISE_MATH_PREC:
        return GetOne(a, CUDNN_TYPE_DATA_TYPE, p.precision);
      case CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP:
        return GetOne(a, CUDNN_TYPE_DOUBLE, p.relu_lower);
      case CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP:
        return GetOne(a, CUDNN_TYPE_DOUBLE, p.relu_upper);
      case CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE:
        return GetOne(a, CUDNN_TYPE_DOUBLE, p.relu_slope);
      case CUDNN_ATTR_POINTWISE_ELU_ALPHA:
        return GetOne(a, CUDNN_TYPE_DOUBLE, p.elu_alpha);
      case CUDNN_ATTR_POINTWISE_SOFTPLUS_BETA:
        return GetOne(a, CUDNN_TYPE_DOUBLE, p.softplus_beta);
      case CUDNN_ATTR_POINTWISE_SWISH_BETA:
        return GetOne(a, CUDNN_TYPE_DOUBLE, p.swish_beta);
      case CUDNN_ATTR_POINTWISE_AXIS:
        return GetOne(a, CUDNN_TYPE_INT64, p.axis);
      default:
        return CUDNN_STATUS_BAD_PARAM;
    }
  }

  cudnnStatus_t Finalize() override {
    if (!mode_set_ || PointwiseArity(draft().mode) == 0) return CUDNN_STATUS_BAD_PARAM;
    Freeze();
    return CUDNN_STATUS_SUCCESS;
  }

 private:
  bool mode_set_ = false;
};

// ---- Reduction and matmul ----

class ReductionObject : public InfoObject<ReductionInfo> {
 public:
  using InfoObject::InfoObject;

  cudnnStatus_t Set(cudnnBackendAttributeName_t name, const SetArgs& a) override {
    switch (name) {
      case CUDNN_ATTR_REDUCTION_OPERATOR:
        return Mark(SetOne(a, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, &draft().op), &op_set_);
      case CUDNN_ATTR_REDUCTION_COMP_TYPE:
        return SetOne(a, CUDNN_TYPE_DATA_TYPE, &draft().compute);
      case CUDNN_ATTR_REDUCTION_IS_DETERMINISTIC: {
        bool det;  // every reduction here is deterministic
        return SetOne(a, CUDNN_TYPE_BOOLEAN, &det);
      }
      default:
        return CUDNN_STATUS_BAD_PARAM;
    }
  }
  cudnnStatus_t Get(cudnnBackendAttributeName_t name, const GetArgs& a) const override {
    switch (name) {
      case CUDNN_ATTR_REDUCTION_OPERATOR:
        return GetOne(a, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, current().op);
      case CUDNN_ATTR_REDUCTION_COMP_TYPE:
        return GetOne(a, CUDNN_TYPE_DATA_TYPE, current().compute);
      case CUDNN_ATTR_REDUCTION_IS_DETERMINISTIC:
        return GetOne(a, CUDNN_TYPE_BOOLEAN, true);
      default:
        return CUDNN_STATUS_BAD_PARAM;
    }
  }
  cudnnStatus_t Finalize() override {
    if (!op_set_) return CUDNN_STATUS_BAD_PARAM;
    Freeze();
    return CUDNN_STATUS_SUCCESS;
  }

 private:
  bool op_set_ = false;
};

class MatmulObject : public InfoObject<MatmulInfo> {
 public:
  using InfoObject::InfoObject;

  cudnnStatus_t Set(cudnnBackendAttributeName_t name, const SetArgs& a) override {
    switch (name) {
      case CUDNN_ATTR_MATMUL_COMP_TYPE:
        return SetOne(a, CUDNN_TYPE_DATA_TYPE, &draft().compute);
      case CUDNN_ATTR_MATMUL_PADDING_VALUE: {
        double v = 0;
        SIMGPU_RETURN_IF_ERROR(SetOne(a, CUDNN_TYPE_DOUBLE, &v));
        if (v == 0.0) return CUDNN_STATUS_SUCCESS;
        return NotSupported("cudnnBackendSetAttribute", "matmul padding value %g", v);
      }
      default:
        return CUDNN_STATUS_BAD_PARAM;
    }
  }
  cudnnStatus_t Get(cudnnBackendAttributeName_t name, const GetArgs& a) const override {
    if (name == CUDNN_ATTR_MATMUL_COMP_TYPE) {
      return GetOne(a, CUDNN_TYPE_DATA_TYPE, current().compute);
    }
    return CUDNN_STATUS_BAD_PARAM;
  }
  cudnnStatus_t Finalize() override {
    Freeze();
    return CUDNN_STATUS_SUCCESS;
  }
};

// ---- Operations ----

// One attribute of an operation: what it holds and, for tensors, the role.
struct Slot {
  cudnnBackendAttributeName_t name;
  enum What { kTensor, kConv, kPointwise, kReduction, kMatmul, kAlpha, kBeta, kAlpha2 } what;
  Role role;
};

// The attributes each operation type has.
std::vector<Slot> SlotsOf(cudnnBackendDescriptorType_t kind) {
  switch (kind) {
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
      return {{CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, Slot::kAlpha, kX},
              {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, Slot::kBeta, kX},
              {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, Slot::kConv, kX},
              {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, Slot::kTensor, kW},
              {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, Slot::kTensor, kX},
              {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, Slot::kTensor, kY}};
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
      return {{CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, Slot::kAlpha, kX},
              {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, Slot::kBeta, kX},
              {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, Slot::kConv, kX},
              {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, Slot::kTensor, kW},
              {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, Slot::kTensor, kDx},
              {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, Slot::kTensor, kDy}};
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
      return {{CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, Slot::kAlpha, kX},
              {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA, Slot::kBeta, kX},
              {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, Slot::kConv, kX},
              {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, Slot::kTensor, kDw},
              {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, Slot::kTensor, kX},
              {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, Slot::kTensor, kDy}};
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
      return {{CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, Slot::kPointwise, kX},
              {CUDNN_ATTR_OPERATION_POINTWISE_XDESC, Slot::kTensor, kX},
              {CUDNN_ATTR_OPERATION_POINTWISE_BDESC, Slot::kTensor, kB},
              {CUDNN_ATTR_OPERATION_POINTWISE_YDESC, Slot::kTensor, kY},
              {CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, Slot::kAlpha, kX},
              {CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, Slot::kAlpha2, kX},
              {CUDNN_ATTR_OPERATION_POINTWISE_DXDESC, Slot::kTensor, kDx},
              {CUDNN_ATTR_OPERATION_POINTWISE_DYDESC, Slot::kTensor, kDy},
              {CUDNN_ATTR_OPERATION_POINTWISE_TDESC, Slot::kTensor, kT}};
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
      return {{CUDNN_ATTR_OPERATION_REDUCTION_XDESC, Slot::kTensor, kX},
              {CUDNN_ATTR_OPERATION_REDUCTION_YDESC, Slot::kTensor, kY},
              {CUDNN_ATTR_OPERATION_REDUCTION_DESC, Slot::kReduction, kX}};
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
      return {{CUDNN_ATTR_OPERATION_MATMUL_ADESC, Slot::kTensor, kA},
              {CUDNN_ATTR_OPERATION_MATMUL_BDESC, Slot::kTensor, kMatB},
              {CUDNN_ATTR_OPERATION_MATMUL_CDESC, Slot::kTensor, kC},
              {CUDNN_ATTR_OPERATION_MATMUL_DESC, Slot::kMatmul, kX}};
    default:
      return {};
  }
}

class OpObject : public InfoObject<OpInfo> {
 public:
  explicit OpObject(cudnnBackendDescriptorType_t kind) : slots_(SlotsOf(kind)) {
    draft().kind = kind;
  }
  explicit OpObject(std::shared_ptr<const OpInfo> frozen)
      : InfoObject(frozen), slots_(SlotsOf(frozen->kind)) {}

  cudnnStatus_t Set(cudnnBackendAttributeName_t name, const SetArgs& a) override {
    const Slot* s = Find(name);
    if (s == nullptr) {
      if (name == CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC ||
          name == CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC ||
          name == CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC) {
        return NotSupported("cudnnBackendSetAttribute", "matmul with GEMM override tensors");
      }
      return CUDNN_STATUS_BAD_PARAM;
    }
    OpInfo& op = draft();
    std::shared_ptr<Object> o;
    switch (s->what) {
      case Slot::kAlpha:
        return SetScalar(a, &op.alpha);
      case Slot::kBeta:
        return SetScalar(a, &op.beta);
      case Slot::kAlpha2:
        return SetScalar(a, &op.alpha2);
      case Slot::kTensor:
        SIMGPU_RETURN_IF_ERROR(SetDesc(a, CUDNN_BACKEND_TENSOR_DESCRIPTOR, &o));
        op.tensor[s->role] = TensorOf(o);
        return CUDNN_STATUS_SUCCESS;
      case Slot::kConv:
        SIMGPU_RETURN_IF_ERROR(SetDesc(a, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &o));
        op.conv = ConvOf(o);
        return CUDNN_STATUS_SUCCESS;
      case Slot::kPointwise:
        SIMGPU_RETURN_IF_ERROR(SetDesc(a, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, &o));
        op.pointwise = PointwiseOf(o);
        return CUDNN_STATUS_SUCCESS;
      case Slot::kReduction:
        SIMGPU_RETURN_IF_ERROR(SetDesc(a, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, &o));
        op.reduction = ReductionOf(o);
        return CUDNN_STATUS_SUCCESS;
      case Slot::kMatmul:
        SIMGPU_RETURN_IF_ERROR(SetDesc(a, CUDNN_BACKEND_MATMUL_DESCRIPTOR, &o));
        op.matmul = MatmulOf(o);
        return CUDNN_STATUS_SUCCESS;
    }
    return CUDNN_STATUS_BAD_PARAM;
  }

  cudnnStatus_t Get(cudnnBackendAttributeName_t name, const GetArgs& a) const override {
    const Slot* s = Find(name);
    if (s == nullptr) return CUDNN_STATUS_BAD_PARAM;
    const OpInfo& op = current();
    switch (s->what) {
      case Slot::kAlpha:
        return GetScalar(a, op.alpha);
      case Slot::kBeta:
        return GetScalar(a, op.beta);
      case Slot::kAlpha2:
        return GetScalar(a, op.alpha2);
      case Slot::kTensor:
        if (op.tensor[s->role] == nullptr) return GetDescs(a, CUDNN_BACKEND_TENSOR_DESCRIPTOR, {});
        return GetDescs(a, CUDNN_BACKEND_TENSOR_DESCRIPTOR,
                        {std::make_shared<TensorObject>(op.tensor[s->role])});
      case Slot::kConv:
        if (op.conv == nullptr) return GetDescs(a, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, {});
        return GetDescs(a, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR,
                        {std::make_shared<ConvObject>(op.conv)});
      case Slot::kPointwise:
        if (op.pointwise == nullptr) return GetDescs(a, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, {});
        return GetDescs(a, CUDNN_BACKEND_POINTWISE_DESCRIPTOR,
                        {std::make_shared<PointwiseObject>(op.pointwise)});
      case Slot::kReduction:
        if (op.reduction == nullptr) return GetDescs(a, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, {});
        return GetDescs(a, CUDNN_BACKEND_REDUCTION_DESCRIPTOR,
                        {std::make_shared<ReductionObject>(op.reduction)});
      case Slot::kMatmul:
        if (op.matmul == nullptr) return GetDescs(a, CUDNN_BACKEND_MATMUL_DESCRIPTOR, {});
        return GetDescs(a, CUDNN_BACKEND_MATMUL_DESCRIPTOR,
                        {std::make_shared<MatmulObject>(op.matmul)});
    }
    return CUDNN_STATUS_BAD_PARAM;
  }

  cudnnStatus_t Finalize() override {
    SIMGPU_RETURN_IF_ERROR(ValidateOp(draft()));
    Freeze();
    return CUDNN_STATUS_SUCCESS;
  }

 private:
  const Slot* Find(cudnnBackendAttributeName_t name) const {
    for (const Slot& s : slots_) {
      if (s.name == name) return &s;
    }
    return nullptr;
  }

  std::vector<Slot> slots_;
};

bool IsOperation(cudnnBackendDescriptorType_t t) { return !SlotsOf(t).empty(); }

// ---- Operand checks ----

bool SameDims(const TensorInfo& a, const TensorInfo& b) {
  return a.rank == b.rank && std::equal(a.dim, a.dim + a.rank, b.dim);
}

// Every dim of `in` equals `out`'s or is 1 (ranks equal).
bool Broadcasts(const TensorInfo& in, const TensorInfo& out) {
  if (in.rank != out.rank) return false;
  for (int i = 0; i < in.rank; ++i) {
    if (in.dim[i] != out.dim[i] && in.dim[i] != 1) return false;
  }
  return true;
}

// x (n, c, spatial...), w (k, c / groups, filter...), y (n, k, out...): ranks, groups and the
// output extents the convolution's paddings, strides and dilations give.
cudnnStatus_t ValidateConv(const ConvInfo& c, const TensorInfo& x, const TensorInfo& w,
                           const TensorInfo& y) {
  const int rank = c.spatial + 2;
  if (x.rank != rank || w.rank != rank || y.rank != rank) return CUDNN_STATUS_BAD_PARAM;
  if (x.dim[1] % w.dim[1] != 0) return CUDNN_STATUS_BAD_PARAM;
  const int64_t groups = x.dim[1] / w.dim[1];
  if (w.dim[0] % groups != 0 || y.dim[0] != x.dim[0] || y.dim[1] != w.dim[0]) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  for (int i = 0; i < c.spatial; ++i) {
    const int64_t span = (w.dim[i + 2] - 1) * c.dilation[i] + 1;
    const int64_t padded = x.dim[i + 2] + c.pre[i] + c.post[i];
    if (padded < span || (padded - span) / c.stride[i] + 1 != y.dim[i + 2]) {
      return CUDNN_STATUS_BAD_PARAM;
    }
  }
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace

// ---- Shared helpers ----

int ElementBytes(cudnnDataType_t t) {
  switch (t) {
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

int64_t TensorInfo::Elements() const {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= dim[i];
  return n;
}

int64_t TensorInfo::Span() const {
  int64_t s = 1;
  for (int i = 0; i < rank; ++i) s += (dim[i] - 1) * stride[i];
  return s;
}

uint64_t TensorInfo::SpanBytes() const {
  return static_cast<uint64_t>(Span()) * static_cast<uint64_t>(ElementBytes(type));
}

bool TensorInfo::SameLayout(const TensorInfo& o) const {
  return type == o.type && is_virtual == o.is_virtual && by_value == o.by_value &&
         SameDims(*this, o) && std::equal(stride, stride + rank, o.stride);
}

int PointwiseArity(cudnnPointwiseMode_t mode) {
  switch (mode) {
    case CUDNN_POINTWISE_ADD:
    case CUDNN_POINTWISE_ADD_SQUARE:
    case CUDNN_POINTWISE_DIV:
    case CUDNN_POINTWISE_MAX:
    case CUDNN_POINTWISE_MIN:
    case CUDNN_POINTWISE_MOD:
    case CUDNN_POINTWISE_MUL:
    case CUDNN_POINTWISE_POW:
    case CUDNN_POINTWISE_SUB:
    case CUDNN_POINTWISE_ATAN2:
    case CUDNN_POINTWISE_CMP_EQ:
    case CUDNN_POINTWISE_CMP_NEQ:
    case CUDNN_POINTWISE_CMP_GT:
    case CUDNN_POINTWISE_CMP_GE:
    case CUDNN_POINTWISE_CMP_LT:
    case CUDNN_POINTWISE_CMP_LE:
    case CUDNN_POINTWISE_LOGICAL_AND:
    case CUDNN_POINTWISE_LOGICAL_OR:
      return 2;
    case CUDNN_POINTWISE_BINARY_SELECT:
      return 3;
    case CUDNN_POINTWISE_ABS:
    case CUDNN_POINTWISE_CEIL:
    case CUDNN_POINTWISE_COS:
    case CUDNN_POINTWISE_EXP:
    case CUDNN_POINTWISE_FLOOR:
    case CUDNN_POINTWISE_LOG:
    case CUDNN_POINTWISE_NEG:
    case CUDNN_POINTWISE_RSQRT:
    case CUDNN_POINTWISE_SIN:
    case CUDNN_POINTWISE_SQRT:
    case CUDNN_POINTWISE_TAN:
    case CUDNN_POINTWISE_ERF:
    case CUDNN_POINTWISE_IDENTITY:
    case CUDNN_POINTWISE_RECIPROCAL:
    case CUDNN_POINTWISE_RELU_FWD:
    case CUDNN_POINTWISE_TANH_FWD:
    case CUDNN_POINTWISE_SIGMOID_FWD:
    case CUDNN_POINTWISE_ELU_FWD:
    case CUDNN_POINTWISE_GELU_FWD:
    case CUDNN_POINTWISE_SOFTPLUS_FWD:
    case CUDNN_POINTWISE_SWISH_FWD:
    case CUDNN_POINTWISE_GELU_APPROX_TANH_FWD:
    case CUDNN_POINTWISE_LOGICAL_NOT:
    case CUDNN_POINTWISE_GEN_INDEX:
      return 1;
    case CUDNN_POINTWISE_RELU_BWD:
    case CUDNN_POINTWISE_TANH_BWD:
    case CUDNN_POINTWISE_SIGMOID_BWD:
    case CUDNN_POINTWISE_ELU_BWD:
    case CUDNN_POINTWISE_GELU_BWD:
    case CUDNN_POINTWISE_SOFTPLUS_BWD:
    case CUDNN_POINTWISE_SWISH_BWD:
    case CUDNN_POINTWISE_GELU_APPROX_TANH_BWD:
      return 2;  // x (or y) and dy
    default:
      return 0;
  }
}

bool PointwiseBackward(cudnnPointwiseMode_t mode) {
  return mode >= CUDNN_POINTWISE_RELU_BWD && mode <= CUDNN_POINTWISE_GELU_APPROX_TANH_BWD;
}

std::vector<Role> OpInfo::Inputs() const {
  switch (kind) {
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
      return {kX, kW};
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
      return {kDy, kW};
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
      return {kX, kDy};
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR: {
      if (PointwiseBackward(pointwise->mode)) return {kX, kDy};
      const int arity = PointwiseArity(pointwise->mode);
      if (arity == 3) return {kX, kB, kT};
      if (arity == 2) return {kX, kB};
      return {kX};
    }
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
      return {kX};
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
      return {kA, kMatB};
    default:
      return {};
  }
}

std::vector<Role> OpInfo::Outputs() const {
  switch (kind) {
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
      return {kY};
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
      return {kDx};
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
      return {kDw};
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
      return {PointwiseBackward(pointwise->mode) ? kDx : kY};
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
      return {kY};
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
      return {kC};
    default:
      return {};
  }
}

double OpInfo::Flops() const {
  switch (kind) {
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR: {
      // 2 * N * K * (C / groups) * prod(filter) * prod(output): the same for all three passes.
      const TensorInfo& x =
          *tensor[kind == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR ? kDx : kX];
      const TensorInfo& w =
          *tensor[kind == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR ? kDw
                                                                                         : kW];
      const TensorInfo& y =
          *tensor[kind == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR ? kY : kDy];
      double f = 2.0 * static_cast<double>(x.dim[0]) * static_cast<double>(w.Elements());
      for (int i = 2; i < y.rank; ++i) f *= static_cast<double>(y.dim[i]);
      return f;
    }
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
      return static_cast<double>(tensor[Outputs()[0]]->Elements());
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
      return static_cast<double>(tensor[kX]->Elements());
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR: {
      // c = a (.., m, k) x b (.., k, n): 2 * batch * m * n * k.
      const TensorInfo& a = *tensor[kA];
      return 2.0 * static_cast<double>(tensor[kC]->Elements()) *
             static_cast<double>(a.dim[a.rank - 1]);
    }
    default:
      return 0;
  }
}

cudnnStatus_t ValidateOp(const OpInfo& op) {
  switch (op.kind) {
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
      if (!op.conv || !op.tensor[kX] || !op.tensor[kW] || !op.tensor[kY]) {
        return CUDNN_STATUS_BAD_PARAM;
      }
      return ValidateConv(*op.conv, *op.tensor[kX], *op.tensor[kW], *op.tensor[kY]);
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
      if (!op.conv || !op.tensor[kDx] || !op.tensor[kW] || !op.tensor[kDy]) {
        return CUDNN_STATUS_BAD_PARAM;
      }
      return ValidateConv(*op.conv, *op.tensor[kDx], *op.tensor[kW], *op.tensor[kDy]);
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
      if (!op.conv || !op.tensor[kX] || !op.tensor[kDw] || !op.tensor[kDy]) {
        return CUDNN_STATUS_BAD_PARAM;
      }
      return ValidateConv(*op.conv, *op.tensor[kX], *op.tensor[kDw], *op.tensor[kDy]);
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR: {
      if (!op.pointwise) return CUDNN_STATUS_BAD_PARAM;
      const OpInfo& o = op;
      for (Role r : o.Inputs()) {
        if (!o.tensor[r]) return CUDNN_STATUS_BAD_PARAM;
      }
      const Role out = o.Outputs()[0];
      if (!o.tensor[out]) return CUDNN_STATUS_BAD_PARAM;
      for (Role r : o.Inputs()) {
        if (!o.tensor[r]->by_value && !Broadcasts(*o.tensor[r], *o.tensor[out])) {
          return CUDNN_STATUS_BAD_PARAM;
        }
      }
      return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
      if (!op.reduction || !op.tensor[kX] || !op.tensor[kY]) return CUDNN_STATUS_BAD_PARAM;
      return Broadcasts(*op.tensor[kY], *op.tensor[kX]) ? CUDNN_STATUS_SUCCESS
                                                        : CUDNN_STATUS_BAD_PARAM;
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR: {
      if (!op.matmul || !op.tensor[kA] || !op.tensor[kMatB] || !op.tensor[kC]) {
        return CUDNN_STATUS_BAD_PARAM;
      }
      const TensorInfo &a = *op.tensor[kA], &b = *op.tensor[kMatB], &c = *op.tensor[kC];
      const int r = a.rank;
      if (r < 2 || b.rank != r || c.rank != r) return CUDNN_STATUS_BAD_PARAM;
      if (a.dim[r - 1] != b.dim[r - 2] || c.dim[r - 2] != a.dim[r - 2] ||
          c.dim[r - 1] != b.dim[r - 1]) {
        return CUDNN_STATUS_BAD_PARAM;
      }
      for (int i = 0; i < r - 2; ++i) {
        const bool ok =
            (a.dim[i] == c.dim[i] || a.dim[i] == 1) && (b.dim[i] == c.dim[i] || b.dim[i] == 1);
        if (!ok) return CUDNN_STATUS_BAD_PARAM;
      }
      return CUDNN_STATUS_SUCCESS;
    }
    default:
      return CUDNN_STATUS_BAD_PARAM;
  }
}

// ---- Object factories and accessors for this file's types ----

std::shared_ptr<Object> NewDataObject(cudnnBackendDescriptorType_t type) {
  switch (type) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
      return std::make_shared<TensorObject>();
    case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR:
      return std::make_shared<ConvObject>();
    case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
      return std::make_shared<PointwiseObject>();
    case CUDNN_BACKEND_REDUCTION_DESCRIPTOR:
      return std::make_shared<ReductionObject>();
    case CUDNN_BACKEND_MATMUL_DESCRIPTOR:
      return std::make_shared<MatmulObject>();
    default:
      if (IsOperation(type)) return std::make_shared<OpObject>(type);
      return nullptr;
  }
}

std::shared_ptr<Object> OpObjectFor(std::shared_ptr<const OpInfo> op) {
  return std::make_shared<OpObject>(std::move(op));
}

template <typename Obj, typename Info>
std::shared_ptr<const Info> InfoOf(const std::shared_ptr<Object>& o) {
  const Obj* p = dynamic_cast<const Obj*>(o.get());
  return p != nullptr ? p->info() : nullptr;
}

std::shared_ptr<const TensorInfo> TensorOf(const std::shared_ptr<Object>& o) {
  return InfoOf<TensorObject, TensorInfo>(o);
}
std::shared_ptr<const ConvInfo> ConvOf(const std::shared_ptr<Object>& o) {
  return InfoOf<ConvObject, ConvInfo>(o);
}
std::shared_ptr<const PointwiseInfo> PointwiseOf(const std::shared_ptr<Object>& o) {
  return InfoOf<PointwiseObject, PointwiseInfo>(o);
}
std::shared_ptr<const ReductionInfo> ReductionOf(const std::shared_ptr<Object>& o) {
  return InfoOf<ReductionObject, ReductionInfo>(o);
}
std::shared_ptr<const MatmulInfo> MatmulOf(const std::shared_ptr<Object>& o) {
  return InfoOf<MatmulObject, MatmulInfo>(o);
}
std::shared_ptr<const OpInfo> OpOf(const std::shared_ptr<Object>& o) {
  return InfoOf<OpObject, OpInfo>(o);
}

}  // namespace simgpu::cudnn::backend
