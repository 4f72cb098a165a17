// Convolution descriptors, algorithm queries and the four convolution passes.
//
// Algorithms: every algorithm value is accepted and computes the same fp32 im2col + gemm
// (kernels/linear/conv.h), so the choice never changes a result. Get/Find report one algorithm per
// pass (forward IMPLICIT_GEMM, backward data ALGO_1, backward filter ALGO_1: the ones real
// cuDNN marks deterministic), with status SUCCESS, CUDNN_DETERMINISTIC and a workspace of 0:
// a GPU's implicit gemm needs none, and the CPU's im2col scratch lives on the host heap so that
// device memory pressure stays what a GPU would see.
#include <algorithm>
#include <new>

#include "api.h"
#include "conv.h"

namespace {

using simgpu::Access;
using simgpu::cudnn::AsTensor4;
using simgpu::cudnn::Bytes;
using simgpu::cudnn::NotSupported;
using simgpu::cudnn::ReadIf;
using simgpu::cudnn::Run;
using simgpu::cudnn::Scalar;
namespace kernels = simgpu::kernels;

// Nominal rate used only for the `time` field of Find's results.
constexpr double kNominalFlopsPerMs = 10e9;

// Checks the descriptors of one convolution and converts them to the kernels' shape.
cudnnStatus_t MakeShape(const char* fn, const cudnnTensorStruct* x, const cudnnFilterStruct* w,
                        const cudnnConvolutionStruct* conv, const cudnnTensorStruct* y,
                        kernels::ConvShape* s) {
  if (w == nullptr || !w->set || conv == nullptr || !conv->set) return CUDNN_STATUS_BAD_PARAM;
  if (cudnnStatus_t st = AsTensor4(fn, x, &s->x); st != CUDNN_STATUS_SUCCESS) return st;
  if (cudnnStatus_t st = AsTensor4(fn, y, &s->y); st != CUDNN_STATUS_SUCCESS) return st;
  if (w->type != CUDNN_DATA_FLOAT) {
    return NotSupported(fn, "filter data type %d (only CUDNN_DATA_FLOAT)",
                        static_cast<int>(w->type));
  }
  if (w->format != CUDNN_TENSOR_NCHW) {
    return NotSupported(fn, "filter format %d (only CUDNN_TENSOR_NCHW)",
                        static_cast<int>(w->format));
  }
  if (w->rank != 4 || conv->spatial != 2) {
    return NotSupported(fn, "%d spatial dims (only 2-d convolution)", conv->spatial);
  }
  if (conv->compute != CUDNN_DATA_FLOAT) {
    return NotSupported(fn, "compute type %d (only CUDNN_DATA_FLOAT)",
                        static_cast<int>(conv->compute));
  }
  s->k = w->dim[0];
  s->r = w->dim[2];
  s->s = w->dim[3];
  s->groups = conv->groups;
  s->pad_h = conv->pad[0], s->pad_w = conv->pad[1];
  s->stride_h = conv->stride[0], s->stride_w = conv->stride[1];
  s->dil_h = conv->dilation[0], s->dil_w = conv->dilation[1];
  s->flip = conv->mode == CUDNN_CONVOLUTION;
  if (w->dim[1] * conv->groups != s->x.c || !kernels::ConvShapeValid(*s)) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  return CUDNN_STATUS_SUCCESS;
}

size_t FilterBytes(const kernels::ConvShape& s) {
  return static_cast<size_t>(s.k * (s.x.c / s.groups) * s.r * s.s) * 4;
}

// Writes one result into a perf array of any of the three perf struct types.
template <typename Perf, typename Algo>
cudnnStatus_t ReportOne(const char* fn, const cudnnTensorStruct* x, const cudnnFilterStruct* w,
                        const cudnnConvolutionStruct* conv, const cudnnTensorStruct* y,
                        int requested, int* returned, Perf* perf, Algo algo) {
  if (returned == nullptr || perf == nullptr || requested < 1) return CUDNN_STATUS_BAD_PARAM;
  kernels::ConvShape s;
  if (cudnnStatus_t st = MakeShape(fn, x, w, conv, y, &s); st != CUDNN_STATUS_SUCCESS) return st;
  *perf = Perf{};
  perf->algo = algo;
  perf->status = CUDNN_STATUS_SUCCESS;
  perf->time = static_cast<float>(kernels::ConvFlops(s) / kNominalFlopsPerMs);
  perf->memory = 0;
  perf->determinism = CUDNN_DETERMINISTIC;
  perf->mathType = conv->math;
  *returned = 1;
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

// ---- Descriptor ----

cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* d) {
  if (d == nullptr) return CUDNN_STATUS_BAD_PARAM;
  *d = new (std::nothrow) cudnnConvolutionStruct;
  return *d ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
}

cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t d) {
  delete d;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t d, int spatial,
                                              const int pad[], const int stride[],
                                              const int dilation[], cudnnConvolutionMode_t mode,
                                              cudnnDataType_t compute) {
  if (d == nullptr || !pad || !stride || !dilation) return CUDNN_STATUS_BAD_PARAM;
  if (spatial < 1 || spatial > CUDNN_DIM_MAX - 2) return CUDNN_STATUS_BAD_PARAM;
  if (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION) return CUDNN_STATUS_BAD_PARAM;
  for (int i = 0; i < spatial; ++i) {
    if (pad[i] < 0 || stride[i] <= 0 || dilation[i] <= 0) return CUDNN_STATUS_BAD_PARAM;
  }
  d->set = true;
  d->spatial = spatial;
  std::copy(pad, pad + spatial, d->pad);
  std::copy(stride, stride + spatial, d->stride);
  std::copy(dilation, dilation + spatial, d->dilation);
  d->mode = mode;
  d->compute = compute;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d, int pad_h, int pad_w,
                                              int u, int v, int dil_h, int dil_w,
                                              cudnnConvolutionMode_t mode,
                                              cudnnDataType_t compute) {
  const int pad[2] = {pad_h, pad_w}, stride[2] = {u, v}, dilation[2] = {dil_h, dil_w};
  return cudnnSetConvolutionNdDescriptor(d, 2, pad, stride, dilation, mode, compute);
}

