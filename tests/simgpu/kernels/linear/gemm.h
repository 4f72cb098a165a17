// simgpu kernels: single-precision matrix multiply over arbitrary element strides.
// Thread-safe (no shared state); uses up to `threads` threads per call.
#ifndef POOCH_TESTS_SIMGPU_KERNELS_GEMM_H_
#define POOCH_TESTS_SIMGPU_KERNELS_GEMM_H_

#include <cstdint>

namespace simgpu::kernels {

// A matrix view: element (i, j) lies at data[i * rs + j * cs]. Strides may be negative or zero
// (a zero stride broadcasts). Row-major packed: {p, ld, 1}; column-major: {p, 1, ld}.
struct MatView {
  const float* data;
  int64_t rs, cs;
};
struct MutMatView {
  float* data;
  int64_t rs, cs;
};

// C (m x n) = alpha * A (m x k) * B (k x n) + beta * C.
//   - beta == 0: C is not read (NaN in C does not survive), as in BLAS and cuDNN.
//   - alpha == 0 or k == 0: A and B are not read; C = beta * C.
// Deterministic: each C element sums its k products in ascending k in fp32, then scales, so the
// bits do not depend on `threads` or on blocking (work is split over C tiles only).
void Gemm(int64_t m, int64_t n, int64_t k, float alpha, MatView a, MatView b, float beta,
          MutMatView c, int threads);

}  // namespace simgpu::kernels

#endif  // POOCH_TESTS_SIMGPU_KERNELS_GEMM_H_
