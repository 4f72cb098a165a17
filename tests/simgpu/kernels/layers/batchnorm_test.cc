#include "batchnorm.h"

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

// Stat index of logical element (c, h, w).
int64_t StatOf(const BnShape& s, int64_t c, int64_t h, int64_t w) {
  return s.per_activation ? (c * s.x.h + h) * s.x.w + w : c;
}

// Double reference of the training forward: y in logical order, plus mean and biased var.
template <typename T>
std::vector<double> RefTrain(const BnShape& s, const std::vector<T>& x, const std::vector<T>& scale,
                             const std::vector<T>& bias, double eps,
                             std::vector<double>* mean_out = nullptr,
                             std::vector<double>* var_out = nullptr) {
  const int64_t stats = s.Stats();
  std::vector<double> mean(stats, 0.0), var(stats, 0.0);
  const double m = static_cast<double>(s.PerStat());
  auto each = [&](auto fn) {
    for (int64_t n = 0; n < s.x.n; ++n)
      for (int64_t c = 0; c < s.x.c; ++c)
        for (int64_t h = 0; h < s.x.h; ++h)
          for (int64_t w = 0; w < s.x.w; ++w) fn(StatOf(s, c, h, w), x[s.x.Offset(n, c, h, w)]);
  };
  each([&](int64_t si, double v) { mean[si] += v / m; });
  each([&](int64_t si, double v) { var[si] += (v - mean[si]) * (v - mean[si]) / m; });
  std::vector<double> y;
  each([&](int64_t si, double v) {
    y.push_back(scale[si] * (v - mean[si]) / std::sqrt(var[si] + eps) + bias[si]);
  });
  if (mean_out) *mean_out = mean;
  if (var_out) *var_out = var;
  return y;
}

class BatchNormTest : public ::testing::TestWithParam<bool> {};

TEST_P(BatchNormTest, TrainingForwardAndRunningStatistics) {
  std::mt19937 rng(40);
  for (int iter = 0; iter < 20; ++iter) {
    BnShape s;
    s.per_activation = GetParam();
    s.x = RandomLayout(Uniform(rng, 2, 4), Uniform(rng, 1, 4), Uniform(rng, 1, 5),
                       Uniform(rng, 1, 5), rng);
    const Tensor4 yl = RandomLayout(s.x.n, s.x.c, s.x.h, s.x.w, rng);
    const int64_t stats = s.Stats();
    std::vector<float> x = RandomVec(s.x.Span(), rng, -2, 3), y = RandomVec(yl.Span(), rng);
    std::vector<float> scale = RandomVec(stats, rng), bias = RandomVec(stats, rng);
    std::vector<float> rm = RandomVec(stats, rng), rv = RandomVec(stats, rng, 0.5, 2);
    const std::vector<float> rm0 = rm, rv0 = rv, y0 = y;
    std::vector<float> sm(stats), siv(stats);
    const double eps = 1e-5, factor = 0.1;
    const float alpha = 1.0f, beta = iter % 2 ? 0.0f : 0.5f;
    BnForwardTraining(s, yl, alpha, beta, x.data(), y.data(), scale.data(), bias.data(), factor,
                      rm.data(), rv.data(), eps, sm.data(), siv.data(), 2);
    std::vector<double> mean, var;
    std::vector<double> want = RefTrain(s, x, scale, bias, eps, &mean, &var);
    const std::vector<float> prior = testing::Logical(yl, y0);
    for (size_t i = 0; i < want.size(); ++i) want[i] = alpha * want[i] + beta * prior[i];
    testing::ExpectClose(testing::Logical(yl, y), want, 1e-4, 1e-5, "bn fwd");
    const double m = static_cast<double>(s.PerStat());
    std::vector<double> want_rm, want_rv, want_sm, want_siv;
    for (int64_t i = 0; i < stats; ++i) {
      want_rm.push_back((1 - factor) * rm0[i] + factor * mean[i]);
      want_rv.push_back((1 - factor) * rv0[i] + factor * var[i] * m / (m - 1));
      want_sm.push_back(mean[i]);
      want_siv.push_back(1.0 / std::sqrt(var[i] + eps));
    }
    testing::ExpectClose(rm, want_rm, 1e-5, 1e-6, "running mean");
    testing::ExpectClose(rv, want_rv, 1e-5, 1e-6, "running var (unbiased)");
    testing::ExpectClose(sm, want_sm, 1e-5, 1e-6, "saved mean");
    testing::ExpectClose(siv, want_siv, 1e-4, 1e-5, "saved inv var");
  }
}

