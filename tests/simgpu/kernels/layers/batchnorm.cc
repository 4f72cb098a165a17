#include "batchnorm.h"

#include <cmath>
#include <vector>

#include "parallel.h"

namespace simgpu::kernels {
namespace {

// Calls fn(offset in t) for every element that statistic `si` covers, in a fixed order.
template <typename Fn>
void ForEachInStat(const BnShape& s, const Tensor4& t, int64_t si, Fn fn) {
  if (!s.per_activation) {
    for (int64_t n = 0; n < s.x.n; ++n) {
      for (int64_t h = 0; h < s.x.h; ++h) {
        for (int64_t w = 0; w < s.x.w; ++w) fn(t.Offset(n, si, h, w));
      }
    }
    return;
  }
  const int64_t hw = s.x.h * s.x.w;
  const int64_t c = si / hw, h = (si % hw) / s.x.w, w = si % s.x.w;
  for (int64_t n = 0; n < s.x.n; ++n) fn(t.Offset(n, c, h, w));
}

int ThreadsFor(const BnShape& s, int threads) { return s.x.Elements() < 16384 ? 1 : threads; }

void MeanVar(const BnShape& s, const float* x, int64_t si, double* mean, double* var) {
  double sum = 0.0;
  ForEachInStat(s, s.x, si, [&](int64_t o) { sum += x[o]; });
  const double m = sum / static_cast<double>(s.PerStat());
  double sq = 0.0;
  ForEachInStat(s, s.x, si, [&](int64_t o) {
    const double d = x[o] - m;
    sq += d * d;
  });
  *mean = m;
  *var = sq / static_cast<double>(s.PerStat());
}

// Writes alpha * (scale * (x - mean) * inv + bias) + beta * y for one statistic.
void Normalize(const BnShape& s, const Tensor4& yl, int64_t si, float alpha, float beta,
               const float* x, float* y, double scale, double bias, double mean, double inv) {
  if (!s.per_activation) {
    for (int64_t n = 0; n < s.x.n; ++n) {
      for (int64_t h = 0; h < s.x.h; ++h) {
        for (int64_t w = 0; w < s.x.w; ++w) {
          const double v = scale * (x[s.x.Offset(n, si, h, w)] - mean) * inv + bias;
          Blend(alpha, static_cast<float>(v), beta, y + yl.Offset(n, si, h, w));
        }
      }
    }
    return;
  }
  const int64_t hw = s.x.h * s.x.w;
  const int64_t c = si / hw, h = (si % hw) / s.x.w, w = si % s.x.w;
  for (int64_t n = 0; n < s.x.n; ++n) {
    const double v = scale * (x[s.x.Offset(n, c, h, w)] - mean) * inv + bias;
    Blend(alpha, static_cast<float>(v), beta, y + yl.Offset(n, c, h, w));
  }
}

}  // namespace

void BnForwardTraining(const BnShape& s, const Tensor4& y_layout, float alpha, float beta,
                       const float* x, float* y, const float* scale, const float* bias,
                       double factor, float* running_mean, float* running_var, double eps,
                       float* save_mean, float* save_inv_var, int threads) {
  const double m_count = static_cast<double>(s.PerStat());
  ParallelFor(s.Stats(), ThreadsFor(s, threads), [&](int64_t b, int64_t e) {
    for (int64_t si = b; si < e; ++si) {
      double mean, var;
      MeanVar(s, x, si, &mean, &var);
      const double inv = 1.0 / std::sqrt(var + eps);
      Normalize(s, y_layout, si, alpha, beta, x, y, scale[si], bias[si], mean, inv);
      if (running_mean != nullptr) {
        running_mean[si] = static_cast<float>((1.0 - factor) * running_mean[si] + factor * mean);
      }
      if (running_var != nullptr) {
        const double unbiased = m_count > 1.0 ? var * m_count / (m_count - 1.0) : var;
        running_var[si] = static_cast<float>((1.0 - factor) * running_var[si] + factor * unbiased);
      }
      if (save_mean != nullptr) save_mean[si] = static_cast<float>(mean);
      if (save_inv_var != nullptr) save_inv_var[si] = static_cast<float>(inv);
    }
  });
}

void BnForwardInference(const BnShape& s, const Tensor4& y_layout, float alpha, float beta,
                        const float* x, float* y, const float* scale, const float* bias,
                        const float* est_mean, const float* est_var, double eps, int threads) {
  ParallelFor(s.Stats(), ThreadsFor(s, threads), [&](int64_t b, int64_t e) {
    for (int64_t si = b; si < e; ++si) {
      const double inv = 1.0 / std::sqrt(static_cast<double>(est_var[si]) + eps);
      Normalize(s, y_layout, si, alpha, beta, x, y, scale[si], bias[si], est_mean[si], inv);
    }
  });
}

void BnBackward(const BnShape& s, const Tensor4& dy_layout, const Tensor4& dx_layout,
                float alpha_data, float beta_data, float alpha_param, float beta_param,
                const float* x, const float* dy, float* dx, const float* scale, float* dscale,
                float* dbias, double eps, const float* saved_mean, const float* saved_inv_var,
                int threads) {
  const double m_count = static_cast<double>(s.PerStat());
  ParallelFor(s.Stats(), ThreadsFor(s, threads), [&](int64_t b, int64_t e) {
    std::vector<int64_t> dy_off, dx_off;
    for (int64_t si = b; si < e; ++si) {
      double mean, inv;
      if (saved_mean != nullptr && saved_inv_var != nullptr) {
        mean = saved_mean[si];
        inv = saved_inv_var[si];
      } else {
        double var;
        MeanVar(s, x, si, &mean, &var);
        inv = 1.0 / std::sqrt(var + eps);
      }
      // Offsets of the three layouts in the shared visit order.
      dy_off.clear();
      dx_off.clear();
      ForEachInStat(s, dy_layout, si, [&](int64_t o) { dy_off.push_back(o); });
      ForEachInStat(s, dx_layout, si, [&](int64_t o) { dx_off.push_back(o); });
      double sum_dy = 0.0, sum_dy_xhat = 0.0;
      size_t i = 0;
      ForEachInStat(s, s.x, si, [&](int64_t o) {
        const double g = dy[dy_off[i++]];
        sum_dy += g;
        sum_dy_xhat += g * (x[o] - mean) * inv;
      });
      const double k = scale[si] * inv / m_count;
      i = 0;
      ForEachInStat(s, s.x, si, [&](int64_t o) {
        const double xhat = (x[o] - mean) * inv;
        const double g = dy[dy_off[i]];
        const double v = k * (m_count * g - sum_dy - xhat * sum_dy_xhat);
        Blend(alpha_data, static_cast<float>(v), beta_data, dx + dx_off[i]);
        ++i;
      });
      Blend(alpha_param, static_cast<float>(sum_dy_xhat), beta_param, dscale + si);
      Blend(alpha_param, static_cast<float>(sum_dy), beta_param, dbias + si);
    }
  });
}

}  // namespace simgpu::kernels
