// Batch normalization over 4-d fp32 tensors (kernels/layers/batchnorm.h): the descriptor
// derivation, training forward (with the Ex variant for bnOps == BN), inference forward, and
// backward.
#include "batchnorm.h"

#include "api.h"

namespace {

using simgpu::Access;
using simgpu::cudnn::AsTensor4;
using simgpu::cudnn::NotSupported;
using simgpu::cudnn::ReadIf;
using simgpu::cudnn::Run;
using simgpu::cudnn::Scalar;
namespace kernels = simgpu::kernels;

bool SameDims(const kernels::Tensor4& a, const kernels::Tensor4& b) {
  return a.n == b.n && a.c == b.c && a.h == b.h && a.w == b.w;
}

// A data tensor (x, y, dy, dx) as a 4-d layout and its element size. fp32 computes; half and
// bfloat16 data (PyTorch's mixed precision hands them over with fp32 parameters) only take time
// and touch memory, so math mode reports them as not supported.
cudnnStatus_t DataTensor(const char* fn, const cudnnTensorStruct* d, kernels::Tensor4* t,
                         size_t* eb) {
  if (d != nullptr && d->set && (d->type == CUDNN_DATA_HALF || d->type == CUDNN_DATA_BFLOAT16)) {
    if (simgpu::ComputeEnabled()) {
      return NotSupported(fn,
                          "half or bfloat16 data in math mode (run with SIMGPU_COMPUTE=timing)");
    }
    cudnnTensorStruct as_float = *d;
    as_float.type = CUDNN_DATA_FLOAT;
    *eb = 2;
    return AsTensor4(fn, &as_float, t);
  }
  *eb = 4;
  return AsTensor4(fn, d, t);
}

// Checks x, the other data tensors (same dims and type as x), the mode and the parameter
// descriptor; `eb` gets the data tensors' element size.
cudnnStatus_t MakeShape(
    const char* fn, cudnnBatchNormMode_t mode, const cudnnTensorStruct* xd,
    std::initializer_list<std::pair<const cudnnTensorStruct*, kernels::Tensor4*>> others,
    const cudnnTensorStruct* pd, double epsilon, kernels::BnShape* s, size_t* eb) {
  SIMGPU_RETURN_IF_ERROR(DataTensor(fn, xd, &s->x, eb));
  for (const auto& [d, t] : others) {
    size_t other_eb = 0;
    SIMGPU_RETURN_IF_ERROR(DataTensor(fn, d, t, &other_eb));
    if (!SameDims(s->x, *t) || other_eb != *eb) return CUDNN_STATUS_BAD_PARAM;
  }
  switch (mode) {
    case CUDNN_BATCHNORM_PER_ACTIVATION:
      s->per_activation = true;
      break;
    case CUDNN_BATCHNORM_SPATIAL:
    case CUDNN_BATCHNORM_SPATIAL_PERSISTENT:
      s->per_activation = false;
      break;
    default:
      return CUDNN_STATUS_BAD_PARAM;
  }
  kernels::Tensor4 p;
  SIMGPU_RETURN_IF_ERROR(AsTensor4(fn, pd, &p));
  const bool dims_ok = p.n == 1 && p.c == s->x.c &&
                       (s->per_activation ? p.h == s->x.h && p.w == s->x.w : p.h == 1 && p.w == 1);
  if (!dims_ok || epsilon < CUDNN_BN_MIN_EPSILON ||
      s->x.n * (s->per_activation ? 1 : s->x.h * s->x.w) < 1) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  if (p.Span() != p.Elements()) return NotSupported(fn, "strided batch-norm parameter tensor");
  return CUDNN_STATUS_SUCCESS;
}

size_t ParamBytes(const kernels::BnShape& s) { return static_cast<size_t>(s.Stats()) * 4; }

// Bytes a data tensor spans at element size `eb`.
size_t DataBytes(const kernels::Tensor4& t, size_t eb) {
  return static_cast<size_t>(t.Span()) * eb;
}

cudnnStatus_t ForwardTraining(const char* fn, cudnnHandle_t h, cudnnBatchNormMode_t mode,
                              const void* alpha, const void* beta, const cudnnTensorDescriptor_t xd,
                              const void* x, const cudnnTensorDescriptor_t yd, void* y,
                              const cudnnTensorDescriptor_t pd, const void* scale, const void* bias,
                              double factor, void* running_mean, void* running_var, double epsilon,
                              void* save_mean, void* save_inv_var, void* ws, size_t ws_bytes,
                              void* reserve, size_t reserve_bytes) {
  if (!h || !alpha || !beta || !x || !y || !scale || !bias) return CUDNN_STATUS_BAD_PARAM;
  if ((save_mean == nullptr) != (save_inv_var == nullptr)) return CUDNN_STATUS_BAD_PARAM;
  kernels::BnShape s;
  size_t eb = 4;
  kernels::Tensor4 yt;
  SIMGPU_RETURN_IF_ERROR(MakeShape(fn, mode, xd, {{yd, &yt}}, pd, epsilon, &s, &eb));
  const float a = Scalar(alpha), b = Scalar(beta);
  const size_t pb = ParamBytes(s);
  const double n = static_cast<double>(s.x.Elements());
  // Two passes over x (statistics, then normalisation), y once (twice with beta), parameters.
  const double bytes = n * eb * (b != 0.0f ? 4 : 3) + pb * 8.0;
  return Run(
      h, fn,
      {Access{x, DataBytes(s.x, eb), false}, Access{scale, pb, false}, Access{bias, pb, false},
       ReadIf(b != 0.0f, y, DataBytes(yt, eb)), Access{y, DataBytes(yt, eb), true},
       ReadIf(true, running_mean, running_mean ? pb : 0),
       Access{running_mean, running_mean ? pb : 0, true},
       ReadIf(true, running_var, running_var ? pb : 0),
       Access{running_var, running_var ? pb : 0, true}, Access{save_mean, save_mean ? pb : 0, true},
       Access{save_inv_var, save_inv_var ? pb : 0, true}, Access{ws, ws_bytes, true},
       Access{reserve, reserve_bytes, true}},
      8 * n, bytes, [&] {
        kernels::BnForwardTraining(
            s, yt, a, b, static_cast<const float*>(x), static_cast<float*>(y),
            static_cast<const float*>(scale), static_cast<const float*>(bias), factor,
            static_cast<float*>(running_mean), static_cast<float*>(running_var), epsilon,
            static_cast<float*>(save_mean), static_cast<float*>(save_inv_var), simgpu::Threads());
      });
}

cudnnStatus_t Backward(const char* fn, cudnnHandle_t h, cudnnBatchNormMode_t mode,
                       const void* alpha_data, const void* beta_data, const void* alpha_param,
                       const void* beta_param, const cudnnTensorDescriptor_t xd, const void* x,
                       const cudnnTensorDescriptor_t dyd, const void* dy,
                       const cudnnTensorDescriptor_t dxd, void* dx,
                       const cudnnTensorDescriptor_t pd, const void* scale, void* dscale,
                       void* dbias, double epsilon, const void* saved_mean,
                       const void* saved_inv_var, void* ws, size_t ws_bytes, void* reserve,
                       size_t reserve_bytes) {
  if (!h || !alpha_data || !beta_data || !alpha_param || !beta_param || !x || !dy || !dx ||
      !scale || !dscale || !dbias) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  if ((saved_mean == nullptr) != (saved_inv_var == nullptr)) return CUDNN_STATUS_BAD_PARAM;
  kernels::BnShape s;
  size_t eb = 4;
  kernels::Tensor4 dyt, dxt;
  SIMGPU_RETURN_IF_ERROR(MakeShape(fn, mode, xd, {{dyd, &dyt}, {dxd, &dxt}}, pd, epsilon, &s, &eb));
  const float ad = Scalar(alpha_data), bd = Scalar(beta_data);
  const float ap = Scalar(alpha_param), bp = Scalar(beta_param);
  const size_t pb = ParamBytes(s);
  const double n = static_cast<double>(s.x.Elements());
  const double bytes = n * eb * (bd != 0.0f ? 6 : 5) + pb * 6.0;
  return Run(
      h, fn,
      {Access{x, DataBytes(s.x, eb), false}, Access{dy, DataBytes(dyt, eb), false},
       Access{scale, pb, false}, ReadIf(saved_mean != nullptr, saved_mean, pb),
       ReadIf(saved_inv_var != nullptr, saved_inv_var, pb),
       ReadIf(bd != 0.0f, dx, DataBytes(dxt, eb)), Access{dx, DataBytes(dxt, eb), true},
       ReadIf(bp != 0.0f, dscale, pb), Access{dscale, pb, true}, ReadIf(bp != 0.0f, dbias, pb),
       Access{dbias, pb, true}, Access{ws, ws_bytes, true}, ReadIf(true, reserve, reserve_bytes)},
      10 * n, bytes, [&] {
        kernels::BnBackward(s, dyt, dxt, ad, bd, ap, bp, static_cast<const float*>(x),
                            static_cast<const float*>(dy), static_cast<float*>(dx),
                            static_cast<const float*>(scale), static_cast<float*>(dscale),
                            static_cast<float*>(dbias), epsilon,
                            static_cast<const float*>(saved_mean),
                            static_cast<const float*>(saved_inv_var), simgpu::Threads());
      });
}

cudnnStatus_t OnlyBn(const char* fn, cudnnBatchNormOps_t ops) {
  if (ops == CUDNN_BATCHNORM_OPS_BN) return CUDNN_STATUS_SUCCESS;
  if (ops == CUDNN_BATCHNORM_OPS_BN_ACTIVATION || ops == CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION) {
    return NotSupported(fn, "bnOps %d (only CUDNN_BATCHNORM_OPS_BN)", static_cast<int>(ops));
  }
  return CUDNN_STATUS_BAD_PARAM;
}

}  // namespace

