// cublas_hooks.cc: the cuBLAS hooks under a residency policy (intercept.h). Matrices are column
// major: an m x n operand with leading dimension ld spans ((n - 1) * ld + m) floats; a vector of
// n elements with increment inc spans (1 + (n - 1) * |inc|). Scalars (alpha, beta, a dot
// product's result) are included too: in device pointer mode they are device memory, in host
// mode the manager ignores them.
#include <cstdlib>

#include "interpose/process/managed.h"
#include "interpose/symbols/hook_table.h"
#include "interpose/symbols/intercept.h"

namespace pooch::interpose::intercept {
namespace {

using Mode = pooch::AccessRange::Mode;
constexpr Mode kR = Mode::kRead;
constexpr Mode kRW = Mode::kReadWrite;

uintptr_t HandleStream(cublasHandle_t handle) {
  cudaStream_t stream = nullptr;
  if (const auto get = real::cublasGetStream_v2()) get(handle, &stream);
  return reinterpret_cast<uintptr_t>(stream);
}

size_t MatrixBytes(int rows, int cols, int ld) {
  if (rows <= 0 || cols <= 0) return 1;
  return (static_cast<size_t>(cols - 1) * static_cast<size_t>(ld) + static_cast<size_t>(rows)) *
         sizeof(float);
}

size_t VectorBytes(int n, int inc) {
  if (n <= 0) return 1;
  return (1 + static_cast<size_t>(n - 1) * static_cast<size_t>(std::abs(inc))) * sizeof(float);
}

}  // namespace

cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                              cublasOperation_t transb, int m, int n, int k, const float* alpha,
                              const float* A, int lda, const float* B, int ldb, const float* beta,
                              float* C, int ldc) {
  Ranges r;
  const bool ta = transa != CUBLAS_OP_N;
  const bool tb = transb != CUBLAS_OP_N;
  r.Add(A, MatrixBytes(ta ? k : m, ta ? m : k, lda), kR);
  r.Add(B, MatrixBytes(tb ? n : k, tb ? k : n, ldb), kR);
  r.Add(C, MatrixBytes(m, n, ldc), kRW);
  r.Add(alpha, sizeof(float), kR);
  r.Add(beta, sizeof(float), kR);
  return RunOp<cublasStatus_t>(HandleStream(handle), r, [&] {
    return real::cublasSgemm_v2()(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C,
                                  ldc);
  });
}

cublasStatus_t cublasSgemv_v2(cublasHandle_t handle, cublasOperation_t trans, int m, int n,
                              const float* alpha, const float* A, int lda, const float* x, int incx,
                              const float* beta, float* y, int incy) {
  Ranges r;
  const bool t = trans != CUBLAS_OP_N;
  r.Add(A, MatrixBytes(m, n, lda), kR);
  r.Add(x, VectorBytes(t ? m : n, incx), kR);
  r.Add(y, VectorBytes(t ? n : m, incy), kRW);
  r.Add(alpha, sizeof(float), kR);
  r.Add(beta, sizeof(float), kR);
  return RunOp<cublasStatus_t>(HandleStream(handle), r, [&] {
    return real::cublasSgemv_v2()(handle, trans, m, n, alpha, A, lda, x, incx, beta, y, incy);
  });
}

cublasStatus_t cublasSaxpy_v2(cublasHandle_t handle, int n, const float* alpha, const float* x,
                              int incx, float* y, int incy) {
  Ranges r;
  r.Add(x, VectorBytes(n, incx), kR);
  r.Add(y, VectorBytes(n, incy), kRW);
  r.Add(alpha, sizeof(float), kR);
  return RunOp<cublasStatus_t>(HandleStream(handle), r, [&] {
    return real::cublasSaxpy_v2()(handle, n, alpha, x, incx, y, incy);
  });
}

cublasStatus_t cublasSscal_v2(cublasHandle_t handle, int n, const float* alpha, float* x,
                              int incx) {
  Ranges r;
  r.Add(x, VectorBytes(n, incx), kRW);
  r.Add(alpha, sizeof(float), kR);
  return RunOp<cublasStatus_t>(HandleStream(handle), r,
                               [&] { return real::cublasSscal_v2()(handle, n, alpha, x, incx); });
}

cublasStatus_t cublasSdot_v2(cublasHandle_t handle, int n, const float* x, int incx, const float* y,
                             int incy, float* result) {
  Ranges r;
  r.Add(x, VectorBytes(n, incx), kR);
  r.Add(y, VectorBytes(n, incy), kR);
  r.Add(result, sizeof(float), Mode::kWrite);
  return RunOp<cublasStatus_t>(HandleStream(handle), r, [&] {
    return real::cublasSdot_v2()(handle, n, x, incx, y, incy, result);
  });
}

}  // namespace pooch::interpose::intercept
