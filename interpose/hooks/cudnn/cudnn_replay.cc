// cudnn_replay.cc: copies of cuDNN descriptors and the replay recipes built from them.
#include "interpose/hooks/cudnn/cudnn_replay.h"

#include <algorithm>
#include <memory>
#include <type_traits>
#include <utility>

#include "interpose/symbols/hook_table.h"

namespace pooch::interpose {
namespace {

constexpr int kMaxDims = 8;  // CUDNN_DIM_MAX
// A convolution or pooling descriptor's spatial dimensions: a tensor's less its batch and
// channel dimensions, so no descriptor holds more, and a copy asks its getter for no more.
constexpr int kMaxSpatialDims = kMaxDims - 2;
constexpr cudnnStatus_t kOk = CUDNN_STATUS_SUCCESS;

template <typename Desc>
using Owned = std::shared_ptr<std::remove_pointer_t<Desc>>;

// A descriptor of pooch's own, destroyed with the last recipe that holds it. `create`,
// `destroy`: the real functions (null when cuDNN does not have them: no copy).
template <typename Desc, typename Create, typename Destroy>
Owned<Desc> NewDescriptor(Create create, Destroy destroy) {
  Desc d = nullptr;
  if (create == nullptr || destroy == nullptr || create(&d) != kOk) return nullptr;
  return Owned<Desc>(d, [destroy](Desc p) { destroy(p); });
}

struct TensorCopy {
  Owned<cudnnTensorDescriptor_t> desc;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
};

std::optional<TensorCopy> CopyTensor(cudnnTensorDescriptor_t d) {
  const auto get = real::cudnnGetTensorNdDescriptor();
  const auto set = real::cudnnSetTensorNdDescriptor();
  if (d == nullptr || get == nullptr || set == nullptr) return std::nullopt;
  TensorCopy c;
  int n = 0, dims[kMaxDims], strides[kMaxDims];
  if (get(d, kMaxDims, &c.type, &n, dims, strides) != kOk || n < 1 || n > kMaxDims) {
    return std::nullopt;
  }
  c.desc = NewDescriptor<cudnnTensorDescriptor_t>(real::cudnnCreateTensorDescriptor(),
                                                  real::cudnnDestroyTensorDescriptor());
  if (c.desc == nullptr || set(c.desc.get(), c.type, n, dims, strides) != kOk) return std::nullopt;
  return c;
}

Owned<cudnnFilterDescriptor_t> CopyFilter(cudnnFilterDescriptor_t d) {
  const auto get = real::cudnnGetFilterNdDescriptor();
  const auto set = real::cudnnSetFilterNdDescriptor();
  if (d == nullptr || get == nullptr || set == nullptr) return nullptr;
  cudnnDataType_t type;
  cudnnTensorFormat_t format;
  int n = 0, dims[kMaxDims];
  if (get(d, kMaxDims, &type, &format, &n, dims) != kOk || n < 1 || n > kMaxDims) return nullptr;
  auto c = NewDescriptor<cudnnFilterDescriptor_t>(real::cudnnCreateFilterDescriptor(),
                                                  real::cudnnDestroyFilterDescriptor());
  if (c == nullptr || set(c.get(), type, format, n, dims) != kOk) return nullptr;
  return c;
}

// Every setting a convolution descriptor has: geometry, mode, compute type, math type, groups
// and reorder type. A setting that cannot be read means no copy: a replay with a different
// math type would not be bit-identical.
Owned<cudnnConvolutionDescriptor_t> CopyConvolution(cudnnConvolutionDescriptor_t d) {
  const auto get = real::cudnnGetConvolutionNdDescriptor();
  const auto set = real::cudnnSetConvolutionNdDescriptor();
  const auto get_math = real::cudnnGetConvolutionMathType();
  const auto set_math = real::cudnnSetConvolutionMathType();
  const auto get_groups = real::cudnnGetConvolutionGroupCount();
  const auto set_groups = real::cudnnSetConvolutionGroupCount();
  const auto get_reorder = real::cudnnGetConvolutionReorderType();
  const auto set_reorder = real::cudnnSetConvolutionReorderType();
  if (d == nullptr || !get || !set || !get_math || !set_math || !get_groups || !set_groups ||
      !get_reorder || !set_reorder) {
    return nullptr;
  }
  int n = 0, pad[kMaxSpatialDims], stride[kMaxSpatialDims], dilation[kMaxSpatialDims], groups = 1;
  cudnnConvolutionMode_t mode;
  cudnnDataType_t compute;
  cudnnMathType_t math;
  cudnnReorderType_t reorder;
  if (get(d, kMaxSpatialDims, &n, pad, stride, dilation, &mode, &compute) != kOk || n < 1 ||
      n > kMaxSpatialDims || get_math(d, &math) != kOk || get_groups(d, &groups) != kOk ||
      get_reorder(d, &reorder) != kOk) {
    return nullptr;
  }
  auto c = NewDescriptor<cudnnConvolutionDescriptor_t>(real::cudnnCreateConvolutionDescriptor(),
                                                       real::cudnnDestroyConvolutionDescriptor());
  if (c == nullptr || set(c.get(), n, pad, stride, dilation, mode, compute) != kOk ||
      set_math(c.get(), math) != kOk || set_groups(c.get(), groups) != kOk ||
      set_reorder(c.get(), reorder) != kOk) {
    return nullptr;
  }
  return c;
}

Owned<cudnnActivationDescriptor_t> CopyActivation(cudnnActivationDescriptor_t d) {
  const auto get = real::cudnnGetActivationDescriptor();
  const auto set = real::cudnnSetActivationDescriptor();
  if (d == nullptr || get == nullptr || set == nullptr) return nullptr;
  cudnnActivationMode_t mode;
  cudnnNanPropagation_t nan;
  double coef = 0;
  // Swish has one more setting (its beta), not copied: not replayed.
  if (get(d, &mode, &nan, &coef) != kOk || mode == CUDNN_ACTIVATION_SWISH) return nullptr;
  auto c = NewDescriptor<cudnnActivationDescriptor_t>(real::cudnnCreateActivationDescriptor(),
                                                      real::cudnnDestroyActivationDescriptor());
  if (c == nullptr || set(c.get(), mode, nan, coef) != kOk) return nullptr;
  return c;
}

Owned<cudnnPoolingDescriptor_t> CopyPooling(cudnnPoolingDescriptor_t d) {
  const auto get = real::cudnnGetPoolingNdDescriptor();
  const auto set = real::cudnnSetPoolingNdDescriptor();
  if (d == nullptr || get == nullptr || set == nullptr) return nullptr;
  cudnnPoolingMode_t mode;
  cudnnNanPropagation_t nan;
  int n = 0, window[kMaxSpatialDims], pad[kMaxSpatialDims], stride[kMaxSpatialDims];
  if (get(d, kMaxSpatialDims, &mode, &nan, &n, window, pad, stride) != kOk || n < 1 ||
      n > kMaxSpatialDims) {
    return nullptr;
  }
  auto c = NewDescriptor<cudnnPoolingDescriptor_t>(real::cudnnCreatePoolingDescriptor(),
                                                   real::cudnnDestroyPoolingDescriptor());
  if (c == nullptr || set(c.get(), mode, nan, n, window, pad, stride) != kOk) return nullptr;
  return c;
}

Owned<cudnnOpTensorDescriptor_t> CopyOpTensor(cudnnOpTensorDescriptor_t d) {
  const auto get = real::cudnnGetOpTensorDescriptor();
  const auto set = real::cudnnSetOpTensorDescriptor();
  if (d == nullptr || get == nullptr || set == nullptr) return nullptr;
  cudnnOpTensorOp_t op;
  cudnnDataType_t type;
  cudnnNanPropagation_t nan;
  if (get(d, &op, &type, &nan) != kOk) return nullptr;
  auto c = NewDescriptor<cudnnOpTensorDescriptor_t>(real::cudnnCreateOpTensorDescriptor(),
                                                    real::cudnnDestroyOpTensorDescriptor());
  if (c == nullptr || set(c.get(), op, type, nan) != kOk) return nullptr;
  return c;
}

// A host scaling factor kept by value: cuDNN reads a double for double tensors and a float for
// every other type.
struct Scalar {
  bool is_double = false;
  float f = 0;
  double d = 0;
  const void* get() const { return is_double ? static_cast<const void*>(&d) : &f; }
  bool zero() const { return is_double ? d == 0 : f == 0; }
};

std::optional<Scalar> ScalarOf(cudnnDataType_t type, const void* p) {
  if (p == nullptr) return std::nullopt;
  Scalar s;
  switch (type) {
    case CUDNN_DATA_DOUBLE:
      s.is_double = true;
      s.d = *static_cast<const double*>(p);
      return s;
    case CUDNN_DATA_FLOAT:
    case CUDNN_DATA_HALF:
    case CUDNN_DATA_BFLOAT16:
      s.f = *static_cast<const float*>(p);
      return s;
    default:
      return std::nullopt;  // integer and fp8 types: not replayed
  }
}

// The call's alpha and its beta, which must be zero.
struct Scales {
  Scalar alpha;
  Scalar zero;
};

std::optional<Scales> ScalesOf(cudnnDataType_t type, const void* alpha, const void* beta,
                               bool any_beta = false) {
  const std::optional<Scalar> a = ScalarOf(type, alpha);
  const std::optional<Scalar> b = ScalarOf(type, beta);
  if (!a || !b || (!any_beta && !b->zero())) return std::nullopt;
  return Scales{*a, *b};
}

// pooch's own cuDNN handle, set to `stream`; null when it cannot be made. Replays are
// serialised by the Recomputer, so one handle suffices.
cudnnHandle_t ReplayHandle(uintptr_t stream) {
  static const cudnnHandle_t handle = [] {
    cudnnHandle_t h = nullptr;
    const auto create = real::cudnnCreate();
    return create != nullptr && create(&h) == kOk ? h : nullptr;
  }();
  const auto set_stream = real::cudnnSetStream();
  if (handle == nullptr || set_stream == nullptr ||
      set_stream(handle, reinterpret_cast<cudaStream_t>(stream)) != kOk) {
    return nullptr;
  }
  return handle;
}

// The recipe's common part: the output range as the hook reported it, the read ranges as its
// inputs. Nullopt when the output range is missing (a null output).
std::optional<ReplayRecipe> Base(const Ranges& r, const void* y, const char* name) {
  ReplayRecipe recipe;
  recipe.name = name;
  recipe.output = reinterpret_cast<pooch::DeviceAddress>(y);
  for (const pooch::AccessRange& a : r.get()) {
    if (a.mode == pooch::AccessRange::Mode::kRead) {
      recipe.inputs.push_back(a);
    } else if (a.address == recipe.output) {
      recipe.output_bytes = a.bytes;
      // A call that reads its output (beta not zero) is a link of the output's chain, reading
      // the chain's previous state (Note [Chained recipes] in core/lineage/lineage.cc).
      if (a.mode == pooch::AccessRange::Mode::kReadWrite) {
        recipe.inputs.push_back({a.address, a.bytes, pooch::AccessRange::Mode::kRead});
      }
    }
  }
  if (recipe.output == 0 || recipe.output_bytes <= 0) return std::nullopt;
  return recipe;
}

// The recipe of a call shaped f(handle, op_desc, alpha, xDesc, x, beta, yDesc, y) (activation,
// pooling): `op` is its operation descriptor's copy (null: none could be made), `real_fn` the
// accessor of the real function.
template <typename OwnedDesc, typename RealFn>
std::optional<ReplayRecipe> UnaryRecipe(const Ranges& r, const char* name, OwnedDesc op,
                                        RealFn real_fn, const void* alpha,
                                        cudnnTensorDescriptor_t xDesc, const void* x,
                                        const void* beta, cudnnTensorDescriptor_t yDesc, void* y) {
  std::optional<ReplayRecipe> recipe = Base(r, y, name);
  std::optional<TensorCopy> xd = CopyTensor(xDesc);
  std::optional<TensorCopy> yd = CopyTensor(yDesc);
  if (!recipe || !xd || !yd || op == nullptr) return std::nullopt;
  const std::optional<Scales> s = ScalesOf(yd->type, alpha, beta);
  if (!s) return std::nullopt;
  recipe->issue = [op, real_fn, a = s->alpha, b = s->zero, xd = *xd, x, yd = *yd, y](
                      uintptr_t stream, void*) {
    const cudnnHandle_t h = ReplayHandle(stream);
    const auto f = real_fn();
    return h != nullptr && f != nullptr &&
           f(h, op.get(), a.get(), xd.desc.get(), x, b.get(), yd.desc.get(), y) == kOk;
  };
  return recipe;
}

}  // namespace

bool BetaIsZero(cudnnTensorDescriptor_t desc, const void* beta) {
  const auto get = real::cudnnGetTensorNdDescriptor();
  cudnnDataType_t type;
  int n = 0, dims[kMaxDims], strides[kMaxDims];
  if (desc == nullptr || get == nullptr || get(desc, kMaxDims, &type, &n, dims, strides) != kOk) {
    return false;
  }
  const std::optional<Scalar> b = ScalarOf(type, beta);
  return b.has_value() && b->zero();
}

bool ReplayableLink(const Ranges& r, const void* y) {
  if (y == nullptr) return false;
  const auto out = reinterpret_cast<pooch::DeviceAddress>(y);
  return std::any_of(r.get().begin(), r.get().end(), [&](const pooch::AccessRange& a) {
    return a.address == out && a.mode != pooch::AccessRange::Mode::kRead;
  });
}

bool ReplayableOutput(const Ranges& r, const void* y, bool beta_is_zero) {
  if (y == nullptr || !beta_is_zero) return false;
  const auto out = reinterpret_cast<pooch::DeviceAddress>(y);
  int64_t bytes = 0;
  for (const pooch::AccessRange& a : r.get()) {
    if (a.address == out && a.mode != pooch::AccessRange::Mode::kRead) bytes = a.bytes;
  }
  if (bytes <= 0) return false;
  for (const pooch::AccessRange& a : r.get()) {
    if (a.mode == pooch::AccessRange::Mode::kRead && a.address < out + bytes &&
        out < a.address + a.bytes) {
      return false;
    }
  }
  return true;
}

std::optional<ReplayRecipe> ConvolutionForwardRecipe(const Ranges& r, const void* alpha,
                                                     cudnnTensorDescriptor_t xDesc, const void* x,
                                                     cudnnFilterDescriptor_t wDesc, const void* w,
                                                     cudnnConvolutionDescriptor_t convDesc,
                                                     cudnnConvolutionFwdAlgo_t algo,
                                                     size_t workspace_bytes, const void* beta,
                                                     cudnnTensorDescriptor_t yDesc, void* y) {
  std::optional<ReplayRecipe> recipe = Base(r, y, "cudnnConvolutionForward");
  std::optional<TensorCopy> xd = CopyTensor(xDesc);
  std::optional<TensorCopy> yd = CopyTensor(yDesc);
  Owned<cudnnFilterDescriptor_t> wd = CopyFilter(wDesc);
  Owned<cudnnConvolutionDescriptor_t> cd = CopyConvolution(convDesc);
  if (!recipe || !xd || !yd || !wd || !cd) return std::nullopt;
  const std::optional<Scales> s = ScalesOf(yd->type, alpha, beta);
  if (!s) return std::nullopt;
  recipe->workspace_bytes = static_cast<int64_t>(workspace_bytes);
  recipe->issue = [a = s->alpha, b = s->zero, xd = *xd, x, wd, w, cd, algo, workspace_bytes,
                   yd = *yd, y](uintptr_t stream, void* ws) {
    const cudnnHandle_t h = ReplayHandle(stream);
    const auto conv = real::cudnnConvolutionForward();
    return h != nullptr && conv != nullptr &&
           conv(h, a.get(), xd.desc.get(), x, wd.get(), w, cd.get(), algo, ws, workspace_bytes,
                b.get(), yd.desc.get(), y) == kOk;
  };
  return recipe;
}

std::optional<ReplayRecipe> BatchNormForwardTrainingRecipe(
    const Ranges& r, cudnnBatchNormMode_t mode, const void* alpha, const void* beta,
    cudnnTensorDescriptor_t xDesc, const void* x, cudnnTensorDescriptor_t yDesc, void* y,
    cudnnTensorDescriptor_t paramDesc, const void* scale, const void* bias, double epsilon) {
  std::optional<ReplayRecipe> recipe = Base(r, y, "cudnnBatchNormalizationForwardTraining");
  std::optional<TensorCopy> xd = CopyTensor(xDesc);
  std::optional<TensorCopy> yd = CopyTensor(yDesc);
  std::optional<TensorCopy> pd = CopyTensor(paramDesc);
  if (!recipe || !xd || !yd || !pd) return std::nullopt;
  const std::optional<Scales> s = ScalesOf(yd->type, alpha, beta);
  if (!s) return std::nullopt;
  recipe->issue = [mode, a = s->alpha, b = s->zero, xd = *xd, x, yd = *yd, y, pd = *pd, scale, bias,
                   epsilon](uintptr_t stream, void*) {
    const cudnnHandle_t h = ReplayHandle(stream);
    const auto bn = real::cudnnBatchNormalizationForwardTraining();
    // Null running statistics: they are not updated again. Null saved statistics: the ones
    // the first call saved are still what backward reads.
    return h != nullptr && bn != nullptr &&
           bn(h, mode, a.get(), b.get(), xd.desc.get(), x, yd.desc.get(), y, pd.desc.get(), scale,
              bias, 0.0, nullptr, nullptr, epsilon, nullptr, nullptr) == kOk;
  };
  return recipe;
}

std::optional<ReplayRecipe> BatchNormForwardTrainingExRecipe(
    const Ranges& r, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t ops, const void* alpha,
    const void* beta, cudnnTensorDescriptor_t xDesc, const void* x, cudnnTensorDescriptor_t yDesc,
    void* y, cudnnTensorDescriptor_t paramDesc, const void* scale, const void* bias, double epsilon,
    size_t workspace_bytes, size_t reserve_bytes) {
  if (ops != CUDNN_BATCHNORM_OPS_BN) return std::nullopt;
  std::optional<ReplayRecipe> recipe = Base(r, y, "cudnnBatchNormalizationForwardTrainingEx");
  std::optional<TensorCopy> xd = CopyTensor(xDesc);
  std::optional<TensorCopy> yd = CopyTensor(yDesc);
  std::optional<TensorCopy> pd = CopyTensor(paramDesc);
  if (!recipe || !xd || !yd || !pd) return std::nullopt;
  const std::optional<Scales> s = ScalesOf(yd->type, alpha, beta);
  if (!s) return std::nullopt;
  // One scratch: the workspace, then the reserve space at the next 256-byte boundary.
  const size_t reserve_at = (workspace_bytes + 255) / 256 * 256;
  recipe->workspace_bytes = static_cast<int64_t>(reserve_at + reserve_bytes);
  recipe->issue = [mode, ops, a = s->alpha, b = s->zero, xd = *xd, x, yd = *yd, y, pd = *pd, scale,
                   bias, epsilon, workspace_bytes, reserve_at,
                   reserve_bytes](uintptr_t stream, void* scratch) {
    const cudnnHandle_t h = ReplayHandle(stream);
    const auto bn = real::cudnnBatchNormalizationForwardTrainingEx();
    char* base = static_cast<char*>(scratch);
    return h != nullptr && bn != nullptr &&
           bn(h, mode, ops, a.get(), b.get(), xd.desc.get(), x, nullptr, nullptr, yd.desc.get(), y,
              pd.desc.get(), scale, bias, 0.0, nullptr, nullptr, epsilon, nullptr, nullptr, nullptr,
              workspace_bytes > 0 ? base : nullptr, workspace_bytes,
              reserve_bytes > 0 ? base + reserve_at : nullptr, reserve_bytes) == kOk;
  };
  return recipe;
}

std::optional<ReplayRecipe> ActivationForwardRecipe(const Ranges& r,
                                                    cudnnActivationDescriptor_t activationDesc,
                                                    const void* alpha,
                                                    cudnnTensorDescriptor_t xDesc, const void* x,
                                                    const void* beta, cudnnTensorDescriptor_t yDesc,
                                                    void* y) {
  return UnaryRecipe(r, "cudnnActivationForward", CopyActivation(activationDesc),
                     real::cudnnActivationForward, alpha, xDesc, x, beta, yDesc, y);
}

std::optional<ReplayRecipe> PoolingForwardRecipe(const Ranges& r,
                                                 cudnnPoolingDescriptor_t poolingDesc,
                                                 const void* alpha, cudnnTensorDescriptor_t xDesc,
                                                 const void* x, const void* beta,
                                                 cudnnTensorDescriptor_t yDesc, void* y) {
  return UnaryRecipe(r, "cudnnPoolingForward", CopyPooling(poolingDesc), real::cudnnPoolingForward,
                     alpha, xDesc, x, beta, yDesc, y);
}

std::optional<ReplayRecipe> OpTensorRecipe(const Ranges& r, cudnnOpTensorDescriptor_t opDesc,
                                           const void* alpha1, cudnnTensorDescriptor_t aDesc,
                                           const void* A, const void* alpha2,
                                           cudnnTensorDescriptor_t bDesc, const void* B,
                                           const void* beta, cudnnTensorDescriptor_t cDesc,
                                           void* C) {
  std::optional<ReplayRecipe> recipe = Base(r, C, "cudnnOpTensor");
  std::optional<TensorCopy> ad = CopyTensor(aDesc);
  std::optional<TensorCopy> bd = CopyTensor(bDesc);
  std::optional<TensorCopy> cd = CopyTensor(cDesc);
  Owned<cudnnOpTensorDescriptor_t> od = CopyOpTensor(opDesc);
  if (!recipe || !ad || !bd || !cd || !od) return std::nullopt;
  const std::optional<Scalar> a1 = ScalarOf(cd->type, alpha1);
  // A beta that is not zero reads C: a link of C's chain (Base lists C as an input).
  const std::optional<Scales> s = ScalesOf(cd->type, alpha2, beta, /*any_beta=*/true);
  if (!a1 || !s) return std::nullopt;
  recipe->issue = [od, a1 = *a1, ad = *ad, A, a2 = s->alpha, bd = *bd, B, b = s->zero, cd = *cd, C](
                      uintptr_t stream, void*) {
    const cudnnHandle_t h = ReplayHandle(stream);
    const auto op = real::cudnnOpTensor();
    return h != nullptr && op != nullptr &&
           op(h, od.get(), a1.get(), ad.desc.get(), A, a2.get(), bd.desc.get(), B, b.get(),
              cd.desc.get(), C) == kOk;
  };
  return recipe;
}

std::optional<ReplayRecipe> AddTensorRecipe(const Ranges& r, const void* alpha,
                                            cudnnTensorDescriptor_t aDesc, const void* A,
                                            const void* beta, cudnnTensorDescriptor_t cDesc,
                                            void* C) {
  std::optional<ReplayRecipe> recipe = Base(r, C, "cudnnAddTensor");
  std::optional<TensorCopy> ad = CopyTensor(aDesc);
  std::optional<TensorCopy> cd = CopyTensor(cDesc);
  if (!recipe || !ad || !cd) return std::nullopt;
  const std::optional<Scales> s = ScalesOf(cd->type, alpha, beta, /*any_beta=*/true);
  if (!s) return std::nullopt;
  recipe->issue = [a = s->alpha, ad = *ad, A, b = s->zero, cd = *cd, C](uintptr_t stream, void*) {
    const cudnnHandle_t h = ReplayHandle(stream);
    const auto add = real::cudnnAddTensor();
    return h != nullptr && add != nullptr &&
           add(h, a.get(), ad.desc.get(), A, b.get(), cd.desc.get(), C) == kOk;
  };
  return recipe;
}

}  // namespace pooch::interpose
