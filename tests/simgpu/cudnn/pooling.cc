// cudnnPoolingForward and cudnnPoolingBackward over 4-d fp32 tensors (kernels/layers/pool.h).
#include "api.h"
#include "pool.h"

namespace {

using simgpu::Access;
using simgpu::cudnn::AsTensor4;
using simgpu::cudnn::Bytes;
using simgpu::cudnn::NotSupported;
using simgpu::cudnn::ReadIf;
using simgpu::cudnn::Run;
using simgpu::cudnn::Scalar;
namespace kernels = simgpu::kernels;

cudnnStatus_t MakeShape(const char* fn, const cudnnPoolingStruct* p, const cudnnTensorStruct* x,
                        const cudnnTensorStruct* y, kernels::PoolShape* s) {
  if (p == nullptr || !p->set) return CUDNN_STATUS_BAD_PARAM;
  SIMGPU_RETURN_IF_ERROR(AsTensor4(fn, x, &s->x));
  SIMGPU_RETURN_IF_ERROR(AsTensor4(fn, y, &s->y));
  if (p->spatial != 2) return NotSupported(fn, "%d-d pooling (only 2-d)", p->spatial);
  switch (p->mode) {
    case CUDNN_POOLING_MAX:
    case CUDNN_POOLING_MAX_DETERMINISTIC:  // ours is always deterministic
      s->mode = kernels::PoolMode::kMax;
      break;
    case CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING:
      s->mode = kernels::PoolMode::kAverageInclusive;
      break;
    case CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING:
      s->mode = kernels::PoolMode::kAverageExclusive;
      break;
    default:
      return CUDNN_STATUS_BAD_PARAM;
  }
  s->propagate_nan = p->nan == CUDNN_PROPAGATE_NAN;
  s->win_h = p->window[0], s->win_w = p->window[1];
  s->pad_h = p->pad[0], s->pad_w = p->pad[1];
  s->stride_h = p->stride[0], s->stride_w = p->stride[1];
  return kernels::PoolShapeValid(*s) ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM;
}

}  // namespace

extern "C" {

cudnnStatus_t cudnnPoolingForward(cudnnHandle_t h, const cudnnPoolingDescriptor_t pd,
                                  const void* alpha, const cudnnTensorDescriptor_t xd,
                                  const void* x, const void* beta, const cudnnTensorDescriptor_t yd,
                                  void* y) {
  if (!h || !alpha || !beta || !x || !y) return CUDNN_STATUS_BAD_PARAM;
  kernels::PoolShape s;
  SIMGPU_RETURN_IF_ERROR(MakeShape("cudnnPoolingForward", pd, xd, yd, &s));
  const float a = Scalar(alpha), b = Scalar(beta);
  const double ny = static_cast<double>(s.y.Elements());
  return Run(
      h, "cudnnPoolingForward",
      {Access{x, Bytes(s.x), false}, ReadIf(b != 0.0f, y, Bytes(s.y)), Access{y, Bytes(s.y), true}},
      ny * s.win_h * s.win_w, s.x.Elements() * 4.0 + ny * 4 * (b != 0.0f ? 2 : 1), [&] {
        kernels::PoolForward(s, a, static_cast<const float*>(x), b, static_cast<float*>(y),
                             simgpu::Threads());
      });
}

cudnnStatus_t cudnnPoolingBackward(cudnnHandle_t h, const cudnnPoolingDescriptor_t pd,
                                   const void* alpha, const cudnnTensorDescriptor_t yd,
                                   const void* y, const cudnnTensorDescriptor_t dyd, const void* dy,
                                   const cudnnTensorDescriptor_t xd, const void* x,
                                   const void* beta, const cudnnTensorDescriptor_t dxd, void* dx) {
  const char* fn = "cudnnPoolingBackward";
  if (!h || !alpha || !beta || !y || !dy || !x || !dx) return CUDNN_STATUS_BAD_PARAM;
  kernels::PoolShape s;
  SIMGPU_RETURN_IF_ERROR(MakeShape(fn, pd, xd, yd, &s));
  kernels::Tensor4 dyt, dxt;
  SIMGPU_RETURN_IF_ERROR(AsTensor4(fn, dyd, &dyt));
  SIMGPU_RETURN_IF_ERROR(AsTensor4(fn, dxd, &dxt));
  // The kernel indexes dy with y's layout and dx with x's: require those to agree.
  auto same = [](const kernels::Tensor4& a, const kernels::Tensor4& b) {
    return a.n == b.n && a.c == b.c && a.h == b.h && a.w == b.w && a.sn == b.sn && a.sc == b.sc &&
           a.sh == b.sh && a.sw == b.sw;
  };
  if (dyt.n != s.y.n || dyt.c != s.y.c || dyt.h != s.y.h || dyt.w != s.y.w) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  if (dxt.n != s.x.n || dxt.c != s.x.c || dxt.h != s.x.h || dxt.w != s.x.w) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  if (!same(dyt, s.y) || !same(dxt, s.x)) {
    return NotSupported(fn, "dy/dx strides that differ from y/x strides");
  }
  const float a = Scalar(alpha), b = Scalar(beta);
  const double ny = static_cast<double>(s.y.Elements()), nx = static_cast<double>(s.x.Elements());
  // y is in the list because cuDNN reads it; this kernel recomputes the maxima from x instead.
  return Run(
      h, "cudnnPoolingBackward",
      {Access{y, Bytes(s.y), false}, Access{dy, Bytes(dyt), false}, Access{x, Bytes(s.x), false},
       ReadIf(b != 0.0f, dx, Bytes(dxt)), Access{dx, Bytes(dxt), true}},
      ny * s.win_h * s.win_w, (2 * ny + nx) * 4 + nx * 4 * (b != 0.0f ? 2 : 1), [&] {
        kernels::PoolBackward(s, a, static_cast<const float*>(dy), static_cast<const float*>(x), b,
                              static_cast<float*>(dx), simgpu::Threads());
      });
}

}  // extern "C"