TEST_P(BatchNormTest, InferenceForward) {
  std::mt19937 rng(41);
  BnShape s;
  s.per_activation = GetParam();
  s.x = Tensor4::Packed(3, 4, 2, 3);
  const int64_t stats = s.Stats();
  std::vector<float> x = RandomVec(s.x.Span(), rng), y(s.x.Span(), std::nanf(""));
  std::vector<float> scale = RandomVec(stats, rng), bias = RandomVec(stats, rng);
  std::vector<float> em = RandomVec(stats, rng), ev = RandomVec(stats, rng, 0.5, 2);
  BnForwardInference(s, s.x, 1.0f, 0.0f, x.data(), y.data(), scale.data(), bias.data(), em.data(),
                     ev.data(), 1e-3, 1);
  std::vector<double> want;
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t c = 0; c < 4; ++c)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t w = 0; w < 3; ++w) {
          const int64_t si = StatOf(s, c, h, w);
          want.push_back(scale[si] * (x[s.x.Offset(n, c, h, w)] - em[si]) /
                             std::sqrt(ev[si] + 1e-3) +
                         bias[si]);
        }
  testing::ExpectClose(y, want, 1e-5, 1e-6, "bn inference");
}

TEST_P(BatchNormTest, BackwardMatchesFiniteDifferences) {
  std::mt19937 rng(42);
  for (int iter = 0; iter < 10; ++iter) {
    BnShape s;
    s.per_activation = GetParam();
    s.x = RandomLayout(Uniform(rng, 2, 3), Uniform(rng, 1, 3), Uniform(rng, 1, 3),
                       Uniform(rng, 1, 3), rng);
    const Tensor4 dyl = RandomLayout(s.x.n, s.x.c, s.x.h, s.x.w, rng);
    const Tensor4 dxl = RandomLayout(s.x.n, s.x.c, s.x.h, s.x.w, rng);
    const int64_t stats = s.Stats();
    const double eps = 1e-3;
    std::vector<float> xf = RandomVec(s.x.Span(), rng, -2, 2), gf = RandomVec(dyl.Span(), rng);
    std::vector<float> scf = RandomVec(stats, rng), bf = RandomVec(stats, rng);
    const std::vector<float> g = testing::Logical(dyl, gf);
    std::vector<double> x(xf.begin(), xf.end()), sc(scf.begin(), scf.end()),
        b(bf.begin(), bf.end());
    auto loss = [&] {
      const std::vector<double> y = RefTrain(s, x, sc, b, eps);
      double l = 0.0;
      for (size_t i = 0; i < y.size(); ++i) l += y[i] * g[i];
      return l;
    };
    auto fd = [&](double& e) {
      const double keep = e, h = 1e-5;
      e = keep + h;
      const double up = loss();
      e = keep - h;
      const double down = loss();
      e = keep;
      return (up - down) / (2 * h);
    };
    std::vector<double> want_dx, want_ds, want_db;
    for (int64_t n = 0; n < s.x.n; ++n)
      for (int64_t c = 0; c < s.x.c; ++c)
        for (int64_t h = 0; h < s.x.h; ++h)
          for (int64_t w = 0; w < s.x.w; ++w) want_dx.push_back(fd(x[s.x.Offset(n, c, h, w)]));
    for (int64_t i = 0; i < stats; ++i) {
      want_ds.push_back(fd(sc[i]));
      want_db.push_back(fd(b[i]));
    }
    std::vector<float> sm(stats), siv(stats);
    std::vector<float> y(s.x.Span());
    BnForwardTraining(s, s.x, 1.0f, 0.0f, xf.data(), y.data(), scf.data(), bf.data(), 0.0, nullptr,
                      nullptr, eps, sm.data(), siv.data(), 1);
    for (int saved = 0; saved < 2; ++saved) {
      std::vector<float> dx(dxl.Span(), std::nanf("")), ds(stats, std::nanf("")),
          db(stats, std::nanf(""));
      BnBackward(s, dyl, dxl, 1.0f, 0.0f, 1.0f, 0.0f, xf.data(), gf.data(), dx.data(), scf.data(),
                 ds.data(), db.data(), eps, saved ? sm.data() : nullptr,
                 saved ? siv.data() : nullptr, 2);
      testing::ExpectClose(testing::Logical(dxl, dx), want_dx, 2e-3, 2e-4, "bn dx");
      testing::ExpectClose(ds, want_ds, 1e-3, 1e-4, "bn dscale");
      testing::ExpectClose(db, want_db, 1e-3, 1e-4, "bn dbias");
    }
    // alpha/beta on both outputs: result = 2 * grad + 0.5 * prior.
    std::vector<float> dx(dxl.Span(), 1.0f), ds(stats, 1.0f), db(stats, 1.0f);
    BnBackward(s, dyl, dxl, 2.0f, 0.5f, 2.0f, 0.5f, xf.data(), gf.data(), dx.data(), scf.data(),
               ds.data(), db.data(), eps, sm.data(), siv.data(), 1);
    for (double& v : want_dx) v = 2 * v + 0.5;
    for (double& v : want_ds) v = 2 * v + 0.5;
    for (double& v : want_db) v = 2 * v + 0.5;
    testing::ExpectClose(testing::Logical(dxl, dx), want_dx, 2e-3, 4e-4, "bn dx blended");
    testing::ExpectClose(ds, want_ds, 1e-3, 2e-4, "bn dscale blended");
    testing::ExpectClose(db, want_db, 1e-3, 2e-4, "bn dbias blended");
  }
}

INSTANTIATE_TEST_SUITE_P(SpatialAndPerActivation, BatchNormTest, ::testing::Bool());

}  // namespace
}  // namespace simgpu::kernels
