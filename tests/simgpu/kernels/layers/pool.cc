#include "pool.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "parallel.h"

namespace simgpu::kernels {
namespace {

struct Window {
  int64_t h0, h1, w0, w1;  // clipped to the input
  float divisor;
};

Window WindowAt(const PoolShape& s, int64_t p, int64_t q) {
  const int64_t h = p * s.stride_h - s.pad_h, w = q * s.stride_w - s.pad_w;
  Window win{std::max<int64_t>(h, 0), std::min(h + s.win_h, s.x.h), std::max<int64_t>(w, 0),
             std::min(w + s.win_w, s.x.w), 0.0f};
  const int64_t inside =
      std::max<int64_t>(win.h1 - win.h0, 0) * std::max<int64_t>(win.w1 - win.w0, 0);
  win.divisor = s.mode == PoolMode::kAverageExclusive ? static_cast<float>(inside)
                                                      : static_cast<float>(s.win_h * s.win_w);
  return win;
}

}  // namespace

int64_t PoolOutputDim(int64_t in, int64_t pad, int64_t window, int64_t stride) {
  if (window <= 0 || stride <= 0) return 0;
  const int64_t room = in + 2 * pad - window;
  return room < 0 ? 0 : 1 + room / stride;
}

bool PoolShapeValid(const PoolShape& s) {
  if (s.x.n <= 0 || s.x.c <= 0 || s.x.h <= 0 || s.x.w <= 0) return false;
  if (s.pad_h < 0 || s.pad_w < 0 || s.win_h <= 0 || s.win_w <= 0) return false;
  const int64_t p = PoolOutputDim(s.x.h, s.pad_h, s.win_h, s.stride_h);
  const int64_t q = PoolOutputDim(s.x.w, s.pad_w, s.win_w, s.stride_w);
  return p > 0 && q > 0 && s.y.n == s.x.n && s.y.c == s.x.c && s.y.h == p && s.y.w == q;
}

void PoolForward(const PoolShape& s, float alpha, const float* x, float beta, float* y,
                 int threads) {
  if (s.y.Elements() < 16384) threads = 1;
  ParallelFor(s.x.n * s.x.c, threads, [&](int64_t b, int64_t e) {
    for (int64_t nc = b; nc < e; ++nc) {
      const int64_t n = nc / s.x.c, c = nc % s.x.c;
      const float* xp = x + s.x.Offset(n, c, 0, 0);
      for (int64_t p = 0; p < s.y.h; ++p) {
        for (int64_t q = 0; q < s.y.w; ++q) {
          const Window win = WindowAt(s, p, q);
          float v;
          if (s.mode == PoolMode::kMax) {
            v = -std::numeric_limits<float>::infinity();
            for (int64_t h = win.h0; h < win.h1; ++h) {
              for (int64_t w = win.w0; w < win.w1; ++w) {
                const float xv = xp[h * s.x.sh + w * s.x.sw];
                if (xv > v || (s.propagate_nan && std::isnan(xv))) v = xv;
              }
            }
          } else {
            float sum = 0.0f;
            for (int64_t h = win.h0; h < win.h1; ++h) {
              for (int64_t w = win.w0; w < win.w1; ++w) sum += xp[h * s.x.sh + w * s.x.sw];
            }
            v = win.divisor > 0 ? sum / win.divisor : 0.0f;
          }
          Blend(alpha, v, beta, y + s.y.Offset(n, c, p, q));
        }
      }
    }
  });
}

void PoolBackward(const PoolShape& s, float alpha, const float* dy, const float* x, float beta,
                  float* dx, int threads) {
  if (s.x.Elements() < 16384) threads = 1;
  ParallelFor(s.x.n * s.x.c, threads, [&](int64_t b, int64_t e) {
    std::vector<float> acc(s.x.h * s.x.w);
    for (int64_t nc = b; nc < e; ++nc) {
      const int64_t n = nc / s.x.c, c = nc % s.x.c;
      const float* xp = x + s.x.Offset(n, c, 0, 0);
      std::fill(acc.begin(), acc.end(), 0.0f);
      // Scatter in a fixed order (windows row-major) into a private plane: deterministic.
      for (int64_t p = 0; p < s.y.h; ++p) {
        for (int64_t q = 0; q < s.y.w; ++q) {
          const Window win = WindowAt(s, p, q);
          const float g = dy[s.y.Offset(n, c, p, q)];
          if (s.mode == PoolMode::kMax) {
            int64_t best = -1;
            float v = 0.0f;
            for (int64_t h = win.h0; h < win.h1; ++h) {
              for (int64_t w = win.w0; w < win.w1; ++w) {
                const float xv = xp[h * s.x.sh + w * s.x.sw];
                if (best < 0 || xv > v) {
                  v = xv;
                  best = h * s.x.w + w;
                }
              }
            }
            if (best >= 0) acc[best] += g;
          } else if (win.divisor > 0) {
            const float share = g / win.divisor;
            for (int64_t h = win.h0; h < win.h1; ++h) {
              for (int64_t w = win.w0; w < win.w1; ++w) acc[h * s.x.w + w] += share;
            }
          }
        }
      }
      for (int64_t h = 0; h < s.x.h; ++h) {
        for (int64_t w = 0; w < s.x.w; ++w) {
          Blend(alpha, acc[h * s.x.w + w], beta, dx + s.x.Offset(n, c, h, w));
        }
      }
    }
  });
}

}  // namespace simgpu::kernels
