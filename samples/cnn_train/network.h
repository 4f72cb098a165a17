// Network: a directed acyclic graph of layers in forward (topological) order, and the memory
// discipline of a framework without a caching allocator:
//   - every parameter tensor (each layer's weight and bias, batch-norm scale, shift and running
//     statistics), every gradient and every momentum buffer is its own cudaMalloc, made once,
//     as a framework allocates one tensor per parameter: model construction allocates the
//     values, then the gradients, then the optimizer its momentum buffers (names
//     "<layer>.<param>", "... grad", "... momentum");
//   - forward cudaMallocs each layer's output ("<layer> output") and keeps it for backward if
//     a backward reads it (Layer::backward_reads_*), else frees it after its last consumer ran
//     (a batch-norm output only a ReLU reads), as a framework's autograd keeps what it saved;
//   - backward cudaMallocs the gradient of a layer's input when the first consumer produces it
//     ("<layer> output gradient"; later consumers add to it) and, once a layer's backward has
//     run, cudaFrees its output and output gradient: no later (earlier-in-forward) layer reads
//     them. So feature maps are allocated in forward and last used in backward, which is the
//     allocation stream pooch has to manage;
//   - an in-place layer (Layer::in_place) allocates nothing: its output is the tensor of the
//     input it overwrites, and so is its output gradient, which backward hands on to that
//     input as its gradient. A tensor is freed once every node whose output it is has let it
//     go (a dense block's buffer is the output of the block's first node and of each copy into
//     it), so one allocation is written by many layers, as in a framework.
// A Network is also a segment of a dynamic model (model.h): its input can be a device tensor
// of the caller's (ForwardFrom), its output gradient the caller's (SetOutputGradient), and
// backward can write the gradient of its input into a buffer of the caller's.
// Not thread-safe.
#ifndef POOCH_SAMPLES_CNN_TRAIN_NETWORK_H_
#define POOCH_SAMPLES_CNN_TRAIN_NETWORK_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "layers/layer.h"
#include "models/model.h"

namespace cnn_train {

// How a static model's layers are written (args.h: --conv-bias, --inplace-skips, --width), the
// habits of trainers written outside this project that a planner has to see through.
struct NetworkVariant {
  // Every convolution adds a bias in place into its output (cudnnAddTensor after
  // cudnnConvolutionForward): each convolution output is written by two calls.
  bool conv_bias = false;
  // Residual additions write into the main path's map (cudnnOpTensor with the output as an
  // input, `out += identity`) instead of a new one.
  bool inplace_skips = false;
  // unet: the first level's channels (each level doubles them); 0: the model's 16.
  int width = 0;
  // unet: each decoder level ends in a gated block, tanh(x) * sigmoid(conv1x1(x)) (two
  // activations and an elementwise product, cudnnOpTensor MUL).
  bool gated_blocks = false;
};

class Network final : public Model {
 public:
  // Node 0 is the network input, of per-sample shape `input`.
  explicit Network(Dims input);
  ~Network() override;
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;

  static constexpr int kInput = 0;

  // Appends a layer fed by the outputs of `inputs` (node ids, earlier nodes only) and returns
  // its node id. `name` appears in out-of-memory messages, e.g. "layer3.2.conv2".
  // REQUIRES: no input was overwritten by an in-place layer added before (a later reader would
  // see the overwritten tensor); read the in-place layer's node instead.
  int Add(std::string name, std::unique_ptr<Layer> layer, std::vector<int> inputs);
  const Dims& dims(int node) const { return nodes_[node].out; }
  // How the model builders write its layers; set before the first Add.
  const NetworkVariant& variant() const { return variant_; }
  void set_variant(const NetworkVariant& variant) { variant_ = variant; }
  // The last node added: the logits.
  int output() const { return static_cast<int>(nodes_.size()) - 1; }
  // Floats in the trainable parameters.
  int64_t trainable_count() const { return trainable_count_; }

  // Allocates the parameter tensors, their gradients and momentum (zeroed), and initialises the
  // parameters on the host from `seed` (He init).
  // REQUIRES: all layers added.
  void InitParams(Context& ctx, uint64_t seed) override;
  // Model::ShareParams: position by position, batch-norm running statistics included.
  void ShareParams(Context& ctx, Model& owner) override;

  // Uploads `host_input` (batch samples) and runs forward; returns the output (logits) on the
  // device, valid until Backward.
  const float* Forward(Context& ctx, int batch, const float* host_input) override;
  // Runs forward on `input`, a device tensor of the caller's that must stay valid until
  // Backward and is never freed here.
  const float* ForwardFrom(Context& ctx, int batch, const float* input);

  // Allocates the gradient of the output, for the caller to fill before Backward.
  float* AllocateOutputGradient(Context& ctx, int batch) override;
  // Makes `dy` (an allocation of ctx.memory) the gradient of the output; Backward frees it.
  void SetOutputGradient(float* dy);

  // Backward from the output gradient; writes every parameter gradient and frees every
  // feature map and gradient of the iteration.
  void Backward(Context& ctx, int batch) override { Backward(ctx, batch, nullptr, 0.0f); }
  // The same, and writes the gradient of the input into `input_grad` (null: nowhere), adding
  // to what it holds if `input_beta` is 1, overwriting it if 0.
  void Backward(Context& ctx, int batch, float* input_grad, float input_beta);

  // SGD with momentum, one trainable tensor at a time as a framework's optimizer loops over
  // its parameters (cuBLAS):
  //   v = momentum * v + g;  w = w - lr * v
  void SgdStep(Context& ctx, float lr, float momentum) override;

  // FNV-1a of the bytes of every trainable parameter, in order, copied to the host,
  // continuing from `hash`.
  uint64_t ParamsChecksum(uint64_t hash) const override;
  uint64_t ParamsChecksum() const { return ParamsChecksum(kFnvOffsetBasis); }

  // The trainable parameters in layer order (value and gradient on the device), for tests.
  // REQUIRES: InitParams ran.
  std::vector<ParamSpec*> trainable_params() const;

 private:
  NetworkVariant variant_;
  struct Node {
    std::string name;
    std::unique_ptr<Layer> layer;  // null for the input
    std::vector<int> inputs;
    Dims out;
    int owner;         // the node whose new output this node's output is (itself unless in place)
    bool overwritten;  // an in-place layer has written into this node's output
  };

  // Lets node `i`'s output go; frees the tensor when no node's output is it any more (and it is
  // not the caller's input, ForwardFrom).
  void Release(Context& ctx, int i);
  // Forward of every node after the input, y_[kInput] set.
  void ForwardNodes(Context& ctx, int batch);

  std::vector<Node> nodes_;
  std::vector<int> holders_;  // per owner node: nodes whose output its tensor is and still held
  std::vector<float*> y_;     // per node: forward output, live from forward to its backward
                              // (null once freed, when no backward reads it)
  std::vector<float*> dy_;    // per node: gradient of that output
  // The trainable parameters, in layer order, with their momentum buffers (ParamSpec holds the
  // value and gradient pointers).
  struct Trainable {
    ParamSpec* param;
    float* momentum;
  };

  bool input_borrowed_ = false;     // y_[kInput] is the caller's (ForwardFrom)
  DeviceMemory* memory_ = nullptr;  // set by InitParams; frees the parameter tensors
  int64_t trainable_count_ = 0;
  std::vector<Trainable> trainables_;
  std::vector<float*> owned_;  // every parameter, gradient and momentum tensor (none if shared)
};

}  // namespace cnn_train

#endif  // POOCH_SAMPLES_CNN_TRAIN_NETWORK_H_
