// The network definitions behind zoo.h, one file each (zoo_resnet.cc, zoo_alexnet.cc,
// zoo_vgg.cc, zoo_resnext3d.cc, zoo_small.cc). Each adds its layers to a fresh ZooBuilder; the
// caller (zoo.cc) has already validated and defaulted the input.
//
// Thread safety: pure functions.
#ifndef POOCH_CORE_ZOO_ZOO_NETS_H_
#define POOCH_CORE_ZOO_ZOO_NETS_H_

#include "core/zoo/zoo.h"
#include "core/zoo/zoo_builder.h"

namespace pooch::zoo_internal {

void BuildResNet50(ZooBuilder& b, const ZooInput& in);
void BuildAlexNet(ZooBuilder& b, const ZooInput& in);
void BuildVgg16(ZooBuilder& b, const ZooInput& in);
void BuildResNeXt101_3d(ZooBuilder& b, const ZooInput& in);
void BuildTiny(ZooBuilder& b, const ZooInput& in);
void BuildChain8(ZooBuilder& b, const ZooInput& in);

}  // namespace pooch::zoo_internal

#endif  // POOCH_CORE_ZOO_ZOO_NETS_H_
