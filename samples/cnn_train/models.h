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
// Dropout is left out (it needs random state on the device, and changes nothing about the
// memory traffic pooch has to manage). The classifier input is whatever the features give, so
// vgg16 and alexnet accept image sizes other than 224 without adaptive pooling.
#ifndef POOCH_SAMPLES_CNN_TRAIN_MODELS_H_
#define POOCH_SAMPLES_CNN_TRAIN_MODELS_H_

#include <memory>
#include <string>

#include "network.h"

namespace cnn_train {

// REQUIRES: `model` is one of the names above.
std::unique_ptr<Network> BuildModel(const std::string& model, int image, int classes);

}  // namespace cnn_train

#endif  // POOCH_SAMPLES_CNN_TRAIN_MODELS_H_
