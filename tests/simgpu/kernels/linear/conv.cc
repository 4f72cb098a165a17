#include "conv.h"

#include <algorithm>
#include <vector>

#include "gemm.h"
#include "parallel.h"

namespace simgpu::kernels {
namespace {

// Floats of im2col scratch per chunk (16 MiB). Chunk widths depend on the shape only, so the
// order of reductions (and hence the bits) does too.
constexpr int64_t kColBudget = int64_t{1} << 22;

struct Geometry {
  int64_t cg, kg, crs, pq;
  int64_t chunk, chunks;  // output columns (p*Q + q) per chunk, and how many chunks
  bool direct;            // 1x1, stride 1, no padding: the input plane is the column matrix
};

Geometry Geo(const ConvShape& s) {
  Geometry g;
  g.cg = s.x.c / s.groups;
  g.kg = s.k / s.groups;
  g.crs = g.cg * s.r * s.s;
  g.pq = s.y.h * s.y.w;
  g.chunk = std::clamp<int64_t>(kColBudget / std::max<int64_t>(g.crs, 1), 1, g.pq);
  g.chunks = (g.pq + g.chunk - 1) / g.chunk;
  g.direct =
      s.r == 1 && s.s == 1 && s.stride_h == 1 && s.stride_w == 1 && s.pad_h == 0 && s.pad_w == 0;
  return g;
}

// Visits, for every column-matrix row (c, r, t) and output column j in [j0, j0+nj), the input
// position it reads: fn(row, j - j0, input offset or -1 for padding). The traversal order is
// fixed, which makes Col2Im's accumulation order fixed.
template <typename Fn>
void ForEachTap(const ConvShape& s, const Geometry& g, int64_t j0, int64_t nj, Fn fn) {
  const int64_t q_extent = s.y.w;
  for (int64_t c = 0; c < g.cg; ++c) {
    for (int64_t r = 0; r < s.r; ++r) {
      for (int64_t t = 0; t < s.s; ++t) {
        const int64_t row = (c * s.r + r) * s.s + t;
        const int64_t rr = s.flip ? s.r - 1 - r : r;
        const int64_t tt = s.flip ? s.s - 1 - t : t;
        int64_t p = j0 / q_extent, q = j0 % q_extent;
        for (int64_t j = 0; j < nj;) {
          const int64_t h = p * s.stride_h - s.pad_h + rr * s.dil_h;
          const int64_t run = std::min(nj - j, q_extent - q);
          const bool row_in = h >= 0 && h < s.x.h;
          for (int64_t u = 0; u < run; ++u) {
            const int64_t w = (q + u) * s.stride_w - s.pad_w + tt * s.dil_w;
            fn(row, j + u,
               row_in && w >= 0 && w < s.x.w ? c * s.x.sc + h * s.x.sh + w * s.x.sw : -1);
          }
          j += run;
          q = 0;
          ++p;
        }
      }
    }
  }
}

// col (crs x nj, row-major) <- the taps of one image and group (xg points at its first channel).
void Im2Col(const ConvShape& s, const Geometry& g, const float* xg, int64_t j0, int64_t nj,
            float* col) {
  ForEachTap(s, g, j0, nj, [&](int64_t row, int64_t j, int64_t off) {
    col[row * nj + j] = off >= 0 ? xg[off] : 0.0f;
  });
}

// Adds col back onto the taps it came from. `plane` holds one image and group in the layout of
// s.x with its base at the group's first channel.
void Col2Im(const ConvShape& s, const Geometry& g, const float* col, int64_t j0, int64_t nj,
            float* plane) {
  ForEachTap(s, g, j0, nj, [&](int64_t row, int64_t j, int64_t off) {
    if (off >= 0) plane[off] += col[row * nj + j];
  });
}

// Copies channels [0, channels) x columns [j0, j0+nj) of a plane that is not linear into a
// packed (channels x nj) buffer.
void GatherColumns(const Tensor4& t, const float* base, int64_t channels, int64_t j0, int64_t nj,
                   float* out) {
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t j = 0; j < nj; ++j) {
      const int64_t jj = j0 + j;
      out[c * nj + j] = base[c * t.sc + (jj / t.w) * t.sh + (jj % t.w) * t.sw];
    }
  }
}

// A (channels x nj) view of columns [j0, j0+nj) of a plane, gathering when it is not linear.
MatView ColumnsView(const Tensor4& t, const float* base, int64_t channels, int64_t j0, int64_t nj,
                    std::vector<float>& buf) {
  if (t.PlaneLinear()) return {base + j0 * t.sw, t.sc, t.sw};
  buf.resize(channels * nj);
  GatherColumns(t, base, channels, j0, nj, buf.data());
  return {buf.data(), nj, 1};
}

