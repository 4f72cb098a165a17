#include "network.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "checks.h"
#include "rng.h"

namespace cnn_train {
namespace {

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

Network::Network(Dims input) { nodes_.push_back({"input", nullptr, {}, input, kInput, false}); }

Network::~Network() {
  if (memory_ == nullptr) return;
  for (float* tensor : owned_) memory_->Free(tensor);
}

int Network::Add(std::string name, std::unique_ptr<Layer> layer, std::vector<int> inputs) {
  for (int in : inputs) {
    if (nodes_[in].overwritten) {
      Fail(kExitApiError, "internal error: %s reads %s after an in-place layer overwrote it",
           name.c_str(), nodes_[in].name.c_str());
    }
  }
  const Dims out = layer->out();
  const int id = static_cast<int>(nodes_.size());
  int owner = id;
  if (const int k = layer->in_place(); k >= 0) {
    nodes_[inputs[k]].overwritten = true;
    owner = nodes_[inputs[k]].owner;
  }
  nodes_.push_back({std::move(name), std::move(layer), std::move(inputs), out, owner, false});
  return id;
}

void Network::Release(Context& ctx, int i) {
  if (y_[i] == nullptr) return;
  const int owner = nodes_[i].owner;
  if (--holders_[owner] == 0 && !(owner == kInput && input_borrowed_)) ctx.memory->Free(y_[i]);
  y_[i] = nullptr;
}

void Network::InitParams(Context& ctx, uint64_t seed) {
  memory_ = ctx.memory;
  std::vector<ParamSpec*> params;
  std::vector<std::string> names;  // "<layer>.<param>", for out-of-memory messages
  for (Node& node : nodes_) {
    if (!node.layer) continue;
    for (ParamSpec& p : node.layer->params()) {
      params.push_back(&p);
      names.push_back(node.name + "." + p.name);
    }
  }
  // Model construction: every parameter tensor, in layer order, initialised on the host from
  // one random stream (so the draws do not depend on how the tensors are allocated).
  SplitMix64 rng(Mix64(seed ^ 0x5eed0000c0ffeeULL));
  std::vector<float> host;
  for (size_t i = 0; i < params.size(); ++i) {
    ParamSpec& p = *params[i];
    p.value = memory_->AllocateFloats(p.count, names[i]);
    owned_.push_back(p.value);
    host.resize(p.count);
    FillInit(p, rng, host.data());
    CUDA_CHECK(cudaMemcpy(p.value, host.data(), Bytes(p.count), cudaMemcpyHostToDevice));
  }
  // Then the gradients (every backward overwrites them; zeroed so that nothing ever reads
  // uninitialised memory), then the optimizer's momentum buffers, zero as SGD starts.
  for (size_t i = 0; i < params.size(); ++i) {
    ParamSpec* p = params[i];
    if (!p->trainable) continue;
    p->grad = memory_->AllocateFloats(p->count, names[i] + " grad");
    owned_.push_back(p->grad);
    CUDA_CHECK(cudaMemset(p->grad, 0, Bytes(p->count)));
    trainable_count_ += p->count;
  }
  for (size_t i = 0; i < params.size(); ++i) {
    ParamSpec* p = params[i];
    if (!p->trainable) continue;
    float* momentum = memory_->AllocateFloats(p->count, names[i] + " momentum");
    owned_.push_back(momentum);
    CUDA_CHECK(cudaMemset(momentum, 0, Bytes(p->count)));
    trainables_.push_back({p, momentum});
  }
  y_.assign(nodes_.size(), nullptr);
  dy_.assign(nodes_.size(), nullptr);
  holders_.assign(nodes_.size(), 0);
}

void Network::ShareParams(Context& ctx, Model& owner_model) {
  auto* owner = dynamic_cast<Network*>(&owner_model);
  if (owner == nullptr) Fail(kExitApiError, "internal error: a network shares another model's");
  memory_ = ctx.memory;
  const auto all_params = [](std::vector<Node>& nodes) {
    std::vector<ParamSpec*> params;
    for (Node& node : nodes) {
      if (!node.layer) continue;
      for (ParamSpec& p : node.layer->params()) params.push_back(&p);
    }
    return params;
  };
  const std::vector<ParamSpec*> mine = all_params(nodes_);
  const std::vector<ParamSpec*> theirs = all_params(owner->nodes_);
  if (mine.size() != theirs.size()) {
    Fail(kExitApiError, "internal error: %zu parameters, the shared network has %zu", mine.size(),
         theirs.size());
  }
  for (size_t i = 0; i < mine.size(); ++i) {
    if (mine[i]->count != theirs[i]->count || mine[i]->trainable != theirs[i]->trainable) {
      Fail(kExitApiError, "internal error: parameter %zu (%s) differs from the shared network's", i,
           mine[i]->name.c_str());
    }
    mine[i]->value = theirs[i]->value;
    mine[i]->grad = theirs[i]->grad;
  }
  // The owner's trainables are its parameters in the same order, with their momentum.
  size_t next = 0;
  for (ParamSpec* p : mine) {
    if (!p->trainable) continue;
    trainables_.push_back({p, owner->trainables_[next++].momentum});
  }
  trainable_count_ = owner->trainable_count_;
  y_.assign(nodes_.size(), nullptr);
  dy_.assign(nodes_.size(), nullptr);
  holders_.assign(nodes_.size(), 0);
}

const float* Network::Forward(Context& ctx, int batch, const float* host_input) {
  const int64_t input_count = batch * nodes_[kInput].out.count();
  y_[kInput] = ctx.memory->AllocateFloats(input_count, "input");
  input_borrowed_ = false;
  CUDA_CHECK(cudaMemcpy(y_[kInput], host_input, Bytes(input_count), cudaMemcpyHostToDevice));
  ForwardNodes(ctx, batch);
  return y_[output()];
}

const float* Network::ForwardFrom(Context& ctx, int batch, const float* input) {
  // The caller's tensor is only read: no layer may be in place on it.
  if (nodes_[kInput].overwritten) {
    Fail(kExitApiError, "internal error: a layer overwrites a borrowed input");
  }
  y_[kInput] = const_cast<float*>(input);
  input_borrowed_ = true;
  ForwardNodes(ctx, batch);
  return y_[output()];
}

void Network::ForwardNodes(Context& ctx, int batch) {
  // Which outputs backward reads (a consumer reads its inputs, or the producer its output), and
  // how many consumers each output has yet to serve in this forward pass.
  std::vector<bool> saved(nodes_.size(), false);
  std::vector<int> pending(nodes_.size(), 0);
  saved[output()] = true;  // the trainer reads the logits
  for (size_t i = 1; i < nodes_.size(); ++i) {
    if (nodes_[i].layer->backward_reads_output()) saved[i] = true;
    for (int in : nodes_[i].inputs) {
      ++pending[in];
      if (nodes_[i].layer->backward_reads_inputs()) saved[in] = true;
    }
  }
  holders_[kInput] = 1;
  for (size_t i = 1; i < nodes_.size(); ++i) {
    Node& node = nodes_[i];
    ForwardArgs args;
    args.batch = batch;
    for (int in : node.inputs) args.x.push_back(y_[in]);
    if (node.owner == static_cast<int>(i)) {
      y_[i] = ctx.memory->AllocateFloats(batch * node.out.count(), node.name + " output");
    } else {
      y_[i] = y_[node.owner];  // in place: the overwritten input's tensor
    }
    ++holders_[node.owner];
    args.y = y_[i];
    node.layer->Forward(ctx, args);
    // An output no backward reads is let go once its last consumer ran (a batch-norm output
    // that only a ReLU reads), as a framework's autograd drops what it did not save.
    for (int in : node.inputs) {
      if (--pending[in] == 0 && !saved[in]) Release(ctx, in);
    }
  }
}

float* Network::AllocateOutputGradient(Context& ctx, int batch) {
  const Node& node = nodes_[output()];
  dy_[output()] =
      ctx.memory->AllocateFloats(batch * node.out.count(), node.name + " output gradient");
  return dy_[output()];
}

void Network::SetOutputGradient(float* dy) {
  if (dy_[output()] != nullptr) {
    Fail(kExitApiError, "internal error: %s has an output gradient already",
         nodes_[output()].name.c_str());
  }
  dy_[output()] = dy;
}

void Network::Backward(Context& ctx, int batch, float* input_grad, float input_beta) {
  bool input_written = false;  // a consumer of the input wrote input_grad in this backward
  for (int i = output(); i >= 1; --i) {
    Node& node = nodes_[i];
    BackwardArgs args;
    args.batch = batch;
    args.y = y_[i];
    args.dy = dy_[i];
    const int in_place = node.layer->in_place();
    bool handed_on = false;  // dy_[i] became the overwritten input's gradient
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const int in = node.inputs[k];
      args.x.push_back(y_[in]);
      if (static_cast<int>(k) == in_place) {
        // The in-place layer is its input's last reader in forward, so the first here: the
        // input's gradient is this output gradient, the same tensor.
        if (dy_[in] != nullptr || in == kInput) {
          Fail(kExitApiError, "internal error: %s has a gradient before %s",
               nodes_[in].name.c_str(), node.name.c_str());
        }
        dy_[in] = dy_[i];
        handed_on = true;
        args.dx.push_back(nullptr);
        args.dx_beta.push_back(0.0f);
      } else if (in == kInput) {  // the caller's buffer, or nowhere (the images)
        args.dx.push_back(input_grad);
        args.dx_beta.push_back(input_written ? 1.0f : input_beta);
        input_written = input_grad != nullptr;
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
    Release(ctx, i);
    if (!handed_on) ctx.memory->Free(dy_[i]);
    dy_[i] = nullptr;
  }
  Release(ctx, kInput);
}

void Network::SgdStep(Context& ctx, float lr, float momentum) {
  const float one = 1.0f;
  const float minus_lr = -lr;
  for (const Trainable& t : trainables_) {
    // Every parameter tensor is far below 2^31 floats.
    const int n = static_cast<int>(t.param->count);
    CUBLAS_CHECK(cublasSscal(ctx.cublas, n, &momentum, t.momentum, 1));
    CUBLAS_CHECK(cublasSaxpy(ctx.cublas, n, &one, t.param->grad, 1, t.momentum, 1));
    CUBLAS_CHECK(cublasSaxpy(ctx.cublas, n, &minus_lr, t.momentum, 1, t.param->value, 1));
  }
}

uint64_t Network::ParamsChecksum(uint64_t hash) const {
  std::vector<float> host;
  for (const Trainable& t : trainables_) {
    const ParamSpec& p = *t.param;
    host.resize(p.count);
    CUDA_CHECK(cudaMemcpy(host.data(), p.value, Bytes(p.count), cudaMemcpyDeviceToHost));
    const auto* bytes = reinterpret_cast<const unsigned char*>(host.data());
    for (size_t i = 0; i < Bytes(p.count); ++i) {
      hash ^= bytes[i];
      hash *= 0x100000001b3ULL;  // FNV-1a 64 prime
    }
  }
  return hash;
}

std::vector<ParamSpec*> Network::trainable_params() const {
  std::vector<ParamSpec*> params;
  for (const Trainable& t : trainables_) params.push_back(t.param);
  return params;
}

}  // namespace cnn_train
