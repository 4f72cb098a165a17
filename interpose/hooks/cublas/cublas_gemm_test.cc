// Unit tests of Note [GEMM replay]'s rules (cublas_gemm.h): which cuBLAS GEMMs may be replayed.
#include "interpose/hooks/cublas/cublas_gemm.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace pooch::interpose {
namespace {

using Mode = pooch::AccessRange::Mode;

void* P(uintptr_t n) { return reinterpret_cast<void*>(0x1000000 * n); }
uintptr_t U(uintptr_t n) { return 0x1000000 * n; }

class GemmReplayTest : public ::testing::Test {
 protected:
  GemmReplayTest() {
    call_.name = "cublasGemmEx";
    call_.form = GemmForm::kGemmEx;
    call_.m = call_.n = call_.k = 16;
    call_.lda = call_.ldb = call_.ldc = 16;
    call_.alpha = &alpha_;
    call_.beta = &beta_;
    call_.A = P(1);
    call_.B = P(2);
    call_.C = P(3);
    settings_.known = true;
    ranges_ = {{U(1), 1024, Mode::kRead}, {U(2), 1024, Mode::kRead}, {U(3), 1024, Mode::kWrite}};
  }
  const char* NotReplayableReason(bool beta_zero = true) {
    return GemmNotReplayable(call_, settings_, beta_zero, ranges_);
  }

  float alpha_ = 1, beta_ = 0;
  GemmCall call_;
  GemmSettings settings_;
  std::vector<pooch::AccessRange> ranges_;
};

TEST_F(GemmReplayTest, HostModeBetaZeroIsReplayable) { EXPECT_EQ(NotReplayableReason(), nullptr); }

TEST_F(GemmReplayTest, ReplayableWithAnyMathModeAndAWorkspace) {
  settings_.math = CUBLAS_TF32_TENSOR_OP_MATH;  // reproduced on pooch's handle
  settings_.workspace_set = true;
  settings_.workspace_bytes = 4 << 20;  // reproduced by the Recomputer's scratch
  ranges_.push_back({U(9), 4 << 20, Mode::kReadWrite});
  EXPECT_EQ(NotReplayableReason(), nullptr);
}

TEST_F(GemmReplayTest, DevicePointerModeIsNot) {
  settings_.pointer_mode = CUBLAS_POINTER_MODE_DEVICE;
  ASSERT_NE(NotReplayableReason(), nullptr);
  EXPECT_NE(std::string(NotReplayableReason()).find("device pointer mode"), std::string::npos)
      << NotReplayableReason();
}

TEST_F(GemmReplayTest, BetaNotZeroIsNot) {
  ranges_[2].mode = Mode::kReadWrite;
  ASSERT_NE(NotReplayableReason(/*beta_zero=*/false), nullptr);
  EXPECT_NE(std::string(NotReplayableReason(false)).find("beta"), std::string::npos)
      << NotReplayableReason(false);
}

TEST_F(GemmReplayTest, AtomicsAllowedIsNot) {
  settings_.atomics = CUBLAS_ATOMICS_ALLOWED;
  EXPECT_NE(NotReplayableReason(), nullptr);
}

TEST_F(GemmReplayTest, UnreadableHandleIsNot) {
  settings_.known = false;
  EXPECT_NE(NotReplayableReason(), nullptr);
}

TEST_F(GemmReplayTest, ComplexCIsNot) {
  call_.c_type = CUDA_C_32F;
  EXPECT_NE(NotReplayableReason(), nullptr);
}

TEST_F(GemmReplayTest, CInsideAnInputIsNot) {
  ranges_[0] = {U(3) - 512, 1024, Mode::kRead};  // A's end overlaps C's start
  EXPECT_NE(NotReplayableReason(), nullptr);
  ranges_[0] = {U(3) - 1024, 1024, Mode::kRead};  // adjacent: fine
  EXPECT_EQ(NotReplayableReason(), nullptr);
}

TEST_F(GemmReplayTest, CWithGapsIsNot) {
  call_.ldc = 16;
  EXPECT_EQ(NotReplayableReason(), nullptr);
  call_.ldc = 32;  // a column of 16 rows every 32: the rows between are someone else's
  EXPECT_NE(NotReplayableReason(), nullptr);
  call_.ldc = 16;
  call_.batch = 4;
  call_.stride_c = 16 * 16;
  EXPECT_EQ(NotReplayableReason(), nullptr);
  call_.stride_c = 16 * 16 * 2;
  EXPECT_NE(NotReplayableReason(), nullptr);
}

TEST_F(GemmReplayTest, MissingOutputOrAlphaIsNot) {
  ranges_.pop_back();
  EXPECT_NE(NotReplayableReason(), nullptr);
  ranges_.push_back({U(3), 1024, Mode::kWrite});
  call_.alpha = nullptr;
  EXPECT_NE(NotReplayableReason(), nullptr);
}

TEST(HostScaleIsZeroTest, BytesDecide) {
  const float zero = 0, one = 1, minus_zero = -0.0f;
  const double dzero = 0;
  const uint16_t hzero = 0, hone = 0x3c00;
  EXPECT_TRUE(HostScaleIsZero(&zero, sizeof zero));
  EXPECT_TRUE(HostScaleIsZero(&dzero, sizeof dzero));
  EXPECT_TRUE(HostScaleIsZero(&hzero, sizeof hzero));
  EXPECT_FALSE(HostScaleIsZero(&one, sizeof one));
  EXPECT_FALSE(HostScaleIsZero(&hone, sizeof hone));
  EXPECT_FALSE(HostScaleIsZero(&minus_zero, sizeof minus_zero));  // conservative
  EXPECT_FALSE(HostScaleIsZero(nullptr, 4));
}

TEST(GemmExScaleBytesTest, ScaleTypeOfTheComputeType) {
  EXPECT_EQ(GemmExScaleBytes(CUBLAS_COMPUTE_16F), 2u);
  EXPECT_EQ(GemmExScaleBytes(CUBLAS_COMPUTE_32F), 4u);
  EXPECT_EQ(GemmExScaleBytes(CUBLAS_COMPUTE_32F_FAST_TF32), 4u);
  EXPECT_EQ(GemmExScaleBytes(CUBLAS_COMPUTE_64F), 8u);
}

}  // namespace
}  // namespace pooch::interpose
