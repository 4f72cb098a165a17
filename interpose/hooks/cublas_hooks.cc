// cublas_hooks.cc: the cuBLAS hooks under a residency policy (intercept.h). Matrices are column
// major: an m x n operand with leading dimension ld spans ((n - 1) * ld + m) floats; a vector of
// n elements with increment inc spans (1 + (n - 1) * |inc|). Scalars (alpha, beta, a dot
// product's result) are included too: in device pointer mode they are device memory, in host
// mode the manager ignores them.
#include <cstdlib>
#include <utility>

#include "core/base/log.h"
#include "interpose/hooks/blas_extent.h"
#include "interpose/process/managed.h"
#include "interpose/process/opaque.h"
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

// The GEMMs PyTorch calls: A and B read, C read and written (beta is not looked at: reading C
// when beta = 0 costs a swap-in at worst, never correctness), alpha and beta device reads in
// device pointer mode (ignored in host mode, as above). An operand whose data type pooch does not
// size makes the call opaque (everything resident): pooch must not guess its extent. Not
// replayed yet.
template <typename Forward>
cublasStatus_t RunGemm(const char* name, cublasHandle_t handle, cublasOperation_t transa,
                       cublasOperation_t transb, int64_t m, int64_t n, int64_t k, const void* alpha,
                       size_t scale_bytes, const void* A, cudaDataType a_type, int64_t lda,
                       const void* B, cudaDataType b_type, int64_t ldb, const void* beta,
                       const void* C, cudaDataType c_type, int64_t ldc, int64_t batch,
                       int64_t stride_a, int64_t stride_b, int64_t stride_c, Forward&& forward) {
  const int64_t ea = CudaTypeBytes(a_type), eb = CudaTypeBytes(b_type), ec = CudaTypeBytes(c_type);
  if (ea == 0 || eb == 0 || ec == 0) {
    // A data type pooch does not size: an opaque call (Note [Opaque calls]).
    return RunOpaque<cublasStatus_t>(name, HandleStream(handle), /*stream_known=*/true,
                                     std::forward<Forward>(forward));
  }
  const GemmSpans s = GemmBytes(transa != CUBLAS_OP_N, transb != CUBLAS_OP_N, m, n, k, lda, ldb,
                                ldc, ea, eb, ec, batch, stride_a, stride_b, stride_c);
  Ranges r;
  r.Add(A, static_cast<size_t>(s.a), kR);
  r.Add(B, static_cast<size_t>(s.b), kR);
  r.Add(C, static_cast<size_t>(s.c), kRW);
  r.Add(alpha, scale_bytes, kR);
  r.Add(beta, scale_bytes, kR);
  return RunOp<cublasStatus_t>(HandleStream(handle), r, std::forward<Forward>(forward));
}

// The scale type's size of cublasGemmEx's compute types: alpha and beta are that type.
size_t ScaleBytes(cublasComputeType_t compute) {
  switch (compute) {
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_16F_PEDANTIC:
      return 2;
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC:
      return 8;
    default:
      return 4;
  }
}

}  // namespace

cublasStatus_t cublasSgemm_v2_64(cublasHandle_t handle, cublasOperation_t transa,
                                 cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                                 const float* alpha, const float* A, int64_t lda, const float* B,
                                 int64_t ldb, const float* beta, float* C, int64_t ldc) {
  return RunGemm("cublasSgemm_v2_64", handle, transa, transb, m, n, k, alpha, sizeof(float), A,
                 CUDA_R_32F, lda, B, CUDA_R_32F, ldb, beta, C, CUDA_R_32F, ldc, 1, 0, 0, 0, [&] {
                   return real::cublasSgemm_v2_64()(handle, transa, transb, m, n, k, alpha, A, lda,
                                                    B, ldb, beta, C, ldc);
                 });
}

cublasStatus_t cublasSgemmEx(cublasHandle_t handle, cublasOperation_t transa,
                             cublasOperation_t transb, int m, int n, int k, const float* alpha,
                             const void* A, cudaDataType Atype, int lda, const void* B,
                             cudaDataType Btype, int ldb, const float* beta, void* C,
                             cudaDataType Ctype, int ldc) {
  return RunGemm("cublasSgemmEx", handle, transa, transb, m, n, k, alpha, sizeof(float), A, Atype,
                 lda, B, Btype, ldb, beta, C, Ctype, ldc, 1, 0, 0, 0, [&] {
                   return real::cublasSgemmEx()(handle, transa, transb, m, n, k, alpha, A, Atype,
                                                lda, B, Btype, ldb, beta, C, Ctype, ldc);
                 });
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k, const void* alpha,
                            const void* A, cudaDataType Atype, int lda, const void* B,
                            cudaDataType Btype, int ldb, const void* beta, void* C,
                            cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                            cublasGemmAlgo_t algo) {
  return RunGemm("cublasGemmEx", handle, transa, transb, m, n, k, alpha, ScaleBytes(computeType), A,
                 Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc, 1, 0, 0, 0, [&] {
                   return real::cublasGemmEx()(handle, transa, transb, m, n, k, alpha, A, Atype,
                                               lda, B, Btype, ldb, beta, C, Ctype, ldc, computeType,
                                               algo);
                 });
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                          cublasOperation_t transb, int m, int n, int k,
                                          const void* alpha, const void* A, cudaDataType Atype,
                                          int lda, long long int strideA, const void* B,
                                          cudaDataType Btype, int ldb, long long int strideB,
                                          const void* beta, void* C, cudaDataType Ctype, int ldc,
                                          long long int strideC, int batchCount,
                                          cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  return RunGemm("cublasGemmStridedBatchedEx", handle, transa, transb, m, n, k, alpha,
                 ScaleBytes(computeType), A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc,
                 batchCount, strideA, strideB, strideC, [&] {
                   return real::cublasGemmStridedBatchedEx()(
                       handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype,
                       ldb, strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType, algo);
                 });
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k,
                                         const float* alpha, const float* A, int lda,
                                         long long int strideA, const float* B, int ldb,
                                         long long int strideB, const float* beta, float* C,
                                         int ldc, long long int strideC, int batchCount) {
  return RunGemm("cublasSgemmStridedBatched", handle, transa, transb, m, n, k, alpha, sizeof(float),
                 A, CUDA_R_32F, lda, B, CUDA_R_32F, ldb, beta, C, CUDA_R_32F, ldc, batchCount,
                 strideA, strideB, strideC, [&] {
                   return real::cublasSgemmStridedBatched()(handle, transa, transb, m, n, k, alpha,
                                                            A, lda, strideA, B, ldb, strideB, beta,
                                                            C, ldc, strideC, batchCount);
                 });
}

cublasStatus_t cublasSgemmStridedBatched_64(cublasHandle_t handle, cublasOperation_t transa,
                                            cublasOperation_t transb, int64_t m, int64_t n,
                                            int64_t k, const float* alpha, const float* A,
                                            int64_t lda, long long int strideA, const float* B,
                                            int64_t ldb, long long int strideB, const float* beta,
                                            float* C, int64_t ldc, long long int strideC,
                                            int64_t batchCount) {
  return RunGemm("cublasSgemmStridedBatched_64", handle, transa, transb, m, n, k, alpha,
                 sizeof(float), A, CUDA_R_32F, lda, B, CUDA_R_32F, ldb, beta, C, CUDA_R_32F, ldc,
                 batchCount, strideA, strideB, strideC, [&] {
                   return real::cublasSgemmStridedBatched_64()(
                       handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB,
                       beta, C, ldc, strideC, batchCount);
                 });
}

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
