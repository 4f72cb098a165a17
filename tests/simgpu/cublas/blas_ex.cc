// The typed GEMMs: cublasGemmEx, cublasGemmStridedBatchedEx, cublasSgemmEx and the 64-bit
// forms of Sgemm, over the shared GEMM of gemm_ex.h (fp32, tf32, fp16, bf16; fp32 math on the
// CPU, the others in timing mode only). Scalars are host pointers (the handle allows host
// pointer mode only); their type follows the compute type, as in cuBLAS.
#include "api.h"
#include "gemm_ex.h"

namespace {

using simgpu::blas::GemmOp;
using simgpu::blas::Matrix;

bool Transposed(cublasOperation_t op, bool* t) {
  if (op == CUBLAS_OP_N) return *t = false, true;
  if (op == CUBLAS_OP_T || op == CUBLAS_OP_C) return *t = true, true;  // real data: C == T
  return false;
}

cublasStatus_t TypedGemm(const char* fn, cublasHandle_t h, cublasOperation_t transa,
                         cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                         const void* alpha, const void* a, cudaDataType atype, int64_t lda,
                         int64_t stride_a, const void* b, cudaDataType btype, int64_t ldb,
                         int64_t stride_b, const void* beta, void* c, cudaDataType ctype,
                         int64_t ldc, int64_t stride_c, int64_t batch, int compute_type) {
  if (h == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  GemmOp op;
  op.fn = fn;
  op.stream = h->stream;
  if (!Transposed(transa, &op.ta) || !Transposed(transb, &op.tb)) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  simgpu::blas::Compute compute;
  if (!simgpu::blas::ComputeOf(compute_type, &compute)) {
    return simgpu::blas::Unsupported(fn, "compute type %d", compute_type);
  }
  if (compute.scalar == CUDA_R_16F && (atype != CUDA_R_16F || ctype != CUDA_R_16F)) {
    return CUBLAS_STATUS_INVALID_VALUE;  // 16F compute takes fp16 data only
  }
  op.m = m, op.n = n, op.k = k, op.batch = batch;
  op.a = {a, atype, op.ta ? k : m, op.ta ? m : k, lda, stride_a};
  op.b = {b, btype, op.tb ? n : k, op.tb ? k : n, ldb, stride_b};
  op.c = {c, ctype, m, n, ldc, stride_c};
  op.d = op.c;
  if (m > 0 && n > 0 && batch > 0) {
    if (alpha == nullptr || beta == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    simgpu::blas::ScalarToFloat(alpha, compute.scalar, &op.alpha);
    simgpu::blas::ScalarToFloat(beta, compute.scalar, &op.beta);
  }
  const bool tf32_mode = (h->math & CUBLAS_TF32_TENSOR_OP_MATH) == CUBLAS_TF32_TENSOR_OP_MATH;
  op.rate = simgpu::blas::RateOf(atype, compute, tf32_mode);
  return simgpu::blas::Run(op);
}

}  // namespace

extern "C" {

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t transa, cublasOperation_t transb,
                            int m, int n, int k, const void* alpha, const void* a,
                            cudaDataType atype, int lda, const void* b, cudaDataType btype, int ldb,
                            const void* beta, void* c, cudaDataType ctype, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t) {
  return TypedGemm("cublasGemmEx", h, transa, transb, m, n, k, alpha, a, atype, lda, 0, b, btype,
                   ldb, 0, beta, c, ctype, ldc, 0, 1, compute);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t transa,
                                          cublasOperation_t transb, int m, int n, int k,
                                          const void* alpha, const void* a, cudaDataType atype,
                                          int lda, long long int stride_a, const void* b,
                                          cudaDataType btype, int ldb, long long int stride_b,
                                          const void* beta, void* c, cudaDataType ctype, int ldc,
                                          long long int stride_c, int batch,
                                          cublasComputeType_t compute, cublasGemmAlgo_t) {
  return TypedGemm("cublasGemmStridedBatchedEx", h, transa, transb, m, n, k, alpha, a, atype, lda,
                   stride_a, b, btype, ldb, stride_b, beta, c, ctype, ldc, stride_c, batch,
                   compute);
}

cublasStatus_t cublasSgemmEx(cublasHandle_t h, cublasOperation_t transa, cublasOperation_t transb,
                             int m, int n, int k, const float* alpha, const void* a,
                             cudaDataType atype, int lda, const void* b, cudaDataType btype,
                             int ldb, const float* beta, void* c, cudaDataType ctype, int ldc) {
  // Float scalars and fp32 accumulation whatever the data types.
  return TypedGemm("cublasSgemmEx", h, transa, transb, m, n, k, alpha, a, atype, lda, 0, b, btype,
                   ldb, 0, beta, c, ctype, ldc, 0, 1, CUBLAS_COMPUTE_32F);
}

cublasStatus_t cublasSgemm_v2_64(cublasHandle_t h, cublasOperation_t transa,
                                 cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                                 const float* alpha, const float* a, int64_t lda, const float* b,
                                 int64_t ldb, const float* beta, float* c, int64_t ldc) {
  return TypedGemm("cublasSgemm_v2_64", h, transa, transb, m, n, k, alpha, a, CUDA_R_32F, lda, 0, b,
                   CUDA_R_32F, ldb, 0, beta, c, CUDA_R_32F, ldc, 0, 1, CUBLAS_COMPUTE_32F);
}

cublasStatus_t cublasSgemmStridedBatched_64(cublasHandle_t h, cublasOperation_t transa,
                                            cublasOperation_t transb, int64_t m, int64_t n,
                                            int64_t k, const float* alpha, const float* a,
                                            int64_t lda, long long int stride_a, const float* b,
                                            int64_t ldb, long long int stride_b, const float* beta,
                                            float* c, int64_t ldc, long long int stride_c,
                                            int64_t batch) {
  return TypedGemm("cublasSgemmStridedBatched_64", h, transa, transb, m, n, k, alpha, a, CUDA_R_32F,
                   lda, stride_a, b, CUDA_R_32F, ldb, stride_b, beta, c, CUDA_R_32F, ldc, stride_c,
                   batch, CUBLAS_COMPUTE_32F);
}

}  // extern "C"
