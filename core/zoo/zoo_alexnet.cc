// AlexNet, single-tower and without local response normalisation (Krizhevsky, "One weird trick
// for parallelizing convolutional neural networks", 2014; torchvision's alexnet): 61.1 M
// parameters. The paper's Chainer example used the two-tower-sized original with LRN; the layer
// shapes differ slightly, the character (few, heavy layers) does not.
#include "core/zoo/zoo_nets.h"

namespace pooch::zoo_internal {

void BuildAlexNet(ZooBuilder& b, const ZooInput& in) {
  ZooValue x = b.Input(in.batch, 3, {1, in.image, in.image});
  x = b.Relu("relu1", b.Conv("conv1", x, 64, Conv3::Square(11, 4, 2), 1, true));
  x = b.MaxPool("pool1", x, Conv3::Square(3, 2, 0));
  x = b.Relu("relu2", b.Conv("conv2", x, 192, Conv3::Square(5, 1, 2), 1, true));
  x = b.MaxPool("pool2", x, Conv3::Square(3, 2, 0));
  x = b.Relu("relu3", b.Conv("conv3", x, 384, Conv3::Square(3, 1, 1), 1, true));
  x = b.Relu("relu4", b.Conv("conv4", x, 256, Conv3::Square(3, 1, 1), 1, true));
  x = b.Relu("relu5", b.Conv("conv5", x, 256, Conv3::Square(3, 1, 1), 1, true));
  x = b.MaxPool("pool5", x, Conv3::Square(3, 2, 0));  // 256 x 6 x 6 at 224x224
  x = b.Relu("relu6", b.Linear("fc6", b.Dropout("drop6", x), 4096));
  x = b.Relu("relu7", b.Linear("fc7", b.Dropout("drop7", x), 4096));
  b.SoftmaxLoss("loss", b.Linear("fc8", x, 1000));
}

}  // namespace pooch::zoo_internal
