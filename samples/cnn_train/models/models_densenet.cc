// densenet: DenseNet-BC-40 with growth 12 (Huang et al. 2017) for 32x32 images: a 3x3 stem
// conv of 24 channels, three dense blocks of six bottleneck layers (BN-ReLU-1x1 conv to 48
// channels, BN-ReLU-3x3 conv to 12), transitions (BN-ReLU-1x1 conv halving the channels,
// 2x2 average pooling) between them, then BN-ReLU, global average pool and a classifier.
// Its concatenations are copies into one buffer per dense block, as frameworks implement
// them (layers/concat.cc): the block's first node allocates the buffer and copies the block
// input into it; every dense layer reads the prefix of the buffer written so far and its
// output is copied into the next channels. So a buffer is written by many calls at different
// times and read, in growing prefixes, by every layer of its block; its gradient is summed
// slice by slice in backward. Names follow torchvision's (features.denseblock1.denselayer1.norm1).
#include <string>

#include "models/model_builder.h"

namespace cnn_train {
namespace {

constexpr int kBlocks = 3;
constexpr int kLayersPerBlock = 6;
constexpr int kGrowth = 12;
constexpr int kBottleneck = 4;  // the 1x1 convolution's width, in multiples of kGrowth

// Returns the last copy into the block's buffer: the node whose output is the whole buffer.
int DenseBlock(Builder& b, const std::string& prefix, int in) {
  const int in_channels = b.channels(in);
  int buffer = b.ConcatStart(prefix + "buffer", in, in_channels + kLayersPerBlock * kGrowth);
  for (int i = 0; i < kLayersPerBlock; ++i) {
    const std::string layer = prefix + "denselayer" + std::to_string(i + 1) + ".";
    const int channels = in_channels + i * kGrowth;
    int x = b.Bn(layer + "norm1", buffer, channels);
    x = b.Relu(layer + "relu1", x);
    x = b.Conv(layer + "conv1", x, kBottleneck * kGrowth, 1, 1, 0);
    x = b.Relu(layer + "relu2", b.Bn(layer + "norm2", x));
    x = b.Conv(layer + "conv2", x, kGrowth, 3, 1, 1);
    buffer = b.ConcatInto(layer + "concat", buffer, x, channels);
  }
  return buffer;
}

int Transition(Builder& b, const std::string& prefix, int in) {
  int x = b.Bn(prefix + "norm", in);
  x = b.Relu(prefix + "relu", x);
  x = b.Conv(prefix + "conv", x, b.channels(in) / 2, 1, 1, 0);
  return b.AvgPool(prefix + "pool", x, 2, 2);
}

}  // namespace

void BuildDenseNet(Network& net, int classes) {
  Builder b(net);
  int x = b.Conv("features.conv0", Network::kInput, 2 * kGrowth, 3, 1, 1);
  for (int block = 1; block <= kBlocks; ++block) {
    x = DenseBlock(b, "features.denseblock" + std::to_string(block) + ".", x);
    if (block < kBlocks) x = Transition(b, "features.transition" + std::to_string(block) + ".", x);
  }
  x = b.Relu("features.relu5", b.Bn("features.norm5", x));
  x = b.GlobalAvgPool("avgpool", x);
  b.Fc("classifier", x, classes);
}

}  // namespace cnn_train
