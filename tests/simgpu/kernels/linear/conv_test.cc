#include "conv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "test_util.h"

namespace simgpu::kernels {
namespace {

using testing::RandomLayout;
using testing::RandomVec;
using testing::Uniform;

// Input position of output (p, q), filter tap (r, t) along each axis, or false if padding.
bool Tap(const ConvShape& s, int64_t p, int64_t q, int64_t r, int64_t t, int64_t* h, int64_t* w) {
  const int64_t rr = s.flip ? s.r - 1 - r : r, tt = s.flip ? s.s - 1 - t : t;
  *h = p * s.stride_h - s.pad_h + rr * s.dil_h;
  *w = q * s.stride_w - s.pad_w + tt * s.dil_w;
  return *h >= 0 && *h < s.x.h && *w >= 0 && *w < s.x.w;
}

// Naive forward in double; x, w indexed through s.x and packed KCRS.
template <typename T>
std::vector<double> RefForward(const ConvShape& s, const std::vector<T>& x,
                               const std::vector<T>& w) {
  const int64_t cg = s.x.c / s.groups, kg = s.k / s.groups;
  std::vector<double> y(s.y.Elements());
  size_t i = 0;
  for (int64_t n = 0; n < s.x.n; ++n)
    for (int64_t k = 0; k < s.k; ++k)
      for (int64_t p = 0; p < s.y.h; ++p)
        for (int64_t q = 0; q < s.y.w; ++q) {
          double sum = 0.0;
          const int64_t g = k / kg;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t r = 0; r < s.r; ++r)
              for (int64_t t = 0; t < s.s; ++t) {
                int64_t h, v;
                if (!Tap(s, p, q, r, t, &h, &v)) continue;
                sum += static_cast<double>(x[s.x.Offset(n, g * cg + c, h, v)]) *
                       w[((k * cg + c) * s.r + r) * s.s + t];
              }
          y[i++] = sum;
        }
  return y;
}

ConvShape RandomShape(std::mt19937& rng, int64_t max_hw = 9, int64_t max_n = 3) {
  for (;;) {
    ConvShape s;
    s.groups = Uniform(rng, 1, 3);
    const int64_t n = Uniform(rng, 1, max_n), c = s.groups * Uniform(rng, 1, 3);
    s.k = s.groups * Uniform(rng, 1, 3);
    s.r = Uniform(rng, 1, 4);
    s.s = Uniform(rng, 1, 4);
    s.pad_h = Uniform(rng, 0, 2);
    s.pad_w = Uniform(rng, 0, 2);
    s.stride_h = Uniform(rng, 1, 3);
    s.stride_w = Uniform(rng, 1, 3);
    s.dil_h = Uniform(rng, 1, 2);
    s.dil_w = Uniform(rng, 1, 2);
    s.flip = Uniform(rng, 0, 1) == 1;
    s.x = RandomLayout(n, c, Uniform(rng, 1, max_hw), Uniform(rng, 1, max_hw), rng);
    const int64_t p = ConvOutputDim(s.x.h, s.pad_h, s.r, s.stride_h, s.dil_h);
    const int64_t q = ConvOutputDim(s.x.w, s.pad_w, s.s, s.stride_w, s.dil_w);
    if (p <= 0 || q <= 0) continue;
    s.y = RandomLayout(n, s.k, p, q, rng);
    if (ConvShapeValid(s)) return s;
  }
}

int64_t FilterSize(const ConvShape& s) { return s.k * (s.x.c / s.groups) * s.r * s.s; }

TEST(ConvTest, OutputDim) {
  EXPECT_EQ(ConvOutputDim(224, 3, 7, 2, 1), 112);
  EXPECT_EQ(ConvOutputDim(5, 0, 3, 1, 2), 1);
  EXPECT_EQ(ConvOutputDim(4, 0, 3, 1, 2), 0);
}

TEST(ConvTest, ForwardMatchesReference) {
  std::mt19937 rng(10);
  for (int iter = 0; iter < 150; ++iter) {
    const ConvShape s = RandomShape(rng);
    std::vector<float> x = RandomVec(s.x.Span(), rng), w = RandomVec(FilterSize(s), rng);
    std::vector<float> y = RandomVec(s.y.Span(), rng);
    const std::vector<float> y0 = y;
    const float alpha = iter % 2 ? 1.0f : 1.5f, beta = iter % 3 == 0 ? 0.0f : 0.25f;
    ConvForward(s, alpha, x.data(), w.data(), beta, y.data(), 1 + iter % 3);
    std::vector<double> want = RefForward(s, x, w);
    const std::vector<float> prior = testing::Logical(s.y, y0);
    for (size_t i = 0; i < want.size(); ++i) want[i] = alpha * want[i] + beta * prior[i];
    SCOPED_TRACE(iter);
    testing::ExpectClose(testing::Logical(s.y, y), want, 1e-4, 1e-5, "conv fwd");
    EXPECT_TRUE(testing::GapsUntouched(s.y, y0, y));
  }
}

// Loss L = sum(ref_forward(x, w) * g); its gradients are what backward data and filter return
// for dy = g. Checked by central differences in double.
TEST(ConvTest, BackwardMatchesFiniteDifferences) {
  std::mt19937 rng(11);
  for (int iter = 0; iter < 15; ++iter) {
    const ConvShape s = RandomShape(rng, 6, 2);
    std::vector<float> xf = RandomVec(s.x.Span(), rng), wf = RandomVec(FilterSize(s), rng);
    std::vector<float> gf = RandomVec(s.y.Span(), rng);
    std::vector<double> x(xf.begin(), xf.end()), w(wf.begin(), wf.end());
    const std::vector<float> g = testing::Logical(s.y, gf);
    auto loss = [&] {
      const std::vector<double> y = RefForward(s, x, w);
      double l = 0.0;
      for (size_t i = 0; i < y.size(); ++i) l += y[i] * g[i];
      return l;
    };
    const double eps = 1e-3;
    std::vector<double> dx_fd, dw_fd;
    for (int64_t n = 0; n < s.x.n; ++n)
      for (int64_t c = 0; c < s.x.c; ++c)
        for (int64_t h = 0; h < s.x.h; ++h)
          for (int64_t v = 0; v < s.x.w; ++v) {
            double& e = x[s.x.Offset(n, c, h, v)];
            const double keep = e;
            e = keep + eps;
            const double up = loss();
            e = keep - eps;
            const double down = loss();
            e = keep;
            dx_fd.push_back((up - down) / (2 * eps));
          }
    for (double& e : w) {
      const double keep = e;
      e = keep + eps;
      const double up = loss();
      e = keep - eps;
      const double down = loss();
      e = keep;
      dw_fd.push_back((up - down) / (2 * eps));
    }
    std::vector<float> dx(s.x.Span(), std::numeric_limits<float>::quiet_NaN());
    std::vector<float> dw(FilterSize(s), std::numeric_limits<float>::quiet_NaN());
    ConvBackwardData(s, 1.0f, wf.data(), gf.data(), 0.0f, dx.data(), 1 + iter % 2);
    ConvBackwardFilter(s, 1.0f, xf.data(), gf.data(), 0.0f, dw.data(), 1 + iter % 2);
    SCOPED_TRACE(iter);
    testing::ExpectClose(testing::Logical(s.x, dx), dx_fd, 1e-3, 1e-4, "conv bwd data");
    testing::ExpectClose(dw, dw_fd, 1e-3, 1e-4, "conv bwd filter");
  }
}

// 1x1, stride 1, no padding: the input plane is the column matrix (no im2col). Random shapes
// rarely land here, so it gets its own test, in every layout.
TEST(ConvTest, PointwiseDirectPathMatchesReference) {
  std::mt19937 rng(16);
  for (int iter = 0; iter < 30; ++iter) {
    ConvShape s;
    s.groups = Uniform(rng, 1, 2);
    s.k = s.groups * Uniform(rng, 1, 4);
    s.r = s.s = 1;
    s.dil_h = Uniform(rng, 1, 2);
    s.flip = iter % 2 == 0;
    const int64_t n = Uniform(rng, 1, 3), c = s.groups * Uniform(rng, 1, 4);
    const int64_t h = Uniform(rng, 1, 6), w = Uniform(rng, 1, 6);
    s.x = RandomLayout(n, c, h, w, rng);
    s.y = RandomLayout(n, s.k, h, w, rng);
    ASSERT_TRUE(ConvShapeValid(s));
    std::vector<float> x = RandomVec(s.x.Span(), rng), wt = RandomVec(FilterSize(s), rng);
    std::vector<float> dy = RandomVec(s.y.Span(), rng);
    std::vector<float> y = RandomVec(s.y.Span(), rng), dx = RandomVec(s.x.Span(), rng);
    std::vector<float> dw = RandomVec(FilterSize(s), rng);
    const std::vector<float> y0 = y, dx0 = dx, dw0 = dw;
    ConvForward(s, 1.0f, x.data(), wt.data(), 0.5f, y.data(), 1 + iter % 2);
    ConvBackwardData(s, 1.0f, wt.data(), dy.data(), 0.5f, dx.data(), 1 + iter % 2);
    ConvBackwardFilter(s, 1.0f, x.data(), dy.data(), 0.5f, dw.data(), 1 + iter % 2);
    const int64_t cg = c / s.groups, kg = s.k / s.groups;
    std::vector<double> want_y, want_dx, want_dw;
    for (int64_t in = 0; in < n; ++in)
      for (int64_t k = 0; k < s.k; ++k)
        for (int64_t p = 0; p < h; ++p)
          for (int64_t q = 0; q < w; ++q) {
            double sum = 0;
            for (int64_t ic = 0; ic < cg; ++ic) {
              sum += double(x[s.x.Offset(in, (k / kg) * cg + ic, p, q)]) * wt[k * cg + ic];
            }
            want_y.push_back(sum + 0.5 * y0[s.y.Offset(in, k, p, q)]);
          }
    for (int64_t in = 0; in < n; ++in)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t p = 0; p < h; ++p)
          for (int64_t q = 0; q < w; ++q) {
            double sum = 0;
            const int64_t g = ch / cg;
            for (int64_t k = g * kg; k < (g + 1) * kg; ++k) {
              sum += double(dy[s.y.Offset(in, k, p, q)]) * wt[k * cg + ch % cg];
            }
            want_dx.push_back(sum + 0.5 * dx0[s.x.Offset(in, ch, p, q)]);
          }
    for (int64_t k = 0; k < s.k; ++k)
      for (int64_t ic = 0; ic < cg; ++ic) {
        double sum = 0;
        for (int64_t in = 0; in < n; ++in)
          for (int64_t p = 0; p < h; ++p)
            for (int64_t q = 0; q < w; ++q) {
              sum +=
                  double(dy[s.y.Offset(in, k, p, q)]) * x[s.x.Offset(in, (k / kg) * cg + ic, p, q)];
            }
        want_dw.push_back(sum + 0.5 * dw0[k * cg + ic]);
      }
    SCOPED_TRACE(iter);
    testing::ExpectClose(testing::Logical(s.y, y), want_y, 1e-4, 1e-5, "1x1 fwd");
    testing::ExpectClose(testing::Logical(s.x, dx), want_dx, 1e-4, 1e-5, "1x1 bwd data");
    testing::ExpectClose(dw, want_dw, 1e-4, 1e-5, "1x1 bwd filter");
  }
}

