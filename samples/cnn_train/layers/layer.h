// The layers cnn_train builds its networks from. Each layer computes its forward and backward
// pass with cuDNN or cuBLAS calls only (no kernels of its own, unless --own-kernels), so that the program runs
// unchanged on a real GPU and on simgpu, and pooch sees nothing but library calls.
//
// Tensors are fp32 NCHW. Shapes are fixed per sample at construction; the batch size is an
// argument of every call, because --vary-batch changes it between iterations. Layers cache
// their cuDNN descriptors (and convolution algorithms) per batch size.
//
// Memory: a layer never allocates its output or gradients; Network (network.h) does, one
// cudaMalloc per tensor, and frees them when backward no longer needs them. Parameters and
// their gradients are tensors owned by Network; a layer sees them as ParamSpec::value, ::grad.
// An in-place layer (Layer::in_place) writes into one of its inputs instead of a new output,
// as a framework's `x += skip` or a copy into a preallocated concatenation buffer does.
#ifndef POOCH_SAMPLES_CNN_TRAIN_LAYERS_LAYER_H_
#define POOCH_SAMPLES_CNN_TRAIN_LAYERS_LAYER_H_

#include <cublas_v2.h>
#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "device_memory.h"

namespace cnn_train {

// Per-sample shape: channels, height, width.
struct Dims {
  int c = 0;
  int h = 0;
  int w = 0;
  int64_t count() const { return static_cast<int64_t>(c) * h * w; }
};

class Workspace;

// What every layer call needs. All calls run on the default stream, in order.
struct Context {
  cudnnHandle_t cudnn = nullptr;
  cublasHandle_t cublas = nullptr;
  DeviceMemory* memory = nullptr;
  Workspace* workspace = nullptr;
  const float* ones = nullptr;  // device vector of at least `batch` ones (bias gradients)
  // --own-kernels: forward ReLU, bias and residual additions run cnn_train's own kernels
  // (kernels/own_kernels.h) instead of cuDNN calls, with the same bits.
  bool own_kernels = false;
};

// The convolution workspace: one buffer shared by all convolutions, grown with cudaMalloc when
// a call needs more. (A per-call cudaMalloc would be closer to some frameworks, but cudaFree
// synchronises the device on a real GPU.)
class Workspace {
 public:
  explicit Workspace(DeviceMemory* memory) : memory_(memory) {}
  ~Workspace() { memory_->Free(buffer_); }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  // A device buffer of at least `bytes`; nullptr when bytes == 0.
  void* Get(size_t bytes);

 private:
  DeviceMemory* memory_;
  void* buffer_ = nullptr;
  size_t bytes_ = 0;
};

// RAII cudnnTensorDescriptor_t for an NCHW fp32 tensor.
class TensorDesc {
 public:
  TensorDesc(int n, int c, int h, int w);
  TensorDesc(int n, const Dims& dims) : TensorDesc(n, dims.c, dims.h, dims.w) {}
  // A channel slice of a larger NCHW tensor: `n` samples of `slice` that lie `sample_stride`
  // floats apart (the whole tensor's C*H*W), packed within a sample. The caller points at the
  // slice's first channel; the other strides are those of a packed tensor.
  TensorDesc(int n, const Dims& slice, int64_t sample_stride);
  ~TensorDesc();
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  cudnnTensorDescriptor_t get() const { return desc_; }

 private:
  cudnnTensorDescriptor_t desc_ = nullptr;
};

// How a parameter is initialised on the host (network.cc).
enum class Init {
  kHeUniform,     // U(-sqrt(6/fan_in), +sqrt(6/fan_in)): He et al. 2015 for ReLU networks
  kFanInUniform,  // U(-1/sqrt(fan_in), +1/sqrt(fan_in)): the classifier, small initial logits
  kZero,
  kOne,
};

struct ParamSpec {
  std::string name;  // e.g. "weight", "bias", "running_mean"
  int64_t count = 0;
  Init init = Init::kZero;
  int64_t fan_in = 1;
  // Trainable parameters get a gradient and SGD updates and are hashed in params_checksum;
  // the others (batch-norm running statistics) are state updated by the layer itself.
  bool trainable = true;
  float* value = nullptr;  // set by Network
  float* grad = nullptr;   // set by Network for trainable parameters
};

struct ForwardArgs {
  int batch = 0;
  std::vector<const float*> x;  // one per input
  float* y = nullptr;
};

struct BackwardArgs {
  int batch = 0;
  std::vector<const float*> x;  // the forward inputs (null if !backward_reads_inputs())
  const float* y = nullptr;     // the forward output (null if !backward_reads_output())
  const float* dy = nullptr;    // gradient of the output
  // Gradients of the inputs, nullptr where none is wanted (the network input). dx_beta[i] is
  // 0 to overwrite dx[i], 1 to add to it (an input consumed by several layers).
  std::vector<float*> dx;
  std::vector<float> dx_beta;
};

class Layer {
 public:
  virtual ~Layer() = default;

