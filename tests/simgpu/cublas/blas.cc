// The fp32 compute calls: Sgemm (plain and strided-batched), Sgemv, Saxpy, Sscal, Sdot (the
// typed GEMMs are in blas_ex.cc). Column-major as in BLAS; alpha, beta and results are host
// pointers (host pointer mode only). Argument checks follow the cuBLAS documentation; violations
// return INVALID_VALUE.
#include <algorithm>

#include "api.h"
#include "blas1.h"
#include "gemm.h"
#include "gemm_ex.h"
#include "tests/simgpu/device/device.h"

namespace {

using simgpu::Access;
using simgpu::blas::Rate;
using simgpu::cublas::MatBytes;
using simgpu::cublas::NotSupported;
using simgpu::cublas::Run;
using simgpu::cublas::Vec;
using simgpu::cublas::VecOf;
namespace kernels = simgpu::kernels;

// N, or T/C (the same for real data); false for anything else.
bool Transposed(cublasOperation_t op, bool* t) {
  if (op == CUBLAS_OP_N) return *t = false, true;
  if (op == CUBLAS_OP_T || op == CUBLAS_OP_C) return *t = true, true;
  return false;
}

// op(X) (rows x cols) of a column-major X with leading dimension ld.
kernels::MatView OpView(const float* p, bool t, int64_t ld) {
  return t ? kernels::MatView{p, ld, 1} : kernels::MatView{p, 1, ld};
}

// Bytes a batch of column-major matrices spans: the last matrix's start plus one matrix.
size_t BatchBytes(size_t one, int64_t stride, int64_t batch) {
  return one == 0 ? 0 : static_cast<size_t>((batch - 1) * stride) * 4 + one;
}

cublasStatus_t GemmBatched(const char* fn, cublasHandle_t h, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, int k, const float* alpha,
                           const float* a, int lda, int64_t stride_a, const float* b, int ldb,
                           int64_t stride_b, const float* beta, float* c, int ldc, int64_t stride_c,
                           int batch) {
  if (h == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  bool ta, tb;
  if (!Transposed(transa, &ta) || !Transposed(transb, &tb)) return CUBLAS_STATUS_INVALID_VALUE;
  if (m < 0 || n < 0 || k < 0 || batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
  const int64_t a_rows = ta ? k : m, a_cols = ta ? m : k;
  const int64_t b_rows = tb ? n : k, b_cols = tb ? k : n;
  if (lda < std::max<int64_t>(1, a_rows) || ldb < std::max<int64_t>(1, b_rows) ||
      ldc < std::max(1, m)) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (stride_a < 0 || stride_b < 0 || stride_c < 0) {
    return NotSupported(fn, "negative batch strides");
  }
  if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
  if (alpha == nullptr || beta == nullptr || c == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  const float al = *alpha, be = *beta;
  const bool reads_ab = al != 0.0f && k > 0;
  if (reads_ab && (a == nullptr || b == nullptr)) return CUBLAS_STATUS_INVALID_VALUE;
  const size_t a_bytes = reads_ab ? BatchBytes(MatBytes(a_rows, a_cols, lda), stride_a, batch) : 0;
  const size_t b_bytes = reads_ab ? BatchBytes(MatBytes(b_rows, b_cols, ldb), stride_b, batch) : 0;
  const size_t c_bytes = BatchBytes(MatBytes(m, n, ldc), stride_c, batch);
  // The handle's TF32 math mode lets fp32 GEMMs run on tensor cores (Note [Typed GEMM timing]).
  const bool tf32 = (h->math & CUBLAS_TF32_TENSOR_OP_MATH) == CUBLAS_TF32_TENSOR_OP_MATH;
  const double flops =
      2.0 * m * n * k * batch /
      simgpu::blas::RateSpeedup(tf32 ? Rate::kTf32 : Rate::kFp32,
                                simgpu::Device::Get().config().machine.cc_major, false);
  const double bytes =
      4.0 * batch *
      ((reads_ab ? (double(m) * k + double(k) * n) : 0.0) + double(m) * n * (be != 0.0f ? 2 : 1));
  return Run(h, fn,
             {Access{a, a_bytes, false}, Access{b, b_bytes, false},
              Access{be != 0.0f ? c : nullptr, c_bytes, false}, Access{c, c_bytes, true}},
             flops, bytes, [&] {
               for (int i = 0; i < batch; ++i) {
                 kernels::Gemm(m, n, k, al, OpView(a + i * stride_a, ta, lda),
                               OpView(b + i * stride_b, tb, ldb), be, {c + i * stride_c, 1, ldc},
                               simgpu::Threads());
               }
             });
}

}  // namespace

extern "C" {

cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t transa, cublasOperation_t transb,
                              int m, int n, int k, const float* alpha, const float* a, int lda,
                              const float* b, int ldb, const float* beta, float* c, int ldc) {
  return GemmBatched("cublasSgemm_v2", h, transa, transb, m, n, k, alpha, a, lda, 0, b, ldb, 0,
                     beta, c, ldc, 0, 1);
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k,
                                         const float* alpha, const float* a, int lda,
                                         long long int stride_a, const float* b, int ldb,
                                         long long int stride_b, const float* beta, float* c,
                                         int ldc, long long int stride_c, int batch) {
  return GemmBatched("cublasSgemmStridedBatched", h, transa, transb, m, n, k, alpha, a, lda,
                     stride_a, b, ldb, stride_b, beta, c, ldc, stride_c, batch);
}

cublasStatus_t cublasSgemv_v2(cublasHandle_t h, cublasOperation_t trans, int m, int n,
                              const float* alpha, const float* a, int lda, const float* x, int incx,
                              const float* beta, float* y, int incy) {
  if (h == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  bool t;
  if (!Transposed(trans, &t) || m < 0 || n < 0 || lda < std::max(1, m) || incx == 0 || incy == 0) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  if (alpha == nullptr || beta == nullptr || y == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  const float al = *alpha, be = *beta;
  const int64_t rows = t ? n : m, cols = t ? m : n;  // op(A) is rows x cols
  const bool reads = al != 0.0f;
  if (reads && (a == nullptr || x == nullptr)) return CUBLAS_STATUS_INVALID_VALUE;
  const Vec xv = VecOf(x, cols, incx), yv = VecOf(y, rows, incy);
  const double bytes = 4.0 * ((reads ? double(m) * n + cols : 0.0) + rows * (be != 0.0f ? 2 : 1));
  return Run(h, "cublasSgemv_v2",
             {Access{reads ? a : nullptr, MatBytes(m, n, lda), false},
              Access{reads ? xv.lowest : nullptr, xv.bytes, false},
              Access{be != 0.0f ? yv.lowest : nullptr, yv.bytes, false},
              Access{yv.lowest, yv.bytes, true}},
             2.0 * m * n, bytes, [&] {
               // y (rows x 1) = alpha * op(A) (rows x cols) * x (cols x 1) + beta * y.
               kernels::Gemm(rows, 1, cols, al, OpView(a, t, lda), {xv.first, incx, 0}, be,
                             {const_cast<float*>(yv.first), incy, 0}, simgpu::Threads());
             });
}

cublasStatus_t cublasSaxpy_v2(cublasHandle_t h, int n, const float* alpha, const float* x, int incx,
                              float* y, int incy) {
  if (h == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (n <= 0) return CUBLAS_STATUS_SUCCESS;
  if (alpha == nullptr || x == nullptr || y == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  const float al = *alpha;
  const Vec xv = VecOf(x, n, incx), yv = VecOf(y, n, incy);
  return Run(h, "cublasSaxpy_v2",
             {Access{xv.lowest, xv.bytes, false}, Access{yv.lowest, yv.bytes, false},
              Access{yv.lowest, yv.bytes, true}},
             2.0 * n, 12.0 * n,
             [&] { kernels::Axpy(n, al, xv.first, incx, const_cast<float*>(yv.first), incy); });
}

cublasStatus_t cublasSscal_v2(cublasHandle_t h, int n, const float* alpha, float* x, int incx) {
  if (h == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (n <= 0 || incx <= 0) return CUBLAS_STATUS_SUCCESS;  // reference BLAS: nothing to do
  if (alpha == nullptr || x == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  const float al = *alpha;
  const Vec xv = VecOf(x, n, incx);
  return Run(h, "cublasSscal_v2",
             {Access{xv.lowest, xv.bytes, false}, Access{xv.lowest, xv.bytes, true}}, 1.0 * n,
             8.0 * n, [&] { kernels::Scal(n, al, x, incx); });
}

cublasStatus_t cublasSdot_v2(cublasHandle_t h, int n, const float* x, int incx, const float* y,
                             int incy, float* result) {
  if (h == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (result == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (n <= 0) {
    *result = 0.0f;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (x == nullptr || y == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  const Vec xv = VecOf(x, n, incx), yv = VecOf(y, n, incy);
  float value = 0.0f;
  const cublasStatus_t st = Run(
      h, "cublasSdot_v2", {Access{xv.lowest, xv.bytes, false}, Access{yv.lowest, yv.bytes, false}},
      2.0 * n, 8.0 * n, [&] { value = kernels::Dot(n, xv.first, incx, yv.first, incy); });
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  // The result goes to host memory, so cuBLAS waits for the stream: the host's virtual clock
  // advances to the end of the dot (and of everything queued before it).
  if (simgpu::Err e = simgpu::Device::Get().StreamSynchronize(h->stream); e != simgpu::Err::kOk) {
    return simgpu::cublas::FromErr(e);
  }
  *result = value;  // stays 0 under SIMGPU_COMPUTE=timing, where the body does not run
  return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
