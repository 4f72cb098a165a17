#include "core/zoo/zoo_builder.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace pooch {
namespace {

constexpr int64_t kFloatBytes = 4;  // every zoo tensor is fp32, as in the paper's runs

// cuDNN workspace a convolution may use: Chainer's default limit
// (chainer.cuda.get_max_workspace_size(), 8 MiB), which the paper's Chainer 3 ran with.
constexpr int64_t kConvWorkspaceBytes = int64_t{8} << 20;

int64_t Volume(const Dims3& d) { return d.d * d.h * d.w; }

}  // namespace

// Note [Roofline]
// ~~~~~~~~~~~~~~~
// An op takes max(flops / compute, bytes / memory bandwidth) plus one launch latency, with the
// MachineModel's achievable (calibrated, machines.cc) rates. Convolutions and fully connected
// layers are compute bound at the paper's batch sizes; batch norm, ReLU, pooling, add and the
// optimizer are bandwidth bound, which is what makes them cheap to recompute relative to the
// bytes they produce (PoocH §3.3). Backward of a conv or fc costs twice the forward FLOPs (data
// gradient and weight gradient), once when its input needs no gradient (the first layer).
double ZooBuilder::Roofline(double flops, int64_t bytes) const {
  double compute_s = machine_.compute_tflops > 0 ? flops / (machine_.compute_tflops * 1e12) : 0.0;
  double memory_s =
      machine_.memory_gbps > 0 ? static_cast<double>(bytes) / (machine_.memory_gbps * 1e9) : 0.0;
  return std::max(compute_s, memory_s) * 1e6 + machine_.launch_us;
}

ZooBuilder::ZooBuilder(std::string name, const MachineModel& machine)
    : name_(std::move(name)), machine_(machine) {
  profile_.name = name_;
}

TensorId ZooBuilder::NewTensor(const std::string& name, int64_t bytes) {
  Tensor t;
  t.id = static_cast<TensorId>(profile_.tensors.size());
  t.name = name;
  t.bytes = bytes;
  profile_.tensors.push_back(std::move(t));
  persistent_.push_back(false);
  requires_grad_.push_back(true);
  return profile_.tensors.back().id;
}

ZooValue ZooBuilder::NewValue(const std::string& name, int64_t n, int64_t c, Dims3 spatial) {
  ZooValue v;
  v.n = n;
  v.c = c;
  v.spatial = spatial;
  v.tensor = NewTensor(name, v.elements() * kFloatBytes);
  return v;
}

int ZooBuilder::NewParam(const std::string& name, int64_t elements) {
  Param p;
  p.elements = elements;
  p.weight = NewTensor(name, elements * kFloatBytes);
  p.grad = NewTensor(name + ".grad", elements * kFloatBytes);
  p.momentum = NewTensor(name + ".momentum", elements * kFloatBytes);
  for (TensorId t : {p.weight, p.grad, p.momentum}) persistent_[t] = true;
  parameter_count_ += elements;
  params_.push_back(p);
  return static_cast<int>(params_.size()) - 1;
}

OpIndex ZooBuilder::AddOp(const std::string& name, OpKind kind, Phase phase, double flops,
                          int64_t bytes, std::vector<TensorId> reads,
                          std::vector<TensorId> writes) {
  Op op;
  op.name = name;
  op.kind = kind;
  op.phase = phase;
  op.duration_us = Roofline(flops, bytes);
  op.reads = std::move(reads);
  op.writes = std::move(writes);
  profile_.ops.push_back(std::move(op));
  return static_cast<OpIndex>(profile_.ops.size()) - 1;
}

Dims3 ZooBuilder::WindowOutput(const std::string& name, const Dims3& in, const Conv3& g) {
  auto one = [&](int64_t size, int64_t k, int64_t s, int64_t p) -> int64_t {
    if (k <= 0 || s <= 0 || p < 0 || size + 2 * p < k) {
      if (error_.empty()) {
        error_ = absl::StrCat(name_, ": layer ", name, ": window ", k, " stride ", s,
                              " does not fit input extent ", size, " (input too small?)");
      }
      return 1;
    }
    return (size + 2 * p - k) / s + 1;
  };
  return {one(in.d, g.kernel.d, g.stride.d, g.pad.d), one(in.h, g.kernel.h, g.stride.h, g.pad.h),
          one(in.w, g.kernel.w, g.stride.w, g.pad.w)};
}