  // A short type name, e.g. "conv".
  virtual const char* kind() const = 0;
  // What Backward reads of the forward pass, so that Network keeps only that (as a framework's
  // autograd saves only what a backward function needs): the inputs (BackwardArgs::x) and the
  // output (BackwardArgs::y). What is not read may be null in BackwardArgs.
  virtual bool backward_reads_inputs() const { return true; }
  virtual bool backward_reads_output() const { return true; }
  // An in-place layer returns the index i of the input whose tensor it overwrites: its
  // ForwardArgs::y is x[i], and the gradient of x[i] is the gradient of its output, passed
  // through by Network (BackwardArgs::dx[i] is null). Network makes it x[i]'s last reader in
  // forward; the layer must not overwrite what an earlier reader's backward reads (a
  // concatenation writes channels beyond every earlier reader's prefix). -1: a new output.
  virtual int in_place() const { return -1; }
  // Forward: writes args.y (and may save state for Backward, e.g. batch-norm statistics).
  virtual void Forward(Context& ctx, const ForwardArgs& args) = 0;
  // Backward: writes the parameter gradients (overwriting them) and args.dx.
  // REQUIRES: Forward ran at the same batch size since the last Backward.
  virtual void Backward(Context& ctx, const BackwardArgs& args) = 0;

  const Dims& out() const { return out_; }
  std::vector<ParamSpec>& params() { return params_; }

 protected:
  Dims out_;
  std::vector<ParamSpec> params_;
};

// The layer kinds (one .cc each). `name` is the layer's node name, used in messages.
std::unique_ptr<Layer> MakeConv(const std::string& name, Dims in, int out_channels, int kernel,
                                int stride, int pad, bool bias);
// Transposed convolution (the decoder's upsampling), with bias; output side
// (in - 1) * stride - 2 * pad + kernel.
std::unique_ptr<Layer> MakeConvTranspose(const std::string& name, Dims in, int out_channels,
                                         int kernel, int stride, int pad);
// Normalises the first `channels` channels of its input (all of them by default): a dense
// layer reads the prefix of its block's concatenation buffer.
std::unique_ptr<Layer> MakeBatchNorm(const std::string& name, Dims in, int channels = 0);
std::unique_ptr<Layer> MakeRelu(Dims in);
std::unique_ptr<Layer> MakeSigmoid(Dims in);
std::unique_ptr<Layer> MakeTanh(Dims in);
std::unique_ptr<Layer> MakeMaxPool(Dims in, int kernel, int stride, int pad);
std::unique_ptr<Layer> MakeAvgPool(Dims in, int kernel, int stride);
std::unique_ptr<Layer> MakeGlobalAvgPool(Dims in);
// a + b; in place, b is added into a's tensor (`a += b`, a U-Net's long skip connection).
std::unique_ptr<Layer> MakeAdd(Dims a, Dims b, bool in_place = false);
// a * b, elementwise, into a new map (mul.cc).
std::unique_ptr<Layer> MakeMul(Dims a, Dims b);
// Channel concatenation into one buffer of `buffer` dims (concat.cc). ConcatStart allocates the
// buffer (its output) and copies its input into channels [0, in.c); ConcatInto is in place on
// input 0, the buffer, and copies input 1 into channels [offset, offset + in.c).
std::unique_ptr<Layer> MakeConcatStart(Dims in, Dims buffer);
std::unique_ptr<Layer> MakeConcatInto(Dims buffer, Dims in, int offset);
// Fully connected: flattens its input (C*H*W features) to `out_features`, with bias.
std::unique_ptr<Layer> MakeLinear(Dims in, int out_features);

}  // namespace cnn_train

#endif  // POOCH_SAMPLES_CNN_TRAIN_LAYERS_LAYER_H_
