// Test helpers for the simulator and planner tests: a seeded generator of small random training
// iterations, and hand-built profiles. Header-only so that it stays out of pooch_core.
//
// A random iteration is what a define-by-run framework would record for a chain of layers with
// some skip connections (ResNet-like): forward ops f_0..f_{L-1}, each reading the previous
// layer's output (and sometimes an earlier one), a loss, the mirrored backward ops (each reads
// what its layer's backward needs and accumulates into the gradients of its inputs) and one
// optimizer update per layer. Sizes, durations, kinds and replayability are random.
#ifndef POOCH_CORE_MODEL_PROFILE_TESTUTIL_H_
#define POOCH_CORE_MODEL_PROFILE_TESTUTIL_H_

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/model/model.h"

namespace pooch::testing {

struct RandomProfileOptions {
  int min_layers = 3;
  int max_layers = 10;
  double skip_probability = 0.25;
  double replayable_probability = 0.9;
  int64_t min_bytes = 64 << 10;
  int64_t max_bytes = 4 << 20;
  double min_us = 5;
  double max_us = 200;
};

// Builds the iteration tensor by tensor; lifetimes are derived from uses at the end.
class ProfileBuilder {
 public:
  explicit ProfileBuilder(std::string name) { p_.name = std::move(name); }

  TensorId Tensor(std::string name, int64_t bytes, bool persistent = false) {
    pooch::Tensor t;
    t.id = static_cast<TensorId>(p_.tensors.size());
    t.name = std::move(name);
    t.bytes = bytes;
    p_.tensors.push_back(t);
    persistent_.push_back(persistent);
    return t.id;
  }
  OpIndex Op(std::string name, OpKind kind, Phase phase, double us, std::vector<TensorId> reads,
             std::vector<TensorId> writes, int64_t workspace = 0, bool replayable = true) {
    pooch::Op op;
    op.name = std::move(name);
    op.kind = kind;
    op.phase = phase;
    op.duration_us = us;
    op.reads = std::move(reads);
    op.writes = std::move(writes);
    op.workspace_bytes = workspace;
    op.replayable = replayable;
    p_.ops.push_back(std::move(op));
    return static_cast<OpIndex>(p_.ops.size() - 1);
  }
  pooch::Tensor& tensor(TensorId id) { return p_.tensors[id]; }
  pooch::Op& op(OpIndex i) { return p_.ops[i]; }

  // Lifetimes: persistent tensors exist throughout; others are allocated before their first use
  // and freed after their last.
  Profile Finish() {
    const int32_t nt = static_cast<int32_t>(p_.tensors.size());
    std::vector<OpIndex> first(nt, -1), last(nt, -1);
    for (OpIndex i = 0; i < static_cast<OpIndex>(p_.ops.size()); ++i) {
      for (int pass = 0; pass < 2; ++pass) {
        for (TensorId t : pass == 0 ? p_.ops[i].reads : p_.ops[i].writes) {
          if (first[t] < 0) first[t] = i;
          last[t] = i;
        }
      }
    }
    for (TensorId t = 0; t < nt; ++t) {
      pooch::Tensor& x = p_.tensors[t];
      if (persistent_[t]) {
        x.alloc_before = kBeforeIteration;
        x.free_after = kAfterIteration;
      } else if (!input_.empty() && std::find(input_.begin(), input_.end(), t) != input_.end()) {
        x.alloc_before = kBeforeIteration;
        x.free_after = last[t];
      } else {
        x.alloc_before = first[t];
        x.free_after = last[t];
      }
    }
    return p_;
  }
  void MarkInput(TensorId t) { input_.push_back(t); }

