// blas_extent.h: how many bytes a BLAS operand spans, for the cuBLAS and cuBLASLt hooks.
//
// A column-major rows x cols matrix with leading dimension ld spans (cols - 1) * ld + rows
// elements; `batch` of them `stride` elements apart span (batch - 1) * stride + that. An empty
// matrix spans nothing.
#ifndef POOCH_INTERPOSE_HOOKS_CUBLAS_BLAS_EXTENT_H_
#define POOCH_INTERPOSE_HOOKS_CUBLAS_BLAS_EXTENT_H_

#include <cstdint>

#include "interpose/symbols/cuda_api.h"

namespace pooch::interpose {

// Bytes of one element of `type`; 0 for a type pooch does not size (sub-byte, packed, integer
// complex): the caller must then not guess.
constexpr int64_t CudaTypeBytes(cudaDataType_t type) {
  switch (type) {
    case CUDA_R_8I:
    case CUDA_R_8U:
    case CUDA_R_8F_E4M3:
    case CUDA_R_8F_E5M2:
      return 1;
    case CUDA_R_16F:
    case CUDA_R_16BF:
    case CUDA_C_8I:
    case CUDA_C_8U:
      return 2;
    case CUDA_R_32F:
    case CUDA_R_32I:
    case CUDA_C_16F:
    case CUDA_C_16BF:
      return 4;
    case CUDA_R_64F:
    case CUDA_C_32F:
      return 8;
    case CUDA_C_64F:
      return 16;
    default:
      return 0;
  }
}

constexpr int64_t MatrixBytes(int64_t rows, int64_t cols, int64_t ld, int64_t element,
                              int64_t batch = 1, int64_t stride = 0) {
  if (rows <= 0 || cols <= 0 || batch <= 0) return 0;
  return ((batch - 1) * (stride < 0 ? -stride : stride) + (cols - 1) * ld + rows) * element;
}

// The spans of C = op(A) op(B) + C, m x n x k, each operand with its own element size.
struct GemmSpans {
  int64_t a = 0;
  int64_t b = 0;
  int64_t c = 0;
};

constexpr GemmSpans GemmBytes(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                              int64_t lda, int64_t ldb, int64_t ldc, int64_t ea, int64_t eb,
                              int64_t ec, int64_t batch = 1, int64_t stride_a = 0,
                              int64_t stride_b = 0, int64_t stride_c = 0) {
  return {MatrixBytes(trans_a ? k : m, trans_a ? m : k, lda, ea, batch, stride_a),
          MatrixBytes(trans_b ? n : k, trans_b ? k : n, ldb, eb, batch, stride_b),
          MatrixBytes(m, n, ldc, ec, batch, stride_c)};
}

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_HOOKS_CUBLAS_BLAS_EXTENT_H_