extern "C" {

cudnnStatus_t cudnnDeriveBNTensorDescriptor(cudnnTensorDescriptor_t derived,
                                            const cudnnTensorDescriptor_t xd,
                                            cudnnBatchNormMode_t mode) {
  if (derived == nullptr || xd == nullptr || !xd->set) return CUDNN_STATUS_BAD_PARAM;
  if (xd->rank != 4 && xd->rank != 5) return CUDNN_STATUS_BAD_PARAM;
  if (mode != CUDNN_BATCHNORM_PER_ACTIVATION && mode != CUDNN_BATCHNORM_SPATIAL &&
      mode != CUDNN_BATCHNORM_SPATIAL_PERSISTENT) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  int dim[CUDNN_DIM_MAX], stride[CUDNN_DIM_MAX];
  dim[0] = 1;
  dim[1] = xd->dim[1];
  for (int i = 2; i < xd->rank; ++i) {
    dim[i] = mode == CUDNN_BATCHNORM_PER_ACTIVATION ? xd->dim[i] : 1;
  }
  int st = 1;
  for (int i = xd->rank - 1; i >= 0; --i) {
    stride[i] = st;
    st *= dim[i];
  }
  // Parameters are float for half, bfloat16 and float data, double for double data.
  const cudnnDataType_t type = xd->type == CUDNN_DATA_DOUBLE ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  return cudnnSetTensorNdDescriptor(derived, type, xd->rank, dim, stride);
}

cudnnStatus_t cudnnBatchNormalizationForwardTraining(
    cudnnHandle_t h, cudnnBatchNormMode_t mode, const void* alpha, const void* beta,
    const cudnnTensorDescriptor_t xd, const void* x, const cudnnTensorDescriptor_t yd, void* y,
    const cudnnTensorDescriptor_t pd, const void* scale, const void* bias, double factor,
    void* running_mean, void* running_var, double epsilon, void* save_mean, void* save_inv_var) {
  return ForwardTraining("cudnnBatchNormalizationForwardTraining", h, mode, alpha, beta, xd, x, yd,
                         y, pd, scale, bias, factor, running_mean, running_var, epsilon, save_mean,
                         save_inv_var, nullptr, 0, nullptr, 0);
}

cudnnStatus_t cudnnBatchNormalizationForwardTrainingEx(
    cudnnHandle_t h, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t ops, const void* alpha,
    const void* beta, const cudnnTensorDescriptor_t xd, const void* x,
    const cudnnTensorDescriptor_t, const void*, const cudnnTensorDescriptor_t yd, void* y,
    const cudnnTensorDescriptor_t pd, const void* scale, const void* bias, double factor,
    void* running_mean, void* running_var, double epsilon, void* save_mean, void* save_inv_var,
    cudnnActivationDescriptor_t, void* ws, size_t ws_bytes, void* reserve, size_t reserve_bytes) {
  const char* fn = "cudnnBatchNormalizationForwardTrainingEx";
  SIMGPU_RETURN_IF_ERROR(OnlyBn(fn, ops));
  return ForwardTraining(fn, h, mode, alpha, beta, xd, x, yd, y, pd, scale, bias, factor,
                         running_mean, running_var, epsilon, save_mean, save_inv_var, ws, ws_bytes,
                         reserve, reserve_bytes);
}

cudnnStatus_t cudnnBatchNormalizationForwardInference(
    cudnnHandle_t h, cudnnBatchNormMode_t mode, const void* alpha, const void* beta,
    const cudnnTensorDescriptor_t xd, const void* x, const cudnnTensorDescriptor_t yd, void* y,
    const cudnnTensorDescriptor_t pd, const void* scale, const void* bias, const void* est_mean,
    const void* est_var, double epsilon) {
  const char* fn = "cudnnBatchNormalizationForwardInference";
  if (!h || !alpha || !beta || !x || !y || !scale || !bias || !est_mean || !est_var) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  kernels::BnShape s;
  size_t eb = 4;
  kernels::Tensor4 yt;
  SIMGPU_RETURN_IF_ERROR(MakeShape(fn, mode, xd, {{yd, &yt}}, pd, epsilon, &s, &eb));
  const float a = Scalar(alpha), b = Scalar(beta);
  const size_t pb = ParamBytes(s);
  const double n = static_cast<double>(s.x.Elements());
  return Run(h, fn,
             {Access{x, DataBytes(s.x, eb), false}, Access{scale, pb, false},
              Access{bias, pb, false}, Access{est_mean, pb, false}, Access{est_var, pb, false},
              ReadIf(b != 0.0f, y, DataBytes(yt, eb)), Access{y, DataBytes(yt, eb), true}},
             2 * n, n * eb * (b != 0.0f ? 3 : 2) + pb * 4.0, [&] {
               kernels::BnForwardInference(
                   s, yt, a, b, static_cast<const float*>(x), static_cast<float*>(y),
                   static_cast<const float*>(scale), static_cast<const float*>(bias),
                   static_cast<const float*>(est_mean), static_cast<const float*>(est_var), epsilon,
                   simgpu::Threads());
             });
}

cudnnStatus_t cudnnBatchNormalizationBackward(cudnnHandle_t h, cudnnBatchNormMode_t mode,
                                              const void* alpha_data, const void* beta_data,
                                              const void* alpha_param, const void* beta_param,
                                              const cudnnTensorDescriptor_t xd, const void* x,
                                              const cudnnTensorDescriptor_t dyd, const void* dy,
                                              const cudnnTensorDescriptor_t dxd, void* dx,
                                              const cudnnTensorDescriptor_t pd, const void* scale,
                                              void* dscale, void* dbias, double epsilon,
                                              const void* saved_mean, const void* saved_inv_var) {
  return Backward("cudnnBatchNormalizationBackward", h, mode, alpha_data, beta_data, alpha_param,
                  beta_param, xd, x, dyd, dy, dxd, dx, pd, scale, dscale, dbias, epsilon,
                  saved_mean, saved_inv_var, nullptr, 0, nullptr, 0);
}

cudnnStatus_t cudnnBatchNormalizationBackwardEx(
    cudnnHandle_t h, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t ops, const void* alpha_data,
    const void* beta_data, const void* alpha_param, const void* beta_param,
    const cudnnTensorDescriptor_t xd, const void* x, const cudnnTensorDescriptor_t, const void*,
    const cudnnTensorDescriptor_t dyd, const void* dy, const cudnnTensorDescriptor_t, void*,
    const cudnnTensorDescriptor_t dxd, void* dx, const cudnnTensorDescriptor_t pd,
    const void* scale, const void*, void* dscale, void* dbias, double epsilon,
    const void* saved_mean, const void* saved_inv_var, cudnnActivationDescriptor_t, void* ws,
    size_t ws_bytes, void* reserve, size_t reserve_bytes) {
  const char* fn = "cudnnBatchNormalizationBackwardEx";
  SIMGPU_RETURN_IF_ERROR(OnlyBn(fn, ops));
  return Backward(fn, h, mode, alpha_data, beta_data, alpha_param, beta_param, xd, x, dyd, dy, dxd,
                  dx, pd, scale, dscale, dbias, epsilon, saved_mean, saved_inv_var, ws, ws_bytes,
                  reserve, reserve_bytes);
}

// No workspace or reserve space: the kernels keep their scratch on the host.
cudnnStatus_t cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(
    cudnnHandle_t h, cudnnBatchNormMode_t, cudnnBatchNormOps_t ops, const cudnnTensorDescriptor_t,
    const cudnnTensorDescriptor_t, const cudnnTensorDescriptor_t, const cudnnTensorDescriptor_t,
    const cudnnActivationDescriptor_t, size_t* size) {
  if (h == nullptr || size == nullptr) return CUDNN_STATUS_BAD_PARAM;
  SIMGPU_RETURN_IF_ERROR(OnlyBn("cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize", ops));
  *size = 0;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetBatchNormalizationBackwardExWorkspaceSize(
    cudnnHandle_t h, cudnnBatchNormMode_t, cudnnBatchNormOps_t ops, const cudnnTensorDescriptor_t,
    const cudnnTensorDescriptor_t, const cudnnTensorDescriptor_t, const cudnnTensorDescriptor_t,
    const cudnnTensorDescriptor_t, const cudnnTensorDescriptor_t, const cudnnActivationDescriptor_t,
    size_t* size) {
  if (h == nullptr || size == nullptr) return CUDNN_STATUS_BAD_PARAM;
  SIMGPU_RETURN_IF_ERROR(OnlyBn("cudnnGetBatchNormalizationBackwardExWorkspaceSize", ops));
  *size = 0;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetBatchNormalizationTrainingExReserveSpaceSize(
    cudnnHandle_t h, cudnnBatchNormMode_t, cudnnBatchNormOps_t ops,
    const cudnnActivationDescriptor_t, const cudnnTensorDescriptor_t, size_t* size) {
  if (h == nullptr || size == nullptr) return CUDNN_STATUS_BAD_PARAM;
  SIMGPU_RETURN_IF_ERROR(OnlyBn("cudnnGetBatchNormalizationTrainingExReserveSpaceSize", ops));
  *size = 0;
  return CUDNN_STATUS_SUCCESS;
}

}  // extern "C"
