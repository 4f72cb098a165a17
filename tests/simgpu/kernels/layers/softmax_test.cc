#include "softmax.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

#include "test_util.h"

namespace simgpu::kernels {
namespace {

using testing::RandomLayout;
using testing::RandomVec;
using testing::Uniform;

template <typename T>
std::vector<double> Ref(SoftmaxAlgo algo, SoftmaxMode mode, const Tensor4& t,
                        const std::vector<T>& x) {
  std::vector<double> y(t.Elements());
  auto idx = [&](int64_t n, int64_t c, int64_t h, int64_t w) {
    return ((n * t.c + c) * t.h + h) * t.w + w;
  };
  auto run = [&](auto&& each) {  // each(visit) calls visit(n,c,h,w) over one group
    double mx = -1e300, sum = 0.0;
    each([&](int64_t n, int64_t c, int64_t h, int64_t w) {
      mx = std::max<double>(mx, x[t.Offset(n, c, h, w)]);
    });
    each([&](int64_t n, int64_t c, int64_t h, int64_t w) {
      sum += std::exp(x[t.Offset(n, c, h, w)] - mx);
    });
    each([&](int64_t n, int64_t c, int64_t h, int64_t w) {
      const double d = x[t.Offset(n, c, h, w)] - mx;
      y[idx(n, c, h, w)] = algo == SoftmaxAlgo::kLog ? d - std::log(sum) : std::exp(d) / sum;
    });
  };
  for (int64_t n = 0; n < t.n; ++n) {
    if (mode == SoftmaxMode::kInstance) {
      run([&](auto visit) {
        for (int64_t c = 0; c < t.c; ++c)
          for (int64_t h = 0; h < t.h; ++h)
            for (int64_t w = 0; w < t.w; ++w) visit(n, c, h, w);
      });
    } else {
      for (int64_t h = 0; h < t.h; ++h)
        for (int64_t w = 0; w < t.w; ++w)
          run([&](auto visit) {
            for (int64_t c = 0; c < t.c; ++c) visit(n, c, h, w);
          });
    }
  }
  return y;
}

class SoftmaxTest : public ::testing::TestWithParam<std::tuple<SoftmaxAlgo, SoftmaxMode>> {};

TEST_P(SoftmaxTest, ForwardAndBackward) {
  const auto [algo, mode] = GetParam();
  std::mt19937 rng(30);
  for (int iter = 0; iter < 12; ++iter) {
    const int64_t n = Uniform(rng, 1, 3), c = Uniform(rng, 1, 5), h = Uniform(rng, 1, 4),
                  w = Uniform(rng, 1, 4);
    const Tensor4 xl = RandomLayout(n, c, h, w, rng), yl = RandomLayout(n, c, h, w, rng);
    std::vector<float> x = RandomVec(xl.Span(), rng, -3, 3), y = RandomVec(yl.Span(), rng);
    const std::vector<float> y0 = y;
    const float beta = iter % 2 ? 0.0f : 0.5f;
    SoftmaxForward(algo, mode, xl, yl, 1.0f, x.data(), beta, y.data(), 2);
    std::vector<double> want = Ref(algo, mode, xl, x);
    const std::vector<float> prior = testing::Logical(yl, y0);
    for (size_t i = 0; i < want.size(); ++i) want[i] += beta * prior[i];
    testing::ExpectClose(testing::Logical(yl, y), want, 1e-5, 1e-6, "softmax fwd");

    // Backward from the exact forward output, against central differences of sum(y * g).
    std::vector<float> yf(yl.Span());
    SoftmaxForward(algo, mode, xl, yl, 1.0f, x.data(), 0.0f, yf.data(), 1);
    const Tensor4 gl = RandomLayout(n, c, h, w, rng), dxl = RandomLayout(n, c, h, w, rng);
    std::vector<float> gf = RandomVec(gl.Span(), rng);
    const std::vector<float> g = testing::Logical(gl, gf);
    std::vector<double> xd(x.begin(), x.end()), fd;
    for (int64_t i0 = 0; i0 < n; ++i0)
      for (int64_t i1 = 0; i1 < c; ++i1)
        for (int64_t i2 = 0; i2 < h; ++i2)
          for (int64_t i3 = 0; i3 < w; ++i3) {
            double& e = xd[xl.Offset(i0, i1, i2, i3)];
            const double keep = e, eps = 1e-5;
            double l[2];
            for (int side = 0; side < 2; ++side) {
              e = keep + (side ? -eps : eps);
              const std::vector<double> yy = Ref(algo, mode, xl, xd);
              l[side] = 0.0;
              for (size_t k = 0; k < yy.size(); ++k) l[side] += yy[k] * g[k];
            }
            e = keep;
            fd.push_back((l[0] - l[1]) / (2 * eps));
          }
    std::vector<float> dx(dxl.Span(), std::numeric_limits<float>::quiet_NaN());
    SoftmaxBackward(algo, mode, yl, gl, dxl, 1.0f, yf.data(), gf.data(), 0.0f, dx.data(), 2);
    testing::ExpectClose(testing::Logical(dxl, dx), fd, 1e-3, 1e-4, "softmax bwd");
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, SoftmaxTest,
    ::testing::Combine(::testing::Values(SoftmaxAlgo::kFast, SoftmaxAlgo::kAccurate,
                                         SoftmaxAlgo::kLog),
                       ::testing::Values(SoftmaxMode::kInstance, SoftmaxMode::kChannel)));

TEST(SoftmaxAccurateTest, LargeInputsDoNotOverflow) {
  const Tensor4 t = Tensor4::Packed(1, 2, 1, 1);
  const float x[2] = {1000.0f, 1000.0f};
  float y[2];
  SoftmaxForward(SoftmaxAlgo::kAccurate, SoftmaxMode::kChannel, t, t, 1.0f, x, 0.0f, y, 1);
  EXPECT_FLOAT_EQ(y[0], 0.5f);
  EXPECT_FLOAT_EQ(y[1], 0.5f);
}

}  // namespace
}  // namespace simgpu::kernels
