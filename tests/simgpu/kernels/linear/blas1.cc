#include "blas1.h"

namespace simgpu::kernels {

void Axpy(int64_t n, float alpha, const float* x, int64_t incx, float* y, int64_t incy) {
  for (int64_t i = 0; i < n; ++i) y[i * incy] += alpha * x[i * incx];
}

void Scal(int64_t n, float alpha, float* x, int64_t incx) {
  for (int64_t i = 0; i < n; ++i) x[i * incx] *= alpha;
}

float Dot(int64_t n, const float* x, int64_t incx, const float* y, int64_t incy) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i * incx]) * y[i * incy];
  return static_cast<float>(sum);
}

}  // namespace simgpu::kernels