TEST(ConvTest, BackwardHonoursAlphaBeta) {
  std::mt19937 rng(12);
  for (int iter = 0; iter < 20; ++iter) {
    const ConvShape s = RandomShape(rng);
    std::vector<float> x = RandomVec(s.x.Span(), rng), w = RandomVec(FilterSize(s), rng);
    std::vector<float> dy = RandomVec(s.y.Span(), rng);
    std::vector<float> dx1(s.x.Span(), 0.0f), dw1(FilterSize(s), 0.0f);
    ConvBackwardData(s, 1.0f, w.data(), dy.data(), 0.0f, dx1.data(), 1);
    ConvBackwardFilter(s, 1.0f, x.data(), dy.data(), 0.0f, dw1.data(), 1);
    std::vector<float> dx2 = RandomVec(s.x.Span(), rng), dw2 = RandomVec(FilterSize(s), rng);
    const std::vector<float> dx0 = dx2, dw0 = dw2;
    ConvBackwardData(s, 2.0f, w.data(), dy.data(), -0.5f, dx2.data(), 2);
    ConvBackwardFilter(s, 2.0f, x.data(), dy.data(), -0.5f, dw2.data(), 2);
    std::vector<double> want_dx, want_dw;
    const std::vector<float> l1 = testing::Logical(s.x, dx1), l0 = testing::Logical(s.x, dx0);
    for (size_t i = 0; i < l1.size(); ++i) want_dx.push_back(2.0 * l1[i] - 0.5 * l0[i]);
    for (size_t i = 0; i < dw1.size(); ++i) want_dw.push_back(2.0 * dw1[i] - 0.5 * dw0[i]);
    testing::ExpectClose(testing::Logical(s.x, dx2), want_dx, 1e-5, 1e-6, "bwd data alpha/beta");
    testing::ExpectClose(dw2, want_dw, 1e-5, 1e-6, "bwd filter alpha/beta");
    EXPECT_TRUE(testing::GapsUntouched(s.x, dx0, dx2));
  }
}

