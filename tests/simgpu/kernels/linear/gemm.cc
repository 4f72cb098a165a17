// Goto-style blocking: C is cut into kMc x kNc tiles, each owned by one thread. For each kKc
// slice of the reduction axis the thread packs A and B into contiguous panels (which also absorbs
// any strides or transposition) and runs a kMr x kNr register micro-kernel that adds the slice's
// products, in ascending k, into an fp32 accumulator tile. Only after the whole reduction is the
// tile scaled into C. Every element therefore sees the same sequence of operations whatever the
// tile it falls in, the thread count, or the vector lane.
#include "gemm.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "parallel.h"

namespace simgpu::kernels {
namespace {

constexpr int64_t kMr = 4;    // micro-tile rows
constexpr int64_t kNr = 8;    // micro-tile columns (two 4-wide vectors)
constexpr int64_t kMc = 64;   // C tile rows (multiple of kMr)
constexpr int64_t kNc = 256;  // C tile columns (multiple of kNr)
constexpr int64_t kKc = 256;  // reduction slice

typedef float V4 __attribute__((vector_size(16)));

inline V4 Load(const float* p) {
  V4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void Store(float* p, V4 v) { std::memcpy(p, &v, sizeof v); }

// acc (kMr x kNr, row stride ld) += ap (kc x kMr panel) * bp (kc x kNr panel).
void MicroKernel(int64_t kc, const float* ap, const float* bp, float* acc, int64_t ld) {
  V4 c[kMr][2];
  for (int r = 0; r < kMr; ++r) {
    c[r][0] = Load(acc + r * ld);
    c[r][1] = Load(acc + r * ld + 4);
  }
  for (int64_t l = 0; l < kc; ++l) {
    const V4 b0 = Load(bp + l * kNr);
    const V4 b1 = Load(bp + l * kNr + 4);
    for (int r = 0; r < kMr; ++r) {
      const float a = ap[l * kMr + r];
      const V4 av = {a, a, a, a};
      c[r][0] += av * b0;
      c[r][1] += av * b1;
    }
  }
  for (int r = 0; r < kMr; ++r) {
    Store(acc + r * ld, c[r][0]);
    Store(acc + r * ld + 4, c[r][1]);
  }
}

struct Scratch {
  std::vector<float> a, b, acc;
};

// Computes C tile rows [i0, i0+mc), columns [j0, j0+nc).
void Tile(int64_t i0, int64_t mc, int64_t j0, int64_t nc, int64_t k, float alpha, MatView a,
          MatView b, float beta, MutMatView c, Scratch& s) {
  const int64_t mp = (mc + kMr - 1) / kMr * kMr;
  const int64_t np = (nc + kNr - 1) / kNr * kNr;
  s.acc.assign(mp * np, 0.0f);
  s.a.resize(mp * kKc);
  s.b.resize(np * kKc);
  for (int64_t l0 = 0; l0 < k; l0 += kKc) {
    const int64_t kc = std::min(kKc, k - l0);
    // A panels: for each kMr row block, kc x kMr, zero-padded past mc.
    for (int64_t ir = 0; ir < mp; ir += kMr) {
      float* dst = s.a.data() + ir * kc;
      for (int64_t l = 0; l < kc; ++l) {
        for (int64_t r = 0; r < kMr; ++r) {
          const int64_t i = ir + r;
          dst[l * kMr + r] = i < mc ? a.data[(i0 + i) * a.rs + (l0 + l) * a.cs] : 0.0f;
        }
      }
    }
    // B panels: for each kNr column block, kc x kNr, zero-padded past nc.
    for (int64_t jr = 0; jr < np; jr += kNr) {
      float* dst = s.b.data() + jr * kc;
      for (int64_t l = 0; l < kc; ++l) {
        const float* src = b.data + (l0 + l) * b.rs;
        for (int64_t q = 0; q < kNr; ++q) {
          const int64_t j = jr + q;
          dst[l * kNr + q] = j < nc ? src[(j0 + j) * b.cs] : 0.0f;
        }
      }
    }
    for (int64_t ir = 0; ir < mp; ir += kMr) {
      for (int64_t jr = 0; jr < np; jr += kNr) {
        MicroKernel(kc, s.a.data() + ir * kc, s.b.data() + jr * kc, s.acc.data() + ir * np + jr,
                    np);
      }
    }
  }
  for (int64_t i = 0; i < mc; ++i) {
    float* crow = c.data + (i0 + i) * c.rs + j0 * c.cs;
    const float* arow = s.acc.data() + i * np;
    if (beta == 0.0f) {
      for (int64_t j = 0; j < nc; ++j) crow[j * c.cs] = alpha * arow[j];
    } else {
      for (int64_t j = 0; j < nc; ++j) crow[j * c.cs] = alpha * arow[j] + beta * crow[j * c.cs];
    }
  }
}

}  // namespace

void Gemm(int64_t m, int64_t n, int64_t k, float alpha, MatView a, MatView b, float beta,
          MutMatView c, int threads) {
  if (m <= 0 || n <= 0) return;
  if (alpha == 0.0f || k <= 0) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        float* p = c.data + i * c.rs + j * c.cs;
        *p = beta == 0.0f ? 0.0f : beta * *p;
      }
    }
    return;
  }
  const int64_t tiles_m = (m + kMc - 1) / kMc;
  const int64_t tiles_n = (n + kNc - 1) / kNc;
  // Small problems are not worth a thread start (~tens of microseconds).
  if (static_cast<double>(m) * n * k < 2e6) threads = 1;
  ParallelFor(tiles_m * tiles_n, threads, [&](int64_t t0, int64_t t1) {
    Scratch s;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t i0 = (t / tiles_n) * kMc;
      const int64_t j0 = (t % tiles_n) * kNc;
      Tile(i0, std::min(kMc, m - i0), j0, std::min(kNc, n - j0), k, alpha, a, b, beta, c, s);
    }
  });
}

}  // namespace simgpu::kernels
