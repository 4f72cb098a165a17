// Batch normalisation over N, H and W per channel (CUDNN_BATCHNORM_SPATIAL; not the
// _PERSISTENT mode, which may use atomics). Parameters: scale (gamma, 1) and shift (beta, 0);
// state: running mean and variance, updated by cuDNN with factor 0.1 as in PyTorch.
//
// The batch mean and inverse deviation that forward saves for backward are allocated per
// iteration (small, but a realistic part of the allocation stream) and freed by backward.
//
// A dense layer's batch norm reads the first `channels` channels of its block's concatenation
// buffer in place (a strided descriptor, no copy) and adds its input gradient into the same
// prefix of the buffer's gradient; its output is a packed tensor of `channels` channels.
#include <map>
#include <memory>

#include "checks.h"
#include "layers/layer.h"

namespace cnn_train {
namespace {

constexpr double kEpsilon = 1e-5;  // == CUDNN_BN_MIN_EPSILON, PyTorch's default
constexpr double kRunningAverageFactor = 0.1;

class BatchNorm final : public Layer {
 public:
  BatchNorm(const std::string& name, Dims in, int channels)
      : name_(name), in_(in), param_desc_(1, channels, 1, 1) {
    out_ = {channels, in.h, in.w};
    params_.push_back({"weight", channels, Init::kOne, 1});
    params_.push_back({"bias", channels, Init::kZero, 1});
    params_.push_back({"running_mean", channels, Init::kZero, 1, /*trainable=*/false});
    params_.push_back({"running_var", channels, Init::kOne, 1, /*trainable=*/false});
  }

  const char* kind() const override { return "batchnorm"; }
  bool backward_reads_output() const override { return false; }

  void Forward(Context& ctx, const ForwardArgs& args) override {
    const Descs& d = DescsFor(args.batch);
    saved_mean_ = ctx.memory->AllocateFloats(out_.c, name_ + " saved mean");
    saved_inv_std_ = ctx.memory->AllocateFloats(out_.c, name_ + " saved inverse std");
    const float one = 1.0f;
    const float zero = 0.0f;
    CUDNN_CHECK(cudnnBatchNormalizationForwardTraining(
        ctx.cudnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, d.x.get(), args.x[0], d.y.get(), args.y,
        param_desc_.get(), params_[0].value, params_[1].value, kRunningAverageFactor,
        params_[2].value, params_[3].value, kEpsilon, saved_mean_, saved_inv_std_));
  }

  void Backward(Context& ctx, const BackwardArgs& args) override {
    if (args.dx[0] == nullptr) {
      Fail(kExitApiError, "internal error: %s needs an input gradient", name_.c_str());
    }
    const Descs& d = DescsFor(args.batch);
    const float one = 1.0f;
    const float zero = 0.0f;
    CUDNN_CHECK(cudnnBatchNormalizationBackward(
        ctx.cudnn, CUDNN_BATCHNORM_SPATIAL, &one, &args.dx_beta[0], &one, &zero, d.x.get(),
        args.x[0], d.y.get(), args.dy, d.x.get(), args.dx[0], param_desc_.get(), params_[0].value,
        params_[0].grad, params_[1].grad, kEpsilon, saved_mean_, saved_inv_std_));
    ctx.memory->Free(saved_mean_);
    ctx.memory->Free(saved_inv_std_);
    saved_mean_ = nullptr;
    saved_inv_std_ = nullptr;
  }

 private:
  // x (and dx): the channel prefix of the input, samples in_.count() floats apart; y (and dy):
  // packed. The same geometry when the layer reads all its input's channels.
  struct Descs {
    Descs(int batch, const Dims& in, const Dims& out) : x(batch, out, in.count()), y(batch, out) {}
    TensorDesc x;
    TensorDesc y;
  };

  const Descs& DescsFor(int batch) {
    auto& d = descs_[batch];
    if (!d) d = std::make_unique<Descs>(batch, in_, out_);
    return *d;
  }

  std::string name_;
  Dims in_;
  TensorDesc param_desc_;  // 1 x C x 1 x 1, as cudnnDeriveBNTensorDescriptor gives for SPATIAL
  std::map<int, std::unique_ptr<Descs>> descs_;
  float* saved_mean_ = nullptr;
  float* saved_inv_std_ = nullptr;
};

}  // namespace

std::unique_ptr<Layer> MakeBatchNorm(const std::string& name, Dims in, int channels) {
  if (channels == 0) channels = in.c;
  if (channels < 0 || channels > in.c) {
    Fail(kExitApiError, "internal error: %s reads %d of %d channels", name.c_str(), channels, in.c);
  }
  return std::make_unique<BatchNorm>(name, in, channels);
}

}  // namespace cnn_train