ZooValue ZooBuilder::Input(int64_t n, int64_t c, Dims3 spatial) {
  ZooValue x = NewValue("data", n, c, spatial);
  requires_grad_[x.tensor] = false;
  labels_ = NewTensor("labels", n * kFloatBytes);
  // The host-to-device copy of the mini-batch (Chainer's converter, every iteration). It runs on
  // the compute stream, so it is timed by the link, not the roofline.
  int64_t bytes = profile_.tensors[x.tensor].bytes + profile_.tensors[labels_].bytes;
  OpIndex op = AddOp("data", OpKind::kCopy, Phase::kForward, 0, 0, {}, {x.tensor, labels_});
  profile_.ops[op].duration_us =
      (machine_.h2d_gbps > 0 ? static_cast<double>(bytes) / (machine_.h2d_gbps * 1e3) : 0.0) +
      machine_.h2d_latency_us;
  return x;
}

ZooValue ZooBuilder::Conv(const std::string& name, const ZooValue& x, int64_t out_channels,
                          const Conv3& g, int64_t groups, bool bias) {
  if (groups <= 0 || x.c % groups != 0 || out_channels % groups != 0) {
    if (error_.empty()) {
      error_ = absl::StrCat(name_, ": layer ", name, ": ", x.c, " -> ", out_channels,
                            " channels do not divide into ", groups, " groups");
    }
    groups = 1;
  }
  ZooValue y = NewValue(name + ".y", x.n, out_channels, WindowOutput(name, x.spatial, g));
  int64_t fan_in = (x.c / groups) * Volume(g.kernel);
  int param = NewParam(name + ".W", out_channels * fan_in + (bias ? out_channels : 0));
  double macs = static_cast<double>(y.elements()) * static_cast<double>(fan_in);
  forward_macs_ += macs;
  TensorId w = params_[param].weight;
  int64_t x_bytes = profile_.tensors[x.tensor].bytes;
  int64_t y_bytes = profile_.tensors[y.tensor].bytes;
  int64_t w_bytes = profile_.tensors[w].bytes;
  OpIndex op = AddOp(name, OpKind::kConv, Phase::kForward, 2 * macs, x_bytes + w_bytes + y_bytes,
                     {x.tensor, w}, {y.tensor});
  profile_.ops[op].workspace_bytes = kConvWorkspaceBytes;

  Layer l;
  l.name = name;
  l.kind = OpKind::kConv;
  l.inputs = {x};
  l.output = y;
  l.backward_reads = {x.tensor, w};
  l.params = {param};
  l.backward_flops = 2 * macs * (requires_grad_[x.tensor] ? 2 : 1);
  l.backward_extra_bytes = x_bytes + 2 * w_bytes;  // reads x and W, writes gW
  l.workspace_bytes = kConvWorkspaceBytes;
  layers_.push_back(std::move(l));
  return y;
}

ZooValue ZooBuilder::BatchNorm(const std::string& name, const ZooValue& x) {
  ZooValue y = NewValue(name + ".y", x.n, x.c, x.spatial);
  // Mean and inverse standard deviation per channel, kept by the layer for its backward: a few
  // KiB, offered to the planner like every tensor (Note [Idle intervals] in candidates.cc).
  TensorId saved = NewTensor(name + ".saved_stats", 2 * x.c * kFloatBytes);
  // Scale and shift. The running mean and variance (2C more floats, no gradient) are left out:
  // a few KiB, and modelling their update would make the op look non-replayable, while the
  // runtime replays BN with the running-statistics update suppressed (DESIGN.md, decision 5).
  int param = NewParam(name + ".gamma_beta", 2 * x.c);
  TensorId w = params_[param].weight;
  int64_t x_bytes = profile_.tensors[x.tensor].bytes;
  double elements = static_cast<double>(x.elements());
  // Two passes over x (statistics, then normalise) and one write of y.
  AddOp(name, OpKind::kBatchNorm, Phase::kForward, 8 * elements, 3 * x_bytes, {x.tensor, w},
        {y.tensor, saved});

  Layer l;
  l.name = name;
  l.kind = OpKind::kBatchNorm;
  l.inputs = {x};
  l.output = y;
  l.backward_reads = {x.tensor, w, saved};
  l.params = {param};
  l.backward_flops = 12 * elements;
  l.backward_extra_bytes = 2 * x_bytes;  // x once, gy a second time (reduction, then apply)
  layers_.push_back(std::move(l));
  return y;
}

