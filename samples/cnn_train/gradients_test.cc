// cnn_train's backward passes against finite differences, on simgpu (run with LD_LIBRARY_PATH
// at build/lib/simgpu). The loss is sum(logits .* R) for a fixed R, so the output gradient is
// R and the loss is a smooth function of every parameter wherever the graph has no ReLU or max
// pool: central differences then agree with backward to float rounding. Also checks that an
// iteration frees every feature map and gradient it allocates, in-place layers included.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "checks.h"
#include "models/model_builder.h"
#include "models/models.h"
#include "network.h"
#include "rng.h"

namespace cnn_train {
namespace {

constexpr int kBatch = 4;
constexpr int kClasses = 5;

// A model, its context and a fixed input (of per-sample shape `in`) and R.
class Harness {
 public:
  Harness(Dims in, std::unique_ptr<Model> net) : workspace_(&memory_), net_(std::move(net)) {
    CUDNN_CHECK(cudnnCreate(&ctx_.cudnn));
    CUBLAS_CHECK(cublasCreate(&ctx_.cublas));
    ctx_.memory = &memory_;
    ctx_.workspace = &workspace_;
    net_->InitParams(ctx_, /*seed=*/7);
    ones_ = memory_.AllocateFloats(kBatch, "ones vector");
    const std::vector<float> host_ones(kBatch, 1.0f);
    CUDA_CHECK(cudaMemcpy(ones_, host_ones.data(), kBatch * sizeof(float), cudaMemcpyHostToDevice));
    ctx_.ones = ones_;
    SplitMix64 rng(99);
    input_.resize(kBatch * in.count());
    for (float& v : input_) v = rng.NextSymmetric(1.0f);
    r_.resize(kBatch * kClasses);
    for (float& v : r_) v = rng.NextSymmetric(1.0f);
  }

  ~Harness() {
    memory_.Free(ones_);
    net_.reset();
    cublasDestroy(ctx_.cublas);
    cudnnDestroy(ctx_.cudnn);
  }

  // One iteration without the update: returns the loss; leaves the parameter gradients.
  double Step() {
    const float* logits = net_->Forward(ctx_, kBatch, input_.data());
    std::vector<float> host(r_.size());
    CUDA_CHECK(
        cudaMemcpy(host.data(), logits, host.size() * sizeof(float), cudaMemcpyDeviceToHost));
    double loss = 0.0;
    for (size_t i = 0; i < host.size(); ++i) loss += static_cast<double>(host[i]) * r_[i];
    float* dlogits = net_->AllocateOutputGradient(ctx_, kBatch);
    CUDA_CHECK(cudaMemcpy(dlogits, r_.data(), r_.size() * sizeof(float), cudaMemcpyHostToDevice));
    net_->Backward(ctx_, kBatch);
    return loss;
  }

  // REQUIRES: the model is a Network.
  Network& net() { return dynamic_cast<Network&>(*net_); }
  Model& model() { return *net_; }
  const DeviceMemory& memory() const { return memory_; }
  Context* ctx() { return &ctx_; }

