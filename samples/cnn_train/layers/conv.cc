// Convolution (cross-correlation, NCHW, square kernel), optionally with a bias.
//
// Determinism: the descriptor asks for FMA math only (no TF32 on real GPUs), and each of the
// three algorithms is the first that cudnnGet*Algorithm_v7 reports with status SUCCESS,
// CUDNN_DETERMINISTIC and a workspace within kMaxWorkspaceBytes. The choice depends on the
// batch size, so it is made once per batch size and cached.
#include <map>
#include <memory>

#include "checks.h"
#include "layers/layer.h"

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

class Conv final : public Layer {
 public:
  Conv(const std::string& name, Dims in, int out_channels, int kernel, int stride, int pad,
       bool bias)
      : name_(name), in_(in), bias_(bias) {
    out_ = {out_channels, (in.h + 2 * pad - kernel) / stride + 1,
            (in.w + 2 * pad - kernel) / stride + 1};
    if (out_.h <= 0 || out_.w <= 0) {
      Fail(kExitUsage, "image too small: %s would produce an empty output", name.c_str());
    }
    const int64_t fan_in = static_cast<int64_t>(in.c) * kernel * kernel;
    params_.push_back({"weight", fan_in * out_channels, Init::kHeUniform, fan_in});
    if (bias_) params_.push_back({"bias", out_channels, Init::kZero, fan_in});

    CUDNN_CHECK(cudnnCreateFilterDescriptor(&filter_));
    CUDNN_CHECK(cudnnSetFilter4dDescriptor(filter_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                           out_channels, in.c, kernel, kernel));
    CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv_));
    CUDNN_CHECK(cudnnSetConvolution2dDescriptor(conv_, pad, pad, stride, stride, 1, 1,
                                                CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CUDNN_CHECK(cudnnSetConvolutionMathType(conv_, CUDNN_FMA_MATH));
    if (bias_) bias_desc_ = std::make_unique<TensorDesc>(1, out_channels, 1, 1);
  }

  ~Conv() override {
    cudnnDestroyConvolutionDescriptor(conv_);
    cudnnDestroyFilterDescriptor(filter_);
  }

  const char* kind() const override { return "conv"; }
  bool backward_reads_output() const override { return false; }

  void Forward(Context& ctx, const ForwardArgs& args) override {
    const State& s = StateFor(ctx, args.batch);
    const float one = 1.0f;
    const float zero = 0.0f;
    void* workspace = ctx.workspace->Get(s.fwd_bytes);
    CUDNN_CHECK(cudnnConvolutionForward(ctx.cudnn, &one, s.x.get(), args.x[0], filter_,
                                        params_[0].value, conv_, s.fwd, workspace, s.fwd_bytes,
                                        &zero, s.y.get(), args.y));
    if (bias_) {
      CUDNN_CHECK(cudnnAddTensor(ctx.cudnn, &one, bias_desc_->get(), params_[1].value, &one,
                                 s.y.get(), args.y));
    }
  }

  void Backward(Context& ctx, const BackwardArgs& args) override {
    const State& s = StateFor(ctx, args.batch);
    const float one = 1.0f;
    const float zero = 0.0f;
    if (bias_) {
      CUDNN_CHECK(cudnnConvolutionBackwardBias(ctx.cudnn, &one, s.y.get(), args.dy, &zero,
                                               bias_desc_->get(), params_[1].grad));
    }
    void* workspace = ctx.workspace->Get(s.filter_bytes);
    CUDNN_CHECK(cudnnConvolutionBackwardFilter(ctx.cudnn, &one, s.x.get(), args.x[0], s.y.get(),
                                               args.dy, conv_, s.filter, workspace, s.filter_bytes,
                                               &zero, filter_, params_[0].grad));
    if (args.dx[0] != nullptr) {
      workspace = ctx.workspace->Get(s.data_bytes);
      CUDNN_CHECK(cudnnConvolutionBackwardData(
          ctx.cudnn, &one, filter_, params_[0].value, s.y.get(), args.dy, conv_, s.data, workspace,
          s.data_bytes, &args.dx_beta[0], s.x.get(), args.dx[0]));
    }
  }

 private:
  // Descriptors and algorithms for one batch size.
  struct State {
    State(int batch, const Dims& in, const Dims& out) : x(batch, in), y(batch, out) {}
    TensorDesc x;
    TensorDesc y;
    cudnnConvolutionFwdAlgo_t fwd{};
    cudnnConvolutionBwdDataAlgo_t data{};
    cudnnConvolutionBwdFilterAlgo_t filter{};
    size_t fwd_bytes = 0;
    size_t data_bytes = 0;
    size_t filter_bytes = 0;
  };

  const State& StateFor(Context& ctx, int batch) {
    auto it = states_.find(batch);
    if (it != states_.end()) return *it->second;
    auto s = std::make_unique<State>(batch, in_, out_);
    ChooseAlgorithms(ctx, *s);
    return *states_.emplace(batch, std::move(s)).first->second;
  }

  void ChooseAlgorithms(Context& ctx, State& s) const {
    int returned = 0;
    {
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
          ctx.cudnn, s.x.get(), filter_, conv_, s.y.get(), CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
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

  [[noreturn]] void NoAlgorithm(const char* pass) const {
    Fail(kExitApiError,
         "no deterministic FMA %s convolution algorithm with a workspace of at most %zu bytes "
         "for %s",
         pass, kMaxWorkspaceBytes, name_.c_str());
  }

  std::string name_;
  Dims in_;
  bool bias_;
  cudnnFilterDescriptor_t filter_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  std::unique_ptr<TensorDesc> bias_desc_;
  std::map<int, std::unique_ptr<State>> states_;
};

}  // namespace

std::unique_ptr<Layer> MakeConv(const std::string& name, Dims in, int out_channels, int kernel,
                                int stride, int pad, bool bias) {
  return std::make_unique<Conv>(name, in, out_channels, kernel, stride, pad, bias);
}

}  // namespace cnn_train
