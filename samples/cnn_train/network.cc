#include "network.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "checks.h"
#include "rng.h"

namespace cnn_train {
namespace {

// Each parameter starts on a 256-byte boundary in its arena, as cudaMalloc would give it.
constexpr int64_t kAlignFloats = 64;

int64_t AlignUp(int64_t n) { return (n + kAlignFloats - 1) / kAlignFloats * kAlignFloats; }

size_t Bytes(int64_t floats) { return static_cast<size_t>(floats) * sizeof(float); }

void FillInit(const ParamSpec& p, SplitMix64& rng, float* out) {
  switch (p.init) {
    case Init::kHeUniform: {
      const float limit = std::sqrt(6.0f / static_cast<float>(p.fan_in));
      for (int64_t i = 0; i < p.count; ++i) out[i] = rng.NextSymmetric(limit);
      break;
    }
    case Init::kFanInUniform: {
      const float limit = 1.0f / std::sqrt(static_cast<float>(p.fan_in));
      for (int64_t i = 0; i < p.count; ++i) out[i] = rng.NextSymmetric(limit);
      break;
    }
    case Init::kZero:
      std::fill(out, out + p.count, 0.0f);
      break;
    case Init::kOne:
      std::fill(out, out + p.count, 1.0f);
      break;
  }
}

}  // namespace

Network::Network(Dims input) { nodes_.push_back({"input", nullptr, {}, input}); }

Network::~Network() {
  if (memory_ == nullptr) return;
  memory_->Free(values_);
  memory_->Free(grads_);
  memory_->Free(momentum_);
  memory_->Free(state_);
}

int Network::Add(std::string name, std::unique_ptr<Layer> layer, std::vector<int> inputs) {
  const Dims out = layer->out();
  nodes_.push_back({std::move(name), std::move(layer), std::move(inputs), out});
  return output();
}

void Network::InitParams(Context& ctx, uint64_t seed) {
  memory_ = ctx.memory;
  for (Node& node : nodes_) {
    if (!node.layer) continue;
    for (ParamSpec& p : node.layer->params()) {
      (p.trainable ? trainable_count_ : state_count_) += AlignUp(p.count);
    }
  }
  values_ = memory_->AllocateFloats(trainable_count_, "parameters");
  grads_ = memory_->AllocateFloats(trainable_count_, "parameter gradients");
  momentum_ = memory_->AllocateFloats(trainable_count_, "momentum");
  // Padding never changes: zero gradients and momentum leave zero parameters zero.
  CUDA_CHECK(cudaMemset(grads_, 0, Bytes(trainable_count_)));
  CUDA_CHECK(cudaMemset(momentum_, 0, Bytes(trainable_count_)));
  if (state_count_ > 0) state_ = memory_->AllocateFloats(state_count_, "batch-norm statistics");

  std::vector<float> host_values(trainable_count_, 0.0f);
  std::vector<float> host_state(state_count_, 0.0f);
  SplitMix64 rng(Mix64(seed ^ 0x5eed0000c0ffeeULL));
  int64_t value_offset = 0;
  int64_t state_offset = 0;
  for (Node& node : nodes_) {
    if (!node.layer) continue;
    for (ParamSpec& p : node.layer->params()) {
      if (p.trainable) {
        FillInit(p, rng, host_values.data() + value_offset);
        p.value = values_ + value_offset;
        p.grad = grads_ + value_offset;
        value_offset += AlignUp(p.count);
      } else {
        FillInit(p, rng, host_state.data() + state_offset);
        p.value = state_ + state_offset;
        state_offset += AlignUp(p.count);
      }
    }
  }
  CUDA_CHECK(
      cudaMemcpy(values_, host_values.data(), Bytes(trainable_count_), cudaMemcpyHostToDevice));
  if (state_count_ > 0) {
    CUDA_CHECK(cudaMemcpy(state_, host_state.data(), Bytes(state_count_), cudaMemcpyHostToDevice));
  }
  y_.assign(nodes_.size(), nullptr);
  dy_.assign(nodes_.size(), nullptr);
}

const float* Network::Forward(Context& ctx, int batch, const float* host_input) {
  const int64_t input_count = batch * nodes_[kInput].out.count();
  y_[kInput] = ctx.memory->AllocateFloats(input_count, "input");
  CUDA_CHECK(cudaMemcpy(y_[kInput], host_input, Bytes(input_count), cudaMemcpyHostToDevice));
  for (size_t i = 1; i < nodes_.size(); ++i) {
    Node& node = nodes_[i];
    ForwardArgs args;
    args.batch = batch;
    for (int in : node.inputs) args.x.push_back(y_[in]);
    y_[i] = ctx.memory->AllocateFloats(batch * node.out.count(), node.name + " output");
    args.y = y_[i];
    node.layer->Forward(ctx, args);
  }
  return y_[output()];
}

float* Network::AllocateOutputGradient(Context& ctx, int batch) {
  const Node& node = nodes_[output()];
  dy_[output()] =
      ctx.memory->AllocateFloats(batch * node.out.count(), node.name + " output gradient");
  return dy_[output()];
}

void Network::Backward(Context& ctx, int batch) {
  for (int i = output(); i >= 1; --i) {
    Node& node = nodes_[i];
    BackwardArgs args;
    args.batch = batch;
    args.y = y_[i];
    args.dy = dy_[i];
    for (int in : node.inputs) {
      args.x.push_back(y_[in]);
      if (in == kInput) {  // nobody wants the gradient of the images
        args.dx.push_back(nullptr);
        args.dx_beta.push_back(0.0f);
      } else if (dy_[in] == nullptr) {  // first consumer (in backward order): overwrite
        dy_[in] = ctx.memory->AllocateFloats(batch * nodes_[in].out.count(),
                                             nodes_[in].name + " output gradient");
        args.dx.push_back(dy_[in]);
        args.dx_beta.push_back(0.0f);
      } else {  // a residual branch point: accumulate
        args.dx.push_back(dy_[in]);
        args.dx_beta.push_back(1.0f);
      }
    }
    node.layer->Backward(ctx, args);
    ctx.memory->Free(y_[i]);
    ctx.memory->Free(dy_[i]);
    y_[i] = nullptr;
    dy_[i] = nullptr;
  }
  ctx.memory->Free(y_[kInput]);
  y_[kInput] = nullptr;
}

void Network::SgdStep(Context& ctx, float lr, float momentum) {
  // The arenas are far below 2^31 floats for every supported model.
  const int n = static_cast<int>(trainable_count_);
  const float one = 1.0f;
  const float minus_lr = -lr;
  CUBLAS_CHECK(cublasSscal(ctx.cublas, n, &momentum, momentum_, 1));
  CUBLAS_CHECK(cublasSaxpy(ctx.cublas, n, &one, grads_, 1, momentum_, 1));
  CUBLAS_CHECK(cublasSaxpy(ctx.cublas, n, &minus_lr, momentum_, 1, values_, 1));
}

uint64_t Network::ParamsChecksum() const {
  std::vector<float> host(trainable_count_);
  CUDA_CHECK(cudaMemcpy(host.data(), values_, Bytes(trainable_count_), cudaMemcpyDeviceToHost));
  uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a 64 offset basis
  for (const Node& node : nodes_) {
    if (!node.layer) continue;
    for (const ParamSpec& p : node.layer->params()) {
      if (!p.trainable) continue;
      const auto* bytes = reinterpret_cast<const unsigned char*>(host.data() + (p.value - values_));
      for (size_t i = 0; i < Bytes(p.count); ++i) {
        hash ^= bytes[i];
        hash *= 0x100000001b3ULL;  // FNV-1a 64 prime
      }
    }
  }
  return hash;
}

}  // namespace cnn_train
