#include "elementwise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "test_util.h"

namespace simgpu::kernels {
namespace {

using testing::RandomLayout;
using testing::RandomVec;
using testing::Uniform;

double RefAct(Activation a, double coef, double x) {
  switch (a) {
    case Activation::kSigmoid:
      return 1 / (1 + std::exp(-x));
    case Activation::kRelu:
      return x > 0 ? x : 0;
    case Activation::kTanh:
      return std::tanh(x);
    case Activation::kClippedRelu:
      return std::min(x > 0 ? x : 0, coef);
    case Activation::kElu:
      return x > 0 ? x : coef * (std::exp(x) - 1);
  }
  return 0;
}

class ActivationTest : public ::testing::TestWithParam<Activation> {};

TEST_P(ActivationTest, ForwardAndBackward) {
  const Activation act = GetParam();
  const double coef = 0.8;
  std::mt19937 rng(50);
  for (int iter = 0; iter < 10; ++iter) {
    const int64_t n = Uniform(rng, 1, 3), c = Uniform(rng, 1, 4), h = Uniform(rng, 1, 5),
                  w = Uniform(rng, 1, 5);
    const Tensor4 x4 = RandomLayout(n, c, h, w, rng), y4 = RandomLayout(n, c, h, w, rng);
    const TensorNd xl = TensorNd::From4(x4), yl = TensorNd::From4(y4);
    std::vector<float> x = RandomVec(x4.Span(), rng, -2, 2);
    // Keep away from the kinks (0 and the clip) so central differences are meaningful.
    for (float& v : x) {
      if (std::fabs(v) < 0.05f) v += 0.1f;
      if (std::fabs(v - coef) < 0.05f) v += 0.1f;
    }
    std::vector<float> y = RandomVec(y4.Span(), rng);
    const std::vector<float> y0 = y;
    const float beta = iter % 2 ? 0.0f : -1.0f;
    ActivationForward(act, coef, false, xl, x.data(), yl, 2.0f, beta, y.data(), 2);
    const std::vector<float> lx = testing::Logical(x4, x), prior = testing::Logical(y4, y0);
    std::vector<double> want;
    for (size_t i = 0; i < lx.size(); ++i)
      want.push_back(2 * RefAct(act, coef, lx[i]) + beta * prior[i]);
    testing::ExpectClose(testing::Logical(y4, y), want, 1e-5, 1e-6, "act fwd");

    std::vector<float> yf(y4.Span());
    ActivationForward(act, coef, false, xl, x.data(), yl, 1.0f, 0.0f, yf.data(), 1);
    const Tensor4 g4 = RandomLayout(n, c, h, w, rng), dx4 = RandomLayout(n, c, h, w, rng);
    std::vector<float> g = RandomVec(g4.Span(), rng);
    const std::vector<float> lg = testing::Logical(g4, g);
    std::vector<double> fd;
    for (size_t i = 0; i < lx.size(); ++i) {
      const double e = 1e-4;
      fd.push_back(lg[i] * (RefAct(act, coef, lx[i] + e) - RefAct(act, coef, lx[i] - e)) / (2 * e));
    }
    std::vector<float> dx(dx4.Span(), std::nanf(""));
    ActivationBackward(act, coef, yl, yf.data(), TensorNd::From4(g4), g.data(), xl, x.data(),
                       TensorNd::From4(dx4), 1.0f, 0.0f, dx.data(), 2);
    testing::ExpectClose(testing::Logical(dx4, dx), fd, 1e-3, 1e-4, "act bwd");
  }
}

TEST(ActivationNanTest, ReluPropagatesNanOnlyWhenAsked) {
  const TensorNd t = TensorNd::From4(Tensor4::Packed(1, 1, 1, 1));
  const float x = std::numeric_limits<float>::quiet_NaN();
  float y = 5.0f;
  ActivationForward(Activation::kRelu, 0.0, false, t, &x, t, 1.0f, 0.0f, &y, 1);
  EXPECT_EQ(y, 0.0f);
  ActivationForward(Activation::kRelu, 0.0, true, t, &x, t, 1.0f, 0.0f, &y, 1);
  EXPECT_TRUE(std::isnan(y));
}

INSTANTIATE_TEST_SUITE_P(All, ActivationTest,
                         ::testing::Values(Activation::kSigmoid, Activation::kRelu,
                                           Activation::kTanh, Activation::kClippedRelu,
                                           Activation::kElu));

TensorNd Packed(std::vector<int64_t> dims) {
  TensorNd t;
  t.rank = static_cast<int>(dims.size());
  int64_t stride = 1;
  for (int d = t.rank - 1; d >= 0; --d) {
    t.dim[d] = dims[d];
    t.stride[d] = stride;
    stride *= dims[d];
  }
  return t;
}

TEST(TensorOpTest, BroadcastOpsAndBlend) {
  std::mt19937 rng(51);
  const TensorNd cl = Packed({2, 3, 4, 5}), bl = Packed({1, 3, 1, 1});
  std::vector<float> a = RandomVec(cl.Elements(), rng, 0.1f, 2.0f), b = RandomVec(3, rng);
  const TensorOp ops[] = {TensorOp::kAdd, TensorOp::kMul, TensorOp::kMin, TensorOp::kMax,
                          TensorOp::kSqrt};
  for (TensorOp op : ops) {
    std::vector<float> c = RandomVec(cl.Elements(), rng);
    const std::vector<float> c0 = c;
    OpTensor(op, cl, a.data(), 0.5f, bl, b.data(), -2.0f, cl, 0.25f, c.data(), 2);
    for (int64_t i = 0; i < cl.Elements(); ++i) {
      const int64_t ch = (i / 20) % 3;
      const double va = 0.5 * a[i], vb = -2.0 * b[ch];
      double v = 0;
      switch (op) {
        case TensorOp::kAdd:
          v = va + vb;
          break;
        case TensorOp::kMul:
          v = va * vb;
          break;
        case TensorOp::kMin:
          v = std::min(va, vb);
          break;
        case TensorOp::kMax:
          v = std::max(va, vb);
          break;
        case TensorOp::kSqrt:
          v = std::sqrt(va);
          break;
      }
      EXPECT_NEAR(c[i], v + 0.25 * c0[i], 1e-5) << static_cast<int>(op) << " at " << i;
    }
  }
}

TEST(TensorOpTest, AddScaleSet) {
  std::mt19937 rng(52);
  const TensorNd cl = Packed({2, 3, 2, 2}), al = Packed({1, 3, 1, 1});
  std::vector<float> a = RandomVec(3, rng);
  std::vector<float> c(cl.Elements(), std::numeric_limits<float>::quiet_NaN());
  AddTensor(al, a.data(), 2.0f, cl, 0.0f, c.data(), 1);  // beta 0: NaN must not survive
  for (int64_t i = 0; i < cl.Elements(); ++i) EXPECT_FLOAT_EQ(c[i], 2.0f * a[(i / 4) % 3]);
  AddTensor(al, a.data(), 1.0f, cl, 1.0f, c.data(), 1);
  for (int64_t i = 0; i < cl.Elements(); ++i) EXPECT_FLOAT_EQ(c[i], 3.0f * a[(i / 4) % 3]);
  ScaleTensor(cl, c.data(), 2.0f, 1);
  for (int64_t i = 0; i < cl.Elements(); ++i) EXPECT_FLOAT_EQ(c[i], 6.0f * a[(i / 4) % 3]);
  // Set through a strided view touches only its elements.
  TensorNd every_other = Packed({12});
  every_other.dim[0] = 6;
  every_other.stride[0] = 2;
  SetTensor(every_other, c.data(), 7.0f, 1);
  for (int64_t i = 0; i < 12; ++i) {
    if (i % 2 == 0)
      EXPECT_EQ(c[i], 7.0f);
    else
      EXPECT_FLOAT_EQ(c[i], 6.0f * a[(i / 4) % 3]);
  }
}

}  // namespace
}  // namespace simgpu::kernels
