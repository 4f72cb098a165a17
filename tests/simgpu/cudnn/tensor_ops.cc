// Element-wise calls: cudnnAddTensor, cudnnOpTensor, cudnnScaleTensor, cudnnSetTensor and the
// activations, over N-d strided fp32 tensors (kernels/layers/elementwise.h).
#include <cmath>

#include "api.h"

namespace {

using simgpu::Access;
using simgpu::cudnn::AsTensorNd;
using simgpu::cudnn::Bytes;
using simgpu::cudnn::NotSupported;
using simgpu::cudnn::ReadIf;
using simgpu::cudnn::Run;
using simgpu::cudnn::Scalar;
namespace kernels = simgpu::kernels;

cudnnStatus_t ToActivation(const char* fn, const cudnnActivationStruct* d,
                           kernels::Activation* out) {
  if (d == nullptr || !d->set) return CUDNN_STATUS_BAD_PARAM;
  switch (d->mode) {
    case CUDNN_ACTIVATION_SIGMOID:
      *out = kernels::Activation::kSigmoid;
      return CUDNN_STATUS_SUCCESS;
    case CUDNN_ACTIVATION_RELU:
      *out = kernels::Activation::kRelu;
      return CUDNN_STATUS_SUCCESS;
    case CUDNN_ACTIVATION_TANH:
      *out = kernels::Activation::kTanh;
      return CUDNN_STATUS_SUCCESS;
    case CUDNN_ACTIVATION_CLIPPED_RELU:
      *out = kernels::Activation::kClippedRelu;
      return CUDNN_STATUS_SUCCESS;
    case CUDNN_ACTIVATION_ELU:
      *out = kernels::Activation::kElu;
      return CUDNN_STATUS_SUCCESS;
    default:
      return NotSupported(fn, "activation mode %d (RELU, SIGMOID, TANH, CLIPPED_RELU, ELU only)",
                          static_cast<int>(d->mode));
  }
}

// Per-element cost of an activation for the roofline: ReLU is a compare, the rest a
// transcendental (counted as 4).
double ActFlops(kernels::Activation a) {
  return a == kernels::Activation::kRelu || a == kernels::Activation::kClippedRelu ? 1.0 : 4.0;
}

}  // namespace

