// Router: the scores a dynamic model decides on, computed on the device from a feature map and
// read back to the host, as a PyTorch program's `if gate.item() > 0:` or `topk(...).tolist()`
// does in the middle of forward:
//   s = (1/N) sum_n W gap(x_n)      one score per output, for the whole batch
// gap is a global average pool (cudnnPoolingForward), W (outputs x channels) a fixed random
// projection; the per-sample scores are one gemm, their batch mean a gemv with the ones vector,
// and the host reads the `outputs` floats back with a synchronous cudaMemcpy.
//
// W is not trained: a SkipNet gate or a mixture-of-experts router learns through a
// non-differentiable choice (SkipNet's reinforcement learning, a router's gate-weighted expert
// outputs), which cnn_train leaves out; what pooch has to see is the choice made from data on
// the device, and that is kept. So that the choices vary with the data rather than follow the
// largest fixed component of W gap(x), the host centres each score on the running mean of that
// score in earlier iterations (m = s the first time, then m <- (m + s) / 2), as a trained
// model's calibration or a router's load-balancing bias would: Route returns s - m (s itself
// the first time) and then folds s into m. Everything is a function of the device's values,
// so the choices are deterministic from the seed and equal wherever the values are.
#ifndef POOCH_SAMPLES_CNN_TRAIN_ROUTER_H_
#define POOCH_SAMPLES_CNN_TRAIN_ROUTER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "layers/layer.h"

namespace cnn_train {

class Router {
 public:
  // Scores feature maps of per-sample shape `in` with `outputs` rows of W; `name` prefixes its
  // allocations ("<name>.weight", "<name> pooled", ...).
  Router(std::string name, Dims in, int outputs);
  ~Router();
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // Allocates W and draws it from `seed`: U(-1/sqrt(C), 1/sqrt(C)).
  void Init(Context& ctx, uint64_t seed);
  // Uses `owner`'s W and running means (the same router built for another image size).
  void Share(const Router& owner);

  // The centred scores of `x` (batch samples of shape `in`), one per output; updates the
  // running means. A synchronous read-back.
  std::vector<float> Route(Context& ctx, int batch, const float* x);

  int outputs() const { return outputs_; }

 private:
  // Shared by the routers of one model built for several image sizes.
  struct State {
    float* weight = nullptr;  // outputs x channels, row-major
    std::vector<float> mean;  // running mean of each score
    bool seen = false;        // a score has been folded into `mean`
  };

  std::string name_;
  Dims in_;
  int outputs_;
  std::unique_ptr<Layer> pool_;  // global average pool of `in`
  std::shared_ptr<State> state_;
  DeviceMemory* owner_memory_ = nullptr;  // set where this router allocated W, to free it
};

}  // namespace cnn_train

#endif  // POOCH_SAMPLES_CNN_TRAIN_ROUTER_H_
