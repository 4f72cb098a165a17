// Elementwise sum of two tensors of the same shape: a ResNet's residual connection (a new
// output, cudnnOpTensor), or in place, a U-Net's long skip connection added into the decoder's
// upsampled map (`up += skip`, cudnnAddTensor with beta 1), as frameworks write it to save a
// map. Backward passes the output gradient to both inputs unchanged (in place, Network passes it
// to input 0 without a copy).
#include <map>
#include <memory>

#include "checks.h"
#include "kernels/own_kernels.h"
#include "layers/layer.h"

namespace cnn_train {
namespace {

class Add final : public Layer {
 public:
  Add(Dims a, Dims b, bool in_place) : in_place_(in_place) {
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
  int in_place() const override { return in_place_ ? 0 : -1; }

  void Forward(Context& ctx, const ForwardArgs& args) override {
    if (ctx.own_kernels) {  // in place, args.y is args.x[0]
      CUDA_CHECK(LaunchAddForward(args.y, args.x[0], args.x[1], args.batch * out_.count()));
      return;
    }
    const TensorDesc& d = DescFor(args.batch);
    const float one = 1.0f;
    const float zero = 0.0f;
    if (in_place_) {  // args.y is args.x[0]
      CUDNN_CHECK(cudnnAddTensor(ctx.cudnn, &one, d.get(), args.x[1], &one, d.get(), args.y));
      return;
    }
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

  bool in_place_;
  cudnnOpTensorDescriptor_t op_ = nullptr;
  std::map<int, std::unique_ptr<TensorDesc>> descs_;
};

}  // namespace

std::unique_ptr<Layer> MakeAdd(Dims a, Dims b, bool in_place) {
  return std::make_unique<Add>(a, b, in_place);
}

}  // namespace cnn_train
