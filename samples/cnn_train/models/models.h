// The published topologies cnn_train trains, built as Networks:
//   resnet50  He et al. 2016 (arXiv 1512.03385, Table 1): bottleneck blocks [3, 4, 6, 3],
//             BN + ReLU, projection (1x1 conv + BN) shortcuts where the shape changes, stride
//             on the first 1x1 conv of a stage as in the paper and Chainer's ResNet50Layers
//             (torchvision's "v1.5" moves it to the 3x3)
//   resnet18  the same with basic blocks [2, 2, 2, 2]
//   vgg16     Simonyan and Zisserman 2015, configuration D, with the 4096-4096 classifier
//   alexnet   as torchvision.models.alexnet (no LRN; 64-192-384-256-256 channels)
//   tiny      a small ResNet for 32x32 images: conv-BN-ReLU (8 channels), two basic blocks of
//             8 channels, one of 16 (strided, with a projection shortcut), global average
//             pool and a classifier; 8 convolutions, a fraction of a second per iteration at
//             batch 32 on a CPU
//   unet      a U-Net (Ronneberger et al. 2015) at a quarter of the paper's widths: three
//             encoder levels of 16, 32, 64 channels (two 3x3 conv-BN-ReLU, 2x2 max pool), a
//             128-channel bottleneck, three decoder levels (2x2/2 transposed convolution with
//             bias, the encoder's map added into it in place, two conv-BN-ReLU), then per-pixel
//             class scores (1x1 conv with bias) averaged over the image; the image side must be
//             a multiple of 8 (models_unet.cc)
//   densenet  DenseNet-BC-40 with growth 12 (Huang et al. 2017) for 32x32 images: a 3x3 stem
//             conv of 24 channels, three dense blocks of six layers (BN-ReLU-1x1 conv to 48,
//             BN-ReLU-3x3 conv to 12) concatenated by copies into one buffer per block,
//             transitions (BN-ReLU-1x1 conv halving the channels, 2x2 average pool), BN-ReLU,
//             global average pool and a classifier (models_densenet.cc)
//   skipnet   a SkipNet/BlockDrop-style ResNet for 32x32 images whose gated residual blocks run
//             or are skipped per iteration by gates computed on the device and read back
//             (models_skipnet.cc)
//   moe       a mixture of experts: a convolutional stem, a router on the device that picks the
//             top-k of E experts (two-layer perceptrons) per iteration, read back, and a
//             classifier (models_moe.cc)
// Dropout is left out (it needs random state on the device, and changes nothing about the
// memory traffic pooch has to manage). The classifier input is whatever the features give, so
// vgg16 and alexnet accept image sizes other than 224 without adaptive pooling.
#ifndef POOCH_SAMPLES_CNN_TRAIN_MODELS_H_
#define POOCH_SAMPLES_CNN_TRAIN_MODELS_H_

#include <memory>
#include <string>

#include "models/model.h"
#include "network.h"

namespace cnn_train {

// The dynamic models' sizes (args.h: --experts, --top-k).
struct DynamicOptions {
  int experts = 16;
  int top_k = 2;
};

// REQUIRES: `model` is one of the names above. `variant` applies to the static models.
std::unique_ptr<Model> BuildModel(const std::string& model, int image, int classes,
                                  const DynamicOptions& dynamic = {},
                                  const NetworkVariant& variant = {});

// The static models (all but skipnet and moe) as the one Network they are.
std::unique_ptr<Network> BuildNetwork(const std::string& model, int image, int classes,
                                      const NetworkVariant& variant = {});

// models_skipnet.cc, models_moe.cc. REQUIRES: 1 <= top_k <= experts.
std::unique_ptr<Model> BuildSkipNet(int image, int classes);
std::unique_ptr<Model> BuildMoe(int image, int classes, int experts, int top_k);

}  // namespace cnn_train

#endif  // POOCH_SAMPLES_CNN_TRAIN_MODELS_H_