TEST(ConvTest, BackwardBias) {
  std::mt19937 rng(13);
  const Tensor4 t = RandomLayout(3, 5, 4, 7, rng);
  std::vector<float> dy = RandomVec(t.Span(), rng);
  std::vector<float> db = {1, 2, 3, 4, 5};
  ConvBackwardBias(t, 2.0f, dy.data(), 0.5f, db.data(), 1, 2);
  for (int64_t k = 0; k < t.c; ++k) {
    double sum = 0.0;
    for (int64_t n = 0; n < t.n; ++n)
      for (int64_t h = 0; h < t.h; ++h)
        for (int64_t w = 0; w < t.w; ++w) sum += dy[t.Offset(n, k, h, w)];
    EXPECT_NEAR(db[k], 2.0 * sum + 0.5 * (k + 1), 1e-4);
  }
}

TEST(ConvTest, BetaZeroIgnoresNaNInOutput) {
  std::mt19937 rng(14);
  const ConvShape s = RandomShape(rng);
  std::vector<float> x = RandomVec(s.x.Span(), rng), w = RandomVec(FilterSize(s), rng);
  std::vector<float> y(s.y.Span(), std::numeric_limits<float>::quiet_NaN());
  ConvForward(s, 1.0f, x.data(), w.data(), 0.0f, y.data(), 2);
  for (float v : testing::Logical(s.y, y)) EXPECT_FALSE(std::isnan(v));
}

