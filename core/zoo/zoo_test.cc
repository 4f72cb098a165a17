#include "core/zoo/zoo.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "core/model/candidates.h"
#include "core/model/machines.h"
#include "core/model/model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

using ::testing::HasSubstr;

MachineModel V100() { return *MachinePreset("v100-pcie3"); }

// In-core peak by the profile's own lifetimes: every tensor resident from alloc_before to
// free_after, plus the running op's workspace. (The simulator computes the same for a keep-all
// plan; this test stays independent of it.)
int64_t InCorePeak(const Profile& p) {
  std::vector<int64_t> alloc(p.ops.size() + 1, 0), release(p.ops.size(), 0);
  int64_t resident = 0;
  for (const Tensor& t : p.tensors) {
    if (t.alloc_before == kBeforeIteration) {
      resident += t.bytes;
    } else {
      alloc[t.alloc_before] += t.bytes;
    }
    if (t.free_after != kAfterIteration) release[t.free_after] += t.bytes;
  }
  int64_t peak = resident;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    resident += alloc[i];
    peak = std::max(peak, resident + p.ops[i].workspace_bytes);
    resident -= release[i];
  }
  return peak;
}

// The tensors made in the iteration with an idle interval from a forward op to a backward op (by
// the zoo's own phase labels, which it knows): what PoocH calls feature maps, read off the
// candidates. (Parameters are idle across the turn too, but they exist the whole iteration.)
// Ascending.
std::vector<TensorId> AcrossTheTurn(const Profile& p) {
  std::vector<TensorId> out;
  for (const Candidate& c : FindCandidates(p)) {
    const Tensor& t = p.tensors[c.tensor];
    if (t.alloc_before == kBeforeIteration && t.free_after == kAfterIteration) continue;
    if (c.wraps || p.ops[c.open].phase != Phase::kForward ||
        p.ops[c.close].phase != Phase::kBackward) {
      continue;
    }
    if (std::find(out.begin(), out.end(), c.tensor) == out.end()) out.push_back(c.tensor);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool IsSavedStats(const Tensor& t) { return absl::EndsWith(t.name, ".saved_stats"); }

// The layer outputs among them: batch norm's saved statistics (a few KiB per layer, whatever the
// batch) are candidates like every tensor now, but they are not layer outputs.
std::vector<TensorId> FeatureMaps(const Profile& p) {
  std::vector<TensorId> out;
  for (TensorId t : AcrossTheTurn(p)) {
    if (!IsSavedStats(p.tensors[t])) out.push_back(t);
  }
  return out;
}

int64_t FeatureMapBytes(const Profile& p) {
  int64_t sum = 0;
  for (TensorId t : FeatureMaps(p)) sum += p.tensors[t].bytes;
  return sum;
}

int FeatureMapCount(const Profile& p) { return static_cast<int>(FeatureMaps(p).size()); }

double IterationUs(const Profile& p) {
  double us = 0;
  for (const Op& op : p.ops) us += op.duration_us;
  return us;
}

TEST(ZooTest, EveryModelValidates) {
  for (const std::string& name : ZooModelNames()) {
    SCOPED_TRACE(name);
    absl::StatusOr<Profile> p = ZooProfile(name, 2, 0, V100());
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_TRUE(p->Validate().ok()) << p->Validate();
    EXPECT_GT(FeatureMapCount(*p), 0);
    for (const Op& op : p->ops) EXPECT_GT(op.duration_us, 0) << op.name;
    EXPECT_FALSE(ZooModelSummary(name).empty());
  }
}

TEST(ZooTest, ResNet50Shapes) {
  ZooInput in{1, 224, 0};
  absl::StatusOr<ZooStats> s = ZooModelStats("resnet50", in, V100());
  ASSERT_TRUE(s.ok()) << s.status();
  // 25,557,032 learnable parameters (He et al.; torchvision counts the same).
  EXPECT_NEAR(static_cast<double>(s->parameters), 25.557e6, 0.01e6);
  // 3.86 GMAC with the stride on the first 1x1 (He et al. Table 1: "3.8 x 10^9 FLOPs"); the
  // often quoted 4.1 is torchvision's v1.5, which strides the 3x3.
  EXPECT_GT(s->forward_macs, 3.8e9);
  EXPECT_LT(s->forward_macs, 4.2e9);
}

TEST(ZooTest, Vgg16AndAlexNetParameters) {
  ZooInput in{1, 224, 0};
  absl::StatusOr<ZooStats> vgg = ZooModelStats("vgg16", in, V100());
  ASSERT_TRUE(vgg.ok()) << vgg.status();
  EXPECT_NEAR(static_cast<double>(vgg->parameters), 138.358e6, 0.01e6);
  EXPECT_NEAR(vgg->forward_macs, 15.47e9, 0.1e9);
  absl::StatusOr<ZooStats> alex = ZooModelStats("alexnet", in, V100());
  ASSERT_TRUE(alex.ok()) << alex.status();
  EXPECT_NEAR(static_cast<double>(alex->parameters), 61.1e6, 0.01e6);
}

TEST(ZooTest, ResNet50FeatureMapsAgainstTable3) {
  absl::StatusOr<Profile> p = ZooProfile("resnet50", 8, 224, V100());
  ASSERT_TRUE(p.ok()) << p.status();
  // The paper's Table 3 classifies 105 maps. Ours, the tensors idle from forward to backward:
  // the input, 53 conv outputs (read by BN backward), 49 ReLU outputs, the max-pool and
  // average-pool outputs = 105. The fc output is read by the loss and, right after it, by the
  // loss backward: it is never idle, so it is no candidate (it was a "feature map" under the
  // phase rule, which counted 106).
  EXPECT_EQ(FeatureMapCount(*p), 105);
  const std::vector<TensorId> across = AcrossTheTurn(*p);
  EXPECT_EQ(std::count_if(across.begin(), across.end(),
                          [&](TensorId t) { return IsSavedStats(p->tensors[t]); }),
            53);  // one per batch norm
}

TEST(ZooTest, ResNet50MemoryMatchesPaper) {
  // §2.2, Fig. 3 and §5.2: in-core fails on a 16 GB V100 from batch 256; batch 640 needs more
  // than 50 GB.
  const int64_t k16GiB = int64_t{16} << 30;
  absl::StatusOr<Profile> b640 = ZooProfile("resnet50", 640, 224, V100());
  absl::StatusOr<Profile> b256 = ZooProfile("resnet50", 256, 224, V100());
  absl::StatusOr<Profile> b128 = ZooProfile("resnet50", 128, 224, V100());
  ASSERT_TRUE(b640.ok() && b256.ok() && b128.ok());
  EXPECT_GT(InCorePeak(*b640), int64_t{50} * 1000 * 1000 * 1000);
  EXPECT_LT(InCorePeak(*b640), int64_t{64} * 1000 * 1000 * 1000);
  EXPECT_GT(InCorePeak(*b256), k16GiB);
  EXPECT_LT(InCorePeak(*b128), k16GiB);
}

TEST(ZooTest, MemoryGrowsLinearlyInBatch) {
  for (const char* name : {"resnet50", "vgg16", "chain8"}) {
    SCOPED_TRACE(name);
    absl::StatusOr<Profile> p1 = ZooProfile(name, 16, 0, V100());
    absl::StatusOr<Profile> p2 = ZooProfile(name, 32, 0, V100());
    absl::StatusOr<Profile> p3 = ZooProfile(name, 48, 0, V100());
    ASSERT_TRUE(p1.ok() && p2.ok() && p3.ok());
    EXPECT_EQ(FeatureMapBytes(*p2), 2 * FeatureMapBytes(*p1));
    EXPECT_EQ(FeatureMapBytes(*p3), 3 * FeatureMapBytes(*p1));
    // Peak = parameters and workspace (constant) + a per-image part. (Not for tiny: there the
    // constant 8 MiB conv workspace decides where the peak is at small batches.)
    if (std::string(name) == "chain8") continue;
    double step1 = static_cast<double>(InCorePeak(*p2) - InCorePeak(*p1));
    double step2 = static_cast<double>(InCorePeak(*p3) - InCorePeak(*p2));
    EXPECT_NEAR(step2 / step1, 1.0, 0.01);
  }
}

TEST(ZooTest, InCoreResNet50MatchesPaperThroughput) {
  // machines.cc, Note [Calibration]: in-core ResNet-50 on v100-pcie3 ~ 316 img/s (§5.2).
  for (int batch : {64, 128, 256}) {
    absl::StatusOr<Profile> p = ZooProfile("resnet50", batch, 224, V100());
    ASSERT_TRUE(p.ok());
    double images_per_s = batch / (IterationUs(*p) * 1e-6);
    EXPECT_GT(images_per_s, 290) << batch;
    EXPECT_LT(images_per_s, 345) << batch;
  }
}

TEST(ZooTest, ResNeXt3dIsDeepAndGrowsWithInput) {
  ZooInput in;  // batch 1, 16 x 112 x 112
  absl::StatusOr<ZooStats> s = ZooModelStats("resnext101-3d", in, V100());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_GT(s->layers, 300);  // the paper's "over 300 layers"
  EXPECT_NEAR(static_cast<double>(s->parameters), 48.34e6, 0.05e6);  // Hara et al. list 48.3 M
  absl::StatusOr<Profile> small = ZooProfile("resnext101-3d", in, V100());
  in.frames = 32;
  absl::StatusOr<Profile> big = ZooProfile("resnext101-3d", in, V100());
  ASSERT_TRUE(small.ok() && big.ok());
  EXPECT_TRUE(big->Validate().ok());
  // Twice the frames, (nearly) twice the memory: odd temporal extents round up in later stages.
  EXPECT_NEAR(static_cast<double>(FeatureMapBytes(*big)) / FeatureMapBytes(*small), 2.0, 0.01);
}

TEST(ZooTest, BackwardReadsWhatLayersNeed) {
  absl::StatusOr<Profile> p = ZooProfile("tiny", 4, 32, V100());
  ASSERT_TRUE(p.ok());
  auto find_op = [&](const std::string& name) -> const Op* {
    for (const Op& op : p->ops) {
      if (op.name == name) return &op;
    }
    return nullptr;
  };
  auto tensor = [&](const std::string& name) -> TensorId {
    for (const Tensor& t : p->tensors) {
      if (t.name == name) return t.id;
    }
    return -1;
  };
  const Op* relu_back = find_op("relu1.backward");
  ASSERT_NE(relu_back, nullptr);
  EXPECT_THAT(relu_back->reads, ::testing::Contains(tensor("relu1.y")));
  EXPECT_THAT(relu_back->reads, ::testing::Not(::testing::Contains(tensor("bn1.y"))));
  const Op* bn_back = find_op("bn1.backward");
  ASSERT_NE(bn_back, nullptr);
  EXPECT_THAT(bn_back->reads, ::testing::Contains(tensor("conv1.y")));
  EXPECT_THAT(bn_back->reads, ::testing::Contains(tensor("bn1.saved_stats")));
  const Op* pool_back = find_op("pool1.backward");
  ASSERT_NE(pool_back, nullptr);
  EXPECT_THAT(pool_back->reads, ::testing::IsSupersetOf({tensor("relu1.y"), tensor("pool1.y")}));
  // BN's output only feeds ReLU forward, the next op: never idle, freed after ReLU. conv1's
  // output is idle from BN forward to BN backward; so are BN's saved statistics (offered like
  // every tensor; the planner's default 1 MiB threshold drops them).
  const std::vector<Candidate> cands = FindCandidates(*p);
  auto intervals = [&](TensorId t) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const Candidate& c : cands) {
      if (c.tensor == t && !c.wraps) out.emplace_back(p->ops[c.open].name, p->ops[c.close].name);
    }
    return out;
  };
  using Names = std::pair<std::string, std::string>;
  EXPECT_THAT(intervals(tensor("bn1.y")), ::testing::IsEmpty());
  EXPECT_THAT(intervals(tensor("conv1.y")), ::testing::ElementsAre(Names("bn1", "bn1.backward")));
  EXPECT_THAT(intervals(tensor("bn1.saved_stats")),
              ::testing::ElementsAre(Names("bn1", "bn1.backward")));
  for (const Candidate& c : FindCandidates(*p, 0, kDefaultMinCandidateBytes)) {
    EXPECT_GE(p->tensors[c.tensor].bytes, kDefaultMinCandidateBytes);
  }
  // The weight is idle between its forward and backward uses (its update comes right after
  // conv1's backward, the last backward op), and from the update to the next iteration's
  // forward use (the interval that wraps).
  const TensorId w = tensor("conv1.W");
  EXPECT_THAT(intervals(w), ::testing::ElementsAre(Names("conv1", "conv1.backward")));
  EXPECT_TRUE(std::any_of(cands.begin(), cands.end(), [&](const Candidate& c) {
    return c.tensor == w && c.wraps && p->ops[c.open].name == "conv1.W.update" &&
           p->ops[c.close].name == "conv1";
  }));
  // Parameters and their gradients and momenta persist.
  for (const char* name : {"conv1.W", "conv1.W.grad", "conv1.W.momentum"}) {
    EXPECT_EQ(p->tensors[tensor(name)].alloc_before, kBeforeIteration) << name;
    EXPECT_EQ(p->tensors[tensor(name)].free_after, kAfterIteration) << name;
  }
  EXPECT_EQ(p->ops.back().kind, OpKind::kOptimizer);
  EXPECT_EQ(p->ops.back().phase, Phase::kOther);
}

