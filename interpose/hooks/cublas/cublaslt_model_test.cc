// Unit tests of the cuBLASLt bookkeeping (cublaslt_model.h) with fake handles (no cuBLASLt), and
// of the GEMM extents (blas_extent.h).
#include "interpose/hooks/cublas/cublaslt_model.h"

#include <cstdint>

#include "gtest/gtest.h"
#include "interpose/hooks/cublas/blas_extent.h"

namespace pooch::interpose {
namespace {

using Mode = pooch::AccessRange::Mode;

const void* H(uintptr_t n) { return reinterpret_cast<const void*>(0x100 * n); }
const void* P(uintptr_t n) { return reinterpret_cast<const void*>(0x1000000 * n); }

const pooch::AccessRange* At(const LtMatmulModel& m, const void* p) {
  for (const pooch::AccessRange& r : m.ranges) {
    if (r.address == reinterpret_cast<uintptr_t>(p)) return &r;
  }
  return nullptr;
}

class LtModelTest : public ::testing::Test {
 protected:
  // PyTorch's Linear with bias: y[n x out] = x[n x in] W^T + b, column major as
  // D (out x n) = op(W) (out x in) * x (in x n): A = W stored in x out (transposed), B = x.
  void SetUp() override {
    model_.CreatedDesc(H(1), CUBLAS_COMPUTE_32F, CUDA_R_32F);
    const int32_t trans = CUBLAS_OP_T;
    model_.Set(H(1), CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof trans);
    model_.CreatedLayout(H(2), CUDA_R_32F, kIn, kOut, kIn);  // A
    model_.CreatedLayout(H(3), CUDA_R_32F, kIn, kN, kIn);    // B
    model_.CreatedLayout(H(4), CUDA_R_32F, kOut, kN, kOut);  // C
    model_.CreatedLayout(H(5), CUDA_R_32F, kOut, kN, kOut);  // D
  }
  absl::StatusOr<LtMatmulModel> Matmul(float beta, const void* c, const void* d, bool algo = true) {
    const float alpha = 1;
    return model_.Matmul(H(1), &alpha, P(1), H(2), P(2), H(3), &beta, c, H(4), d, H(5), algo, P(9),
                         1024);
  }
  void Bias(uint32_t epilogue) {
    model_.Set(H(1), CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue);
    const void* bias = P(6);
    model_.Set(H(1), CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
  }

  static constexpr uint64_t kIn = 64, kOut = 10, kN = 32;
  LtModel model_;
};

TEST_F(LtModelTest, LinearWithBiasReadsABAndBiasAndWritesD) {
  Bias(CUBLASLT_EPILOGUE_BIAS);
  absl::StatusOr<LtMatmulModel> m = Matmul(0, P(4), P(5));
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_TRUE(At(*m, P(1)) && At(*m, P(2)) && At(*m, P(5)) && At(*m, P(6)) && At(*m, P(9)));
  EXPECT_EQ(At(*m, P(1))->bytes, static_cast<int64_t>(kIn * kOut * 4));
  EXPECT_EQ(At(*m, P(1))->mode, Mode::kRead);
  EXPECT_EQ(At(*m, P(2))->bytes, static_cast<int64_t>(kIn * kN * 4));
  EXPECT_EQ(At(*m, P(6))->bytes, static_cast<int64_t>(kOut * 4));  // rows of D
  EXPECT_EQ(At(*m, P(6))->mode, Mode::kRead);
  EXPECT_EQ(At(*m, P(5))->mode, Mode::kWrite);
  EXPECT_EQ(At(*m, P(5))->bytes, static_cast<int64_t>(kOut * kN * 4));
  // Note [Scratch workspaces]: written only, so a workspace allocated around the call is no
  // uninitialised read that would make the matmul unreplayable in a profile.
  EXPECT_EQ(At(*m, P(9))->mode, Mode::kWrite);
  EXPECT_EQ(At(*m, P(4)), nullptr);  // beta = 0: C not read
  EXPECT_TRUE(m->replayable);
  EXPECT_FALSE(Matmul(0, P(4), P(5), /*algo=*/false)->replayable);
}

TEST_F(LtModelTest, NonZeroBetaReadsC) {
  absl::StatusOr<LtMatmulModel> m = Matmul(1, P(4), P(5));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(At(*m, P(4))->mode, Mode::kRead);
  EXPECT_EQ(At(*m, P(5))->mode, Mode::kWrite);
  EXPECT_FALSE(m->replayable);
  // C == D accumulates in place.
  absl::StatusOr<LtMatmulModel> in_place = Matmul(1, P(5), P(5));
  ASSERT_TRUE(in_place.ok()) << in_place.status();
  EXPECT_EQ(At(*in_place, P(5))->mode, Mode::kReadWrite);
  EXPECT_FALSE(in_place->replayable);
  // Device pointer mode: beta cannot be read, so C is read, and alpha and beta are memory.
  const int32_t device = CUBLASLT_POINTER_MODE_DEVICE;
  model_.Set(H(1), CUBLASLT_MATMUL_DESC_POINTER_MODE, &device, sizeof device);
  const float* alpha = static_cast<const float*>(P(7));
  const float* beta = static_cast<const float*>(P(8));
  absl::StatusOr<LtMatmulModel> dev = model_.Matmul(H(1), alpha, P(1), H(2), P(2), H(3), beta, P(4),
                                                    H(4), P(5), H(5), true, nullptr, 0);
  ASSERT_TRUE(dev.ok()) << dev.status();
  EXPECT_EQ(At(*dev, P(4))->mode, Mode::kRead);
  EXPECT_EQ(At(*dev, P(7))->bytes, 4);
  EXPECT_EQ(At(*dev, P(8))->bytes, 4);
  EXPECT_FALSE(dev->replayable);
}

TEST_F(LtModelTest, BatchedAndRowMajorLayouts) {
  const int32_t batch = 3;
  const int64_t stride = 1000;
  model_.Set(H(3), CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch);
  model_.Set(H(3), CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride);
  const int32_t row = CUBLASLT_ORDER_ROW;
  model_.Set(H(2), CUBLASLT_MATRIX_LAYOUT_ORDER, &row, sizeof row);
  const uint64_t ld = kOut;  // row major: ld >= cols
  model_.Set(H(2), CUBLASLT_MATRIX_LAYOUT_LD, &ld, sizeof ld);
  absl::StatusOr<LtMatmulModel> m = Matmul(0, P(4), P(5));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(At(*m, P(2))->bytes, static_cast<int64_t>((2 * 1000 + (kN - 1) * kIn + kIn) * 4));
  EXPECT_EQ(At(*m, P(1))->bytes, static_cast<int64_t>(((kIn - 1) * kOut + kOut) * 4));
}

TEST_F(LtModelTest, OpaqueMatmulsAreErrors) {
  // An aux epilogue, whose buffer pooch does not size.
  Bias(CUBLASLT_EPILOGUE_GELU_AUX_BIAS);
  EXPECT_FALSE(Matmul(0, P(4), P(5)).ok());
  Bias(CUBLASLT_EPILOGUE_DEFAULT);
  EXPECT_TRUE(Matmul(0, P(4), P(5)).ok());
  // fp8 scale pointers.
  const void* scale = P(7);
  model_.Set(H(1), CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale, sizeof scale);
  EXPECT_FALSE(Matmul(0, P(4), P(5)).ok());
  const void* none = nullptr;
  model_.Set(H(1), CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &none, sizeof none);
  EXPECT_TRUE(Matmul(0, P(4), P(5)).ok());
  // A layout in an order pooch does not model.
  const int32_t col32 = CUBLASLT_ORDER_COL32;
  model_.Set(H(3), CUBLASLT_MATRIX_LAYOUT_ORDER, &col32, sizeof col32);
  EXPECT_FALSE(Matmul(0, P(4), P(5)).ok());
  // A destroyed (or never seen) descriptor.
  model_.Destroyed(H(5));
  EXPECT_FALSE(Matmul(0, P(4), P(5)).ok());
}

TEST(BlasExtentTest, GemmBytes) {
  // C (m x n) = A^T (m x k, stored k x m) B (k x n), lda 8 >= k, ldb k, ldc 10 >= m.
  constexpr GemmSpans s = GemmBytes(true, false, 4, 3, 5, 8, 5, 10, 2, 2, 4);
  EXPECT_EQ(s.a, ((4 - 1) * 8 + 5) * 2);
  EXPECT_EQ(s.b, ((3 - 1) * 5 + 5) * 2);
  EXPECT_EQ(s.c, ((3 - 1) * 10 + 4) * 4);
  // Strided batches: two more strides.
  constexpr GemmSpans b = GemmBytes(false, false, 4, 3, 5, 4, 5, 4, 4, 4, 4, 3, 100, 200, 300);
  EXPECT_EQ(b.a, (2 * 100 + 4 * 4 + 4) * 4);
  EXPECT_EQ(b.c, (2 * 300 + 2 * 4 + 4) * 4);
  EXPECT_EQ(MatrixBytes(0, 5, 5, 4), 0);
  EXPECT_EQ(CudaTypeBytes(CUDA_R_16BF), 2);
  EXPECT_EQ(CudaTypeBytes(CUDA_R_4I), 0);
}

}  // namespace
}  // namespace pooch::interpose