ZooValue ZooBuilder::Relu(const std::string& name, const ZooValue& x) {
  ZooValue y = NewValue(name + ".y", x.n, x.c, x.spatial);
  int64_t bytes = profile_.tensors[x.tensor].bytes;
  AddOp(name, OpKind::kActivation, Phase::kForward, static_cast<double>(x.elements()), 2 * bytes,
        {x.tensor}, {y.tensor});
  Layer l;
  l.name = name;
  l.kind = OpKind::kActivation;
  l.inputs = {x};
  l.output = y;
  l.backward_reads = {y.tensor};  // ReLU backward needs its output only
  l.backward_flops = static_cast<double>(x.elements());
  l.backward_extra_bytes = bytes;
  layers_.push_back(std::move(l));
  return y;
}

ZooValue ZooBuilder::MaxPool(const std::string& name, const ZooValue& x, const Conv3& g) {
  ZooValue y = NewValue(name + ".y", x.n, x.c, WindowOutput(name, x.spatial, g));
  int64_t x_bytes = profile_.tensors[x.tensor].bytes;
  int64_t y_bytes = profile_.tensors[y.tensor].bytes;
  double flops = static_cast<double>(y.elements()) * static_cast<double>(Volume(g.kernel));
  AddOp(name, OpKind::kPool, Phase::kForward, flops, x_bytes + y_bytes, {x.tensor}, {y.tensor});
  Layer l;
  l.name = name;
  l.kind = OpKind::kPool;
  l.inputs = {x};
  l.output = y;
  l.backward_reads = {x.tensor, y.tensor};  // cuDNN max-pooling backward takes x, y and dy
  l.backward_flops = flops;
  l.backward_extra_bytes = x_bytes + y_bytes;
  layers_.push_back(std::move(l));
  return y;
}

ZooValue ZooBuilder::AvgPool(const std::string& name, const ZooValue& x, const Conv3& g) {
  ZooValue y = NewValue(name + ".y", x.n, x.c, WindowOutput(name, x.spatial, g));
  int64_t x_bytes = profile_.tensors[x.tensor].bytes;
  int64_t y_bytes = profile_.tensors[y.tensor].bytes;
  AddOp(name, OpKind::kPool, Phase::kForward, static_cast<double>(x.elements()), x_bytes + y_bytes,
        {x.tensor}, {y.tensor});
  Layer l;
  l.name = name;
  l.kind = OpKind::kPool;
  l.inputs = {x};
  l.output = y;
  // Average pooling's backward spreads dy evenly: it needs shapes, not data.
  l.backward_flops = static_cast<double>(x.elements());
  layers_.push_back(std::move(l));
  return y;
}

ZooValue ZooBuilder::Add(const std::string& name, const ZooValue& a, const ZooValue& b) {
  if (a.elements() != b.elements() && error_.empty()) {
    error_ = absl::StrCat(name_, ": layer ", name, ": adding values of different shapes");
  }
  ZooValue y = NewValue(name + ".y", a.n, a.c, a.spatial);
  int64_t bytes = profile_.tensors[y.tensor].bytes;
  AddOp(name, OpKind::kAdd, Phase::kForward, static_cast<double>(y.elements()), 3 * bytes,
        {a.tensor, b.tensor}, {y.tensor});
  Layer l;
  l.name = name;
  l.kind = OpKind::kAdd;
  l.inputs = {a, b};
  l.output = y;
  l.passthrough = true;  // d(a+b) hands dy to both inputs unchanged; no op, no copy
  layers_.push_back(std::move(l));
  return y;
}