// Splits `threads` between independent items (outer) and each item's gemm (inner).
void SplitThreads(int64_t items, int threads, int* outer, int* inner) {
  *outer = static_cast<int>(std::clamp<int64_t>(items, 1, std::max(threads, 1)));
  *inner = std::max(1, threads / *outer);
}

}  // namespace

int64_t ConvOutputDim(int64_t in, int64_t pad, int64_t filter, int64_t stride, int64_t dilation) {
  if (stride <= 0 || dilation <= 0 || filter <= 0) return 0;
  const int64_t span = (filter - 1) * dilation + 1;
  const int64_t room = in + 2 * pad - span;
  if (room < 0) return 0;
  return 1 + room / stride;
}

bool ConvShapeValid(const ConvShape& s) {
  if (s.x.n <= 0 || s.x.c <= 0 || s.x.h <= 0 || s.x.w <= 0) return false;
  if (s.k <= 0 || s.r <= 0 || s.s <= 0 || s.groups <= 0) return false;
  if (s.x.c % s.groups != 0 || s.k % s.groups != 0) return false;
  if (s.pad_h < 0 || s.pad_w < 0) return false;
  const int64_t p = ConvOutputDim(s.x.h, s.pad_h, s.r, s.stride_h, s.dil_h);
  const int64_t q = ConvOutputDim(s.x.w, s.pad_w, s.s, s.stride_w, s.dil_w);
  return p > 0 && q > 0 && s.y.n == s.x.n && s.y.c == s.k && s.y.h == p && s.y.w == q;
}

double ConvFlops(const ConvShape& s) {
  return 2.0 * s.x.n * s.k * (s.x.c / std::max<int64_t>(s.groups, 1)) * s.r * s.s * s.y.h * s.y.w;
}

void ConvForward(const ConvShape& s, float alpha, const float* x, const float* w, float beta,
                 float* y, int threads) {
  const Geometry g = Geo(s);
  const int64_t items = s.x.n * s.groups * g.chunks;
  int outer, inner;
  SplitThreads(items, threads, &outer, &inner);
  ParallelFor(items, outer, [&](int64_t b, int64_t e) {
    std::vector<float> col, tmp;
    for (int64_t it = b; it < e; ++it) {
      const int64_t n = it / (s.groups * g.chunks);
      const int64_t gi = (it / g.chunks) % s.groups;
      const int64_t j0 = (it % g.chunks) * g.chunk;
      const int64_t nj = std::min(g.chunk, g.pq - j0);
      const float* xg = x + n * s.x.sn + gi * g.cg * s.x.sc;
      MatView bm;
      if (g.direct && s.x.PlaneLinear()) {
        bm = {xg + j0 * s.x.sw, s.x.sc, s.x.sw};
      } else {
        col.resize(g.crs * nj);
        Im2Col(s, g, xg, j0, nj, col.data());
        bm = {col.data(), nj, 1};
      }
      const MatView am = {w + gi * g.kg * g.crs, g.crs, 1};
      float* yg = y + n * s.y.sn + gi * g.kg * s.y.sc;
      if (s.y.PlaneLinear()) {
        Gemm(g.kg, nj, g.crs, alpha, am, bm, beta, {yg + j0 * s.y.sw, s.y.sc, s.y.sw}, inner);
        continue;
      }
      tmp.resize(g.kg * nj);
      Gemm(g.kg, nj, g.crs, 1.0f, am, bm, 0.0f, {tmp.data(), nj, 1}, inner);
      for (int64_t k = 0; k < g.kg; ++k) {
        for (int64_t j = 0; j < nj; ++j) {
          const int64_t jj = j0 + j;
          Blend(alpha, tmp[k * nj + j], beta,
                yg + k * s.y.sc + (jj / s.y.w) * s.y.sh + (jj % s.y.w) * s.y.sw);
        }
      }
    }
  });
}

