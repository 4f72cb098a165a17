// VGG-16 (Simonyan & Zisserman, "Very Deep Convolutional Networks for Large-Scale Image
// Recognition", ICLR 2015, configuration D): 13 3x3 convolutions with bias and ReLU, five max
// pools, three fully connected layers with dropout; 138.4 M parameters.
#include <string>

#include "absl/strings/str_cat.h"
#include "core/zoo/zoo_nets.h"

namespace pooch::zoo_internal {

void BuildVgg16(ZooBuilder& b, const ZooInput& in) {
  ZooValue x = b.Input(in.batch, 3, {1, in.image, in.image});
  struct Block {
    int64_t channels;
    int convs;
  };
  const Block blocks[] = {{64, 2}, {128, 2}, {256, 3}, {512, 3}, {512, 3}};
  int block_number = 1;
  for (const Block& blk : blocks) {
    for (int i = 1; i <= blk.convs; ++i) {
      std::string name = absl::StrCat("conv", block_number, "_", i);
      x = b.Relu(absl::StrCat("relu", block_number, "_", i),
                 b.Conv(name, x, blk.channels, Conv3::Square(3, 1, 1), 1, true));
    }
    x = b.MaxPool(absl::StrCat("pool", block_number), x, Conv3::Square(2, 2, 0));
    ++block_number;
  }
  x = b.Dropout("drop6", b.Relu("relu6", b.Linear("fc6", x, 4096)));
  x = b.Dropout("drop7", b.Relu("relu7", b.Linear("fc7", x, 4096)));
  b.SoftmaxLoss("loss", b.Linear("fc8", x, 1000));
}

}  // namespace pooch::zoo_internal
