// moe: a mixture of experts (Shazeer et al. 2017; Switch Transformer's FFN experts) after a
// small convolutional stem, for 32x32 images:
//   stem      conv 3x3 (16 channels), BN, ReLU; conv 3x3 stride 2 (64 channels), BN, ReLU;
//             global average pool: a 64-feature vector per sample
//   router    64 -> E scores on the device, read back (router.h); the host takes the top k
//             centred scores (ties to the lower index): the experts of this iteration, one
//             choice per batch, not per sample, so that an expert runs for the whole batch or
//             not at all
//   experts   E two-layer perceptrons, expert<e>.fc1 (64 -> 4096), ReLU, expert<e>.fc2
//             (4096 -> 64), each weight 1 MiB; the chosen ones run on the stem's vector
//   combine   z = x + (1/k) sum of the chosen experts' outputs (a residual mixture)
//   head      classifier fc (64 -> classes)
// With E experts the model holds E * 2.1 MB of expert weights (three times that with their
// gradients and momentum), the bulk of its memory: 16 experts are 34 MB of weights, 101 MB
// with gradients and momentum, and an iteration touches only k of them.
// The router is not trained (router.h). Only the chosen experts run forward and backward, and
// the optimizer steps the stem, the head and the chosen experts only: an unchosen expert gets no
// gradient (as PyTorch's SGD skips a parameter whose .grad is None), so its weights, gradients
// and momentum are untouched in that iteration. params_checksum covers every expert's weights.
#include <algorithm>
#include <memory>
#include <numeric>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "checks.h"
#include "models/model_builder.h"
#include "models/models.h"
#include "models/router.h"
#include "rng.h"

namespace cnn_train {
namespace {

constexpr int kWidth = 64;     // the stem's features, the experts' input and output
constexpr int kHidden = 4096;  // an expert's hidden layer

uint64_t PartSeed(uint64_t seed, int part) {
  return Mix64(seed ^ (0x30e0000000000000ULL + static_cast<uint64_t>(part)));
}

class Moe final : public Model {
 public:
  Moe(int image, int classes, int experts, int top_k) : top_k_(top_k) {
    stem_ = std::make_unique<Network>(Dims{3, image, image});
    Builder stem(*stem_);
    int x = stem.ConvBnRelu("", "1", Network::kInput, 16, 3, 1, 1);
    x = stem.ConvBnRelu("", "2", x, kWidth, 3, 2, 1);
    stem.GlobalAvgPool("avgpool", x);
    const Dims features = stem_->dims(stem_->output());
    router_ = std::make_unique<Router>("router", features, experts);
    for (int e = 0; e < experts; ++e) {
      const std::string name = "expert" + std::to_string(e) + ".";
      auto expert = std::make_unique<Network>(features);
      Builder b(*expert);
      const int h = b.Relu(name + "relu", b.Fc(name + "fc1", Network::kInput, kHidden));
      b.Fc(name + "fc2", h, kWidth);
      experts_.push_back(std::move(expert));
    }
    head_ = std::make_unique<Network>(features);
    Builder head(*head_);
    head.Fc("fc", Network::kInput, classes);
  }

  void InitParams(Context& ctx, uint64_t seed) override {
    int part = 0;
    stem_->InitParams(ctx, PartSeed(seed, part++));
    router_->Init(ctx, PartSeed(seed, part++));
    for (auto& expert : experts_) expert->InitParams(ctx, PartSeed(seed, part++));
    head_->InitParams(ctx, PartSeed(seed, part++));
  }

  void ShareParams(Context& ctx, Model& owner_model) override {
    auto& owner = dynamic_cast<Moe&>(owner_model);
    stem_->ShareParams(ctx, *owner.stem_);
    router_->Share(*owner.router_);
    for (size_t e = 0; e < experts_.size(); ++e) {
      experts_[e]->ShareParams(ctx, *owner.experts_[e]);
    }
    head_->ShareParams(ctx, *owner.head_);
  }

  const float* Forward(Context& ctx, int batch, const float* host_input) override {
    const float* x = stem_->Forward(ctx, batch, host_input);
    Choose(router_->Route(ctx, batch, x));
    if (!forced_.empty()) chosen_ = forced_;
    const int n = batch * kWidth;
    combined_ = ctx.memory->AllocateFloats(n, "combine output");
    CUDA_CHECK(cudaMemcpy(combined_, x, n * sizeof(float), cudaMemcpyDeviceToDevice));
    const float share = 1.0f / static_cast<float>(top_k_);
    for (int e : chosen_) {
      const float* y = experts_[e]->ForwardFrom(ctx, batch, x);
      CUBLAS_CHECK(cublasSaxpy(ctx.cublas, n, &share, y, 1, combined_, 1));
    }
    return head_->ForwardFrom(ctx, batch, combined_);
  }