void ConvBackwardData(const ConvShape& s, float alpha, const float* w, const float* dy, float beta,
                      float* dx, int threads) {
  const Geometry g = Geo(s);
  const int64_t items = s.x.n * s.groups;
  int outer, inner;
  SplitThreads(items, threads, &outer, &inner);
  // The image-and-group accumulator, packed c x h x w.
  const Tensor4 packed = Tensor4::Packed(1, g.cg, s.x.h, s.x.w);
  ConvShape sp = s;
  sp.x = packed;
  ParallelFor(items, outer, [&](int64_t b, int64_t e) {
    std::vector<float> col, dybuf, acc;
    for (int64_t it = b; it < e; ++it) {
      const int64_t n = it / s.groups, gi = it % s.groups;
      const float* dyg = dy + n * s.y.sn + gi * g.kg * s.y.sc;
      float* dxg = dx + n * s.x.sn + gi * g.cg * s.x.sc;
      const MatView am = {w + gi * g.kg * g.crs, 1, g.crs};  // W_g transposed
      const bool direct = g.direct && s.x.PlaneLinear();
      if (!direct) acc.assign(g.cg * s.x.h * s.x.w, 0.0f);
      for (int64_t ch = 0; ch < g.chunks; ++ch) {
        const int64_t j0 = ch * g.chunk, nj = std::min(g.chunk, g.pq - j0);
        const MatView bm = ColumnsView(s.y, dyg, g.kg, j0, nj, dybuf);
        if (direct) {  // the columns are dx's own plane: disjoint outputs, scale in place
          Gemm(g.crs, nj, g.kg, alpha, am, bm, beta, {dxg + j0 * s.x.sw, s.x.sc, s.x.sw}, inner);
          continue;
        }
        col.resize(g.crs * nj);
        Gemm(g.crs, nj, g.kg, 1.0f, am, bm, 0.0f, {col.data(), nj, 1}, inner);
        Col2Im(sp, g, col.data(), j0, nj, acc.data());
      }
      if (direct) continue;
      for (int64_t c = 0; c < g.cg; ++c) {
        for (int64_t h = 0; h < s.x.h; ++h) {
          for (int64_t v = 0; v < s.x.w; ++v) {
            Blend(alpha, acc[(c * s.x.h + h) * s.x.w + v], beta,
                  dxg + c * s.x.sc + h * s.x.sh + v * s.x.sw);
          }
        }
      }
    }
  });
}

void ConvBackwardFilter(const ConvShape& s, float alpha, const float* x, const float* dy,
                        float beta, float* dw, int threads) {
  const Geometry g = Geo(s);
  int outer, inner;
  SplitThreads(s.groups, threads, &outer, &inner);
  ParallelFor(s.groups, outer, [&](int64_t b, int64_t e) {
    std::vector<float> col, dybuf, acc(g.kg * g.crs);
    for (int64_t gi = b; gi < e; ++gi) {
      bool first = true;
      for (int64_t n = 0; n < s.x.n; ++n) {
        const float* xg = x + n * s.x.sn + gi * g.cg * s.x.sc;
        const float* dyg = dy + n * s.y.sn + gi * g.kg * s.y.sc;
        for (int64_t ch = 0; ch < g.chunks; ++ch) {
          const int64_t j0 = ch * g.chunk, nj = std::min(g.chunk, g.pq - j0);
          const MatView am = ColumnsView(s.y, dyg, g.kg, j0, nj, dybuf);
          MatView bm;  // columns transposed: (j, crs)
          if (g.direct && s.x.PlaneLinear()) {
            bm = {xg + j0 * s.x.sw, s.x.sw, s.x.sc};
          } else {
            col.resize(g.crs * nj);
            Im2Col(s, g, xg, j0, nj, col.data());
            bm = {col.data(), 1, nj};
          }
          Gemm(g.kg, g.crs, nj, 1.0f, am, bm, first ? 0.0f : 1.0f, {acc.data(), g.crs, 1}, inner);
          first = false;
        }
      }
      float* dwg = dw + gi * g.kg * g.crs;
      for (int64_t i = 0; i < g.kg * g.crs; ++i) Blend(alpha, acc[i], beta, dwg + i);
    }
  });
}

void ConvBackwardBias(const Tensor4& t, float alpha, const float* dy, float beta, float* db,
                      int64_t db_stride, int threads) {
  if (t.n * t.h * t.w < 4096) threads = 1;
  ParallelFor(t.c, threads, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      double sum = 0.0;
      for (int64_t n = 0; n < t.n; ++n) {
        for (int64_t h = 0; h < t.h; ++h) {
          const float* row = dy + t.Offset(n, k, h, 0);
          for (int64_t v = 0; v < t.w; ++v) sum += row[v * t.sw];
        }
      }
      Blend(alpha, static_cast<float>(sum), beta, db + k * db_stride);
    }
  });
}

}  // namespace simgpu::kernels
