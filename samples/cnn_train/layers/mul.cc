// Elementwise product of two maps of the same shape into a new one (cudnnOpTensor MUL): a gate,
// one map scaled by another's sigmoid. Backward reads both inputs: da = dy * b, db = dy * a.
#include <map>
#include <memory>

#include "checks.h"
#include "layers/layer.h"

namespace cnn_train {
namespace {

class Mul final : public Layer {
 public:
  Mul(Dims a, Dims b) {
    if (a.c != b.c || a.h != b.h || a.w != b.w) {
      Fail(kExitApiError, "internal error: product of different shapes");
    }
    out_ = a;
    CUDNN_CHECK(cudnnCreateOpTensorDescriptor(&op_));
    CUDNN_CHECK(cudnnSetOpTensorDescriptor(op_, CUDNN_OP_TENSOR_MUL, CUDNN_DATA_FLOAT,
                                           CUDNN_NOT_PROPAGATE_NAN));
  }
  ~Mul() override { cudnnDestroyOpTensorDescriptor(op_); }

  const char* kind() const override { return "mul"; }
  bool backward_reads_output() const override { return false; }

  void Forward(Context& ctx, const ForwardArgs& args) override {
    const TensorDesc& d = DescFor(args.batch);
    const float one = 1.0f;
    const float zero = 0.0f;
    CUDNN_CHECK(cudnnOpTensor(ctx.cudnn, op_, &one, d.get(), args.x[0], &one, d.get(), args.x[1],
                              &zero, d.get(), args.y));
  }

  void Backward(Context& ctx, const BackwardArgs& args) override {
    const TensorDesc& d = DescFor(args.batch);
    const float one = 1.0f;
    for (size_t i = 0; i < 2; ++i) {
      if (args.dx[i] == nullptr) continue;
      // dx[i] = dy * x[other] (+ dx[i] when beta is 1).
      CUDNN_CHECK(cudnnOpTensor(ctx.cudnn, op_, &one, d.get(), args.dy, &one, d.get(),
                                args.x[1 - i], &args.dx_beta[i], d.get(), args.dx[i]));
    }
  }

 private:
  const TensorDesc& DescFor(int batch) {
    auto& desc = descs_[batch];
    if (!desc) desc = std::make_unique<TensorDesc>(batch, out_);
    return *desc;
  }

  cudnnOpTensorDescriptor_t op_ = nullptr;
  std::map<int, std::unique_ptr<TensorDesc>> descs_;
};

}  // namespace

std::unique_ptr<Layer> MakeMul(Dims a, Dims b) { return std::make_unique<Mul>(a, b); }

}  // namespace cnn_train
