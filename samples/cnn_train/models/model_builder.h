// Builder: helpers that append layers to a Network by name, shared by the model files
// (models.cc, models_unet.cc, models_densenet.cc, models_skipnet.cc, models_moe.cc). Internal
// to them; models.h is the interface.
#ifndef POOCH_SAMPLES_CNN_TRAIN_MODEL_BUILDER_H_
#define POOCH_SAMPLES_CNN_TRAIN_MODEL_BUILDER_H_

#include <string>

#include "network.h"

namespace cnn_train {

// Each method appends a layer after node `in` (or nodes a, b) and returns the new node.
class Builder {
 public:
  explicit Builder(Network& net) : net_(net) {}

  // With a bias when asked, or for every convolution under NetworkVariant::conv_bias.
  int Conv(const std::string& name, int in, int channels, int kernel, int stride, int pad,
           bool bias = false) {
    bias = bias || net_.variant().conv_bias;
    return net_.Add(name, MakeConv(name, net_.dims(in), channels, kernel, stride, pad, bias), {in});
  }
  int ConvTranspose(const std::string& name, int in, int channels, int kernel, int stride) {
    return net_.Add(name, MakeConvTranspose(name, net_.dims(in), channels, kernel, stride, 0),
                    {in});
  }
  // Batch norm over the first `channels` channels of `in` (0: all of them).
  int Bn(const std::string& name, int in, int channels = 0) {
    return net_.Add(name, MakeBatchNorm(name, net_.dims(in), channels), {in});
  }
  int Relu(const std::string& name, int in) {
    return net_.Add(name, MakeRelu(net_.dims(in)), {in});
  }
  int Sigmoid(const std::string& name, int in) {
    return net_.Add(name, MakeSigmoid(net_.dims(in)), {in});
  }
  int Tanh(const std::string& name, int in) {
    return net_.Add(name, MakeTanh(net_.dims(in)), {in});
  }
  int Mul(const std::string& name, int a, int b) {
    return net_.Add(name, MakeMul(net_.dims(a), net_.dims(b)), {a, b});
  }
  // A gated block, tanh(in) * sigmoid(conv1x1(in)), named <prefix>tanh, <prefix>conv,
  // <prefix>sigmoid and <prefix>mul.
  int Gate(const std::string& prefix, int in) {
    const int t = Tanh(prefix + "tanh", in);
    const int g = Conv(prefix + "conv", in, channels(in), 1, 1, 0);
    return Mul(prefix + "mul", t, Sigmoid(prefix + "sigmoid", g));
  }
  int MaxPool(const std::string& name, int in, int kernel, int stride, int pad) {
    return net_.Add(name, MakeMaxPool(net_.dims(in), kernel, stride, pad), {in});
  }
  int AvgPool(const std::string& name, int in, int kernel, int stride) {
    return net_.Add(name, MakeAvgPool(net_.dims(in), kernel, stride), {in});
  }
  int GlobalAvgPool(const std::string& name, int in) {
    return net_.Add(name, MakeGlobalAvgPool(net_.dims(in)), {in});
  }
  // a + b into a new map, or into a under NetworkVariant::inplace_skips (then `a` must be read
  // by nothing after, as AddInto).
  int Sum(const std::string& name, int a, int b) {
    if (net_.variant().inplace_skips) return AddInto(name, a, b);
    return net_.Add(name, MakeAdd(net_.dims(a), net_.dims(b)), {a, b});
  }
  // a += b, in place: later layers read the returned node, never `a`.
  int AddInto(const std::string& name, int a, int b) {
    return net_.Add(name, MakeAdd(net_.dims(a), net_.dims(b), /*in_place=*/true), {a, b});
  }
  // A new buffer of `channels` channels holding `in` in its first channels.
  int ConcatStart(const std::string& name, int in, int channels) {
    const Dims d = net_.dims(in);
    return net_.Add(name, MakeConcatStart(d, {channels, d.h, d.w}), {in});
  }
  // Copies `in` into channels [offset, ...) of `buffer`, in place.
  int ConcatInto(const std::string& name, int buffer, int in, int offset) {
    return net_.Add(name, MakeConcatInto(net_.dims(buffer), net_.dims(in), offset), {buffer, in});
  }
  int Fc(const std::string& name, int in, int features) {
    return net_.Add(name, MakeLinear(net_.dims(in), features), {in});
  }
  // conv -> BN -> ReLU, named <prefix>conv<i>, <prefix>bn<i>, <prefix>relu<i>.
  int ConvBnRelu(const std::string& prefix, const std::string& i, int in, int channels, int kernel,
                 int stride, int pad) {
    int x = Conv(prefix + "conv" + i, in, channels, kernel, stride, pad);
    x = Bn(prefix + "bn" + i, x);
    return Relu(prefix + "relu" + i, x);
  }

  int channels(int node) const { return net_.dims(node).c; }

 private:
  Network& net_;
};

// ResNet's basic block (two 3x3 conv-BN, the shortcut added, ReLU), named <prefix>conv1 ...
// <prefix>relu, with a projection shortcut (<prefix>downsample.0, .1: 1x1 conv + BN) where the
// block changes shape (models.cc).
int BasicBlock(Builder& b, const std::string& prefix, int in, int width, int stride);
int Shortcut(Builder& b, const std::string& prefix, int in, int channels, int stride);

// The models of models_unet.cc and models_densenet.cc (models.h describes them).
void BuildUNet(Network& net, int classes);
void BuildDenseNet(Network& net, int classes);

}  // namespace cnn_train

#endif  // POOCH_SAMPLES_CNN_TRAIN_MODEL_BUILDER_H_
