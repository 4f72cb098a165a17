// Small networks for tests: fast to plan, easy to reason about by hand.
#include <string>

#include "absl/strings/str_cat.h"
#include "core/zoo/zoo_nets.h"

namespace pooch::zoo_internal {

// Six layers, one of each common kind: conv, BN, ReLU, max pool, fc, softmax loss.
void BuildTiny(ZooBuilder& b, const ZooInput& in) {
  ZooValue x = b.Input(in.batch, 3, {1, in.image, in.image});
  x = b.Relu("relu1", b.BatchNorm("bn1", b.Conv("conv1", x, 16, Conv3::Square(3, 1, 1))));
  x = b.MaxPool("pool1", x, Conv3::Square(2, 2, 0));
  b.SoftmaxLoss("loss", b.Linear("fc", x, 10));
}

// The eight-layer chain of the PoocH paper's Figures 2, 7 and 11: eight 3x3 convolutions of
// equal output size (16 channels; the first reads the 3-channel input), then the loss on the
// last one's output.
void BuildChain8(ZooBuilder& b, const ZooInput& in) {
  ZooValue x = b.Input(in.batch, 3, {1, in.image, in.image});
  for (int i = 1; i <= 8; ++i) {
    x = b.Conv(absl::StrCat("conv", i), x, 16, Conv3::Square(3, 1, 1));
  }
  b.SoftmaxLoss("loss", x);
}

}  // namespace pooch::zoo_internal
