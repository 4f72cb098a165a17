#include "softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "parallel.h"

namespace simgpu::kernels {
namespace {

int64_t Groups(SoftmaxMode mode, const Tensor4& t) {
  return mode == SoftmaxMode::kInstance ? t.n : t.n * t.h * t.w;
}

// Calls fn(n, c, h, w) for every element of group g, in a fixed order.
template <typename Fn>
void ForEachInGroup(SoftmaxMode mode, const Tensor4& t, int64_t g, Fn fn) {
  if (mode == SoftmaxMode::kInstance) {
    for (int64_t c = 0; c < t.c; ++c) {
      for (int64_t h = 0; h < t.h; ++h) {
        for (int64_t w = 0; w < t.w; ++w) fn(g, c, h, w);
      }
    }
    return;
  }
  const int64_t hw = t.h * t.w;
  const int64_t n = g / hw, h = (g % hw) / t.w, w = g % t.w;
  for (int64_t c = 0; c < t.c; ++c) fn(n, c, h, w);
}

int ThreadsFor(const Tensor4& t, int threads) { return t.Elements() < 16384 ? 1 : threads; }

}  // namespace

void SoftmaxForward(SoftmaxAlgo algo, SoftmaxMode mode, const Tensor4& xl, const Tensor4& yl,
                    float alpha, const float* x, float beta, float* y, int threads) {
  ParallelFor(Groups(mode, xl), ThreadsFor(xl, threads), [&](int64_t b, int64_t e) {
    for (int64_t g = b; g < e; ++g) {
      double mx = 0.0;
      if (algo != SoftmaxAlgo::kFast) {
        mx = -std::numeric_limits<double>::infinity();
        ForEachInGroup(mode, xl, g, [&](int64_t n, int64_t c, int64_t h, int64_t w) {
          mx = std::max<double>(mx, x[xl.Offset(n, c, h, w)]);
        });
      }
      double sum = 0.0;
      ForEachInGroup(mode, xl, g, [&](int64_t n, int64_t c, int64_t h, int64_t w) {
        sum += std::exp(x[xl.Offset(n, c, h, w)] - mx);
      });
      const double log_sum = std::log(sum);
      ForEachInGroup(mode, xl, g, [&](int64_t n, int64_t c, int64_t h, int64_t w) {
        const double d = x[xl.Offset(n, c, h, w)] - mx;
        const double v = algo == SoftmaxAlgo::kLog ? d - log_sum : std::exp(d) / sum;
        Blend(alpha, static_cast<float>(v), beta, y + yl.Offset(n, c, h, w));
      });
    }
  });
}

void SoftmaxBackward(SoftmaxAlgo algo, SoftmaxMode mode, const Tensor4& yl, const Tensor4& dyl,
                     const Tensor4& dxl, float alpha, const float* y, const float* dy, float beta,
                     float* dx, int threads) {
  ParallelFor(Groups(mode, yl), ThreadsFor(yl, threads), [&](int64_t b, int64_t e) {
    for (int64_t g = b; g < e; ++g) {
      double sum = 0.0;
      ForEachInGroup(mode, yl, g, [&](int64_t n, int64_t c, int64_t h, int64_t w) {
        const double gy = dy[dyl.Offset(n, c, h, w)];
        sum += algo == SoftmaxAlgo::kLog ? gy : gy * y[yl.Offset(n, c, h, w)];
      });
      ForEachInGroup(mode, yl, g, [&](int64_t n, int64_t c, int64_t h, int64_t w) {
        const double yv = y[yl.Offset(n, c, h, w)];
        const double gy = dy[dyl.Offset(n, c, h, w)];
        const double v = algo == SoftmaxAlgo::kLog ? gy - std::exp(yv) * sum : yv * (gy - sum);
        Blend(alpha, static_cast<float>(v), beta, dx + dxl.Offset(n, c, h, w));
      });
    }
  });
}

}  // namespace simgpu::kernels
