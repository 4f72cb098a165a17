// simgpu kernels: 2-d convolution (forward, backward data, backward filter, backward bias) in
// fp32, grouped, with padding, stride and dilation, over strided NCHW tensors.
// Thread-safe (no shared state); each call uses up to `threads` threads.
//
// Approach: im2col + Gemm (gemm.h), one (image, group, column chunk) at a time. The im2col
// scratch lives on the host heap: a GPU's implicit-gemm algorithm needs no workspace, so charging
// the CPU's scratch to device memory would make simgpu's memory pressure differ from a GPU's.
// Results are deterministic and independent of `threads`: reductions run in a fixed order that
// depends on the shape only.
#ifndef POOCH_TESTS_SIMGPU_KERNELS_CONV_H_
#define POOCH_TESTS_SIMGPU_KERNELS_CONV_H_

#include <cstdint>

#include "layout.h"

namespace simgpu::kernels {

struct ConvShape {
  Tensor4 x;             // input: n, c, h, w
  int64_t k = 0;         // output channels
  int64_t r = 0, s = 0;  // filter height and width; filter is packed k x (c/groups) x r x s
  int64_t groups = 1;
  int64_t pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
  bool flip = false;  // true: true convolution (CUDNN_CONVOLUTION); false: cross-correlation
  Tensor4 y;          // output: n, k, p, q
};

// Output extent along one axis; <= 0 when the (dilated) filter does not fit.
int64_t ConvOutputDim(int64_t in, int64_t pad, int64_t filter, int64_t stride, int64_t dilation);

// True when the extents agree with each other (y's dims equal the computed output dims, groups
// divide c and k, all extents and steps positive, pads non-negative).
bool ConvShapeValid(const ConvShape& s);

// Multiply-adds times two: 2 * N * K * (C/groups) * R * S * P * Q. The same for all three passes.
double ConvFlops(const ConvShape& s);

// y = alpha * conv(x, w) + beta * y.
void ConvForward(const ConvShape& s, float alpha, const float* x, const float* w, float beta,
                 float* y, int threads);
// dx = alpha * conv_transpose(dy, w) + beta * dx. dx has layout s.x, dy layout s.y.
void ConvBackwardData(const ConvShape& s, float alpha, const float* w, const float* dy, float beta,
                      float* dx, int threads);
// dw = alpha * (sum over images of dy (x) x) + beta * dw. dw is packed k x (c/groups) x r x s.
void ConvBackwardFilter(const ConvShape& s, float alpha, const float* x, const float* dy,
                        float beta, float* dw, int threads);
// db[k * db_stride] = alpha * sum_{n,p,q} dy[n,k,p,q] + beta * db[k * db_stride]. Sums in double.
void ConvBackwardBias(const Tensor4& dy_layout, float alpha, const float* dy, float beta, float* db,
                      int64_t db_stride, int threads);

}  // namespace simgpu::kernels

#endif  // POOCH_TESTS_SIMGPU_KERNELS_CONV_H_