TEST(ZooTest, ResidualGradientsAreSummed) {
  absl::StatusOr<Profile> p = ZooProfile("resnet50", 2, 224, V100());
  ASSERT_TRUE(p.ok());
  int sums = 0;
  for (const Op& op : p->ops) sums += op.name.find(".grad_sum") != std::string::npos;
  // Each identity-shortcut block's input feeds conv1 and the add: 16 blocks - 4 projections.
  // Projection blocks' inputs feed conv1 and proj: 4 more.
  EXPECT_EQ(sums, 16);
}

TEST(ZooTest, Chain8HasEightFeatureMaps) {
  absl::StatusOr<Profile> p = ZooProfile("chain8", 4, 32, V100());
  ASSERT_TRUE(p.ok());
  // The eight layers' inputs: the input and the first seven conv outputs, as in the paper's
  // Figure 11. The last conv output is read by the loss and then at once by the loss backward:
  // it is never idle (the phase rule counted it, for 9).
  EXPECT_EQ(FeatureMapCount(*p), 8);
  EXPECT_EQ(p->tensors[FeatureMaps(*p).front()].name, "data");
}

TEST(ZooTest, BadInputs) {
  EXPECT_THAT(ZooProfile("resnet51", 1, 224, V100()).status().message(),
              HasSubstr("known: resnet50"));
  EXPECT_EQ(ZooProfile("resnet50", -1, 224, V100()).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ZooProfile("resnet50", 1 << 30, 1 << 20, V100()).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ZooProfile("alexnet", 1, 16, V100()).status().code(),
            absl::StatusCode::kFailedPrecondition);
  ZooInput frames{1, 224, 8};
  EXPECT_EQ(ZooProfile("resnet50", frames, V100()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pooch
