// simgpu kernels: element-wise ops over strided N-d tensors (up to 8 dims): activations forward
// and backward, and cuDNN's tensor arithmetic (add with broadcast, op-tensor, scale, set).
// Thread-safe (no shared state); each call uses up to `threads` threads.
#ifndef POOCH_TESTS_SIMGPU_KERNELS_ELEMENTWISE_H_
#define POOCH_TESTS_SIMGPU_KERNELS_ELEMENTWISE_H_

#include <cstdint>

#include "layout.h"

namespace simgpu::kernels {

inline constexpr int kMaxDims = 8;

// Extents and element strides of an N-d tensor, outermost dimension first.
struct TensorNd {
  int rank = 0;
  int64_t dim[kMaxDims] = {};
  int64_t stride[kMaxDims] = {};

  static TensorNd From4(const Tensor4& t);
  int64_t Elements() const;
  int64_t Span() const;  // one past the farthest element, in elements
  bool SameDims(const TensorNd& o) const;
  // True when every dim equals `full`'s or is 1 (a broadcastable operand of the same rank).
  bool BroadcastsTo(const TensorNd& full) const;
};

enum class Activation { kSigmoid, kRelu, kTanh, kClippedRelu, kElu };

// y = alpha * f(x) + beta * y. `coef` is the clipping ceiling (kClippedRelu) or ELU's alpha.
// x and y have equal dims; x may alias y. With propagate_nan, the ReLU family maps NaN to NaN
// (else to 0, as CUDNN_NOT_PROPAGATE_NAN documents).
void ActivationForward(Activation act, double coef, bool propagate_nan, const TensorNd& xl,
                       const float* x, const TensorNd& yl, float alpha, float beta, float* y,
                       int threads);
// dx = alpha * f'(x) * dy + beta * dx. Uses y for sigmoid, tanh and ELU's negative side (as
// cuDNN, which takes y for them), x for the ReLU family's gate.
void ActivationBackward(Activation act, double coef, const TensorNd& yl, const float* y,
                        const TensorNd& dyl, const float* dy, const TensorNd& xl, const float* x,
                        const TensorNd& dxl, float alpha, float beta, float* dx, int threads);

enum class TensorOp { kAdd, kMul, kMin, kMax, kSqrt };

// c = op(alpha1 * a, alpha2 * b) + beta * c, where a and b broadcast to c (dims equal or 1).
// kSqrt is unary: c = sqrt(alpha1 * a) + beta * c and b is not read (may be null).
void OpTensor(TensorOp op, const TensorNd& al, const float* a, float alpha1, const TensorNd& bl,
              const float* b, float alpha2, const TensorNd& cl, float beta, float* c, int threads);
// c = alpha * a + beta * c, where a broadcasts to c (dims equal or 1).
void AddTensor(const TensorNd& al, const float* a, float alpha, const TensorNd& cl, float beta,
               float* c, int threads);
// y *= alpha.
void ScaleTensor(const TensorNd& yl, float* y, float alpha, int threads);
// y = value.
void SetTensor(const TensorNd& yl, float* y, float value, int threads);

}  // namespace simgpu::kernels

#endif  // POOCH_TESTS_SIMGPU_KERNELS_ELEMENTWISE_H_
