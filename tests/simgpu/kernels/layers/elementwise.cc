#include "elementwise.h"

#include <algorithm>
#include <cmath>

#include "parallel.h"

namespace simgpu::kernels {
namespace {

constexpr int kMaxOperands = 4;

// Visits `shape` row by row (a row is the innermost dimension) and calls
// row(len, ptr_offsets[], inner_strides[]) for each. Operands broadcast where their dim is 1.
template <int K, typename Row>
void ForEachRow(const TensorNd& shape, const TensorNd* const (&ops)[K], int threads, Row row) {
  static_assert(K <= kMaxOperands);
  const int r = shape.rank;
  if (r <= 0 || r > kMaxDims) return;
  const int64_t len = shape.dim[r - 1];
  const int64_t rows = shape.Elements() / std::max<int64_t>(len, 1);
  int64_t step[K][kMaxDims] = {};
  int64_t inner[K] = {};
  for (int k = 0; k < K; ++k) {
    for (int d = 0; d < r; ++d) step[k][d] = ops[k]->dim[d] == 1 ? 0 : ops[k]->stride[d];
    inner[k] = step[k][r - 1];
  }
  if (shape.Elements() < 32768) threads = 1;
  ParallelFor(rows, threads, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      int64_t off[K] = {};
      int64_t rest = i;
      for (int d = r - 2; d >= 0; --d) {
        const int64_t idx = rest % shape.dim[d];
        rest /= shape.dim[d];
        for (int k = 0; k < K; ++k) off[k] += idx * step[k][d];
      }
      row(len, off, inner);
    }
  });
}

float Act(Activation act, double coef, bool propagate_nan, float x) {
  if (propagate_nan && std::isnan(x)) return x;
  switch (act) {
    case Activation::kSigmoid:
      return static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(x))));
    case Activation::kRelu:
      return x > 0.0f ? x : 0.0f;
    case Activation::kTanh:
      return std::tanh(x);
    case Activation::kClippedRelu:
      return static_cast<float>(std::min<double>(x > 0.0f ? x : 0.0f, coef));
    case Activation::kElu:
      return x > 0.0f ? x : static_cast<float>(coef * std::expm1(static_cast<double>(x)));
  }
  return 0.0f;
}

float ActGrad(Activation act, double coef, float y, float dy, float x) {
  switch (act) {
    case Activation::kSigmoid:
      return dy * y * (1.0f - y);
    case Activation::kRelu:
      return x > 0.0f ? dy : 0.0f;
    case Activation::kTanh:
      return dy * (1.0f - y * y);
    case Activation::kClippedRelu:
      return x > 0.0f && x < coef ? dy : 0.0f;
    case Activation::kElu:
      return x > 0.0f ? dy : static_cast<float>(dy * (y + coef));
  }
  return 0.0f;
}

}  // namespace

TensorNd TensorNd::From4(const Tensor4& t) {
  TensorNd r;
  r.rank = 4;
  const int64_t d[4] = {t.n, t.c, t.h, t.w}, s[4] = {t.sn, t.sc, t.sh, t.sw};
  std::copy(d, d + 4, r.dim);
  std::copy(s, s + 4, r.stride);
  return r;
}

int64_t TensorNd::Elements() const {
  if (rank == 0) return 0;
  int64_t e = 1;
  for (int d = 0; d < rank; ++d) e *= dim[d];
  return e;
}

int64_t TensorNd::Span() const {
  if (Elements() == 0) return 0;
  int64_t s = 1;
  for (int d = 0; d < rank; ++d) s += (dim[d] - 1) * stride[d];
  return s;
}

bool TensorNd::SameDims(const TensorNd& o) const {
  return rank == o.rank && std::equal(dim, dim + rank, o.dim);
}

bool TensorNd::BroadcastsTo(const TensorNd& full) const {
  if (rank != full.rank) return false;
  for (int d = 0; d < rank; ++d) {
    if (dim[d] != full.dim[d] && dim[d] != 1) return false;
  }
  return true;
}

