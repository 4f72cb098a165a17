// simgpu kernels: 2-d max and average pooling, forward and backward, fp32, strided NCHW.
// Thread-safe (no shared state); each call uses up to `threads` threads.
#ifndef POOCH_TESTS_SIMGPU_KERNELS_POOL_H_
#define POOCH_TESTS_SIMGPU_KERNELS_POOL_H_

#include <cstdint>

#include "layout.h"

namespace simgpu::kernels {

enum class PoolMode {
  kMax,               // padding never wins (it counts as -infinity)
  kAverageInclusive,  // divides by the full window, padding counted as zeros
  kAverageExclusive,  // divides by the in-bounds taps of the window
};

struct PoolShape {
  Tensor4 x;  // input
  int64_t win_h = 1, win_w = 1, pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1;
  PoolMode mode = PoolMode::kMax;
  bool propagate_nan = false;  // max pooling: a NaN tap makes the window NaN
  Tensor4 y;                   // output: n, c, p, q
};

// cuDNN's pooling output extent: 1 + (in + 2 * pad - window) / stride, or <= 0 if none.
int64_t PoolOutputDim(int64_t in, int64_t pad, int64_t window, int64_t stride);
bool PoolShapeValid(const PoolShape& s);

// y = alpha * pool(x) + beta * y.
void PoolForward(const PoolShape& s, float alpha, const float* x, float beta, float* y,
                 int threads);
// dx = alpha * pool'(dy) + beta * dx. Max pooling sends each window's gradient to the first
// (in row-major window order) tap of x that equals the window's maximum, recomputed from x, so y
// is not needed; y and dy share layout s.y.
void PoolBackward(const PoolShape& s, float alpha, const float* dy, const float* x, float beta,
                  float* dx, int threads);

}  // namespace simgpu::kernels

#endif  // POOCH_TESTS_SIMGPU_KERNELS_POOL_H_
