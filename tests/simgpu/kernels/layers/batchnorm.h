// simgpu kernels: batch normalization (training forward with running statistics, inference
// forward, backward) in fp32 with double accumulators, spatial or per-activation.
// Thread-safe (no shared state); each call uses up to `threads` threads.
//
// Parameter vectors (scale, bias, means, variances and their gradients) are packed: C floats in
// spatial mode, C*H*W floats (1 x C x H x W) in per-activation mode.
#ifndef POOCH_TESTS_SIMGPU_KERNELS_BATCHNORM_H_
#define POOCH_TESTS_SIMGPU_KERNELS_BATCHNORM_H_

#include <cstdint>

#include "layout.h"

namespace simgpu::kernels {

struct BnShape {
  Tensor4 x;  // extents shared by every data tensor; strides of x
  bool per_activation = false;
  int64_t Stats() const { return per_activation ? x.c * x.h * x.w : x.c; }
  int64_t PerStat() const { return per_activation ? x.n : x.n * x.h * x.w; }
};

// y = alpha * (scale * (x - mean) / sqrt(var + eps) + bias) + beta * y with the batch's mean
// and biased variance. If running_mean/running_var are non-null:
//   running_mean = (1 - factor) * running_mean + factor * mean
//   running_var  = (1 - factor) * running_var  + factor * var * M / (M - 1)   (unbiased)
// with M values per statistic (cuDNN's documented update). If save_mean/save_inv_var are
// non-null they receive mean and 1 / sqrt(var + eps).
void BnForwardTraining(const BnShape& s, const Tensor4& y_layout, float alpha, float beta,
                       const float* x, float* y, const float* scale, const float* bias,
                       double factor, float* running_mean, float* running_var, double eps,
                       float* save_mean, float* save_inv_var, int threads);

// y = alpha * (scale * (x - est_mean) / sqrt(est_var + eps) + bias) + beta * y.
void BnForwardInference(const BnShape& s, const Tensor4& y_layout, float alpha, float beta,
                        const float* x, float* y, const float* scale, const float* bias,
                        const float* est_mean, const float* est_var, double eps, int threads);

// Gradients of the training forward. saved_mean/saved_inv_var may both be null (recomputed
// from x). dx blends with alpha_data/beta_data, dscale and dbias with alpha_param/beta_param.
void BnBackward(const BnShape& s, const Tensor4& dy_layout, const Tensor4& dx_layout,
                float alpha_data, float beta_data, float alpha_param, float beta_param,
                const float* x, const float* dy, float* dx, const float* scale, float* dscale,
                float* dbias, double eps, const float* saved_mean, const float* saved_inv_var,
                int threads);

}  // namespace simgpu::kernels

#endif  // POOCH_TESTS_SIMGPU_KERNELS_BATCHNORM_H_