// A shape big enough that the column matrix is split into chunks, with 1 and 3 threads: the
// results must match the reference and each other bit for bit.
TEST(ConvTest, ChunkedAndThreadIndependent) {
  std::mt19937 rng(15);
  ConvShape s;
  s.x = Tensor4::Packed(1, 16, 180, 181);
  s.k = 2;
  s.r = s.s = 3;
  s.pad_h = s.pad_w = 1;
  s.y = Tensor4::Packed(1, 2, 180, 181);
  ASSERT_TRUE(ConvShapeValid(s));
  std::vector<float> x = RandomVec(s.x.Span(), rng), w = RandomVec(FilterSize(s), rng);
  std::vector<float> dy = RandomVec(s.y.Span(), rng);
  std::vector<float> y1(s.y.Span()), y3(s.y.Span()), dx1(s.x.Span()), dx3(s.x.Span());
  std::vector<float> dw1(FilterSize(s)), dw3(FilterSize(s));
  ConvForward(s, 1.0f, x.data(), w.data(), 0.0f, y1.data(), 1);
  ConvForward(s, 1.0f, x.data(), w.data(), 0.0f, y3.data(), 3);
  ConvBackwardData(s, 1.0f, w.data(), dy.data(), 0.0f, dx1.data(), 1);
  ConvBackwardData(s, 1.0f, w.data(), dy.data(), 0.0f, dx3.data(), 3);
  ConvBackwardFilter(s, 1.0f, x.data(), dy.data(), 0.0f, dw1.data(), 1);
  ConvBackwardFilter(s, 1.0f, x.data(), dy.data(), 0.0f, dw3.data(), 3);
  EXPECT_EQ(0, std::memcmp(y1.data(), y3.data(), y1.size() * 4));
  EXPECT_EQ(0, std::memcmp(dx1.data(), dx3.data(), dx1.size() * 4));
  EXPECT_EQ(0, std::memcmp(dw1.data(), dw3.data(), dw1.size() * 4));
  testing::ExpectClose(y1, RefForward(s, x, w), 1e-4, 1e-5, "chunked fwd");
  // Filter gradient reference: dw[k,c,r,t] = sum dy * x at the tap.
  std::vector<double> want(FilterSize(s), 0.0);
  for (int64_t k = 0; k < s.k; ++k)
    for (int64_t c = 0; c < s.x.c; ++c)
      for (int64_t r = 0; r < 3; ++r)
        for (int64_t t = 0; t < 3; ++t) {
          double sum = 0.0;
          for (int64_t p = 0; p < s.y.h; ++p)
            for (int64_t q = 0; q < s.y.w; ++q) {
              int64_t h, v;
              if (Tap(s, p, q, r, t, &h, &v)) {
                sum += static_cast<double>(dy[s.y.Offset(0, k, p, q)]) * x[s.x.Offset(0, c, h, v)];
              }
            }
          want[((k * s.x.c + c) * 3 + r) * 3 + t] = sum;
        }
  testing::ExpectClose(dw1, want, 1e-3, 1e-3, "chunked bwd filter");
}

}  // namespace
}  // namespace simgpu::kernels
