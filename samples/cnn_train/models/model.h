// Model: what the trainer trains, one iteration at a time. A Network (network.h) is one static
// graph; the dynamic models (models_skipnet.cc, models_moe.cc) are made of several Networks
// and decide in every iteration, from values computed on the device and read back to the host,
// which of them run, as SkipNet, BlockDrop and mixture-of-experts programs do.
#ifndef POOCH_SAMPLES_CNN_TRAIN_MODEL_H_
#define POOCH_SAMPLES_CNN_TRAIN_MODEL_H_

#include <cstdint>
#include <string>

#include "layers/layer.h"

namespace cnn_train {

// FNV-1a 64's offset basis: where params_checksum's hash starts.
inline constexpr uint64_t kFnvOffsetBasis = 0xcbf29ce484222325ULL;

class Model {
 public:
  virtual ~Model() = default;

  // Allocates the parameter tensors, their gradients and momentum, and initialises the
  // parameters from `seed`.
  virtual void InitParams(Context& ctx, uint64_t seed) = 0;

  // Uses `owner`'s parameter tensors, gradients and momentum instead of allocating its own:
  // `owner` is the same model built for another image size (--vary-image), whose parameters do
  // not depend on the image size. Dies with an internal error if they differ in number or size.
  // REQUIRES: InitParams ran on `owner`, which outlives this model; `owner` is of this type.
  virtual void ShareParams(Context& ctx, Model& owner) = 0;

  // Uploads `host_input` (batch samples) and runs forward; returns the logits on the device,
  // valid until Backward.
  virtual const float* Forward(Context& ctx, int batch, const float* host_input) = 0;

  // Allocates the gradient of the logits, for the caller to fill before Backward.
  virtual float* AllocateOutputGradient(Context& ctx, int batch) = 0;

  // Backward through what the last Forward ran: writes those parameters' gradients and frees
  // every feature map and gradient of the iteration.
  virtual void Backward(Context& ctx, int batch) = 0;

  // SGD with momentum on the parameters the last Backward wrote a gradient for (all of them in
  // a static network): v = momentum * v + g; w = w - lr * v.
  virtual void SgdStep(Context& ctx, float lr, float momentum) = 0;

  // FNV-1a over the bytes of every trainable parameter, in order, continuing from `hash`.
  virtual uint64_t ParamsChecksum(uint64_t hash) const = 0;

  // What the last Forward chose, appended to the iteration's line (" gates 10110",
  // " experts 3,7"); empty for a static network.
  virtual std::string Choices() const { return {}; }

  // --force-choices: every later Forward still computes and reads back its scores, then runs
  // what `text` says instead of what they say; `text` is as Choices() prints it, without the
  // leading space ("gates 10110", "experts 3,7"). false when the model makes no choice or the
  // text does not fit it.
  virtual bool ForceChoices(const std::string& text) { return false; }
};

}  // namespace cnn_train

#endif  // POOCH_SAMPLES_CNN_TRAIN_MODEL_H_
