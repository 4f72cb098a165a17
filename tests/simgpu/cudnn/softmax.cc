// cudnnSoftmaxForward and cudnnSoftmaxBackward over 4-d fp32 tensors (kernels/layers/softmax.h).
#include "softmax.h"

#include "api.h"

namespace {

using simgpu::Access;
using simgpu::cudnn::AsTensor4;
using simgpu::cudnn::Bytes;
using simgpu::cudnn::ReadIf;
using simgpu::cudnn::Run;
using simgpu::cudnn::Scalar;
namespace kernels = simgpu::kernels;

cudnnStatus_t Modes(cudnnSoftmaxAlgorithm_t algo, cudnnSoftmaxMode_t mode, kernels::SoftmaxAlgo* ka,
                    kernels::SoftmaxMode* km) {
  switch (algo) {
    case CUDNN_SOFTMAX_FAST:
      *ka = kernels::SoftmaxAlgo::kFast;
      break;
    case CUDNN_SOFTMAX_ACCURATE:
      *ka = kernels::SoftmaxAlgo::kAccurate;
      break;
    case CUDNN_SOFTMAX_LOG:
      *ka = kernels::SoftmaxAlgo::kLog;
      break;
    default:
      return CUDNN_STATUS_BAD_PARAM;
  }
  switch (mode) {
    case CUDNN_SOFTMAX_MODE_INSTANCE:
      *km = kernels::SoftmaxMode::kInstance;
      break;
    case CUDNN_SOFTMAX_MODE_CHANNEL:
      *km = kernels::SoftmaxMode::kChannel;
      break;
    default:
      return CUDNN_STATUS_BAD_PARAM;
  }
  return CUDNN_STATUS_SUCCESS;
}

bool SameDims(const kernels::Tensor4& a, const kernels::Tensor4& b) {
  return a.n == b.n && a.c == b.c && a.h == b.h && a.w == b.w;
}

}  // namespace

extern "C" {

cudnnStatus_t cudnnSoftmaxForward(cudnnHandle_t h, cudnnSoftmaxAlgorithm_t algo,
                                  cudnnSoftmaxMode_t mode, const void* alpha,
                                  const cudnnTensorDescriptor_t xd, const void* x, const void* beta,
                                  const cudnnTensorDescriptor_t yd, void* y) {
  const char* fn = "cudnnSoftmaxForward";
  if (!h || !alpha || !beta || !x || !y) return CUDNN_STATUS_BAD_PARAM;
  kernels::SoftmaxAlgo ka;
  kernels::SoftmaxMode km;
  SIMGPU_RETURN_IF_ERROR(Modes(algo, mode, &ka, &km));
  kernels::Tensor4 xt, yt;
  SIMGPU_RETURN_IF_ERROR(AsTensor4(fn, xd, &xt));
  SIMGPU_RETURN_IF_ERROR(AsTensor4(fn, yd, &yt));
  if (!SameDims(xt, yt)) return CUDNN_STATUS_BAD_PARAM;
  const float a = Scalar(alpha), b = Scalar(beta);
  const double n = static_cast<double>(xt.Elements());
  // Max, exp-and-sum and normalise: x read three times on a GPU that does not fuse them.
  return Run(
      h, fn,
      {Access{x, Bytes(xt), false}, ReadIf(b != 0.0f, y, Bytes(yt)), Access{y, Bytes(yt), true}},
      5 * n, n * 4 * (b != 0.0f ? 5 : 4), [&] {
        kernels::SoftmaxForward(ka, km, xt, yt, a, static_cast<const float*>(x), b,
                                static_cast<float*>(y), simgpu::Threads());
      });
}

cudnnStatus_t cudnnSoftmaxBackward(cudnnHandle_t h, cudnnSoftmaxAlgorithm_t algo,
                                   cudnnSoftmaxMode_t mode, const void* alpha,
                                   const cudnnTensorDescriptor_t yd, const void* y,
                                   const cudnnTensorDescriptor_t dyd, const void* dy,
                                   const void* beta, const cudnnTensorDescriptor_t dxd, void* dx) {
  const char* fn = "cudnnSoftmaxBackward";
  if (!h || !alpha || !beta || !y || !dy || !dx) return CUDNN_STATUS_BAD_PARAM;
  kernels::SoftmaxAlgo ka;
  kernels::SoftmaxMode km;
  SIMGPU_RETURN_IF_ERROR(Modes(algo, mode, &ka, &km));
  kernels::Tensor4 yt, dyt, dxt;
  SIMGPU_RETURN_IF_ERROR(AsTensor4(fn, yd, &yt));
  SIMGPU_RETURN_IF_ERROR(AsTensor4(fn, dyd, &dyt));
  SIMGPU_RETURN_IF_ERROR(AsTensor4(fn, dxd, &dxt));
  if (!SameDims(yt, dyt) || !SameDims(yt, dxt)) return CUDNN_STATUS_BAD_PARAM;
  const float a = Scalar(alpha), b = Scalar(beta);
  const double n = static_cast<double>(yt.Elements());
  return Run(h, fn,
             {Access{y, Bytes(yt), false}, Access{dy, Bytes(dyt), false},
              ReadIf(b != 0.0f, dx, Bytes(dxt)), Access{dx, Bytes(dxt), true}},
             4 * n, n * 4 * (b != 0.0f ? 6 : 5), [&] {
               kernels::SoftmaxBackward(ka, km, yt, dyt, dxt, a, static_cast<const float*>(y),
                                        static_cast<const float*>(dy), b, static_cast<float*>(dx),
                                        simgpu::Threads());
             });
}

}  // extern "C"
