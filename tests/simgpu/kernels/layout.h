// simgpu kernels: how a 4-d NCHW tensor lies in memory (extents and element strides).
// Plain value type; thread-compatible.
#ifndef POOCH_TESTS_SIMGPU_KERNELS_LAYOUT_H_
#define POOCH_TESTS_SIMGPU_KERNELS_LAYOUT_H_

#include <cstdint>

namespace simgpu::kernels {

// A 4-d tensor: extents n, c, h, w and strides in elements (any non-negative strides; the
// kernels never assume packing, though some take a faster path when they find it).
struct Tensor4 {
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t sn = 0, sc = 0, sh = 0, sw = 0;

  static Tensor4 Packed(int64_t n, int64_t c, int64_t h, int64_t w) {
    return {n, c, h, w, c * h * w, h * w, w, 1};
  }
  int64_t Offset(int64_t in, int64_t ic, int64_t ih, int64_t iw) const {
    return in * sn + ic * sc + ih * sh + iw * sw;
  }
  int64_t Elements() const { return n * c * h * w; }
  // One past the farthest element, in elements: the span the tensor covers from its base.
  int64_t Span() const {
    if (Elements() == 0) return 0;
    return (n - 1) * sn + (c - 1) * sc + (h - 1) * sh + (w - 1) * sw + 1;
  }
  // True when (h, w) flatten to one index with stride sw, so a plane is a strided vector.
  bool PlaneLinear() const { return h <= 1 || sh == w * sw; }
};

// y = alpha * v + beta * y, where beta == 0 means y is not read (NaN in y must not survive).
inline void Blend(float alpha, float v, float beta, float* y) {
  *y = beta == 0.0f ? alpha * v : alpha * v + beta * *y;
}

}  // namespace simgpu::kernels

#endif  // POOCH_TESTS_SIMGPU_KERNELS_LAYOUT_H_