 private:
  DeviceMemory memory_;
  Workspace workspace_;
  Context ctx_;
  std::unique_ptr<Model> net_;
  float* ones_ = nullptr;
  std::vector<float> input_;
  std::vector<float> r_;
};

float Get(const float* device) {
  float v = 0.0f;
  CUDA_CHECK(cudaMemcpy(&v, device, sizeof(float), cudaMemcpyDeviceToHost));
  return v;
}

void Set(float* device, float v) {
  CUDA_CHECK(cudaMemcpy(device, &v, sizeof(float), cudaMemcpyHostToDevice));
}

// Every layer kind unet and densenet add, without ReLU or max pool:
//   a = conv(input); u = conv_transpose(a); s = conv_transpose(input); u += s (in place)
//   B = concat buffer of 14 channels holding u; c1 = conv(bn(B[0:6])) copied into B[6:10];
//   c2 = conv(bn(B[0:10])) copied into B[10:14]; t = conv1x1(bn(B))
//   logits = fc(avgpool(t) + avgpool(c1))
// c1's second reader (the average pool) runs after its copy into B, so in backward the copy
// adds its slice of B's gradient to c1's (the strided cudnnAddTensor) instead of copying it.
std::unique_ptr<Network> SmoothGraph() {
  auto net = std::make_unique<Network>(Dims{3, 8, 8});
  Builder b(*net);
  const int a = b.Conv("a", Network::kInput, 4, 3, 1, 1);
  const int u = b.ConvTranspose("u", a, 6, 2, 2);
  const int s = b.ConvTranspose("s", Network::kInput, 6, 2, 2);
  const int sum = b.AddInto("u+=s", u, s);
  int buffer = b.ConcatStart("buffer", sum, 14);
  const int c1 = b.Conv("c1", b.Bn("n1", buffer, 6), 4, 3, 1, 1);
  buffer = b.ConcatInto("copy1", buffer, c1, 6);
  const int c2 = b.Conv("c2", b.Bn("n2", buffer, 10), 4, 3, 1, 1);
  buffer = b.ConcatInto("copy2", buffer, c2, 10);
  const int t = b.Conv("t", b.Bn("n3", buffer), 4, 1, 1, 0);
  const int pooled = b.Sum("sum", b.GlobalAvgPool("pool_t", t), b.GlobalAvgPool("pool_c1", c1));
  b.Fc("fc", pooled, kClasses);
  return net;
}

TEST(GradientsTest, NewLayersMatchCentralDifferences) {
  Harness h({3, 8, 8}, SmoothGraph());
  h.Step();
  // Backward's gradients, before any parameter moves.
  struct Probe {
    float* value;
    float grad;
    const char* name;
  };
  std::vector<Probe> probes;
  SplitMix64 rng(5);
  for (ParamSpec* p : h.net().trainable_params()) {
    for (int k = 0; k < 4; ++k) {
      const int64_t i = static_cast<int64_t>(rng.Next() % static_cast<uint64_t>(p->count));
      probes.push_back({p->value + i, Get(p->grad + i), p->name.c_str()});
    }
  }
  // 4 convolutions, 2 transposed ones and fc (weight, bias), 3 batch norms (scale, shift).
  ASSERT_EQ(probes.size(), 4u * 16);
  constexpr float kEps = 1e-2f;
  for (const Probe& probe : probes) {
    const float v = Get(probe.value);
    Set(probe.value, v + kEps);
    const double up = h.Step();
    Set(probe.value, v - kEps);
    const double down = h.Step();
    Set(probe.value, v);
    const double numeric = (up - down) / (2.0 * kEps);
    const double scale = std::max(1e-2, std::fabs(numeric) + std::fabs(probe.grad));
    EXPECT_LT(std::fabs(numeric - probe.grad) / scale, 1e-2)
        << probe.name << ": backward " << probe.grad << ", central difference " << numeric;
  }
}

// A gated block (tanh(x) * sigmoid(conv1x1(x)): the sigmoid and tanh activations and the
// elementwise product) is smooth: backward matches central differences; and unet with
// --gated-blocks frees what an iteration allocated.
TEST(GradientsTest, GatedBlockMatchesCentralDifferences) {
  auto net = std::make_unique<Network>(Dims{3, 8, 8});
  Builder b(*net);
  const int a = b.Conv("a", Network::kInput, 4, 3, 1, 1);
  const int gated = b.Gate("gate.", a);
  b.Fc("fc", b.GlobalAvgPool("pool", gated), kClasses);
  Harness h({3, 8, 8}, std::move(net));
  h.Step();
  struct Probe {
    float* value;
    float grad;
    const char* name;
  };
  std::vector<Probe> probes;
  SplitMix64 rng(11);
  for (ParamSpec* p : h.net().trainable_params()) {
    for (int k = 0; k < 4; ++k) {
      const int64_t i = static_cast<int64_t>(rng.Next() % static_cast<uint64_t>(p->count));
      probes.push_back({p->value + i, Get(p->grad + i), p->name.c_str()});
    }
  }
  ASSERT_EQ(probes.size(), 4u * 4);  // a, gate.conv, fc's weight and bias
  constexpr float kEps = 1e-2f;
  for (const Probe& probe : probes) {
    const float v = Get(probe.value);
    Set(probe.value, v + kEps);
    const double up = h.Step();
    Set(probe.value, v - kEps);
    const double down = h.Step();
    Set(probe.value, v);
    const double numeric = (up - down) / (2.0 * kEps);
    const double scale = std::max(1e-2, std::fabs(numeric) + std::fabs(probe.grad));
    EXPECT_LT(std::fabs(numeric - probe.grad) / scale, 1e-2)
        << probe.name << ": backward " << probe.grad << ", central difference " << numeric;
  }
  Harness unet({3, 16, 16},
               BuildNetwork("unet", 16, kClasses, {.conv_bias = true, .gated_blocks = true}));
  EXPECT_TRUE(std::isfinite(unet.Step()));
  const size_t after_one = unet.memory().live_bytes();
  unet.Step();
  EXPECT_EQ(after_one, unet.memory().live_bytes());
}

// An iteration frees what it allocated: each tensor once, including a dense block's buffer
// (the output of its first node and of every copy into it) and U-Net's summed maps.
TEST(GradientsTest, IterationFreesEveryMap) {
  for (const char* model : {"unet", "densenet", "tiny"}) {
    Harness h({3, 16, 16}, BuildNetwork(model, 16, kClasses));
    const size_t before = h.memory().live_bytes();
    h.Step();
    const size_t after_one = h.memory().live_bytes();
    h.Step();
    // The convolution workspace may grow once; after that nothing is left behind.
    EXPECT_EQ(after_one, h.memory().live_bytes()) << model;
    EXPECT_GE(after_one, before) << model;
  }
}

// Issue 37's variants: residual additions in place compute what the plain model does, bit for
// bit (the same parameters, the same sums); with every convolution's bias added in place the
// loss is finite; and an iteration frees what it allocated either way.
TEST(GradientsTest, VariantsComputeWhatTheirPlainModelsDo) {
  for (const char* model : {"tiny", "resnet18"}) {
    Harness plain({3, 16, 16}, BuildNetwork(model, 16, kClasses));
    Harness skips({3, 16, 16}, BuildNetwork(model, 16, kClasses, {.inplace_skips = true}));
    EXPECT_EQ(plain.Step(), skips.Step()) << model;
  }
  for (const char* model : {"tiny", "unet", "resnet18"}) {
    Harness h({3, 16, 16},
              BuildNetwork(model, 16, kClasses, {.conv_bias = true, .inplace_skips = true}));
    EXPECT_TRUE(std::isfinite(h.Step())) << model;
    const size_t after_one = h.memory().live_bytes();
    h.Step();
    EXPECT_EQ(after_one, h.memory().live_bytes()) << model;
  }
}

// The dynamic models (issue 16) free what an iteration allocated whichever blocks or experts
// ran, the gradient buffers they hand between their parts included; and parameters are freed
// once at the end (DeviceMemory dies on an unknown or doubly freed pointer).
TEST(GradientsTest, DynamicIterationFreesEveryMap) {
  for (const char* model : {"skipnet", "moe"}) {
    Harness h({3, 16, 16}, BuildModel(model, 16, kClasses, {/*experts=*/4, /*top_k=*/2}));
    const size_t before = h.memory().live_bytes();
    std::vector<std::string> choices;
    for (int i = 0; i < 4; ++i) {
      h.Step();
      h.model().SgdStep(*h.ctx(), 0.1f, 0.9f);
      choices.push_back(h.model().Choices());
      // simgpu's convolutions need no workspace, so nothing may be left at all.
      EXPECT_EQ(before, h.memory().live_bytes()) << model << " iteration " << i << choices.back();
    }
    EXPECT_NE(choices[0], "") << model;
  }
}

}  // namespace
}  // namespace cnn_train
