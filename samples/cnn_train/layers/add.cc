// Elementwise sum of two tensors of the same shape: the residual connection.
// Backward passes the output gradient to both inputs unchanged.
#include <map>
#include <memory>

#include "checks.h"
#include "layers/layer.h"

namespace cnn_train {
namespace {

class Add final : public Layer {
 public:
  Add(Dims a, Dims b) {
    if (a.c != b.c || a.h != b.h || a.w != b.w) {
      Fail(kExitApiError, "internal error: residual add of different shapes");
    }
    out_ = a;
    CUDNN_CHECK(cudnnCreateOpTensorDescriptor(&op_));
    CUDNN_CHECK(cudnnSetOpTensorDescriptor(op_, CUDNN_OP_TENSOR_ADD, CUDNN_DATA_FLOAT,
                                           CUDNN_NOT_PROPAGATE_NAN));
  }
  ~Add() override { cudnnDestroyOpTensorDescriptor(op_); }

  const char* kind() const override { return "add"; }
  bool backward_reads_inputs() const override { return false; }
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
    for (size_t i = 0; i < args.dx.size(); ++i) {
      if (args.dx[i] == nullptr) continue;
      CUDNN_CHECK(
          cudnnAddTensor(ctx.cudnn, &one, d.get(), args.dy, &args.dx_beta[i], d.get(), args.dx[i]));
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

std::unique_ptr<Layer> MakeAdd(Dims a, Dims b) { return std::make_unique<Add>(a, b); }

}  // namespace cnn_train
