// ReLU, out of place. Backward reads the output only (as a framework's ReLU saves its result):
// cuDNN's x argument gets y, which gives the same gradient, since y > 0 exactly where x > 0;
// so Network frees the input once forward is done with it.
#include <map>
#include <memory>

#include "checks.h"
#include "kernels/own_kernels.h"
#include "layers/layer.h"

namespace cnn_train {
namespace {

class Relu final : public Layer {
 public:
  explicit Relu(Dims in) {
    out_ = in;
    CUDNN_CHECK(cudnnCreateActivationDescriptor(&act_));
    CUDNN_CHECK(
        cudnnSetActivationDescriptor(act_, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));
  }
  ~Relu() override { cudnnDestroyActivationDescriptor(act_); }

  const char* kind() const override { return "relu"; }
  // ReLU backward needs only its output: y > 0 exactly where x > 0.
  bool backward_reads_inputs() const override { return false; }

  void Forward(Context& ctx, const ForwardArgs& args) override {
    if (ctx.own_kernels) {
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

  cudnnActivationDescriptor_t act_ = nullptr;
  std::map<int, std::unique_ptr<TensorDesc>> descs_;
};

}  // namespace

std::unique_ptr<Layer> MakeRelu(Dims in) { return std::make_unique<Relu>(in); }

}  // namespace cnn_train
