// ZooBuilder: turns a network described layer by layer into a Profile of one training iteration,
// the way a define-by-run framework (Chainer, which the PoocH paper extended) would execute it.
//
//   ZooBuilder b("tiny", machine);
//   ZooValue x = b.Input(/*n=*/32, /*c=*/3, {1, 32, 32});
//   x = b.Relu("relu1", b.BatchNorm("bn1", b.Conv("conv1", x, 16, Conv3::Square(3, 1, 1))));
//   b.SoftmaxLoss("loss", b.Linear("fc", x, 10));
//   absl::StatusOr<Profile> p = b.Finish();
//
// Forward ops are appended as layers are added. Finish() mirrors them: it walks the layers in
// reverse and emits one backward op per layer that reads exactly what that layer's backward needs
// (Note [Backward reads]), sums gradients where a value fed several layers, then appends one
// optimizer update per parameter (momentum SGD), and finally derives every tensor's lifetime
// (allocated before its first writer, freed after its last use, as a framework frees an array
// when its last reference dies) and whether it is a feature map (written in forward, read in
// backward). Durations come from a roofline on the MachineModel (Note [Roofline]).
//
// Tensors are fp32. Parameters, their gradients and momenta are persistent (allocated before the
// iteration, never freed). Shapes are N x C x D x H x W; 2D networks use D = 1.
//
// Thread safety: a builder is used by one thread.
#ifndef POOCH_CORE_ZOO_ZOO_BUILDER_H_
#define POOCH_CORE_ZOO_ZOO_BUILDER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/model/model.h"

namespace pooch {

// A spatial extent or a per-dimension parameter (kernel, stride, padding): depth x height x width.
struct Dims3 {
  int64_t d = 1;
  int64_t h = 1;
  int64_t w = 1;
};

// Geometry of a convolution or pooling window.
struct Conv3 {
  Dims3 kernel;
  Dims3 stride;
  Dims3 pad;
  // A k x k window with stride s and padding p in height and width, depth 1 (2D layers).
  static Conv3 Square(int64_t k, int64_t s, int64_t p) { return {{1, k, k}, {1, s, s}, {0, p, p}}; }
  // A k x k x k window with stride s and padding p in every dimension (3D layers).
  static Conv3 Cube(int64_t k, int64_t s, int64_t p) { return {{k, k, k}, {s, s, s}, {p, p, p}}; }
};

// A forward value (an activation) the network passes from layer to layer.
struct ZooValue {
  TensorId tensor = -1;
  int64_t n = 0;
  int64_t c = 0;
  Dims3 spatial;
  int64_t elements() const { return n * c * spatial.d * spatial.h * spatial.w; }
};

class ZooBuilder {
 public:
  ZooBuilder(std::string name, const MachineModel& machine);

  // The mini-batch: one host-to-device copy op ("data") writes the images and the labels.
  ZooValue Input(int64_t n, int64_t c, Dims3 spatial);

  // Convolution without bias (followed by batch norm) or with bias (VGG, AlexNet).
  ZooValue Conv(const std::string& name, const ZooValue& x, int64_t out_channels,
                const Conv3& geometry, int64_t groups = 1, bool bias = false);
  ZooValue BatchNorm(const std::string& name, const ZooValue& x);
  ZooValue Relu(const std::string& name, const ZooValue& x);
  ZooValue MaxPool(const std::string& name, const ZooValue& x, const Conv3& geometry);
  ZooValue AvgPool(const std::string& name, const ZooValue& x, const Conv3& geometry);
  ZooValue Add(const std::string& name, const ZooValue& a, const ZooValue& b);
  // Fully connected with bias; flattens C x D x H x W.
  ZooValue Linear(const std::string& name, const ZooValue& x, int64_t out_features);
  // Dropout keeps a mask as large as its input for the backward pass; its random state makes the
  // op non-replayable (DESIGN.md, decision 5), so its outputs are kept or swapped, never
  // recomputed.
  ZooValue Dropout(const std::string& name, const ZooValue& x);
  // Softmax + cross entropy against the labels written by Input(); the end of forward.
  void SoftmaxLoss(const std::string& name, const ZooValue& logits);

  // Emits backward and optimizer ops and derives lifetimes. Call once, after SoftmaxLoss.
  // Returns FailedPrecondition when the network has no loss or a layer got an invalid shape
  // (a window larger than its padded input).
  absl::StatusOr<Profile> Finish();

  // Learnable parameters (weights, biases, BN scale and shift), in elements.
  int64_t parameter_count() const { return parameter_count_; }
  // Multiply-accumulates of one forward pass over the whole batch (conv and fully connected).
  double forward_macs() const { return forward_macs_; }

 private:
  // One forward layer, remembered so that Finish() can emit its backward op.
  struct Layer {
    std::string name;
    OpKind kind = OpKind::kOther;
    std::vector<ZooValue> inputs;  // values whose gradients this layer's backward makes
    ZooValue output;
    std::vector<TensorId> backward_reads;  // forward tensors and parameters backward reads
    std::vector<int> params;               // indices into params_
    double backward_flops = 0;
    int64_t backward_extra_bytes = 0;  // traffic besides gy/gx (reads of x, W, ...)
    int64_t workspace_bytes = 0;
    bool passthrough = false;  // add: gy is the gradient of every input, no backward op
    bool loss = false;         // backward starts here; no incoming gradient
  };

  TensorId NewTensor(const std::string& name, int64_t bytes);
  ZooValue NewValue(const std::string& name, int64_t n, int64_t c, Dims3 spatial);
  // A persistent parameter tensor with its persistent gradient and momentum; returns its index
  // in params_.
  int NewParam(const std::string& name, int64_t elements);
  OpIndex AddOp(const std::string& name, OpKind kind, Phase phase, double flops, int64_t bytes,
                std::vector<TensorId> reads, std::vector<TensorId> writes);
  // Output extent of a window over `in`; records an error when the window does not fit.
  Dims3 WindowOutput(const std::string& name, const Dims3& in, const Conv3& g);
  double Roofline(double flops, int64_t bytes) const;

  std::string name_;
  MachineModel machine_;
  Profile profile_;
  std::vector<Layer> layers_;
  struct Param {
    TensorId weight = -1;
    TensorId grad = -1;
    TensorId momentum = -1;
    int64_t elements = 0;
  };
  std::vector<Param> params_;
  // By TensorId.
  std::vector<bool> persistent_;     // allocated before the iteration, never freed
  std::vector<bool> requires_grad_;  // false for the mini-batch itself
  TensorId labels_ = -1;
  bool has_loss_ = false;
  std::string error_;
  int64_t parameter_count_ = 0;
  double forward_macs_ = 0;
};

}  // namespace pooch

#endif  // POOCH_CORE_ZOO_ZOO_BUILDER_H_