  float* AllocateOutputGradient(Context& ctx, int batch) override {
    return head_->AllocateOutputGradient(ctx, batch);
  }

  void Backward(Context& ctx, int batch) override {
    // dz from the head; dx = dz + sum of the chosen experts' input gradients, each expert's
    // output gradient dz / k.
    const int n = batch * kWidth;
    const size_t bytes = n * sizeof(float);
    float* dz = ctx.memory->AllocateFloats(n, "combine output gradient");
    head_->Backward(ctx, batch, dz, 0.0f);
    ctx.memory->Free(combined_);
    combined_ = nullptr;
    float* dx = ctx.memory->AllocateFloats(n, "avgpool output gradient");
    CUDA_CHECK(cudaMemcpy(dx, dz, bytes, cudaMemcpyDeviceToDevice));
    const float share = 1.0f / static_cast<float>(top_k_);
    for (auto it = chosen_.rbegin(); it != chosen_.rend(); ++it) {
      float* dy =
          ctx.memory->AllocateFloats(n, "expert" + std::to_string(*it) + " output gradient");
      CUDA_CHECK(cudaMemcpy(dy, dz, bytes, cudaMemcpyDeviceToDevice));
      CUBLAS_CHECK(cublasSscal(ctx.cublas, n, &share, dy, 1));
      experts_[*it]->SetOutputGradient(dy);
      experts_[*it]->Backward(ctx, batch, dx, 1.0f);
    }
    ctx.memory->Free(dz);
    stem_->SetOutputGradient(dx);
    stem_->Backward(ctx, batch);
  }

  void SgdStep(Context& ctx, float lr, float momentum) override {
    stem_->SgdStep(ctx, lr, momentum);
    for (int e : chosen_) experts_[e]->SgdStep(ctx, lr, momentum);
    head_->SgdStep(ctx, lr, momentum);
  }

  uint64_t ParamsChecksum(uint64_t hash) const override {
    hash = stem_->ParamsChecksum(hash);
    for (const auto& expert : experts_) hash = expert->ParamsChecksum(hash);
    return head_->ParamsChecksum(hash);
  }

  // " experts 3,7": the chosen experts, in increasing order.
  std::string Choices() const override {
    std::string text = " experts ";
    for (size_t i = 0; i < chosen_.size(); ++i) {
      text += (i > 0 ? "," : "") + std::to_string(chosen_[i]);
    }
    return text;
  }

  bool ForceChoices(const std::string& text) override {
    constexpr std::string_view kPrefix = "experts ";
    if (text.rfind(kPrefix, 0) != 0) return false;
    std::vector<int> chosen;
    size_t at = kPrefix.size();
    while (at <= text.size()) {
      const size_t comma = std::min(text.find(',', at), text.size());
      const std::string item = text.substr(at, comma - at);
      if (item.empty() || item.size() > 4 ||
          item.find_first_not_of("0123456789") != std::string::npos) {
        return false;
      }
      chosen.push_back(std::stoi(item));
      at = comma + 1;
    }
    std::sort(chosen.begin(), chosen.end());
    if (static_cast<int>(chosen.size()) != top_k_ ||
        std::adjacent_find(chosen.begin(), chosen.end()) != chosen.end() ||
        chosen.back() >= static_cast<int>(experts_.size())) {
      return false;
    }
    forced_ = chosen;
    return true;
  }

 private:
  std::vector<int> forced_;  // --force-choices

  // chosen_ = the top_k_ highest scores' indices (ties to the lower index), in increasing order.
  void Choose(const std::vector<float>& scores) {
    std::vector<int> order(scores.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return scores[a] > scores[b]; });
    chosen_.assign(order.begin(), order.begin() + top_k_);
    std::sort(chosen_.begin(), chosen_.end());
  }

  int top_k_;
  std::unique_ptr<Network> stem_;
  std::unique_ptr<Router> router_;
  std::vector<std::unique_ptr<Network>> experts_;
  std::unique_ptr<Network> head_;
  std::vector<int> chosen_;    // by the last Forward
  float* combined_ = nullptr;  // z, the head's input, from Forward to Backward
};

}  // namespace

std::unique_ptr<Model> BuildMoe(int image, int classes, int experts, int top_k) {
  if (top_k < 1 || top_k > experts) {
    Fail(kExitUsage, "--top-k %d is not in 1..--experts (%d)", top_k, experts);
  }
  return std::make_unique<Moe>(image, classes, experts, top_k);
}

}  // namespace cnn_train
