// Transposed convolution with a bias (PyTorch's ConvTranspose2d), built as frameworks build it
// from the convolution of the opposite direction (conv_core.h: its x is our output, its y our
// input), so that pooch sees what it sees under PyTorch: a "backward" call in forward.
//   forward        y  = ConvolutionBackwardData(w, dy := x), then y += bias
//   input grad     dx = ConvolutionForward(x := dy)
//   weight grad    dw = ConvolutionBackwardFilter(x := dy, dy := x)  (the roles swapped)
//   bias grad      db = ConvolutionBackwardBias(dy)
// The weight is in_channels x out_channels x k x k, as in PyTorch.
#include <algorithm>
#include <memory>

#include "checks.h"
#include "kernels/own_kernels.h"
#include "layers/conv_core.h"
#include "layers/layer.h"

namespace cnn_train {
namespace {

Dims ConvTransposeOut(const std::string& name, Dims in, int out_channels, int kernel, int stride,
                      int pad) {
  const Dims out = {out_channels, (in.h - 1) * stride - 2 * pad + kernel,
                    (in.w - 1) * stride - 2 * pad + kernel};
  if (out.h <= 0 || out.w <= 0) {
    Fail(kExitUsage, "image too small: %s would produce an empty output", name.c_str());
  }
  return out;
}

class ConvTranspose final : public Layer {
 public:
  ConvTranspose(const std::string& name, Dims in, int out_channels, int kernel, int stride, int pad)
      : core_(name, ConvTransposeOut(name, in, out_channels, kernel, stride, pad), in, kernel,
              stride, pad),
        bias_desc_(1, out_channels, 1, 1) {
    out_ = ConvTransposeOut(name, in, out_channels, kernel, stride, pad);
    // He init over what one output pixel sums: in.c channels times the taps that land on it,
    // (kernel / stride)^2 on average (one for the 2x2/2 upsampling of a U-Net).
    const int64_t taps =
        std::max<int64_t>(1, int64_t{kernel} * kernel / (int64_t{stride} * stride));
    const int64_t fan_in = int64_t{in.c} * taps;
    params_.push_back(
        {"weight", int64_t{in.c} * out_channels * kernel * kernel, Init::kHeUniform, fan_in});
    params_.push_back({"bias", out_channels, Init::kZero, fan_in});
  }

  const char* kind() const override { return "conv_transpose"; }
  bool backward_reads_output() const override { return false; }

  void Forward(Context& ctx, const ForwardArgs& args) override {
    const ConvCore::State& s = core_.StateFor(ctx, args.batch);
    const float one = 1.0f;
    const float zero = 0.0f;
    void* workspace = ctx.workspace->Get(s.data_bytes);
    CUDNN_CHECK(cudnnConvolutionBackwardData(ctx.cudnn, &one, core_.filter(), params_[0].value,
                                             s.y.get(), args.x[0], core_.conv(), s.data, workspace,
                                             s.data_bytes, &zero, s.x.get(), args.y));
    if (ctx.own_kernels) {
      const int64_t spatial = static_cast<int64_t>(out_.h) * out_.w;
      CUDA_CHECK(LaunchBiasAdd(args.y, params_[1].value, args.batch * out_.count(), out_.c,
                               spatial));
      return;
    }
    CUDNN_CHECK(cudnnAddTensor(ctx.cudnn, &one, bias_desc_.get(), params_[1].value, &one, s.x.get(),
                               args.y));
  }

  void Backward(Context& ctx, const BackwardArgs& args) override {
    const ConvCore::State& s = core_.StateFor(ctx, args.batch);
    const float one = 1.0f;
    const float zero = 0.0f;
    CUDNN_CHECK(cudnnConvolutionBackwardBias(ctx.cudnn, &one, s.x.get(), args.dy, &zero,
                                             bias_desc_.get(), params_[1].grad));
    void* workspace = ctx.workspace->Get(s.filter_bytes);
    CUDNN_CHECK(cudnnConvolutionBackwardFilter(
        ctx.cudnn, &one, s.x.get(), args.dy, s.y.get(), args.x[0], core_.conv(), s.filter,
        workspace, s.filter_bytes, &zero, core_.filter(), params_[0].grad));
    if (args.dx[0] != nullptr) {
      workspace = ctx.workspace->Get(s.fwd_bytes);
      CUDNN_CHECK(cudnnConvolutionForward(ctx.cudnn, &one, s.x.get(), args.dy, core_.filter(),
                                          params_[0].value, core_.conv(), s.fwd, workspace,
                                          s.fwd_bytes, &args.dx_beta[0], s.y.get(), args.dx[0]));
    }
  }

 private:
  ConvCore core_;
  TensorDesc bias_desc_;
};

}  // namespace

std::unique_ptr<Layer> MakeConvTranspose(const std::string& name, Dims in, int out_channels,
                                         int kernel, int stride, int pad) {
  return std::make_unique<ConvTranspose>(name, in, out_channels, kernel, stride, pad);
}

}  // namespace cnn_train
