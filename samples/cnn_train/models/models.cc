#include "models/models.h"

#include <utility>

#include "checks.h"
#include "models/model_builder.h"

namespace cnn_train {
namespace {

// The ResNet stem: 7x7/2 conv, BN, ReLU, 3x3/2 max pool.
int ResNetStem(Builder& b) {
  int x = b.ConvBnRelu("", "1", Network::kInput, 64, 7, 2, 3);
  return b.MaxPool("maxpool", x, 3, 2, 1);
}

}  // namespace

// Projection shortcut (1x1 conv + BN) where the block changes shape, identity elsewhere.
int Shortcut(Builder& b, const std::string& prefix, int in, int channels, int stride) {
  if (stride == 1 && b.channels(in) == channels) return in;
  const int x = b.Conv(prefix + "downsample.0", in, channels, 1, stride, 0);
  return b.Bn(prefix + "downsample.1", x);
}

int BasicBlock(Builder& b, const std::string& prefix, int in, int width, int stride) {
  int x = b.ConvBnRelu(prefix, "1", in, width, 3, stride, 1);
  x = b.Conv(prefix + "conv2", x, width, 3, 1, 1);
  x = b.Bn(prefix + "bn2", x);
  const int sum = b.Sum(prefix + "add", x, Shortcut(b, prefix, in, width, stride));
  return b.Relu(prefix + "relu", sum);
}

namespace {

int Bottleneck(Builder& b, const std::string& prefix, int in, int width, int stride) {
  constexpr int kExpansion = 4;
  int x = b.ConvBnRelu(prefix, "1", in, width, 1, stride, 0);
  x = b.ConvBnRelu(prefix, "2", x, width, 3, 1, 1);
  x = b.Conv(prefix + "conv3", x, width * kExpansion, 1, 1, 0);
  x = b.Bn(prefix + "bn3", x);
  const int sum = b.Sum(prefix + "add", x, Shortcut(b, prefix, in, width * kExpansion, stride));
  return b.Relu(prefix + "relu", sum);
}

void BuildResNet(Network& net, bool bottleneck, const int (&blocks)[4], int classes) {
  Builder b(net);
  int x = ResNetStem(b);
  for (int stage = 0; stage < 4; ++stage) {
    const int width = 64 << stage;
    for (int i = 0; i < blocks[stage]; ++i) {
      const std::string prefix =
          "layer" + std::to_string(stage + 1) + "." + std::to_string(i) + ".";
      const int stride = (stage > 0 && i == 0) ? 2 : 1;
      x = bottleneck ? Bottleneck(b, prefix, x, width, stride)
                     : BasicBlock(b, prefix, x, width, stride);
    }
  }
  x = b.GlobalAvgPool("avgpool", x);
  b.Fc("fc", x, classes);
}

// Names follow torchvision's module indices (features.N, classifier.N).
void BuildVgg16(Network& net, int classes) {
  Builder b(net);
  constexpr int kPool = 0;
  constexpr int kConfigD[] = {64,    64,  kPool, 128, 128,   kPool, 256, 256, 256,
                              kPool, 512, 512,   512, kPool, 512,   512, 512, kPool};
  int x = Network::kInput;
  int index = 0;
  for (int channels : kConfigD) {
    const std::string name = "features." + std::to_string(index);
    if (channels == kPool) {
      x = b.MaxPool(name, x, 2, 2, 0);
      index += 1;
    } else {
      x = b.Conv(name, x, channels, 3, 1, 1, /*bias=*/true);
      x = b.Relu("features." + std::to_string(index + 1), x);
      index += 2;
    }
  }
  x = b.Relu("classifier.1", b.Fc("classifier.0", x, 4096));
  x = b.Relu("classifier.4", b.Fc("classifier.3", x, 4096));
  b.Fc("classifier.6", x, classes);
}

void BuildAlexNet(Network& net, int classes) {
  Builder b(net);
  int x = b.Relu("features.1", b.Conv("features.0", Network::kInput, 64, 11, 4, 2, true));
  x = b.MaxPool("features.2", x, 3, 2, 0);
  x = b.Relu("features.4", b.Conv("features.3", x, 192, 5, 1, 2, true));
  x = b.MaxPool("features.5", x, 3, 2, 0);
  x = b.Relu("features.7", b.Conv("features.6", x, 384, 3, 1, 1, true));
  x = b.Relu("features.9", b.Conv("features.8", x, 256, 3, 1, 1, true));
  x = b.Relu("features.11", b.Conv("features.10", x, 256, 3, 1, 1, true));
  x = b.MaxPool("features.12", x, 3, 2, 0);
  x = b.Relu("classifier.2", b.Fc("classifier.1", x, 4096));
  x = b.Relu("classifier.5", b.Fc("classifier.4", x, 4096));
  b.Fc("classifier.6", x, classes);
}

// A small ResNet whose peak is, as in real networks, the feature maps of many layers held for
// backward: about 22 maps' worth at 8 channels and full resolution, while the largest single
// operation (a ReLU backward: x, y, dy, dx) touches 4, under a fifth of the peak. Few channels
// keep the arithmetic (about 3.5 million multiply-adds per sample forward) small for a CPU.
void BuildTiny(Network& net, int classes) {
  Builder b(net);
  int x = b.ConvBnRelu("", "1", Network::kInput, 8, 3, 1, 1);
  x = BasicBlock(b, "layer1.0.", x, 8, 1);
  x = BasicBlock(b, "layer1.1.", x, 8, 1);
  x = BasicBlock(b, "layer2.0.", x, 16, 2);
  x = b.GlobalAvgPool("avgpool", x);
  b.Fc("fc", x, classes);
}

}  // namespace

std::unique_ptr<Network> BuildNetwork(const std::string& model, int image, int classes,
                                      const NetworkVariant& variant) {
  auto net = std::make_unique<Network>(Dims{3, image, image});
  net->set_variant(variant);
  if (model == "resnet50") {
    BuildResNet(*net, /*bottleneck=*/true, {3, 4, 6, 3}, classes);
  } else if (model == "resnet18") {
    BuildResNet(*net, /*bottleneck=*/false, {2, 2, 2, 2}, classes);
  } else if (model == "vgg16") {
    BuildVgg16(*net, classes);
  } else if (model == "alexnet") {
    BuildAlexNet(*net, classes);
  } else if (model == "tiny") {
    BuildTiny(*net, classes);
  } else if (model == "unet") {
    BuildUNet(*net, classes);
  } else if (model == "densenet") {
    BuildDenseNet(*net, classes);
  } else {
    Fail(kExitUsage, "unknown model '%s'", model.c_str());
  }
  return net;
}

std::unique_ptr<Model> BuildModel(const std::string& model, int image, int classes,
                                  const DynamicOptions& dynamic, const NetworkVariant& variant) {
  if (model == "skipnet") return BuildSkipNet(image, classes);
  if (model == "moe") return BuildMoe(image, classes, dynamic.experts, dynamic.top_k);
  return BuildNetwork(model, image, classes, variant);
}

}  // namespace cnn_train
