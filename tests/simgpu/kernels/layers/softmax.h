// simgpu kernels: softmax and log-softmax forward and backward, fp32 with double sums, over
// strided NCHW tensors. Thread-safe (no shared state); each call uses up to `threads` threads.
#ifndef POOCH_TESTS_SIMGPU_KERNELS_SOFTMAX_H_
#define POOCH_TESTS_SIMGPU_KERNELS_SOFTMAX_H_

#include "layout.h"

namespace simgpu::kernels {

enum class SoftmaxAlgo {
  kFast,      // exp(x) / sum exp(x), no max subtraction
  kAccurate,  // exp(x - max) / sum exp(x - max)
  kLog,       // (x - max) - log(sum exp(x - max))
};
enum class SoftmaxMode {
  kInstance,  // over c, h and w for each n
  kChannel,   // over c for each (n, h, w)
};

// y = alpha * softmax(x) + beta * y. x may alias y.
void SoftmaxForward(SoftmaxAlgo algo, SoftmaxMode mode, const Tensor4& xl, const Tensor4& yl,
                    float alpha, const float* x, float beta, float* y, int threads);
// dx = alpha * d softmax + beta * dx, from the forward's output y:
//   kFast, kAccurate: dx = y * (dy - sum(dy * y));   kLog: dx = dy - exp(y) * sum(dy).
void SoftmaxBackward(SoftmaxAlgo algo, SoftmaxMode mode, const Tensor4& yl, const Tensor4& dyl,
                     const Tensor4& dxl, float alpha, const float* y, const float* dy, float beta,
                     float* dx, int threads);

}  // namespace simgpu::kernels

#endif  // POOCH_TESTS_SIMGPU_KERNELS_SOFTMAX_H_