 private:
  Profile p_;
  std::vector<bool> persistent_;
  std::vector<TensorId> input_;
};

inline Profile RandomProfile(uint64_t seed, const RandomProfileOptions& o = {}) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  auto chance = [&](double p) { return uniform(0, 1) < p; };
  auto bytes = [&] {
    return std::uniform_int_distribution<int64_t>(o.min_bytes, o.max_bytes)(rng);
  };
  const int layers = std::uniform_int_distribution<int>(o.min_layers, o.max_layers)(rng);
  ProfileBuilder b(absl::StrCat("random-", seed));
  const OpKind kinds[] = {OpKind::kConv, OpKind::kBatchNorm, OpKind::kActivation, OpKind::kPool,
                          OpKind::kConv};
  struct Layer {
    std::vector<TensorId> inputs;
    TensorId out;
    TensorId weight;
    TensorId weight_grad;
    OpKind kind;
    double us;
    bool replayable;
  };
  std::vector<Layer> net;
  std::vector<TensorId> outputs;
  const TensorId input = b.Tensor("input", bytes());
  b.MarkInput(input);
  outputs.push_back(input);
  for (int i = 0; i < layers; ++i) {
    Layer l;
    l.inputs.push_back(outputs.back());
    if (outputs.size() > 2 && chance(o.skip_probability)) {
      l.inputs.push_back(
          outputs[std::uniform_int_distribution<size_t>(0, outputs.size() - 3)(rng)]);
    }
    l.kind = l.inputs.size() > 1 ? OpKind::kAdd : kinds[rng() % 5];
    l.out = b.Tensor(absl::StrCat("l", i, ".out"), bytes());
    l.weight = b.Tensor(absl::StrCat("l", i, ".w"), 4096, /*persistent=*/true);
    l.weight_grad = b.Tensor(absl::StrCat("l", i, ".dw"), 4096, /*persistent=*/true);
    l.us = uniform(o.min_us, o.max_us);
    l.replayable = chance(o.replayable_probability);
    std::vector<TensorId> reads = l.inputs;
    reads.push_back(l.weight);
    const int64_t workspace = l.kind == OpKind::kConv && chance(0.5) ? bytes() / 4 : 0;
    b.Op(absl::StrCat("l", i), l.kind, Phase::kForward, l.us, reads, {l.out}, workspace,
         l.replayable);
    outputs.push_back(l.out);
    net.push_back(l);
  }
  const TensorId loss = b.Tensor("loss", 4);
  b.Op("loss", OpKind::kLoss, Phase::kForward, uniform(o.min_us, o.max_us) / 4, {outputs.back()},
       {loss});
  // Gradients of every forward value.
  std::vector<TensorId> grad(b.tensor(outputs.back()).id + 1, -1);
  for (TensorId t : outputs) {
    grad[t] = b.Tensor(absl::StrCat(b.tensor(t).name, ".grad"), b.tensor(t).bytes);
  }
  b.Op("loss.backward", OpKind::kLoss, Phase::kBackward, uniform(o.min_us, o.max_us) / 4,
       {outputs.back(), loss}, {grad[outputs.back()]});
  for (int i = layers - 1; i >= 0; --i) {
    const Layer& l = net[i];
    std::vector<TensorId> reads = {grad[l.out], l.weight};
    // What the backward needs: inputs for conv/bn/pool/add, the output for activations.
    if (l.kind == OpKind::kActivation) {
      reads.push_back(l.out);
    } else {
      reads.insert(reads.end(), l.inputs.begin(), l.inputs.end());
    }
    std::vector<TensorId> writes = {l.weight_grad};
    for (TensorId in : l.inputs) writes.push_back(grad[in]);
    const int64_t workspace = l.kind == OpKind::kConv && chance(0.5) ? bytes() / 4 : 0;
    b.Op(absl::StrCat("l", i, ".backward"), l.kind, Phase::kBackward, l.us * uniform(1.0, 2.2),
         reads, writes, workspace);
  }
  for (int i = 0; i < layers; ++i) {
    b.Op(absl::StrCat("l", i, ".update"), OpKind::kOptimizer, Phase::kOther, 1.0,
         {net[i].weight_grad, net[i].weight}, {net[i].weight});
  }
  return b.Finish();
}

// A machine whose copy speed makes swapping comparable to the random profiles' compute.
inline MachineModel TestMachine(int64_t memory_bytes, bool duplex = true) {
  MachineModel m;
  m.name = "test";
  m.memory_bytes = memory_bytes;
  m.h2d_gbps = 16;  // 64 KiB in ~5 us ... 4 MiB in ~263 us
  m.d2h_gbps = 16;
  m.h2d_latency_us = 1;
  m.d2h_latency_us = 1;
  m.duplex = duplex;
  return m;
}

}  // namespace pooch::testing

#endif  // POOCH_CORE_MODEL_PROFILE_TESTUTIL_H_
