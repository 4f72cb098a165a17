#include "gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "test_util.h"

namespace simgpu::kernels {
namespace {

using testing::RandomVec;
using testing::Uniform;

struct Case {
  int64_t m, n, k;
  bool ta, tb, c_col_major;
};

// Runs Gemm on random data with the given layouts and checks against a double reference.
void Check(const Case& cs, float alpha, float beta, int threads, std::mt19937& rng) {
  const int64_t lda = (cs.ta ? cs.k : cs.m) + Uniform(rng, 0, 3);
  const int64_t ldb = (cs.tb ? cs.n : cs.k) + Uniform(rng, 0, 3);
  const int64_t ldc = (cs.c_col_major ? cs.m : cs.n) + Uniform(rng, 0, 3);
  // Column-major storage of op(A) (m x k): A is lda x k (N) or lda x m (T).
  std::vector<float> a = RandomVec(lda * (cs.ta ? cs.m : cs.k), rng);
  std::vector<float> b = RandomVec(ldb * (cs.tb ? cs.k : cs.n), rng);
  std::vector<float> c = RandomVec(ldc * (cs.c_col_major ? cs.n : cs.m), rng);
  const MatView av = cs.ta ? MatView{a.data(), lda, 1} : MatView{a.data(), 1, lda};
  const MatView bv = cs.tb ? MatView{b.data(), ldb, 1} : MatView{b.data(), 1, ldb};
  const MutMatView cv =
      cs.c_col_major ? MutMatView{c.data(), 1, ldc} : MutMatView{c.data(), ldc, 1};
  std::vector<double> want(cs.m * cs.n);
  for (int64_t i = 0; i < cs.m; ++i) {
    for (int64_t j = 0; j < cs.n; ++j) {
      double sum = 0.0;
      for (int64_t l = 0; l < cs.k; ++l) {
        sum += static_cast<double>(av.data[i * av.rs + l * av.cs]) * bv.data[l * bv.rs + j * bv.cs];
      }
      const double prior = c[i * cv.rs + j * cv.cs];
      want[i * cs.n + j] = alpha * sum + (beta == 0.0f ? 0.0 : beta * prior);
    }
  }
  Gemm(cs.m, cs.n, cs.k, alpha, av, bv, beta, cv, threads);
  std::vector<float> got(cs.m * cs.n);
  for (int64_t i = 0; i < cs.m; ++i)
    for (int64_t j = 0; j < cs.n; ++j) got[i * cs.n + j] = c[i * cv.rs + j * cv.cs];
  testing::ExpectClose(got, want, 1e-4, 1e-5 * (cs.k + 1), "gemm");
}

TEST(GemmTest, MatchesReferenceOnRandomShapesAndLayouts) {
  std::mt19937 rng(1);
  const int64_t sizes[] = {1, 2, 3, 5, 8, 17, 64, 65, 130, 300};
  for (int iter = 0; iter < 60; ++iter) {
    Case cs{sizes[Uniform(rng, 0, 9)], sizes[Uniform(rng, 0, 9)], sizes[Uniform(rng, 0, 9)],
            Uniform(rng, 0, 1) == 1,   Uniform(rng, 0, 1) == 1,   Uniform(rng, 0, 1) == 1};
    const float alpha = iter % 3 == 0 ? 1.0f : 0.75f;
    const float beta = iter % 4 == 0 ? 0.0f : (iter % 4 == 1 ? 1.0f : -0.5f);
    SCOPED_TRACE(::testing::Message() << "m=" << cs.m << " n=" << cs.n << " k=" << cs.k);
    Check(cs, alpha, beta, 1 + iter % 3, rng);
  }
}

TEST(GemmTest, BetaZeroDoesNotReadC) {
  std::mt19937 rng(2);
  const int64_t m = 7, n = 9, k = 5;
  std::vector<float> a = RandomVec(m * k, rng), b = RandomVec(k * n, rng);
  std::vector<float> c(m * n, std::numeric_limits<float>::quiet_NaN());
  Gemm(m, n, k, 1.0f, {a.data(), k, 1}, {b.data(), n, 1}, 0.0f, {c.data(), n, 1}, 2);
  for (float v : c) EXPECT_FALSE(std::isnan(v));
}

TEST(GemmTest, AlphaZeroDoesNotReadAOrB) {
  const int64_t m = 3, n = 4, k = 2;
  std::vector<float> a(m * k, std::numeric_limits<float>::quiet_NaN()), b(a);
  b.resize(k * n, std::numeric_limits<float>::quiet_NaN());
  std::vector<float> c(m * n, 2.0f);
  Gemm(m, n, k, 0.0f, {a.data(), k, 1}, {b.data(), n, 1}, 0.5f, {c.data(), n, 1}, 1);
  for (float v : c) EXPECT_EQ(v, 1.0f);
}

TEST(GemmTest, BitsDoNotDependOnThreadCount) {
  std::mt19937 rng(3);
  const int64_t m = 200, n = 600, k = 700;
  std::vector<float> a = RandomVec(m * k, rng), b = RandomVec(k * n, rng);
  std::vector<float> c1(m * n), c4(m * n);
  Gemm(m, n, k, 1.0f, {a.data(), k, 1}, {b.data(), n, 1}, 0.0f, {c1.data(), n, 1}, 1);
  Gemm(m, n, k, 1.0f, {a.data(), k, 1}, {b.data(), n, 1}, 0.0f, {c4.data(), n, 1}, 4);
  EXPECT_EQ(0, std::memcmp(c1.data(), c4.data(), c1.size() * sizeof(float)));
}

}  // namespace
}  // namespace simgpu::kernels