ZooValue ZooBuilder::Linear(const std::string& name, const ZooValue& x, int64_t out_features) {
  int64_t in_features = x.c * Volume(x.spatial);
  ZooValue y = NewValue(name + ".y", x.n, out_features, Dims3{});
  int param = NewParam(name + ".W", out_features * in_features + out_features);
  double macs = static_cast<double>(x.n) * static_cast<double>(in_features) *
                static_cast<double>(out_features);
  forward_macs_ += macs;
  TensorId w = params_[param].weight;
  int64_t x_bytes = profile_.tensors[x.tensor].bytes;
  int64_t w_bytes = profile_.tensors[w].bytes;
  AddOp(name, OpKind::kFullyConnected, Phase::kForward, 2 * macs,
        x_bytes + w_bytes + profile_.tensors[y.tensor].bytes, {x.tensor, w}, {y.tensor});
  Layer l;
  l.name = name;
  l.kind = OpKind::kFullyConnected;
  l.inputs = {x};
  l.output = y;
  l.backward_reads = {x.tensor, w};
  l.params = {param};
  l.backward_flops = 2 * macs * (requires_grad_[x.tensor] ? 2 : 1);
  l.backward_extra_bytes = x_bytes + 2 * w_bytes;
  layers_.push_back(std::move(l));
  return y;
}

ZooValue ZooBuilder::Dropout(const std::string& name, const ZooValue& x) {
  ZooValue y = NewValue(name + ".y", x.n, x.c, x.spatial);
  // Chainer keeps the scaled mask as a float array the size of x.
  TensorId mask = NewTensor(name + ".mask", profile_.tensors[x.tensor].bytes);
  int64_t bytes = profile_.tensors[x.tensor].bytes;
  OpIndex op = AddOp(name, OpKind::kOther, Phase::kForward, 2 * static_cast<double>(x.elements()),
                     3 * bytes, {x.tensor}, {y.tensor, mask});
  profile_.ops[op].replayable = false;  // draws random numbers
  Layer l;
  l.name = name;
  l.kind = OpKind::kOther;
  l.inputs = {x};
  l.output = y;
  l.backward_reads = {mask};
  l.backward_flops = static_cast<double>(x.elements());
  l.backward_extra_bytes = bytes;
  layers_.push_back(std::move(l));
  return y;
}

void ZooBuilder::SoftmaxLoss(const std::string& name, const ZooValue& logits) {
  TensorId loss = NewTensor(name + ".loss", kFloatBytes);
  int64_t bytes = profile_.tensors[logits.tensor].bytes;
  double elements = static_cast<double>(logits.elements());
  AddOp(name, OpKind::kLoss, Phase::kForward, 5 * elements, bytes, {logits.tensor, labels_},
        {loss});
  Layer l;
  l.name = name;
  l.kind = OpKind::kLoss;
  l.inputs = {logits};
  l.output = ZooValue{loss, 1, 1, Dims3{}};
  l.backward_reads = {logits.tensor, labels_};
  l.backward_flops = 5 * elements;
  l.backward_extra_bytes = bytes;
  l.loss = true;
  layers_.push_back(std::move(l));
  has_loss_ = true;
}

