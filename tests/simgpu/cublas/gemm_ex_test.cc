// The pieces of the shared typed GEMM that need no device: scalar conversion, spans, compute
// types and the tensor-core rates of Note [Typed GEMM timing].
#include "gemm_ex.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

namespace {

using simgpu::blas::Compute;
using simgpu::blas::Matrix;
using simgpu::blas::Rate;

float FromBits(uint16_t bits, cudaDataType type) {
  float f = -12345;
  EXPECT_TRUE(simgpu::blas::ScalarToFloat(&bits, type, &f));
  return f;
}

TEST(GemmExTest, HalfAndBfloat16ScalarsConvertExactly) {
  EXPECT_EQ(FromBits(0x3c00, CUDA_R_16F), 1.0f);
  EXPECT_EQ(FromBits(0xc000, CUDA_R_16F), -2.0f);
  EXPECT_EQ(FromBits(0x3555, CUDA_R_16F), 0.25f * (1 + 0x155 / 1024.0f));  // 2^-2 * 1.mant
  EXPECT_EQ(FromBits(0x7bff, CUDA_R_16F), 65504.0f);                       // largest normal
  EXPECT_EQ(FromBits(0x0001, CUDA_R_16F), std::ldexp(1.0f, -24));          // smallest subnormal
  EXPECT_EQ(FromBits(0x8000, CUDA_R_16F), 0.0f);
  EXPECT_TRUE(std::signbit(FromBits(0x8000, CUDA_R_16F)));
  EXPECT_TRUE(std::isinf(FromBits(0x7c00, CUDA_R_16F)));
  EXPECT_TRUE(std::isnan(FromBits(0x7e00, CUDA_R_16F)));
  EXPECT_EQ(FromBits(0x3f80, CUDA_R_16BF), 1.0f);
  EXPECT_EQ(FromBits(0xc0a0, CUDA_R_16BF), -5.0f);
  const float x = 0.375f;
  float y = 0;
  EXPECT_TRUE(simgpu::blas::ScalarToFloat(&x, CUDA_R_32F, &y));
  EXPECT_EQ(y, x);
  const double d = 1;
  EXPECT_FALSE(simgpu::blas::ScalarToFloat(&d, CUDA_R_64F, &y));
}

TEST(GemmExTest, SpansCoverTheLastBatchMember) {
  // 3 x 2 of fp16 with ld 4: one member spans 4 + 3 elements; three members 8 apart.
  const Matrix m{nullptr, CUDA_R_16F, 3, 2, 4, 8};
  EXPECT_EQ(simgpu::blas::SpanBytes(m, 1), 7u * 2);
  EXPECT_EQ(simgpu::blas::SpanBytes(m, 3), (16u + 7u) * 2);
  EXPECT_EQ(simgpu::blas::SpanBytes(Matrix{nullptr, CUDA_R_32F, 0, 5, 1, 0}, 4), 0u);
  EXPECT_EQ(simgpu::blas::ElementBytes(CUDA_R_64F), 0);
}

TEST(GemmExTest, ComputeTypesPickScalarsAndMathUnits) {
  Compute c;
  ASSERT_TRUE(simgpu::blas::ComputeOf(CUBLAS_COMPUTE_16F, &c));
  EXPECT_EQ(c.scalar, CUDA_R_16F);
  ASSERT_TRUE(simgpu::blas::ComputeOf(CUDA_R_32F, &c));  // the legacy spelling of 32F
  EXPECT_EQ(c.scalar, CUDA_R_32F);
  EXPECT_EQ(simgpu::blas::RateOf(CUDA_R_32F, c, false), Rate::kFp32);
  EXPECT_EQ(simgpu::blas::RateOf(CUDA_R_32F, c, true), Rate::kTf32);  // TF32 math mode
  EXPECT_EQ(simgpu::blas::RateOf(CUDA_R_16BF, c, false), Rate::kHalf);
  ASSERT_TRUE(simgpu::blas::ComputeOf(CUBLAS_COMPUTE_32F_PEDANTIC, &c));
  EXPECT_EQ(simgpu::blas::RateOf(CUDA_R_32F, c, true), Rate::kFp32);  // pedantic wins
  ASSERT_TRUE(simgpu::blas::ComputeOf(CUBLAS_COMPUTE_32F_FAST_TF32, &c));
  EXPECT_EQ(simgpu::blas::RateOf(CUDA_R_32F, c, false), Rate::kTf32);
  ASSERT_TRUE(simgpu::blas::ComputeOf(CUBLAS_COMPUTE_32F_FAST_16BF, &c));
  EXPECT_EQ(simgpu::blas::RateOf(CUDA_R_32F, c, false), Rate::kHalf);
  EXPECT_FALSE(simgpu::blas::ComputeOf(CUBLAS_COMPUTE_64F, &c));
  EXPECT_FALSE(simgpu::blas::ComputeOf(CUBLAS_COMPUTE_32I, &c));
}

TEST(GemmExTest, TensorCoreRatesFollowTheGpuGeneration) {
  using simgpu::blas::RateSpeedup;
  EXPECT_EQ(RateSpeedup(Rate::kFp32, 9, false), 1.0);
  EXPECT_EQ(RateSpeedup(Rate::kHalf, 7, false), 8.0);  // V100 fp16
  EXPECT_EQ(RateSpeedup(Rate::kHalf, 7, true), 1.0);   // V100 has no bf16 tensor cores
  EXPECT_EQ(RateSpeedup(Rate::kTf32, 7, false), 1.0);  // nor tf32
  EXPECT_EQ(RateSpeedup(Rate::kTf32, 8, false), 8.0);  // A100
  EXPECT_EQ(RateSpeedup(Rate::kHalf, 8, true), 16.0);
  EXPECT_NEAR(RateSpeedup(Rate::kTf32, 9, false), 494.7 / 67, 0.05);  // H100 SXM
  EXPECT_NEAR(RateSpeedup(Rate::kHalf, 9, false), 989.4 / 67, 0.05);
  EXPECT_EQ(RateSpeedup(Rate::kHalf, 6, false), 1.0);
}

}  // namespace