cudnnStatus_t cudnnGetConvolution2dDescriptor(const cudnnConvolutionDescriptor_t d, int* pad_h,
                                              int* pad_w, int* u, int* v, int* dil_h, int* dil_w,
                                              cudnnConvolutionMode_t* mode,
                                              cudnnDataType_t* compute) {
  if (d == nullptr || !d->set || d->spatial != 2) return CUDNN_STATUS_BAD_PARAM;
  if (!pad_h || !pad_w || !u || !v || !dil_h || !dil_w || !mode || !compute) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  *pad_h = d->pad[0], *pad_w = d->pad[1];
  *u = d->stride[0], *v = d->stride[1];
  *dil_h = d->dilation[0], *dil_w = d->dilation[1];
  *mode = d->mode;
  *compute = d->compute;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionNdDescriptor(const cudnnConvolutionDescriptor_t d, int requested,
                                              int* spatial, int pad[], int stride[], int dilation[],
                                              cudnnConvolutionMode_t* mode,
                                              cudnnDataType_t* compute) {
  if (d == nullptr || !d->set || !spatial || !mode || !compute || requested < 0) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  *spatial = d->spatial;
  for (int i = 0; i < std::min(requested, d->spatial); ++i) {
    if (pad) pad[i] = d->pad[i];
    if (stride) stride[i] = d->stride[i];
    if (dilation) dilation[i] = d->dilation[i];
  }
  *mode = d->mode;
  *compute = d->compute;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t math) {
  if (d == nullptr) return CUDNN_STATUS_BAD_PARAM;
  // All four math types compute plain fp32 here: tensor-op math on fp32 data is at most as
  // precise as fp32, so fp32 is never a wrong result for it.
  if (math != CUDNN_DEFAULT_MATH && math != CUDNN_TENSOR_OP_MATH &&
      math != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION && math != CUDNN_FMA_MATH) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  d->math = math;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t* math) {
  if (d == nullptr || math == nullptr) return CUDNN_STATUS_BAD_PARAM;
  *math = d->math;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int groups) {
  if (d == nullptr || groups < 1) return CUDNN_STATUS_BAD_PARAM;
  d->groups = groups;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int* groups) {
  if (d == nullptr || groups == nullptr) return CUDNN_STATUS_BAD_PARAM;
  *groups = d->groups;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionReorderType(cudnnConvolutionDescriptor_t d,
                                             cudnnReorderType_t reorder) {
  if (d == nullptr) return CUDNN_STATUS_BAD_PARAM;
  d->reorder = reorder;  // only meaningful for int8 layouts, which are not supported anyway
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionReorderType(cudnnConvolutionDescriptor_t d,
                                             cudnnReorderType_t* reorder) {
  if (d == nullptr || reorder == nullptr) return CUDNN_STATUS_BAD_PARAM;
  *reorder = d->reorder;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionNdForwardOutputDim(const cudnnConvolutionDescriptor_t conv,
                                                    const cudnnTensorDescriptor_t x,
                                                    const cudnnFilterDescriptor_t w, int rank,
                                                    int out[]) {
  if (conv == nullptr || !conv->set || x == nullptr || !x->set || w == nullptr || !w->set ||
      out == nullptr) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  if (rank != x->rank || rank != w->rank || rank != conv->spatial + 2)
    return CUDNN_STATUS_BAD_PARAM;
  if (w->dim[1] * conv->groups != x->dim[1]) return CUDNN_STATUS_BAD_PARAM;
  out[0] = x->dim[0];
  out[1] = w->dim[0];
  for (int i = 0; i < conv->spatial; ++i) {
    const int64_t d = kernels::ConvOutputDim(x->dim[i + 2], conv->pad[i], w->dim[i + 2],
                                             conv->stride[i], conv->dilation[i]);
    if (d <= 0) return CUDNN_STATUS_BAD_PARAM;
    out[i + 2] = static_cast<int>(d);
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolution2dForwardOutputDim(const cudnnConvolutionDescriptor_t conv,
                                                    const cudnnTensorDescriptor_t x,
                                                    const cudnnFilterDescriptor_t w, int* n, int* c,
                                                    int* h, int* wo) {
  if (!n || !c || !h || !wo) return CUDNN_STATUS_BAD_PARAM;
  int out[4];
  if (cudnnStatus_t st = cudnnGetConvolutionNdForwardOutputDim(conv, x, w, 4, out);
      st != CUDNN_STATUS_SUCCESS) {
    return st;
  }
  *n = out[0], *c = out[1], *h = out[2], *wo = out[3];
  return CUDNN_STATUS_SUCCESS;
}

// ---- Algorithms ----

cudnnStatus_t cudnnGetConvolutionForwardAlgorithmMaxCount(cudnnHandle_t h, int* count) {
  if (h == nullptr || count == nullptr) return CUDNN_STATUS_BAD_PARAM;
  *count = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithmMaxCount(cudnnHandle_t h, int* count) {
  if (h == nullptr || count == nullptr) return CUDNN_STATUS_BAD_PARAM;
  *count = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(cudnnHandle_t h, int* count) {
  if (h == nullptr || count == nullptr) return CUDNN_STATUS_BAD_PARAM;
  *count = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(
    cudnnHandle_t h, const cudnnTensorDescriptor_t x, const cudnnFilterDescriptor_t w,
    const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t y, const int requested,
    int* returned, cudnnConvolutionFwdAlgoPerf_t* perf) {
  if (h == nullptr) return CUDNN_STATUS_BAD_PARAM;
  return ReportOne("cudnnGetConvolutionForwardAlgorithm_v7", x, w, conv, y, requested, returned,
                   perf, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM);
}

cudnnStatus_t cudnnFindConvolutionForwardAlgorithm(cudnnHandle_t h, const cudnnTensorDescriptor_t x,
                                                   const cudnnFilterDescriptor_t w,
                                                   const cudnnConvolutionDescriptor_t conv,
                                                   const cudnnTensorDescriptor_t y,
                                                   const int requested, int* returned,
                                                   cudnnConvolutionFwdAlgoPerf_t* perf) {
  if (h == nullptr) return CUDNN_STATUS_BAD_PARAM;
  return ReportOne("cudnnFindConvolutionForwardAlgorithm", x, w, conv, y, requested, returned, perf,
                   CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM);
}

// The Ex variants would time the algorithms on the caller's buffers; with one algorithm there
// is nothing to time, so they leave the buffers alone.
cudnnStatus_t cudnnFindConvolutionForwardAlgorithmEx(
    cudnnHandle_t h, const cudnnTensorDescriptor_t x, const void*, const cudnnFilterDescriptor_t w,
    const void*, const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t y, void*,
    const int requested, int* returned, cudnnConvolutionFwdAlgoPerf_t* perf, void*, size_t) {
  if (h == nullptr) return CUDNN_STATUS_BAD_PARAM;
  return ReportOne("cudnnFindConvolutionForwardAlgorithmEx", x, w, conv, y, requested, returned,
                   perf, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM);
}

cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t h, const cudnnFilterDescriptor_t w, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t dx, const int requested,
    int* returned, cudnnConvolutionBwdDataAlgoPerf_t* perf) {
  if (h == nullptr) return CUDNN_STATUS_BAD_PARAM;
  return ReportOne("cudnnGetConvolutionBackwardDataAlgorithm_v7", dx, w, conv, dy, requested,
                   returned, perf, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1);
}

cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithm(
    cudnnHandle_t h, const cudnnFilterDescriptor_t w, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t dx, const int requested,
    int* returned, cudnnConvolutionBwdDataAlgoPerf_t* perf) {
  if (h == nullptr) return CUDNN_STATUS_BAD_PARAM;
  return ReportOne("cudnnFindConvolutionBackwardDataAlgorithm", dx, w, conv, dy, requested,
                   returned, perf, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1);
}

cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithmEx(
    cudnnHandle_t h, const cudnnFilterDescriptor_t w, const void*, const cudnnTensorDescriptor_t dy,
    const void*, const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t dx, void*,
    const int requested, int* returned, cudnnConvolutionBwdDataAlgoPerf_t* perf, void*, size_t) {
  if (h == nullptr) return CUDNN_STATUS_BAD_PARAM;
  return ReportOne("cudnnFindConvolutionBackwardDataAlgorithmEx", dx, w, conv, dy, requested,
                   returned, perf, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1);
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t h, const cudnnTensorDescriptor_t x, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t conv, const cudnnFilterDescriptor_t dw, const int requested,
    int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* perf) {
  if (h == nullptr) return CUDNN_STATUS_BAD_PARAM;
  return ReportOne("cudnnGetConvolutionBackwardFilterAlgorithm_v7", x, dw, conv, dy, requested,
                   returned, perf, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1);
}

cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithm(
    cudnnHandle_t h, const cudnnTensorDescriptor_t x, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t conv, const cudnnFilterDescriptor_t dw, const int requested,
    int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* perf) {
  if (h == nullptr) return CUDNN_STATUS_BAD_PARAM;
  return ReportOne("cudnnFindConvolutionBackwardFilterAlgorithm", x, dw, conv, dy, requested,
                   returned, perf, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1);
}

cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithmEx(
    cudnnHandle_t h, const cudnnTensorDescriptor_t x, const void*, const cudnnTensorDescriptor_t dy,
    const void*, const cudnnConvolutionDescriptor_t conv, const cudnnFilterDescriptor_t dw, void*,
    const int requested, int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* perf, void*, size_t) {
  if (h == nullptr) return CUDNN_STATUS_BAD_PARAM;
  return ReportOne("cudnnFindConvolutionBackwardFilterAlgorithmEx", x, dw, conv, dy, requested,
                   returned, perf, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1);
}

cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(
    cudnnHandle_t h, const cudnnTensorDescriptor_t x, const cudnnFilterDescriptor_t w,
    const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t y,
    cudnnConvolutionFwdAlgo_t algo, size_t* size) {
  if (h == nullptr || size == nullptr) return CUDNN_STATUS_BAD_PARAM;
  if (algo < 0 || algo >= CUDNN_CONVOLUTION_FWD_ALGO_COUNT) return CUDNN_STATUS_BAD_PARAM;
  kernels::ConvShape s;
  if (cudnnStatus_t st = MakeShape("cudnnGetConvolutionForwardWorkspaceSize", x, w, conv, y, &s);
      st != CUDNN_STATUS_SUCCESS) {
    return st;
  }
  *size = 0;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(
    cudnnHandle_t h, const cudnnFilterDescriptor_t w, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t dx,
    cudnnConvolutionBwdDataAlgo_t algo, size_t* size) {
  if (h == nullptr || size == nullptr) return CUDNN_STATUS_BAD_PARAM;
  if (algo < 0 || algo >= CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT) return CUDNN_STATUS_BAD_PARAM;
  kernels::ConvShape s;
  if (cudnnStatus_t st =
          MakeShape("cudnnGetConvolutionBackwardDataWorkspaceSize", dx, w, conv, dy, &s);
      st != CUDNN_STATUS_SUCCESS) {
    return st;
  }
  *size = 0;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(
    cudnnHandle_t h, const cudnnTensorDescriptor_t x, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t conv, const cudnnFilterDescriptor_t dw,
    cudnnConvolutionBwdFilterAlgo_t algo, size_t* size) {
  if (h == nullptr || size == nullptr) return CUDNN_STATUS_BAD_PARAM;
  if (algo < 0 || algo >= CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT) return CUDNN_STATUS_BAD_PARAM;
  kernels::ConvShape s;
  if (cudnnStatus_t st =
          MakeShape("cudnnGetConvolutionBackwardFilterWorkspaceSize", x, dw, conv, dy, &s);
      st != CUDNN_STATUS_SUCCESS) {
    return st;
  }
  *size = 0;
  return CUDNN_STATUS_SUCCESS;
}

// ---- Compute ----
// Access lists: inputs read, the output written (and read when beta != 0), and the caller's
// workspace written when it passes one (cuDNN may use it; we do not, but the contract stands).

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t h, const void* alpha,
                                      const cudnnTensorDescriptor_t xd, const void* x,
                                      const cudnnFilterDescriptor_t wd, const void* w,
                                      const cudnnConvolutionDescriptor_t conv,
                                      cudnnConvolutionFwdAlgo_t algo, void* ws, size_t ws_bytes,
                                      const void* beta, const cudnnTensorDescriptor_t yd, void* y) {
  if (!h || !alpha || !beta || !x || !w || !y) return CUDNN_STATUS_BAD_PARAM;
  if (algo < 0 || algo >= CUDNN_CONVOLUTION_FWD_ALGO_COUNT) return CUDNN_STATUS_BAD_PARAM;
  kernels::ConvShape s;
  if (cudnnStatus_t st = MakeShape("cudnnConvolutionForward", xd, wd, conv, yd, &s);
      st != CUDNN_STATUS_SUCCESS) {
    return st;
  }
  const float a = Scalar(alpha), b = Scalar(beta);
  const double out = static_cast<double>(s.y.Elements()) * 4 * (b != 0.0f ? 2 : 1);
  const double bytes = s.x.Elements() * 4.0 + FilterBytes(s) + out;
  return Run(
      h, "cudnnConvolutionForward",
      {Access{x, Bytes(s.x), false}, Access{w, FilterBytes(s), false},
       ReadIf(b != 0.0f, y, Bytes(s.y)), Access{y, Bytes(s.y), true}, Access{ws, ws_bytes, true}},
      kernels::ConvFlops(s), bytes, [&] {
        kernels::ConvForward(s, a, static_cast<const float*>(x), static_cast<const float*>(w), b,
                             static_cast<float*>(y), simgpu::Threads());
      });
}

cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t h, const void* alpha,
                                           const cudnnFilterDescriptor_t wd, const void* w,
                                           const cudnnTensorDescriptor_t dyd, const void* dy,
                                           const cudnnConvolutionDescriptor_t conv,
                                           cudnnConvolutionBwdDataAlgo_t algo, void* ws,
                                           size_t ws_bytes, const void* beta,
                                           const cudnnTensorDescriptor_t dxd, void* dx) {
  if (!h || !alpha || !beta || !w || !dy || !dx) return CUDNN_STATUS_BAD_PARAM;
  if (algo < 0 || algo >= CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT) return CUDNN_STATUS_BAD_PARAM;
  kernels::ConvShape s;
  if (cudnnStatus_t st = MakeShape("cudnnConvolutionBackwardData", dxd, wd, conv, dyd, &s);
      st != CUDNN_STATUS_SUCCESS) {
    return st;
  }
  const float a = Scalar(alpha), b = Scalar(beta);
  const double out = static_cast<double>(s.x.Elements()) * 4 * (b != 0.0f ? 2 : 1);
  const double bytes = s.y.Elements() * 4.0 + FilterBytes(s) + out;
  return Run(
      h, "cudnnConvolutionBackwardData",
      {Access{w, FilterBytes(s), false}, Access{dy, Bytes(s.y), false},
       ReadIf(b != 0.0f, dx, Bytes(s.x)), Access{dx, Bytes(s.x), true}, Access{ws, ws_bytes, true}},
      kernels::ConvFlops(s), bytes, [&] {
        kernels::ConvBackwardData(s, a, static_cast<const float*>(w), static_cast<const float*>(dy),
                                  b, static_cast<float*>(dx), simgpu::Threads());
      });
}

cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t h, const void* alpha,
                                             const cudnnTensorDescriptor_t xd, const void* x,
                                             const cudnnTensorDescriptor_t dyd, const void* dy,
                                             const cudnnConvolutionDescriptor_t conv,
                                             cudnnConvolutionBwdFilterAlgo_t algo, void* ws,
                                             size_t ws_bytes, const void* beta,
                                             const cudnnFilterDescriptor_t dwd, void* dw) {
  if (!h || !alpha || !beta || !x || !dy || !dw) return CUDNN_STATUS_BAD_PARAM;
  if (algo < 0 || algo >= CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT) return CUDNN_STATUS_BAD_PARAM;
  kernels::ConvShape s;
  if (cudnnStatus_t st = MakeShape("cudnnConvolutionBackwardFilter", xd, dwd, conv, dyd, &s);
      st != CUDNN_STATUS_SUCCESS) {
    return st;
  }
  const float a = Scalar(alpha), b = Scalar(beta);
  const double bytes = (s.x.Elements() + s.y.Elements()) * 4.0 +
                       static_cast<double>(FilterBytes(s)) * (b != 0.0f ? 2 : 1);
  return Run(h, "cudnnConvolutionBackwardFilter",
             {Access{x, Bytes(s.x), false}, Access{dy, Bytes(s.y), false},
              ReadIf(b != 0.0f, dw, FilterBytes(s)), Access{dw, FilterBytes(s), true},
              Access{ws, ws_bytes, true}},
             kernels::ConvFlops(s), bytes, [&] {
               kernels::ConvBackwardFilter(s, a, static_cast<const float*>(x),
                                           static_cast<const float*>(dy), b,
                                           static_cast<float*>(dw), simgpu::Threads());
             });
}

cudnnStatus_t cudnnConvolutionBackwardBias(cudnnHandle_t h, const void* alpha,
                                           const cudnnTensorDescriptor_t dyd, const void* dy,
                                           const void* beta, const cudnnTensorDescriptor_t dbd,
                                           void* db) {
  if (!h || !alpha || !beta || !dy || !db) return CUDNN_STATUS_BAD_PARAM;
  kernels::Tensor4 t, bt;
  if (cudnnStatus_t st = AsTensor4("cudnnConvolutionBackwardBias", dyd, &t);
      st != CUDNN_STATUS_SUCCESS) {
    return st;
  }
  if (cudnnStatus_t st = AsTensor4("cudnnConvolutionBackwardBias", dbd, &bt);
      st != CUDNN_STATUS_SUCCESS) {
    return st;
  }
  if (bt.n != 1 || bt.c != t.c || bt.h != 1 || bt.w != 1) return CUDNN_STATUS_BAD_PARAM;
  const float a = Scalar(alpha), b = Scalar(beta);
  return Run(
      h, "cudnnConvolutionBackwardBias",
      {Access{dy, Bytes(t), false}, ReadIf(b != 0.0f, db, Bytes(bt)), Access{db, Bytes(bt), true}},
      static_cast<double>(t.Elements()), t.Elements() * 4.0 + bt.c * 4.0 * (b != 0.0f ? 2 : 1),
      [&] {
        kernels::ConvBackwardBias(t, a, static_cast<const float*>(dy), b, static_cast<float*>(db),
                                  bt.sc, simgpu::Threads());
      });
}

}  // extern "C"
