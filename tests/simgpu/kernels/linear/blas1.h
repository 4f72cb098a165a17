// simgpu kernels: strided single-precision vector ops (cuBLAS level 1).
// Vectors are (pointer to element 0, stride in elements); a stride may be negative, so callers
// translate BLAS's "negative increment starts at the far end" before calling.
// Thread-safe (no shared state); single-threaded (these are memory-bound and small).
#ifndef POOCH_TESTS_SIMGPU_KERNELS_BLAS1_H_
#define POOCH_TESTS_SIMGPU_KERNELS_BLAS1_H_

#include <cstdint>

namespace simgpu::kernels {

// y += alpha * x.
void Axpy(int64_t n, float alpha, const float* x, int64_t incx, float* y, int64_t incy);
// x *= alpha.
void Scal(int64_t n, float alpha, float* x, int64_t incx);
// sum x[i] * y[i], accumulated in double in ascending i, rounded once to float.
float Dot(int64_t n, const float* x, int64_t incx, const float* y, int64_t incy);

}  // namespace simgpu::kernels

#endif  // POOCH_TESTS_SIMGPU_KERNELS_BLAS1_H_
