// cublas_hooks.cc: the cuBLAS hooks under a residency policy (intercept.h). Matrices are column
// major: an m x n operand with leading dimension ld spans ((n - 1) * ld + m) floats; a vector of
// n elements with increment inc spans (1 + (n - 1) * |inc|). Scalars (alpha, beta, a dot
// product's result) are included too: in device pointer mode they are device memory, in host
// mode the manager ignores them (the GEMMs leave them out then: RunGemm).
//
// The GEMMs are replayable (Note [GEMM replay] in cublas_gemm.h): cublasCreate_v2,
// cublasSetStream_v2 and cublasSetWorkspace_v2 are hooked to know each handle's workspace.
#include <cstdlib>
#include <utility>

#include "core/base/log.h"
#include "interpose/hooks/cublas/blas_extent.h"
#include "interpose/hooks/cublas/cublas_gemm.h"
#include "interpose/hooks/cublas/cublas_replay.h"
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

// The GEMMs PyTorch calls: A and B read; C written, and read too unless beta is known zero (host
// pointer mode, Note [GEMM replay] in cublas_gemm.h); the workspace the program set on the handle
// written; alpha and beta device reads in device pointer mode (host memory otherwise,
// which is not the manager's and would make a recipe's input). An operand whose data type pooch
// does not size makes the call opaque (everything resident): pooch must not guess its extent. A
// call that can be replayed bit for bit hands RunOp its recipe (cublas_replay.h).
template <typename Forward>
cublasStatus_t RunGemm(cublasHandle_t handle, const GemmCall& call, Forward&& forward) {
  const int64_t ea = CudaTypeBytes(call.a_type), eb = CudaTypeBytes(call.b_type),
                ec = CudaTypeBytes(call.c_type);
  if (ea == 0 || eb == 0 || ec == 0) {
    // A data type pooch does not size: an opaque call (Note [Opaque calls]).
    return RunOpaque<cublasStatus_t>(call.name, HandleStream(handle), /*stream_known=*/true,
                                     std::forward<Forward>(forward));
  }
  const GemmSettings settings = ReadGemmSettings(handle);
  const bool host_scalars = settings.known && settings.pointer_mode == CUBLAS_POINTER_MODE_HOST;
  const bool beta_zero = host_scalars && HostScaleIsZero(call.beta, call.scale_bytes);
  const GemmSpans s = GemmBytes(call.transa != CUBLAS_OP_N, call.transb != CUBLAS_OP_N, call.m,
                                call.n, call.k, call.lda, call.ldb, call.ldc, ea, eb, ec,
                                call.batch, call.stride_a, call.stride_b, call.stride_c);
  Ranges r;
  r.Add(call.A, static_cast<size_t>(s.a), kR);
  r.Add(call.B, static_cast<size_t>(s.b), kR);
  r.Add(call.C, static_cast<size_t>(s.c), beta_zero ? Mode::kWrite : kRW);
  // Note [Overwritten allocations] (core/residency/residency.cc): with beta zero and k > 0 every
  // element of C is written; when C's span holds exactly its elements (no gap between columns
  // or batches, none overlapping) every byte of the span is.
  if (beta_zero && call.k > 0 && s.c == call.m * call.n * call.batch * ec) r.MarkLastOverwritten();
  // Note [Scratch workspaces]
  // ~~~~~~~~~~~~~~~~~~~~~~~~~
  // A library's workspace is scratch: the call writes it before it reads it, and nothing is
  // carried from one call to the next, so it is written only. (Read and written, a workspace
  // PyTorch allocates around each call would be a read of memory no op wrote: Note [Static
  // replay check] in core/profile/profile_builder.cc would then refuse the replay, as it did for
  // every cuBLASLt matmul of PyTorch's transformer.) A replay gets a scratch workspace of its own
  // (Recomputer). cuBLAS, cuBLASLt and cuDNN (legacy and backend) workspaces alike; cuDNN's
  // reserve space is not scratch: batch norm's forward leaves in it what its backward reads.
  if (settings.workspace_set) r.Add(settings.workspace, settings.workspace_bytes, Mode::kWrite);
  if (!host_scalars) {
    r.Add(call.alpha, call.scale_bytes, kR);
    r.Add(call.beta, call.scale_bytes, kR);
  }
  const char* why_not = GemmNotReplayable(call, settings, beta_zero, r.get());
  if (why_not != nullptr) POOCH_LOG_AT(kDebug, "%s: not replayable: %s", call.name, why_not);
  const auto make_recipe = [&] { return GemmRecipe(call, settings, r.get()); };
  const ReplaySource replay(make_recipe);
  return RunOp<cublasStatus_t>(HandleStream(handle), r, std::forward<Forward>(forward),
                               {.replay = why_not == nullptr ? &replay : nullptr});
}

}  // namespace

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  const cublasStatus_t s = real::cublasCreate_v2()(handle);
  if (s == CUBLAS_STATUS_SUCCESS && handle != nullptr) NoteCublasDefaultWorkspace(*handle);
  return s;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId) {
  const cublasStatus_t s = real::cublasSetStream_v2()(handle, streamId);
  if (s == CUBLAS_STATUS_SUCCESS) NoteCublasDefaultWorkspace(handle);
  return s;
}

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace,
                                     size_t workspaceSizeInBytes) {
  const cublasStatus_t s = real::cublasSetWorkspace_v2()(handle, workspace, workspaceSizeInBytes);
  if (s == CUBLAS_STATUS_SUCCESS) NoteCublasWorkspace(handle, workspace, workspaceSizeInBytes);
  return s;
}

