// unet: a small U-Net (Ronneberger et al. 2015) with the two habits of a framework's U-Net that
// an access-pattern planner has to see through:
//   - the decoder upsamples with transposed convolutions, whose forward is a cuDNN "backward
//     data" call and whose backward is a "forward" call (layers/conv_transpose.cc);
//   - the long skip connections are added in place into the upsampled map (`up += skip`), so
//     one allocation is written by two calls, and each encoder map lives from its level's
//     forward to the matching decoder level's backward, across the whole network.
// Widths 16-32-64 and a 128-channel bottleneck (the paper's 64-...-1024 over 4), padded 3x3
// convolutions so that the skip maps match the upsampled ones without cropping. The head is a
// segmentation head, per-pixel class scores (a 1x1 convolution with bias), averaged over the
// image into the logits, so that the trainer's softmax cross-entropy over classes applies.
#include <string>

#include "models/model_builder.h"

namespace cnn_train {
namespace {

constexpr int kLevels = 3;
constexpr int kWidth = 16;  // channels of the first level (NetworkVariant::width); each doubles

// Two conv-BN-ReLU, named <prefix>conv1 ... <prefix>relu2.
int DoubleConv(Builder& b, const std::string& prefix, int in, int channels) {
  const int x = b.ConvBnRelu(prefix, "1", in, channels, 3, 1, 1);
  return b.ConvBnRelu(prefix, "2", x, channels, 3, 1, 1);
}

}  // namespace

void BuildUNet(Network& net, int classes) {
  Builder b(net);
  const int width = net.variant().width > 0 ? net.variant().width : kWidth;
  int skips[kLevels];
  int x = Network::kInput;
  for (int level = 0; level < kLevels; ++level) {
    const std::string name = "enc" + std::to_string(level + 1);
    skips[level] = DoubleConv(b, name + ".", x, width << level);
    x = b.MaxPool("pool" + std::to_string(level + 1), skips[level], 2, 2, 0);
  }
  x = DoubleConv(b, "bottleneck.", x, width << kLevels);
  for (int level = kLevels - 1; level >= 0; --level) {
    const std::string name = "dec" + std::to_string(level + 1);
    x = b.ConvTranspose(name + ".up", x, width << level, 2, 2);
    x = b.AddInto(name + ".skip", x, skips[level]);
    x = DoubleConv(b, name + ".", x, width << level);
    if (net.variant().gated_blocks) x = b.Gate(name + ".gate.", x);
  }
  x = b.Conv("head", x, classes, 1, 1, 0, /*bias=*/true);
  b.GlobalAvgPool("avgpool", x);
}

}  // namespace cnn_train
