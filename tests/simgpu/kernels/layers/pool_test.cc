#include "pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "test_util.h"

namespace simgpu::kernels {
namespace {

using testing::RandomLayout;
using testing::RandomVec;
using testing::Uniform;

PoolShape RandomShape(std::mt19937& rng, PoolMode mode) {
  for (;;) {
    PoolShape s;
    s.mode = mode;
    s.win_h = Uniform(rng, 1, 3);
    s.win_w = Uniform(rng, 1, 4);
    s.pad_h = Uniform(rng, 0, s.win_h - 1);
    s.pad_w = Uniform(rng, 0, s.win_w - 1);
    s.stride_h = Uniform(rng, 1, 3);
    s.stride_w = Uniform(rng, 1, 3);
    s.x = RandomLayout(Uniform(rng, 1, 2), Uniform(rng, 1, 3), Uniform(rng, 1, 8),
                       Uniform(rng, 1, 8), rng);
    const int64_t p = PoolOutputDim(s.x.h, s.pad_h, s.win_h, s.stride_h);
    const int64_t q = PoolOutputDim(s.x.w, s.pad_w, s.win_w, s.stride_w);
    if (p <= 0 || q <= 0) continue;
    s.y = RandomLayout(s.x.n, s.x.c, p, q, rng);
    if (PoolShapeValid(s)) return s;
  }
}

// Distinct values (a shuffled ramp) so that max pooling has no ties and differences are exact.
std::vector<float> DistinctVec(int64_t n, std::mt19937& rng) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 0.0f);
  std::shuffle(v.begin(), v.end(), rng);
  for (float& f : v) f = (f - n / 2) / 8.0f;
  return v;
}

template <typename T>
std::vector<double> RefForward(const PoolShape& s, const std::vector<T>& x) {
  std::vector<double> y;
  for (int64_t n = 0; n < s.y.n; ++n)
    for (int64_t c = 0; c < s.y.c; ++c)
      for (int64_t p = 0; p < s.y.h; ++p)
        for (int64_t q = 0; q < s.y.w; ++q) {
          double mx = -std::numeric_limits<double>::infinity(), sum = 0.0;
          int64_t inside = 0;
          for (int64_t i = 0; i < s.win_h; ++i)
            for (int64_t j = 0; j < s.win_w; ++j) {
              const int64_t h = p * s.stride_h - s.pad_h + i, w = q * s.stride_w - s.pad_w + j;
              if (h < 0 || h >= s.x.h || w < 0 || w >= s.x.w) continue;
              const double v = x[s.x.Offset(n, c, h, w)];
              mx = std::max(mx, v);
              sum += v;
              ++inside;
            }
          if (s.mode == PoolMode::kMax) y.push_back(mx);
          if (s.mode == PoolMode::kAverageInclusive) y.push_back(sum / (s.win_h * s.win_w));
          if (s.mode == PoolMode::kAverageExclusive) y.push_back(sum / inside);
        }
  return y;
}

class PoolTest : public ::testing::TestWithParam<PoolMode> {};

TEST_P(PoolTest, ForwardMatchesReference) {
  std::mt19937 rng(20);
  for (int iter = 0; iter < 100; ++iter) {
    const PoolShape s = RandomShape(rng, GetParam());
    std::vector<float> x = RandomVec(s.x.Span(), rng), y = RandomVec(s.y.Span(), rng);
    const std::vector<float> y0 = y;
    const float alpha = 1.25f, beta = iter % 2 ? 0.0f : 0.5f;
    PoolForward(s, alpha, x.data(), beta, y.data(), 2);
    std::vector<double> want = RefForward(s, x);
    const std::vector<float> prior = testing::Logical(s.y, y0);
    for (size_t i = 0; i < want.size(); ++i) want[i] = alpha * want[i] + beta * prior[i];
    testing::ExpectClose(testing::Logical(s.y, y), want, 1e-5, 1e-6, "pool fwd");
    EXPECT_TRUE(testing::GapsUntouched(s.y, y0, y));
  }
}

TEST_P(PoolTest, BackwardMatchesFiniteDifferences) {
  std::mt19937 rng(21);
  for (int iter = 0; iter < 40; ++iter) {
    const PoolShape s = RandomShape(rng, GetParam());
    std::vector<float> xf = DistinctVec(s.x.Span(), rng), gf = RandomVec(s.y.Span(), rng);
    std::vector<double> x(xf.begin(), xf.end());
    const std::vector<float> g = testing::Logical(s.y, gf);
    auto loss = [&] {
      const std::vector<double> y = RefForward(s, x);
      double l = 0.0;
      for (size_t i = 0; i < y.size(); ++i) l += y[i] * g[i];
      return l;
    };
    std::vector<double> want;
    const double eps = 1e-3;  // far below the 1/8 gap between distinct values
    for (int64_t n = 0; n < s.x.n; ++n)
      for (int64_t c = 0; c < s.x.c; ++c)
        for (int64_t h = 0; h < s.x.h; ++h)
          for (int64_t w = 0; w < s.x.w; ++w) {
            double& e = x[s.x.Offset(n, c, h, w)];
            const double keep = e;
            e = keep + eps;
            const double up = loss();
            e = keep - eps;
            const double down = loss();
            e = keep;
            want.push_back((up - down) / (2 * eps));
          }
    std::vector<float> dx(s.x.Span(), std::numeric_limits<float>::quiet_NaN());
    PoolBackward(s, 1.0f, gf.data(), xf.data(), 0.0f, dx.data(), 1 + iter % 2);
    testing::ExpectClose(testing::Logical(s.x, dx), want, 1e-3, 1e-4, "pool bwd");
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, PoolTest,
                         ::testing::Values(PoolMode::kMax, PoolMode::kAverageInclusive,
                                           PoolMode::kAverageExclusive));

TEST(PoolNanTest, PropagateNanOption) {
  PoolShape s;
  s.x = Tensor4::Packed(1, 1, 1, 2);
  s.win_w = 2;
  s.y = Tensor4::Packed(1, 1, 1, 1);
  const float x[2] = {1.0f, std::numeric_limits<float>::quiet_NaN()};
  float y = 0.0f;
  PoolForward(s, 1.0f, x, 0.0f, &y, 1);
  EXPECT_EQ(y, 1.0f);
  s.propagate_nan = true;
  PoolForward(s, 1.0f, x, 0.0f, &y, 1);
  EXPECT_TRUE(std::isnan(y));
}

}  // namespace
}  // namespace simgpu::kernels
