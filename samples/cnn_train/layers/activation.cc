// ReLU, sigmoid and tanh, out of place. Backward reads the output only (as a framework's
// activations save their result): cuDNN's x argument gets y, which gives the same gradient,
// since ReLU's y > 0 exactly where x > 0 and sigmoid's and tanh's derivatives are functions of
// y; so Network frees the input once forward is done with it.
#include <map>
#include <memory>

#include "checks.h"
#include "kernels/own_kernels.h"
#include "layers/layer.h"

namespace cnn_train {
namespace {

class Activation final : public Layer {
 public:
  Activation(Dims in, cudnnActivationMode_t mode, const char* kind) : mode_(mode), kind_(kind) {
    out_ = in;
    CUDNN_CHECK(cudnnCreateActivationDescriptor(&act_));
    CUDNN_CHECK(cudnnSetActivationDescriptor(act_, mode, CUDNN_NOT_PROPAGATE_NAN, 0.0));
  }
  ~Activation() override { cudnnDestroyActivationDescriptor(act_); }

  const char* kind() const override { return kind_; }
  // Backward needs only the output (the file's comment).
  bool backward_reads_inputs() const override { return false; }

  void Forward(Context& ctx, const ForwardArgs& args) override {
    if (ctx.own_kernels && mode_ == CUDNN_ACTIVATION_RELU) {
      CUDA_CHECK(LaunchReluForward(args.y, args.x[0], args.batch * out_.count()));
      return;
    }
    const TensorDesc& d = DescFor(args.batch);
    const float one = 1.0f;
    const float zero = 0.0f;
    CUDNN_CHECK(
        cudnnActivationForward(ctx.cudnn, act_, &one, d.get(), args.x[0], &zero, d.get(), args.y));
  }

  void Backward(Context& ctx, const BackwardArgs& args) override {
    if (args.dx[0] == nullptr) return;
    const TensorDesc& d = DescFor(args.batch);
    const float one = 1.0f;
    CUDNN_CHECK(cudnnActivationBackward(ctx.cudnn, act_, &one, d.get(), args.y, d.get(), args.dy,
                                        d.get(), args.y, &args.dx_beta[0], d.get(), args.dx[0]));
  }

 private:
  const TensorDesc& DescFor(int batch) {
    auto& desc = descs_[batch];
    if (!desc) desc = std::make_unique<TensorDesc>(batch, out_);
    return *desc;
  }

  cudnnActivationMode_t mode_;
  const char* kind_;
  cudnnActivationDescriptor_t act_ = nullptr;
  std::map<int, std::unique_ptr<TensorDesc>> descs_;
};

}  // namespace

std::unique_ptr<Layer> MakeRelu(Dims in) {
  return std::make_unique<Activation>(in, CUDNN_ACTIVATION_RELU, "relu");
}
std::unique_ptr<Layer> MakeSigmoid(Dims in) {
  return std::make_unique<Activation>(in, CUDNN_ACTIVATION_SIGMOID, "sigmoid");
}
std::unique_ptr<Layer> MakeTanh(Dims in) {
  return std::make_unique<Activation>(in, CUDNN_ACTIVATION_TANH, "tanh");
}

}  // namespace cnn_train