// Note [Backward reads]
// ~~~~~~~~~~~~~~~~~~~~~
// What each layer's backward reads, as Chainer's FunctionNodes retain it and cuDNN needs it:
//   conv, fc   x and W (dx = dy * W, dW = x * dy)      batch norm  x, gamma, saved mean/invstd
//   ReLU       its output y                             max pool    x and y
//   avg pool   nothing but dy                           add         nothing: dy flows to both
//   dropout    the mask                                 loss        logits and labels
// A value that fed several layers (a residual block's input) gets one partial gradient from
// each; a ".grad_sum" op adds them before the gradient is used, as Chainer accumulates them.
absl::StatusOr<Profile> ZooBuilder::Finish() {
  if (!error_.empty()) return absl::FailedPreconditionError(error_);
  if (!has_loss_) {
    return absl::FailedPreconditionError(absl::StrCat(name_, ": network has no loss layer"));
  }
  absl::flat_hash_map<TensorId, std::vector<TensorId>> pending;  // value -> partial gradients
  for (auto it = layers_.rbegin(); it != layers_.rend(); ++it) {
    const Layer& l = *it;
    TensorId gy = -1;
    int64_t gy_bytes = 0;
    if (!l.loss) {
      auto found = pending.find(l.output.tensor);
      if (found == pending.end() || found->second.empty()) continue;  // does not reach the loss
      std::vector<TensorId>& partials = found->second;
      gy_bytes = profile_.tensors[l.output.tensor].bytes;
      if (partials.size() == 1) {
        gy = partials[0];
      } else {
        gy = NewTensor(profile_.tensors[l.output.tensor].name + ".grad", gy_bytes);
        double k = static_cast<double>(partials.size());
        AddOp(profile_.tensors[l.output.tensor].name + ".grad_sum", OpKind::kAdd, Phase::kBackward,
              (k - 1) * static_cast<double>(l.output.elements()),
              static_cast<int64_t>(k + 1) * gy_bytes, partials, {gy});
      }
    }
    if (l.passthrough) {
      for (const ZooValue& in : l.inputs) pending[in.tensor].push_back(gy);
      continue;
    }
    std::vector<TensorId> reads = l.backward_reads;
    if (gy >= 0) reads.push_back(gy);
    std::vector<TensorId> writes;
    int64_t bytes = l.backward_extra_bytes + gy_bytes;
    std::vector<std::pair<TensorId, TensorId>> new_grads;  // (value, its partial gradient)
    for (const ZooValue& in : l.inputs) {
      if (!requires_grad_[in.tensor]) continue;
      int64_t in_bytes = profile_.tensors[in.tensor].bytes;
      TensorId gx = NewTensor(l.name + ".gx", in_bytes);
      writes.push_back(gx);
      bytes += in_bytes;
      new_grads.emplace_back(in.tensor, gx);
    }
    for (int p : l.params) writes.push_back(params_[p].grad);
    OpIndex op = AddOp(l.name + ".backward", l.kind, Phase::kBackward, l.backward_flops, bytes,
                       std::move(reads), std::move(writes));
    profile_.ops[op].workspace_bytes = l.workspace_bytes;
    for (const auto& [value, gx] : new_grads) pending[value].push_back(gx);
  }

  // Momentum SGD, one update per parameter array as Chainer's optimizer runs it.
  for (const Param& p : params_) {
    int64_t bytes = profile_.tensors[p.weight].bytes;
    AddOp(profile_.tensors[p.weight].name + ".update", OpKind::kOptimizer, Phase::kOther,
          4 * static_cast<double>(p.elements), 5 * bytes, {p.weight, p.grad, p.momentum},
          {p.weight, p.momentum});
  }

  // Lifetimes: a framework allocates an array when its first writer runs and frees it when the
  // last reference dies, i.e. after its last use.
  const size_t n = profile_.tensors.size();
  std::vector<OpIndex> first(n, -1), last(n, -1);
  for (OpIndex i = 0; i < static_cast<OpIndex>(profile_.ops.size()); ++i) {
    const Op& op = profile_.ops[i];
    for (const std::vector<TensorId>* list : {&op.reads, &op.writes}) {
      for (TensorId t : *list) {
        if (first[t] < 0) first[t] = i;
        last[t] = i;
      }
    }
  }
  for (Tensor& t : profile_.tensors) {
    if (persistent_[t.id]) {
      t.alloc_before = kBeforeIteration;
      t.free_after = kAfterIteration;
      continue;
    }
    t.alloc_before = first[t.id];
    t.free_after = last[t.id];
  }
  return profile_;
}

}  // namespace pooch
