// skipnet: a ResNet whose residual blocks run or are skipped in each iteration by gates
// computed on the device from the block's input and read back to the host, as SkipNet (Wang et
// al. 2018) and BlockDrop (Wu et al. 2018) do; a skipped block is the identity, and backward
// goes through the blocks that ran only. For 32x32 images:
//   stem      conv 3x3 (8 channels), BN, ReLU
//   layer1.0 .. layer1.2   basic blocks of 8 channels, each gated
//   layer2.0               a basic block of 16 channels, stride 2, projection shortcut; always
//                          runs (its output has another shape, so it cannot be skipped)
//   layer2.1, layer2.2     basic blocks of 16 channels, each gated
//   head      global average pool, classifier
// Gate i opens when its centred score (router.h: the batch mean of a fixed random projection of
// the block input's global average pool, minus that score's running mean) is above 0: one
// decision per batch, not per sample, so that a block's maps are allocated or not as a whole
// and pooch sees ops appear and disappear. The gates are not trained (router.h says why).
// Each part is its own Network; a block's input is the previous part's output, borrowed.
// The optimizer steps only the parts that ran: a skipped block got no gradient (as PyTorch's
// SGD skips a parameter whose .grad is None), so its weights, gradients and momentum are left
// as they were.
#include <memory>
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

struct BlockSpec {
  const char* name;
  int width;
  int stride;
  bool gated;
};

constexpr BlockSpec kBlocks[] = {
    {"layer1.0", 8, 1, true},   {"layer1.1", 8, 1, true},  {"layer1.2", 8, 1, true},
    {"layer2.0", 16, 2, false}, {"layer2.1", 16, 1, true}, {"layer2.2", 16, 1, true},
};

// Each part's parameters come from their own stream, so that adding a part changes no other.
uint64_t PartSeed(uint64_t seed, int part) {
  return Mix64(seed ^ (0x5c1b000000000000ULL + static_cast<uint64_t>(part)));
}

class SkipNet final : public Model {
 public:
  SkipNet(int image, int classes) {
    stem_ = std::make_unique<Network>(Dims{3, image, image});
    Builder stem(*stem_);
    stem.ConvBnRelu("", "1", Network::kInput, 8, 3, 1, 1);
    Dims dims = stem_->dims(stem_->output());
    for (const BlockSpec& spec : kBlocks) {
      Block block;
      block.name = spec.name;
      block.net = std::make_unique<Network>(dims);
      Builder b(*block.net);
      BasicBlock(b, block.name + ".", Network::kInput, spec.width, spec.stride);
      if (spec.gated) block.gate = std::make_unique<Router>(block.name + ".gate", dims, 1);
      dims = block.net->dims(block.net->output());
      blocks_.push_back(std::move(block));
    }
    head_ = std::make_unique<Network>(dims);
    Builder head(*head_);
    head.Fc("fc", head.GlobalAvgPool("avgpool", Network::kInput), classes);
  }

  void InitParams(Context& ctx, uint64_t seed) override {
    int part = 0;
    stem_->InitParams(ctx, PartSeed(seed, part++));
    for (Block& block : blocks_) {
      block.net->InitParams(ctx, PartSeed(seed, part++));
      if (block.gate) block.gate->Init(ctx, PartSeed(seed, part++));
    }
    head_->InitParams(ctx, PartSeed(seed, part++));
  }

  void ShareParams(Context& ctx, Model& owner_model) override {
    auto& owner = dynamic_cast<SkipNet&>(owner_model);
    stem_->ShareParams(ctx, *owner.stem_);
    for (size_t i = 0; i < blocks_.size(); ++i) {
      blocks_[i].net->ShareParams(ctx, *owner.blocks_[i].net);
      if (blocks_[i].gate) blocks_[i].gate->Share(*owner.blocks_[i].gate);
    }
    head_->ShareParams(ctx, *owner.head_);
  }

  const float* Forward(Context& ctx, int batch, const float* host_input) override {
    const float* x = stem_->Forward(ctx, batch, host_input);
    size_t gate_index = 0;
    for (Block& block : blocks_) {
      block.ran = !block.gate || block.gate->Route(ctx, batch, x)[0] > 0.0f;
      if (block.gate && !forced_.empty()) block.ran = forced_[gate_index++] == '1';
      if (block.ran) x = block.net->ForwardFrom(ctx, batch, x);
    }
    return head_->ForwardFrom(ctx, batch, x);
  }

  float* AllocateOutputGradient(Context& ctx, int batch) override {
    return head_->AllocateOutputGradient(ctx, batch);
  }

  void Backward(Context& ctx, int batch) override {
    // Each part writes the gradient of its input into a new buffer, which becomes the output
    // gradient of the part before it that ran (a skipped block passes it on unchanged).
    float* dx = InputGradient(ctx, *head_, batch, "avgpool");
    head_->Backward(ctx, batch, dx, 0.0f);
    for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) {
      if (!it->ran) continue;
      it->net->SetOutputGradient(dx);
      dx = InputGradient(ctx, *it->net, batch, it->name);
      it->net->Backward(ctx, batch, dx, 0.0f);
    }
    stem_->SetOutputGradient(dx);
    stem_->Backward(ctx, batch);
  }

  void SgdStep(Context& ctx, float lr, float momentum) override {
    stem_->SgdStep(ctx, lr, momentum);
    for (Block& block : blocks_) {
      if (block.ran) block.net->SgdStep(ctx, lr, momentum);
    }
    head_->SgdStep(ctx, lr, momentum);
  }

  uint64_t ParamsChecksum(uint64_t hash) const override {
    hash = stem_->ParamsChecksum(hash);
    for (const Block& block : blocks_) hash = block.net->ParamsChecksum(hash);
    return head_->ParamsChecksum(hash);
  }

  // " gates 10110": per gated block in order, 1 if it ran.
  std::string Choices() const override {
    std::string gates = " gates ";
    for (const Block& block : blocks_) {
      if (block.gate) gates += block.ran ? '1' : '0';
    }
    return gates;
  }

  bool ForceChoices(const std::string& text) override {
    constexpr std::string_view kPrefix = "gates ";
    if (text.rfind(kPrefix, 0) != 0) return false;
    const std::string pattern = text.substr(kPrefix.size());
    size_t gates = 0;
    for (const Block& block : blocks_) gates += block.gate ? 1 : 0;
    if (pattern.size() != gates || pattern.find_first_not_of("01") != std::string::npos) {
      return false;
    }
    forced_ = pattern;
    return true;
  }

 private:
  std::string forced_;  // --force-choices: per gated block, '1' to run it

  struct Block {
    std::string name;  // "layer1.0"
    std::unique_ptr<Network> net;
    std::unique_ptr<Router> gate;  // null: the block always runs
    bool ran = false;              // in the last Forward
  };

  // A buffer for the gradient of `part`'s input, named after the part.
  static float* InputGradient(Context& ctx, const Network& part, int batch,
                              const std::string& name) {
    return ctx.memory->AllocateFloats(batch * part.dims(Network::kInput).count(),
                                      name + " input gradient");
  }

  std::unique_ptr<Network> stem_;
  std::vector<Block> blocks_;
  std::unique_ptr<Network> head_;
};

}  // namespace

std::unique_ptr<Model> BuildSkipNet(int image, int classes) {
  return std::make_unique<SkipNet>(image, classes);
}

}  // namespace cnn_train
