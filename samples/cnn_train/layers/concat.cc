// Channel concatenation into one shared buffer, as frameworks concatenate a DenseNet's features
// without re-copying every earlier map for every layer (Pleiss et al. 2017, "Memory-efficient
// implementation of DenseNets"): a dense block allocates one buffer for all its channels, each
// layer's output is copied into its channel slice, and each layer reads the prefix of the buffer
// written so far (batchnorm.cc). In NCHW a channel slice is one contiguous run per sample, so a
// copy is one cudaMemcpy2DAsync on the default stream: a row per sample, pitch the sample size.
//
// Backward: the gradient of a slice is the same slice of the buffer's gradient, which the
// readers of the buffer (the batch norms of later layers, the transition) have summed by then.
// It is copied out with cudaMemcpy2DAsync when it is the input's first gradient and added with
// cudnnAddTensor over a strided descriptor when the input has one already.
#include <cstdint>
#include <map>
#include <memory>

#include "checks.h"
#include "layers/layer.h"

namespace cnn_train {
namespace {

class ChannelCopy final : public Layer {
 public:
  // in_place: inputs {buffer, x}, writes into the buffer; otherwise input {x} and the buffer
  // is this layer's new output (offset 0).
  ChannelCopy(Dims buffer, Dims in, int offset, bool in_place)
      : in_(in), offset_(offset), in_place_(in_place) {
    if (in.h != buffer.h || in.w != buffer.w || offset < 0 || offset + in.c > buffer.c) {
      Fail(kExitApiError, "internal error: channels [%d, %d) do not fit a buffer of %d", offset,
           offset + in.c, buffer.c);
    }
    out_ = buffer;
  }

  const char* kind() const override { return "concat"; }
  bool backward_reads_inputs() const override { return false; }
  bool backward_reads_output() const override { return false; }
  int in_place() const override { return in_place_ ? 0 : -1; }

  void Forward(Context& ctx, const ForwardArgs& args) override {
    (void)ctx;
    const float* x = args.x[in_place_ ? 1 : 0];
    CUDA_CHECK(cudaMemcpy2DAsync(args.y + SliceStart(), BufferPitch(), x, SlicePitch(),
                                 SlicePitch(), args.batch, cudaMemcpyDeviceToDevice, 0));
  }

  void Backward(Context& ctx, const BackwardArgs& args) override {
    const size_t i = in_place_ ? 1 : 0;
    if (args.dx[i] == nullptr) return;
    const float* slice = args.dy + SliceStart();
    if (args.dx_beta[i] == 0.0f) {
      CUDA_CHECK(cudaMemcpy2DAsync(args.dx[i], SlicePitch(), slice, BufferPitch(), SlicePitch(),
                                   args.batch, cudaMemcpyDeviceToDevice, 0));
      return;
    }
    const Descs& d = DescsFor(args.batch);
    const float one = 1.0f;
    CUDNN_CHECK(cudnnAddTensor(ctx.cudnn, &one, d.slice.get(), slice, &args.dx_beta[i], d.x.get(),
                               args.dx[i]));
  }

 private:
  struct Descs {
    Descs(int batch, const Dims& in, const Dims& buffer)
        : slice(batch, in, buffer.count()), x(batch, in) {}
    TensorDesc slice;  // the slice within the buffer (or its gradient)
    TensorDesc x;      // the packed input (or its gradient)
  };

  const Descs& DescsFor(int batch) {
    auto& d = descs_[batch];
    if (!d) d = std::make_unique<Descs>(batch, in_, out_);
    return *d;
  }

  int64_t SliceStart() const { return int64_t{offset_} * in_.h * in_.w; }  // floats
  size_t SlicePitch() const { return static_cast<size_t>(in_.count()) * sizeof(float); }
  size_t BufferPitch() const { return static_cast<size_t>(out_.count()) * sizeof(float); }

  Dims in_;
  int offset_;
  bool in_place_;
  std::map<int, std::unique_ptr<Descs>> descs_;
};

}  // namespace

std::unique_ptr<Layer> MakeConcatStart(Dims in, Dims buffer) {
  return std::make_unique<ChannelCopy>(buffer, in, 0, /*in_place=*/false);
}

std::unique_ptr<Layer> MakeConcatInto(Dims buffer, Dims in, int offset) {
  return std::make_unique<ChannelCopy>(buffer, in, offset, /*in_place=*/true);
}

}  // namespace cnn_train
