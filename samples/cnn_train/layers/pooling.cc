// Max pooling (CUDNN_POOLING_MAX_DETERMINISTIC, so that backward is bit-reproducible where
// windows overlap), average pooling (a DenseNet transition's 2x2/2) and global average pooling
// (one window over the whole map).
// Output sizes round down, as in PyTorch's default (ceil_mode=False).
#include <map>
#include <memory>

#include "checks.h"
#include "layers/layer.h"

namespace cnn_train {
namespace {

class Pooling final : public Layer {
 public:
  Pooling(Dims in, cudnnPoolingMode_t mode, int kernel_h, int kernel_w, int stride, int pad)
      : in_(in) {
    out_ = {in.c, (in.h + 2 * pad - kernel_h) / stride + 1,
            (in.w + 2 * pad - kernel_w) / stride + 1};
    if (out_.h <= 0 || out_.w <= 0) {
      Fail(kExitUsage, "image too small: a pooling layer would produce an empty output");
    }
    CUDNN_CHECK(cudnnCreatePoolingDescriptor(&pool_));
    CUDNN_CHECK(cudnnSetPooling2dDescriptor(pool_, mode, CUDNN_NOT_PROPAGATE_NAN, kernel_h,
                                            kernel_w, pad, pad, stride, stride));
  }
  ~Pooling() override { cudnnDestroyPoolingDescriptor(pool_); }

  const char* kind() const override { return "pool"; }

  void Forward(Context& ctx, const ForwardArgs& args) override {
    const Descs& d = DescsFor(args.batch);
    const float one = 1.0f;
    const float zero = 0.0f;
    CUDNN_CHECK(cudnnPoolingForward(ctx.cudnn, pool_, &one, d.x.get(), args.x[0], &zero, d.y.get(),
                                    args.y));
  }

  void Backward(Context& ctx, const BackwardArgs& args) override {
    if (args.dx[0] == nullptr) return;
    const Descs& d = DescsFor(args.batch);
    const float one = 1.0f;
    CUDNN_CHECK(cudnnPoolingBackward(ctx.cudnn, pool_, &one, d.y.get(), args.y, d.y.get(), args.dy,
                                     d.x.get(), args.x[0], &args.dx_beta[0], d.x.get(),
                                     args.dx[0]));
  }

 private:
  struct Descs {
    Descs(int batch, const Dims& in, const Dims& out) : x(batch, in), y(batch, out) {}
    TensorDesc x;
    TensorDesc y;
  };

  const Descs& DescsFor(int batch) {
    auto& d = descs_[batch];
    if (!d) d = std::make_unique<Descs>(batch, in_, out_);
    return *d;
  }

  Dims in_;
  cudnnPoolingDescriptor_t pool_ = nullptr;
  std::map<int, std::unique_ptr<Descs>> descs_;
};

}  // namespace

std::unique_ptr<Layer> MakeMaxPool(Dims in, int kernel, int stride, int pad) {
  return std::make_unique<Pooling>(in, CUDNN_POOLING_MAX_DETERMINISTIC, kernel, kernel, stride,
                                   pad);
}

std::unique_ptr<Layer> MakeAvgPool(Dims in, int kernel, int stride) {
  return std::make_unique<Pooling>(in, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, kernel, kernel,
                                   stride, 0);
}

std::unique_ptr<Layer> MakeGlobalAvgPool(Dims in) {
  return std::make_unique<Pooling>(in, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, in.h, in.w, 1,
                                   0);
}

}  // namespace cnn_train
