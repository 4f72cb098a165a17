#include "layers/conv_core.h"

#include <memory>
#include <utility>

#include "checks.h"

namespace cnn_train {
namespace {

// Large enough for the fast algorithms of ResNet-50 at batch 64, small beside 16 GB.
constexpr size_t kMaxWorkspaceBytes = size_t{256} << 20;

// Results of the _v7 heuristics; the three perf structs share these fields.
template <typename Perf>
int PickAlgorithm(const Perf* perf, int count, size_t* workspace_bytes) {
  for (int i = 0; i < count; ++i) {
    const bool tensor_ops = perf[i].mathType == CUDNN_TENSOR_OP_MATH ||
                            perf[i].mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].determinism == CUDNN_DETERMINISTIC &&
        perf[i].memory <= kMaxWorkspaceBytes && !tensor_ops) {
      *workspace_bytes = perf[i].memory;
      return static_cast<int>(perf[i].algo);
    }
  }
  return -1;
}

}  // namespace

ConvCore::ConvCore(const std::string& name, const Dims& x_dims, const Dims& y_dims, int kernel,
                   int stride, int pad)
    : name_(name), x_dims_(x_dims), y_dims_(y_dims) {
  CUDNN_CHECK(cudnnCreateFilterDescriptor(&filter_));
  CUDNN_CHECK(cudnnSetFilter4dDescriptor(filter_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, y_dims.c,
                                         x_dims.c, kernel, kernel));
  CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv_));
  CUDNN_CHECK(cudnnSetConvolution2dDescriptor(conv_, pad, pad, stride, stride, 1, 1,
                                              CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  CUDNN_CHECK(cudnnSetConvolutionMathType(conv_, CUDNN_FMA_MATH));
}

ConvCore::~ConvCore() {
  cudnnDestroyConvolutionDescriptor(conv_);
  cudnnDestroyFilterDescriptor(filter_);
}

const ConvCore::State& ConvCore::StateFor(Context& ctx, int batch) {
  auto it = states_.find(batch);
  if (it != states_.end()) return *it->second;
  auto s = std::make_unique<State>(batch, x_dims_, y_dims_);
  ChooseAlgorithms(ctx, *s);
  return *states_.emplace(batch, std::move(s)).first->second;
}

void ConvCore::ChooseAlgorithms(Context& ctx, State& s) const {
  int returned = 0;
  {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(ctx.cudnn, s.x.get(), filter_, conv_,
                                                       s.y.get(), CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                       &returned, perf));
    const int algo = PickAlgorithm(perf, returned, &s.fwd_bytes);
    if (algo < 0) NoAlgorithm("forward");
    s.fwd = static_cast<cudnnConvolutionFwdAlgo_t>(algo);
  }
  {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
        ctx.cudnn, filter_, s.y.get(), conv_, s.x.get(), CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
        &returned, perf));
    const int algo = PickAlgorithm(perf, returned, &s.data_bytes);
    if (algo < 0) NoAlgorithm("backward data");
    s.data = static_cast<cudnnConvolutionBwdDataAlgo_t>(algo);
  }
  {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
        ctx.cudnn, s.x.get(), s.y.get(), conv_, filter_, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
        &returned, perf));
    const int algo = PickAlgorithm(perf, returned, &s.filter_bytes);
    if (algo < 0) NoAlgorithm("backward filter");
    s.filter = static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo);
  }
}

void ConvCore::NoAlgorithm(const char* pass) const {
  Fail(kExitApiError,
       "no deterministic FMA %s convolution algorithm with a workspace of at most %zu bytes "
       "for %s",
       pass, kMaxWorkspaceBytes, name_.c_str());
}

}  // namespace cnn_train