cublasStatus_t cublasSgemm_v2_64(cublasHandle_t handle, cublasOperation_t transa,
                                 cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                                 const float* alpha, const float* A, int64_t lda, const float* B,
                                 int64_t ldb, const float* beta, float* C, int64_t ldc) {
  const GemmCall call{.name = "cublasSgemm_v2_64",
                      .form = GemmForm::kSgemm64,
                      .transa = transa,
                      .transb = transb,
                      .m = m,
                      .n = n,
                      .k = k,
                      .alpha = alpha,
                      .A = A,
                      .lda = lda,
                      .B = B,
                      .ldb = ldb,
                      .beta = beta,
                      .C = C,
                      .ldc = ldc};
  return RunGemm(handle, call, [&] {
    return real::cublasSgemm_v2_64()(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta,
                                     C, ldc);
  });
}

cublasStatus_t cublasSgemmEx(cublasHandle_t handle, cublasOperation_t transa,
                             cublasOperation_t transb, int m, int n, int k, const float* alpha,
                             const void* A, cudaDataType Atype, int lda, const void* B,
                             cudaDataType Btype, int ldb, const float* beta, void* C,
                             cudaDataType Ctype, int ldc) {
  const GemmCall call{.name = "cublasSgemmEx",
                      .form = GemmForm::kSgemmEx,
                      .transa = transa,
                      .transb = transb,
                      .m = m,
                      .n = n,
                      .k = k,
                      .alpha = alpha,
                      .A = A,
                      .a_type = Atype,
                      .lda = lda,
                      .B = B,
                      .b_type = Btype,
                      .ldb = ldb,
                      .beta = beta,
                      .C = C,
                      .c_type = Ctype,
                      .ldc = ldc};
  return RunGemm(handle, call, [&] {
    return real::cublasSgemmEx()(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype,
                                 ldb, beta, C, Ctype, ldc);
  });
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k, const void* alpha,
                            const void* A, cudaDataType Atype, int lda, const void* B,
                            cudaDataType Btype, int ldb, const void* beta, void* C,
                            cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                            cublasGemmAlgo_t algo) {
  const GemmCall call{.name = "cublasGemmEx",
                      .form = GemmForm::kGemmEx,
                      .transa = transa,
                      .transb = transb,
                      .m = m,
                      .n = n,
                      .k = k,
                      .alpha = alpha,
                      .scale_bytes = GemmExScaleBytes(computeType),
                      .A = A,
                      .a_type = Atype,
                      .lda = lda,
                      .B = B,
                      .b_type = Btype,
                      .ldb = ldb,
                      .beta = beta,
                      .C = C,
                      .c_type = Ctype,
                      .ldc = ldc,
                      .compute = computeType,
                      .algo = algo};
  return RunGemm(handle, call, [&] {
    return real::cublasGemmEx()(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype,
                                ldb, beta, C, Ctype, ldc, computeType, algo);
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
  const GemmCall call{.name = "cublasGemmStridedBatchedEx",
                      .form = GemmForm::kGemmStridedBatchedEx,
                      .transa = transa,
                      .transb = transb,
                      .m = m,
                      .n = n,
                      .k = k,
                      .alpha = alpha,
                      .scale_bytes = GemmExScaleBytes(computeType),
                      .A = A,
                      .a_type = Atype,
                      .lda = lda,
                      .stride_a = strideA,
                      .B = B,
                      .b_type = Btype,
                      .ldb = ldb,
                      .stride_b = strideB,
                      .beta = beta,
                      .C = C,
                      .c_type = Ctype,
                      .ldc = ldc,
                      .stride_c = strideC,
                      .batch = batchCount,
                      .compute = computeType,
                      .algo = algo};
  return RunGemm(handle, call, [&] {
    return real::cublasGemmStridedBatchedEx()(handle, transa, transb, m, n, k, alpha, A, Atype, lda,
                                              strideA, B, Btype, ldb, strideB, beta, C, Ctype, ldc,
                                              strideC, batchCount, computeType, algo);
  });
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k,
                                         const float* alpha, const float* A, int lda,
                                         long long int strideA, const float* B, int ldb,
                                         long long int strideB, const float* beta, float* C,
                                         int ldc, long long int strideC, int batchCount) {
  const GemmCall call{.name = "cublasSgemmStridedBatched",
                      .form = GemmForm::kSgemmStridedBatched,
                      .transa = transa,
                      .transb = transb,
                      .m = m,
                      .n = n,
                      .k = k,
                      .alpha = alpha,
                      .A = A,
                      .lda = lda,
                      .stride_a = strideA,
                      .B = B,
                      .ldb = ldb,
                      .stride_b = strideB,
                      .beta = beta,
                      .C = C,
                      .ldc = ldc,
                      .stride_c = strideC,
                      .batch = batchCount};
  return RunGemm(handle, call, [&] {
    return real::cublasSgemmStridedBatched()(handle, transa, transb, m, n, k, alpha, A, lda,
                                             strideA, B, ldb, strideB, beta, C, ldc, strideC,
                                             batchCount);
  });
}

cublasStatus_t cublasSgemmStridedBatched_64(cublasHandle_t handle, cublasOperation_t transa,
                                            cublasOperation_t transb, int64_t m, int64_t n,
                                            int64_t k, const float* alpha, const float* A,
                                            int64_t lda, long long int strideA, const float* B,
                                            int64_t ldb, long long int strideB, const float* beta,
                                            float* C, int64_t ldc, long long int strideC,
                                            int64_t batchCount) {
  const GemmCall call{.name = "cublasSgemmStridedBatched_64",
                      .form = GemmForm::kSgemmStridedBatched64,
                      .transa = transa,
                      .transb = transb,
                      .m = m,
                      .n = n,
                      .k = k,
                      .alpha = alpha,
                      .A = A,
                      .lda = lda,
                      .stride_a = strideA,
                      .B = B,
                      .ldb = ldb,
                      .stride_b = strideB,
                      .beta = beta,
                      .C = C,
                      .ldc = ldc,
                      .stride_c = strideC,
                      .batch = batchCount};
  return RunGemm(handle, call, [&] {
    return real::cublasSgemmStridedBatched_64()(handle, transa, transb, m, n, k, alpha, A, lda,
                                                strideA, B, ldb, strideB, beta, C, ldc, strideC,
                                                batchCount);
  });
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                              cublasOperation_t transb, int m, int n, int k, const float* alpha,
                              const float* A, int lda, const float* B, int ldb, const float* beta,
                              float* C, int ldc) {
  const GemmCall call{.name = "cublasSgemm_v2",
                      .form = GemmForm::kSgemm,
                      .transa = transa,
                      .transb = transb,
                      .m = m,
                      .n = n,
                      .k = k,
                      .alpha = alpha,
                      .A = A,
                      .lda = lda,
                      .B = B,
                      .ldb = ldb,
                      .beta = beta,
                      .C = C,
                      .ldc = ldc};
  return RunGemm(handle, call, [&] {
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