void ActivationForward(Activation act, double coef, bool propagate_nan, const TensorNd& xl,
                       const float* x, const TensorNd& yl, float alpha, float beta, float* y,
                       int threads) {
  const TensorNd* const ops[2] = {&xl, &yl};
  ForEachRow<2>(yl, ops, threads, [&](int64_t len, const int64_t* off, const int64_t* in) {
    for (int64_t j = 0; j < len; ++j) {
      Blend(alpha, Act(act, coef, propagate_nan, x[off[0] + j * in[0]]), beta,
            y + off[1] + j * in[1]);
    }
  });
}

void ActivationBackward(Activation act, double coef, const TensorNd& yl, const float* y,
                        const TensorNd& dyl, const float* dy, const TensorNd& xl, const float* x,
                        const TensorNd& dxl, float alpha, float beta, float* dx, int threads) {
  const TensorNd* const ops[4] = {&yl, &dyl, &xl, &dxl};
  ForEachRow<4>(dxl, ops, threads, [&](int64_t len, const int64_t* off, const int64_t* in) {
    for (int64_t j = 0; j < len; ++j) {
      const float g =
          ActGrad(act, coef, y[off[0] + j * in[0]], dy[off[1] + j * in[1]], x[off[2] + j * in[2]]);
      Blend(alpha, g, beta, dx + off[3] + j * in[3]);
    }
  });
}

void OpTensor(TensorOp op, const TensorNd& al, const float* a, float alpha1, const TensorNd& bl,
              const float* b, float alpha2, const TensorNd& cl, float beta, float* c, int threads) {
  const TensorNd* const ops[3] = {&al, op == TensorOp::kSqrt ? &al : &bl, &cl};
  if (op == TensorOp::kSqrt) b = a;
  ForEachRow<3>(cl, ops, threads, [&](int64_t len, const int64_t* off, const int64_t* in) {
    for (int64_t j = 0; j < len; ++j) {
      const float va = alpha1 * a[off[0] + j * in[0]];
      float v;
      switch (op) {
        case TensorOp::kAdd:
          v = va + alpha2 * b[off[1] + j * in[1]];
          break;
        case TensorOp::kMul:
          v = va * (alpha2 * b[off[1] + j * in[1]]);
          break;
        case TensorOp::kMin:
          v = std::min(va, alpha2 * b[off[1] + j * in[1]]);
          break;
        case TensorOp::kMax:
          v = std::max(va, alpha2 * b[off[1] + j * in[1]]);
          break;
        case TensorOp::kSqrt:
          v = std::sqrt(va);
          break;
        default:
          v = 0.0f;
      }
      Blend(1.0f, v, beta, c + off[2] + j * in[2]);
    }
  });
}

void AddTensor(const TensorNd& al, const float* a, float alpha, const TensorNd& cl, float beta,
               float* c, int threads) {
  const TensorNd* const ops[2] = {&al, &cl};
  ForEachRow<2>(cl, ops, threads, [&](int64_t len, const int64_t* off, const int64_t* in) {
    for (int64_t j = 0; j < len; ++j)
      Blend(alpha, a[off[0] + j * in[0]], beta, c + off[1] + j * in[1]);
  });
}

void ScaleTensor(const TensorNd& yl, float* y, float alpha, int threads) {
  const TensorNd* const ops[1] = {&yl};
  ForEachRow<1>(yl, ops, threads, [&](int64_t len, const int64_t* off, const int64_t* in) {
    for (int64_t j = 0; j < len; ++j) y[off[0] + j * in[0]] *= alpha;
  });
}

void SetTensor(const TensorNd& yl, float* y, float value, int threads) {
  const TensorNd* const ops[1] = {&yl};
  ForEachRow<1>(yl, ops, threads, [&](int64_t len, const int64_t* off, const int64_t* in) {
    for (int64_t j = 0; j < len; ++j) y[off[0] + j * in[0]] = value;
  });
}

}  // namespace simgpu::kernels
