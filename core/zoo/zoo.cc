#include "core/zoo/zoo.h"

#include <cstdint>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/zoo/zoo_builder.h"
#include "core/zoo/zoo_nets.h"

namespace pooch {
namespace {

struct Model {
  const char* name;
  const char* summary;
  void (*build)(ZooBuilder&, const ZooInput&);
  int default_batch;
  int default_image;
  bool three_d;
};

constexpr Model kModels[] = {
    {"resnet50", "ResNet-50 (He et al. 2016), 224x224, 1000 classes", zoo_internal::BuildResNet50,
     32, 224, false},
    {"alexnet", "AlexNet (single tower, no LRN), 224x224", zoo_internal::BuildAlexNet, 32, 224,
     false},
    {"vgg16", "VGG-16 (configuration D), 224x224", zoo_internal::BuildVgg16, 32, 224, false},
    {"resnext101-3d",
     "3D ResNeXt-101 (Hara et al. 2018), cardinality 32; frames x side x side, "
     "default 1 x 16 x 112 x 112",
     zoo_internal::BuildResNeXt101_3d, 1, 112, true},
    {"tiny", "six layers: conv, BN, ReLU, pool, fc, loss; 32x32", zoo_internal::BuildTiny, 8, 32,
     false},
    {"chain8", "eight chained 3x3 convolutions (PoocH Figures 2/7/11); 32x32",
     zoo_internal::BuildChain8, 8, 32, false},
};

constexpr int kDefaultFrames = 16;
// No tensor may exceed 256 TiB, so that sums over a few thousand tensors (peak memory, in the
// simulator and planner) stay far from int64 overflow.
constexpr double kMaxTensorBytes = static_cast<double>(int64_t{1} << 48);

const Model* Find(absl::string_view name) {
  for (const Model& m : kModels) {
    if (name == m.name) return &m;
  }
  return nullptr;
}

absl::StatusOr<ZooInput> Resolve(const Model& model, const ZooInput& given) {
  if (given.batch < 0 || given.image < 0 || given.frames < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(model.name, ": batch, image and frames must be positive (got batch ",
                     given.batch, ", image ", given.image, ", frames ", given.frames, ")"));
  }
  if (!model.three_d && given.frames > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(model.name, " is a 2D network: frames applies to resnext101-3d only"));
  }
  ZooInput in;
  in.batch = given.batch > 0 ? given.batch : model.default_batch;
  in.image = given.image > 0 ? given.image : model.default_image;
  in.frames = model.three_d ? (given.frames > 0 ? given.frames : kDefaultFrames) : 1;
  // No zoo activation has more than 64 channels at the input's full resolution (VGG's first
  // layers; the others stride first); 4 bytes each. Checked in floating point so that the check
  // itself cannot overflow.
  double input_elements = static_cast<double>(in.batch) * in.frames * in.image * in.image;
  if (input_elements * 64 * 4 > kMaxTensorBytes) {
    return absl::InvalidArgumentError(absl::StrCat(model.name, ": input ", in.batch, " x ",
                                                   in.frames, " x ", in.image, " x ", in.image,
                                                   " is too large to model"));
  }
  return in;
}

absl::Status UnknownModel(absl::string_view name) {
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown model '", name, "' (known: ", absl::StrJoin(ZooModelNames(), ", "), ")"));
}

absl::StatusOr<Profile> Build(absl::string_view name, const ZooInput& given,
                              const MachineModel& machine, ZooStats* stats) {
  const Model* model = Find(name);
  if (model == nullptr) return UnknownModel(name);
  absl::StatusOr<ZooInput> in = Resolve(*model, given);
  if (!in.ok()) return in.status();
  std::string label = model->three_d ? absl::StrCat(model->name, " batch ", in->batch, " ",
                                                    in->frames, "x", in->image, "x", in->image)
                                     : absl::StrCat(model->name, " batch ", in->batch, " ",
                                                    in->image, "x", in->image);
  ZooBuilder builder(label, machine);
  model->build(builder, *in);
  absl::StatusOr<Profile> profile = builder.Finish();
  if (profile.ok() && stats != nullptr) {
    stats->parameters = builder.parameter_count();
    stats->forward_macs = builder.forward_macs();
    stats->layers = 0;
    for (const Op& op : profile->ops) {
      if (op.phase == Phase::kForward && op.kind != OpKind::kCopy) ++stats->layers;
    }
  }
  return profile;
}

}  // namespace

absl::StatusOr<Profile> ZooProfile(absl::string_view model, const ZooInput& input,
                                   const MachineModel& machine) {
  return Build(model, input, machine, nullptr);
}

absl::StatusOr<Profile> ZooProfile(absl::string_view model, int batch, int image,
                                   const MachineModel& machine) {
  ZooInput in;
  in.batch = batch;
  in.image = image;
  return Build(model, in, machine, nullptr);
}

absl::StatusOr<ZooStats> ZooModelStats(absl::string_view model, const ZooInput& input,
                                       const MachineModel& machine) {
  ZooStats stats;
  absl::StatusOr<Profile> profile = Build(model, input, machine, &stats);
  if (!profile.ok()) return profile.status();
  return stats;
}

absl::StatusOr<ZooInput> ZooResolveInput(absl::string_view model, const ZooInput& input) {
  const Model* m = Find(model);
  if (m == nullptr) return UnknownModel(model);
  return Resolve(*m, input);
}

std::vector<std::string> ZooModelNames() {
  std::vector<std::string> names;
  for (const Model& m : kModels) names.emplace_back(m.name);
  return names;
}

std::string ZooModelSummary(absl::string_view model) {
  const Model* m = Find(model);
  return m == nullptr ? std::string() : std::string(m->summary);
}

}  // namespace pooch
