// Convolution (cross-correlation, NCHW, square kernel), optionally with a bias. The descriptors
// and the deterministic algorithm choice are ConvCore's (conv_core.h).
#include <memory>

#include "checks.h"
#include "kernels/own_kernels.h"
#include "layers/conv_core.h"
#include "layers/layer.h"

namespace cnn_train {
namespace {

Dims ConvOut(const std::string& name, Dims in, int out_channels, int kernel, int stride, int pad) {
  const Dims out = {out_channels, (in.h + 2 * pad - kernel) / stride + 1,
                    (in.w + 2 * pad - kernel) / stride + 1};
  if (out.h <= 0 || out.w <= 0) {
    Fail(kExitUsage, "image too small: %s would produce an empty output", name.c_str());
  }
  return out;
}

class Conv final : public Layer {
 public:
  Conv(const std::string& name, Dims in, int out_channels, int kernel, int stride, int pad,
       bool bias)
      : bias_(bias),
        core_(name, in, ConvOut(name, in, out_channels, kernel, stride, pad), kernel, stride, pad) {
    out_ = ConvOut(name, in, out_channels, kernel, stride, pad);
    const int64_t fan_in = static_cast<int64_t>(in.c) * kernel * kernel;
    params_.push_back({"weight", fan_in * out_channels, Init::kHeUniform, fan_in});
    if (bias_) params_.push_back({"bias", out_channels, Init::kZero, fan_in});
    if (bias_) bias_desc_ = std::make_unique<TensorDesc>(1, out_channels, 1, 1);
  }

  const char* kind() const override { return "conv"; }
  bool backward_reads_output() const override { return false; }

  void Forward(Context& ctx, const ForwardArgs& args) override {
    const ConvCore::State& s = core_.StateFor(ctx, args.batch);
    const float one = 1.0f;
    const float zero = 0.0f;
    void* workspace = ctx.workspace->Get(s.fwd_bytes);
    CUDNN_CHECK(cudnnConvolutionForward(ctx.cudnn, &one, s.x.get(), args.x[0], core_.filter(),
                                        params_[0].value, core_.conv(), s.fwd, workspace,
                                        s.fwd_bytes, &zero, s.y.get(), args.y));
    if (bias_ && ctx.own_kernels) {
      const int64_t spatial = static_cast<int64_t>(out_.h) * out_.w;
      CUDA_CHECK(LaunchBiasAdd(args.y, params_[1].value, args.batch * out_.count(), out_.c,
                               spatial));
    } else if (bias_) {
      CUDNN_CHECK(cudnnAddTensor(ctx.cudnn, &one, bias_desc_->get(), params_[1].value, &one,
                                 s.y.get(), args.y));
    }
  }

  void Backward(Context& ctx, const BackwardArgs& args) override {
    const ConvCore::State& s = core_.StateFor(ctx, args.batch);
    const float one = 1.0f;
    const float zero = 0.0f;
    if (bias_) {
      CUDNN_CHECK(cudnnConvolutionBackwardBias(ctx.cudnn, &one, s.y.get(), args.dy, &zero,
                                               bias_desc_->get(), params_[1].grad));
    }
    void* workspace = ctx.workspace->Get(s.filter_bytes);
    CUDNN_CHECK(cudnnConvolutionBackwardFilter(
        ctx.cudnn, &one, s.x.get(), args.x[0], s.y.get(), args.dy, core_.conv(), s.filter,
        workspace, s.filter_bytes, &zero, core_.filter(), params_[0].grad));
    if (args.dx[0] != nullptr) {
      workspace = ctx.workspace->Get(s.data_bytes);
      CUDNN_CHECK(cudnnConvolutionBackwardData(
          ctx.cudnn, &one, core_.filter(), params_[0].value, s.y.get(), args.dy, core_.conv(),
          s.data, workspace, s.data_bytes, &args.dx_beta[0], s.x.get(), args.dx[0]));
    }
  }

 private:
  bool bias_;
  ConvCore core_;
  std::unique_ptr<TensorDesc> bias_desc_;
};

}  // namespace

std::unique_ptr<Layer> MakeConv(const std::string& name, Dims in, int out_channels, int kernel,
                                int stride, int pad, bool bias) {
  return std::make_unique<Conv>(name, in, out_channels, kernel, stride, pad, bias);
}

}  // namespace cnn_train
