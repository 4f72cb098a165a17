// 3D ResNeXt-101 (Hara, Kataoka, Satoh, "Can Spatiotemporal 3D CNNs Retrace the History of 2D
// CNNs and ImageNet?", CVPR 2018; github.com/kenshohara/3D-ResNets-PyTorch, models/resnext.py),
// the network of the PoocH paper's §5.2 and Figure 4: cardinality 32, bottleneck expansion 2,
// blocks [3, 4, 23, 3], 3D convolutions throughout, shortcut type B (projection where the shape
// changes), 400 Kinetics classes. 33 blocks of ten layers, four projections of two, stem and head:
// 345 layers, the paper's "over 300".
//
// Input: batch x 3 x frames x side x side (default 1 x 3 x 16 x 112 x 112, Hara's training
// clip). The stem keeps the temporal extent (stride 1 x 2 x 2); the max pool and each later stage
// halve every dimension.
#include <string>

#include "absl/strings/str_cat.h"
#include "core/zoo/zoo_nets.h"

namespace pooch::zoo_internal {
namespace {

constexpr int64_t kCardinality = 32;

ZooValue ConvBn(ZooBuilder& b, const std::string& name, const ZooValue& x, int64_t channels,
                const Conv3& g, int64_t groups = 1) {
  return b.BatchNorm(absl::StrCat(name, ".bn"), b.Conv(name, x, channels, g, groups));
}

ZooValue Block(ZooBuilder& b, const std::string& name, const ZooValue& x, int64_t planes,
               int64_t stride, bool project) {
  const int64_t mid = kCardinality * planes / 32;  // Hara's mid_planes
  ZooValue h = b.Relu(name + ".relu1", ConvBn(b, name + ".conv1", x, mid, Conv3::Cube(1, 1, 0)));
  h = b.Relu(name + ".relu2",
             ConvBn(b, name + ".conv2", h, mid, Conv3::Cube(3, stride, 1), kCardinality));
  h = ConvBn(b, name + ".conv3", h, 2 * planes, Conv3::Cube(1, 1, 0));
  ZooValue shortcut =
      project ? ConvBn(b, name + ".proj", x, 2 * planes, Conv3::Cube(1, stride, 0)) : x;
  return b.Relu(name + ".relu3", b.Add(name + ".add", h, shortcut));
}

}  // namespace

void BuildResNeXt101_3d(ZooBuilder& b, const ZooInput& in) {
  ZooValue x = b.Input(in.batch, 3, {in.frames, in.image, in.image});
  x = b.Relu("relu1", ConvBn(b, "conv1", x, 64, {{7, 7, 7}, {1, 2, 2}, {3, 3, 3}}));
  x = b.MaxPool("pool1", x, Conv3::Cube(3, 2, 1));
  struct Stage {
    int64_t planes;
    int blocks;
    int64_t stride;
  };
  const Stage stages[] = {{128, 3, 1}, {256, 4, 2}, {512, 23, 2}, {1024, 3, 2}};
  int64_t channels = 64;
  int stage_number = 1;
  for (const Stage& s : stages) {
    for (int i = 0; i < s.blocks; ++i) {
      int64_t stride = i == 0 ? s.stride : 1;
      bool project = stride != 1 || channels != 2 * s.planes;
      x = Block(b, absl::StrCat("layer", stage_number, ".", i), x, s.planes, stride, project);
      channels = 2 * s.planes;
    }
    ++stage_number;
  }
  // Hara's AvgPool3d((ceil(frames/16), ceil(side/32), ceil(side/32))) equals the remaining
  // extent for the inputs we build; pooling over the whole extent is the same and works for any.
  x = b.AvgPool("avgpool", x, {x.spatial, {1, 1, 1}, {0, 0, 0}});
  b.SoftmaxLoss("loss", b.Linear("fc", x, 400));
}

}  // namespace pooch::zoo_internal