extern "C" {

cudnnStatus_t cudnnAddTensor(cudnnHandle_t h, const void* alpha, const cudnnTensorDescriptor_t ad,
                             const void* a, const void* beta, const cudnnTensorDescriptor_t cd,
                             void* c) {
  if (!h || !alpha || !beta || !a || !c) return CUDNN_STATUS_BAD_PARAM;
  kernels::TensorNd at, ct;
  SIMGPU_RETURN_IF_ERROR(AsTensorNd("cudnnAddTensor", ad, &at));
  SIMGPU_RETURN_IF_ERROR(AsTensorNd("cudnnAddTensor", cd, &ct));
  if (!at.BroadcastsTo(ct)) return CUDNN_STATUS_BAD_PARAM;
  const float al = Scalar(alpha), be = Scalar(beta);
  const double n = static_cast<double>(ct.Elements());
  return Run(
      h, "cudnnAddTensor",
      {Access{a, Bytes(at), false}, ReadIf(be != 0.0f, c, Bytes(ct)), Access{c, Bytes(ct), true}},
      2 * n, at.Elements() * 4.0 + n * 4 * (be != 0.0f ? 2 : 1), [&] {
        kernels::AddTensor(at, static_cast<const float*>(a), al, ct, be, static_cast<float*>(c),
                           simgpu::Threads());
      });
}

cudnnStatus_t cudnnOpTensor(cudnnHandle_t h, const cudnnOpTensorDescriptor_t op, const void* alpha1,
                            const cudnnTensorDescriptor_t ad, const void* a, const void* alpha2,
                            const cudnnTensorDescriptor_t bd, const void* b, const void* beta,
                            const cudnnTensorDescriptor_t cd, void* c) {
  const char* fn = "cudnnOpTensor";
  if (!h || !op || !op->set || !alpha1 || !alpha2 || !beta || !a || !c) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  kernels::TensorOp kop;
  switch (op->op) {
    case CUDNN_OP_TENSOR_ADD:
      kop = kernels::TensorOp::kAdd;
      break;
    case CUDNN_OP_TENSOR_MUL:
      kop = kernels::TensorOp::kMul;
      break;
    case CUDNN_OP_TENSOR_MIN:
      kop = kernels::TensorOp::kMin;
      break;
    case CUDNN_OP_TENSOR_MAX:
      kop = kernels::TensorOp::kMax;
      break;
    case CUDNN_OP_TENSOR_SQRT:
      kop = kernels::TensorOp::kSqrt;
      break;
    default:
      // CUDNN_OP_TENSOR_NOT: cuDNN documents it only as "negation" of a float; rather than guess
      // between 1 - a and -a, refuse.
      return NotSupported(fn, "op %d (ADD, MUL, MIN, MAX, SQRT only)", static_cast<int>(op->op));
  }
  if (op->compute != CUDNN_DATA_FLOAT) {
    return NotSupported(fn, "compute type %d (only CUDNN_DATA_FLOAT)",
                        static_cast<int>(op->compute));
  }
  if (op->nan == CUDNN_PROPAGATE_NAN &&
      (kop == kernels::TensorOp::kMin || kop == kernels::TensorOp::kMax)) {
    return NotSupported(fn, "MIN/MAX with CUDNN_PROPAGATE_NAN");
  }
  const bool unary = kop == kernels::TensorOp::kSqrt;
  kernels::TensorNd at, bt, ct;
  SIMGPU_RETURN_IF_ERROR(AsTensorNd(fn, ad, &at));
  SIMGPU_RETURN_IF_ERROR(AsTensorNd(fn, cd, &ct));
  if (!unary) {
    if (b == nullptr) return CUDNN_STATUS_BAD_PARAM;
    SIMGPU_RETURN_IF_ERROR(AsTensorNd(fn, bd, &bt));
    if (!bt.BroadcastsTo(ct)) return CUDNN_STATUS_BAD_PARAM;
  }
  if (!at.SameDims(ct)) return CUDNN_STATUS_BAD_PARAM;
  const float a1 = Scalar(alpha1), a2 = Scalar(alpha2), be = Scalar(beta);
  const double n = static_cast<double>(ct.Elements());
  return Run(h, "cudnnOpTensor",
             {Access{a, Bytes(at), false}, ReadIf(!unary, b, unary ? 0 : Bytes(bt)),
              ReadIf(be != 0.0f, c, Bytes(ct)), Access{c, Bytes(ct), true}},
             3 * n,
             (at.Elements() + (unary ? 0 : bt.Elements())) * 4.0 + n * 4 * (be != 0.0f ? 2 : 1),
             [&] {
               kernels::OpTensor(kop, at, static_cast<const float*>(a), a1, bt,
                                 static_cast<const float*>(b), a2, ct, be, static_cast<float*>(c),
                                 simgpu::Threads());
             });
}

cudnnStatus_t cudnnScaleTensor(cudnnHandle_t h, const cudnnTensorDescriptor_t yd, void* y,
                               const void* alpha) {
  if (!h || !y || !alpha) return CUDNN_STATUS_BAD_PARAM;
  kernels::TensorNd t;
  SIMGPU_RETURN_IF_ERROR(AsTensorNd("cudnnScaleTensor", yd, &t));
  const float al = Scalar(alpha);
  return Run(h, "cudnnScaleTensor", {Access{y, Bytes(t), false}, Access{y, Bytes(t), true}},
             static_cast<double>(t.Elements()), t.Elements() * 8.0,
             [&] { kernels::ScaleTensor(t, static_cast<float*>(y), al, simgpu::Threads()); });
}

cudnnStatus_t cudnnSetTensor(cudnnHandle_t h, const cudnnTensorDescriptor_t yd, void* y,
                             const void* value) {
  if (!h || !y || !value) return CUDNN_STATUS_BAD_PARAM;
  kernels::TensorNd t;
  SIMGPU_RETURN_IF_ERROR(AsTensorNd("cudnnSetTensor", yd, &t));
  const float v = Scalar(value);
  return Run(h, "cudnnSetTensor", {Access{y, Bytes(t), true}}, 0.0, t.Elements() * 4.0,
             [&] { kernels::SetTensor(t, static_cast<float*>(y), v, simgpu::Threads()); });
}

cudnnStatus_t cudnnActivationForward(cudnnHandle_t h, cudnnActivationDescriptor_t act,
                                     const void* alpha, const cudnnTensorDescriptor_t xd,
                                     const void* x, const void* beta,
                                     const cudnnTensorDescriptor_t yd, void* y) {
  const char* fn = "cudnnActivationForward";
  if (!h || !alpha || !beta || !x || !y) return CUDNN_STATUS_BAD_PARAM;
  kernels::Activation ka;
  SIMGPU_RETURN_IF_ERROR(ToActivation(fn, act, &ka));
  kernels::TensorNd xt, yt;
  SIMGPU_RETURN_IF_ERROR(AsTensorNd(fn, xd, &xt));
  SIMGPU_RETURN_IF_ERROR(AsTensorNd(fn, yd, &yt));
  if (!xt.SameDims(yt)) return CUDNN_STATUS_BAD_PARAM;
  const float al = Scalar(alpha), be = Scalar(beta);
  const double n = static_cast<double>(yt.Elements());
  return Run(
      h, "cudnnActivationForward",
      {Access{x, Bytes(xt), false}, ReadIf(be != 0.0f, y, Bytes(yt)), Access{y, Bytes(yt), true}},
      ActFlops(ka) * n, n * 4 * (be != 0.0f ? 3 : 2), [&] {
        kernels::ActivationForward(ka, act->coef, act->nan == CUDNN_PROPAGATE_NAN, xt,
                                   static_cast<const float*>(x), yt, al, be, static_cast<float*>(y),
                                   simgpu::Threads());
      });
}

cudnnStatus_t cudnnActivationBackward(cudnnHandle_t h, cudnnActivationDescriptor_t act,
                                      const void* alpha, const cudnnTensorDescriptor_t yd,
                                      const void* y, const cudnnTensorDescriptor_t dyd,
                                      const void* dy, const cudnnTensorDescriptor_t xd,
                                      const void* x, const void* beta,
                                      const cudnnTensorDescriptor_t dxd, void* dx) {
  const char* fn = "cudnnActivationBackward";
  if (!h || !alpha || !beta || !y || !dy || !x || !dx) return CUDNN_STATUS_BAD_PARAM;
  kernels::Activation ka;
  SIMGPU_RETURN_IF_ERROR(ToActivation(fn, act, &ka));
  kernels::TensorNd yt, dyt, xt, dxt;
  SIMGPU_RETURN_IF_ERROR(AsTensorNd(fn, yd, &yt));
  SIMGPU_RETURN_IF_ERROR(AsTensorNd(fn, dyd, &dyt));
  SIMGPU_RETURN_IF_ERROR(AsTensorNd(fn, xd, &xt));
  SIMGPU_RETURN_IF_ERROR(AsTensorNd(fn, dxd, &dxt));
  if (!yt.SameDims(dxt) || !dyt.SameDims(dxt) || !xt.SameDims(dxt)) return CUDNN_STATUS_BAD_PARAM;
  const float al = Scalar(alpha), be = Scalar(beta);
  const double n = static_cast<double>(dxt.Elements());
  return Run(
      h, "cudnnActivationBackward",
      {Access{y, Bytes(yt), false}, Access{dy, Bytes(dyt), false}, Access{x, Bytes(xt), false},
       ReadIf(be != 0.0f, dx, Bytes(dxt)), Access{dx, Bytes(dxt), true}},
      ActFlops(ka) * n, n * 4 * (be != 0.0f ? 5 : 4), [&] {
        kernels::ActivationBackward(ka, act->coef, yt, static_cast<const float*>(y), dyt,
                                    static_cast<const float*>(dy), xt, static_cast<const float*>(x),
                                    dxt, al, be, static_cast<float*>(dx), simgpu::Threads());
      });
}

}  // extern "C"
