// The zoo: analytic Profiles of known networks, for offline what-if planning (`pooch plan
// --model resnet50 --batch 640 --machine v100-pcie3`), for the paper reproduction
// (docs/reproduction.md) and for tests of the planner and simulator.
//
//   absl::StatusOr<pooch::MachineModel> m = pooch::MachinePreset("v100-pcie3");
//   absl::StatusOr<pooch::Profile> p = pooch::ZooProfile("resnet50", 640, 224, *m);
//
// A zoo Profile is one training iteration as Chainer (the framework the paper extended) would
// run it: the mini-batch copy, the forward layers, their mirrored backward ops, and one
// momentum-SGD update per parameter array; durations from a roofline on the MachineModel
// (zoo_builder.h). The networks, with exact layer shapes:
//   resnet50       He et al. 2016, bottleneck blocks with the stride on the first 1x1 convolution
//                  (the original and Chainer's example; torchvision's v1.5 strides the 3x3),
//                  BN + ReLU, projection shortcuts; 1000 classes.
//   alexnet        the single-tower variant without LRN (torchvision, "one weird trick").
//   vgg16          Simonyan & Zisserman configuration D, with dropout.
//   resnext101-3d  3D ResNeXt-101 of Hara et al. 2018 (cardinality 32, 3D convolutions, shortcut
//                  B, 400 Kinetics classes), as in the PoocH paper's §5.2; input frames x side x
//                  side, batch 1 by default.
//   tiny           conv, BN, ReLU, max pool, fc, loss: a six-layer net for tests.
//   chain8         eight 3x3 convolutions in a chain and a loss: the paper's Figures 2, 7, 11.
//
// Thread safety: pure functions.
#ifndef POOCH_CORE_ZOO_ZOO_H_
#define POOCH_CORE_ZOO_ZOO_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/model/model.h"

namespace pooch {

// The input a zoo network is built for. Zero means "the model's default".
struct ZooInput {
  int batch = 0;   // images (clips for resnext101-3d) per mini-batch
  int image = 0;   // side of the square input in pixels
  int frames = 0;  // temporal extent (resnext101-3d only)
};

// Model defaults: batch 32 (resnext101-3d: 1; tiny, chain8: 8), image 224 (resnext101-3d: 112,
// tiny and chain8: 32), frames 16.
absl::StatusOr<Profile> ZooProfile(absl::string_view model, const ZooInput& input,
                                   const MachineModel& machine);

// Shorthand: `batch` and `image` as above (0 for the default), default frames.
absl::StatusOr<Profile> ZooProfile(absl::string_view model, int batch, int image,
                                   const MachineModel& machine);

// Errors: InvalidArgument for an unknown model (the message lists the known ones), a negative
// batch, image or frames, a frames value given to a 2D model, or an input so large that a tensor
// would not fit in int64 bytes; FailedPrecondition when the input is too small for the network's
// windows (e.g. alexnet at 32x32).

// The input ZooProfile builds `model` for: zeros replaced by the model's defaults, then checked.
// Same errors as ZooProfile except the FailedPrecondition (that needs the network).
absl::StatusOr<ZooInput> ZooResolveInput(absl::string_view model, const ZooInput& input);

// Facts about a zoo network at a given input, for tests and help text.
struct ZooStats {
  int64_t parameters = 0;   // learnable parameters, in elements
  double forward_macs = 0;  // multiply-accumulates of one forward pass over the whole batch
  int layers = 0;           // forward ops excluding the mini-batch copy
};
absl::StatusOr<ZooStats> ZooModelStats(absl::string_view model, const ZooInput& input,
                                       const MachineModel& machine);

// Known model names, in a fixed order.
std::vector<std::string> ZooModelNames();

// A one-line description of a model, for help text; empty for unknown names.
std::string ZooModelSummary(absl::string_view model);

}  // namespace pooch

#endif  // POOCH_CORE_ZOO_ZOO_H_
