// Helpers for the kernel tests: random data and layouts, closeness checks. Test-only.
#ifndef POOCH_TESTS_SIMGPU_KERNELS_TEST_UTIL_H_
#define POOCH_TESTS_SIMGPU_KERNELS_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "layout.h"

namespace simgpu::kernels::testing {

inline std::vector<float> RandomVec(int64_t n, std::mt19937& rng, float lo = -1.0f,
                                    float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& f : v) f = d(rng);
  return v;
}

inline int64_t Uniform(std::mt19937& rng, int64_t lo, int64_t hi) {  // inclusive
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

// Packed NCHW, NHWC, or NCHW with gaps between rows, channels and images, chosen at random.
inline Tensor4 RandomLayout(int64_t n, int64_t c, int64_t h, int64_t w, std::mt19937& rng) {
  switch (Uniform(rng, 0, 2)) {
    case 0:
      return Tensor4::Packed(n, c, h, w);
    case 1:
      return {n, c, h, w, h * w * c, 1, w * c, c};
    default: {
      const int64_t sw = Uniform(rng, 1, 2);
      const int64_t sh = w * sw + Uniform(rng, 0, 3);
      const int64_t sc = h * sh + Uniform(rng, 0, 5);
      const int64_t sn = c * sc + Uniform(rng, 0, 7);
      return {n, c, h, w, sn, sc, sh, sw};
    }
  }
}

// |got - want| <= atol + rtol * |want|, elementwise, with the first failures reported.
template <typename A, typename B>
void ExpectClose(const std::vector<A>& got, const std::vector<B>& want, double rtol, double atol,
                 const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int failures = 0;
  for (size_t i = 0; i < got.size() && failures < 5; ++i) {
    const double g = got[i], w = want[i];
    if (!(std::fabs(g - w) <= atol + rtol * std::fabs(w))) {
      ADD_FAILURE() << what << " [" << i << "]: got " << g << " want " << w;
      ++failures;
    }
  }
}

// The logical elements of t inside buf, in NCHW order.
inline std::vector<float> Logical(const Tensor4& t, const std::vector<float>& buf) {
  std::vector<float> out;
  out.reserve(t.Elements());
  for (int64_t n = 0; n < t.n; ++n)
    for (int64_t c = 0; c < t.c; ++c)
      for (int64_t h = 0; h < t.h; ++h)
        for (int64_t w = 0; w < t.w; ++w) out.push_back(buf[t.Offset(n, c, h, w)]);
  return out;
}

// True when the two buffers agree everywhere outside t's elements (gaps are never written).
inline bool GapsUntouched(const Tensor4& t, const std::vector<float>& before,
                          const std::vector<float>& after) {
  std::vector<bool> in(before.size(), false);
  for (int64_t n = 0; n < t.n; ++n)
    for (int64_t c = 0; c < t.c; ++c)
      for (int64_t h = 0; h < t.h; ++h)
        for (int64_t w = 0; w < t.w; ++w) in[t.Offset(n, c, h, w)] = true;
  for (size_t i = 0; i < before.size(); ++i) {
    if (!in[i] && std::memcmp(&before[i], &after[i], sizeof(float)) != 0) return false;
  }
  return true;
}

}  // namespace simgpu::kernels::testing

#endif  // POOCH_TESTS_SIMGPU_KERNELS_TEST_UTIL_H_
