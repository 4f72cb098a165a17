// libcublas.so.13 on simgpu through the cuBLAS API with device memory from the device model:
// gemm in every transpose combination with padded leading dimensions, gemv with negative
// increments, axpy, scal, dot, argument checks and the NOT_SUPPORTED path.
#include <cublas_v2.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "tests/simgpu/device/device.h"

namespace {

#define ASSERT_OK(expr) ASSERT_EQ(CUBLAS_STATUS_SUCCESS, (expr))

class DeviceBuffer {
 public:
  explicit DeviceBuffer(const std::vector<float>& host) : n_(host.size()) {
    EXPECT_EQ(simgpu::Err::kOk, simgpu::Device::Get().MemAlloc(bytes(), &ptr_));
    std::memcpy(ptr_, host.data(), bytes());
  }
  ~DeviceBuffer() { simgpu::Device::Get().MemFree(ptr_); }
  float* get() const { return static_cast<float*>(ptr_); }
  std::vector<float> Read() const {
    std::vector<float> v(n_);
    std::memcpy(v.data(), ptr_, bytes());
    return v;
  }
  size_t bytes() const { return std::max<size_t>(n_, 1) * sizeof(float); }

 private:
  size_t n_;
  void* ptr_ = nullptr;
};

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& f : v) f = d(rng);
  return v;
}

class CublasTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_OK(cublasCreate(&handle_)); }
  void TearDown() override { cublasDestroy(handle_); }
  cublasHandle_t handle_ = nullptr;
};

TEST_F(CublasTest, GemmAllTransposesMatchReference) {
  const int m = 5, n = 7, k = 3;
  const cublasOperation_t ops[] = {CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C};
  for (cublasOperation_t ta : ops) {
    for (cublasOperation_t tb : ops) {
      const bool at = ta != CUBLAS_OP_N, bt = tb != CUBLAS_OP_N;
      const int lda = (at ? k : m) + 2, ldb = (bt ? n : k) + 1, ldc = m + 3;
      const std::vector<float> ha = Random(lda * (at ? m : k), 1),
                               hb = Random(ldb * (bt ? k : n), 2), hc = Random(ldc * n, 3);
      DeviceBuffer a(ha), b(hb), c(hc);
      const float alpha = 1.5f, beta = -0.5f;
      ASSERT_OK(cublasSgemm(handle_, ta, tb, m, n, k, &alpha, a.get(), lda, b.get(), ldb, &beta,
                            c.get(), ldc));
      const auto got = c.Read();
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j < n; ++j) {
          double sum = 0;
          for (int l = 0; l < k; ++l) {
            sum += double(at ? ha[l + i * lda] : ha[i + l * lda]) *
                   (bt ? hb[j + l * ldb] : hb[l + j * ldb]);
          }
          EXPECT_NEAR(got[i + j * ldc], alpha * sum + beta * hc[i + j * ldc], 1e-5);
        }
        // Rows past m in each column are padding: untouched.
        for (int j = 0; j < n; ++j) EXPECT_EQ(got[m + j * ldc], hc[m + j * ldc]);
      }
    }
  }
}

TEST_F(CublasTest, GemmBetaZeroIgnoresNaNAndChecksArguments) {
  const int m = 2, n = 2, k = 2;
  DeviceBuffer a(std::vector<float>{1, 2, 3, 4}), b(std::vector<float>{1, 0, 0, 1});
  DeviceBuffer c(std::vector<float>(4, std::numeric_limits<float>::quiet_NaN()));
  const float one = 1.0f, zero = 0.0f;
  ASSERT_OK(cublasSgemm(handle_, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a.get(), 2, b.get(), 2,
                        &zero, c.get(), 2));
  EXPECT_EQ(c.Read(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE,
            cublasSgemm(handle_, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a.get(), 1, b.get(), 2,
                        &zero, c.get(), 2));
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE,
            cublasSgemm(handle_, CUBLAS_OP_N, CUBLAS_OP_N, -1, n, k, &one, a.get(), 2, b.get(), 2,
                        &zero, c.get(), 2));
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE,
            cublasSgemm(handle_, static_cast<cublasOperation_t>(42), CUBLAS_OP_N, m, n, k, &one,
                        a.get(), 2, b.get(), 2, &zero, c.get(), 2));
  EXPECT_EQ(CUBLAS_STATUS_NOT_INITIALIZED,
            cublasSgemm(nullptr, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a.get(), 2, b.get(), 2,
                        &zero, c.get(), 2));
}

TEST_F(CublasTest, StridedBatchedAndGemmEx) {
  const int m = 2, n = 1, k = 2, batch = 3;
  DeviceBuffer a(Random(4 * batch, 4)), b(Random(2 * batch, 5)), c(std::vector<float>(2 * batch));
  const float one = 1.0f, zero = 0.0f;
  ASSERT_OK(cublasSgemmStridedBatched(handle_, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a.get(), 2,
                                      4, b.get(), 2, 2, &zero, c.get(), 2, 2, batch));
  const auto ha = a.Read(), hb = b.Read(), hc = c.Read();
  for (int p = 0; p < batch; ++p)
    for (int i = 0; i < m; ++i)
      EXPECT_NEAR(hc[p * 2 + i], ha[p * 4 + i] * hb[p * 2] + ha[p * 4 + i + 2] * hb[p * 2 + 1],
                  1e-6);
  DeviceBuffer c2(std::vector<float>(2));
  ASSERT_OK(cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a.get(), CUDA_R_32F, 2,
                         b.get(), CUDA_R_32F, 2, &zero, c2.get(), CUDA_R_32F, 2, CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT));
  EXPECT_NEAR(c2.Read()[0], hc[0], 1e-7);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(CUBLAS_STATUS_NOT_SUPPORTED,
            cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a.get(), CUDA_R_16F, 2,
                         b.get(), CUDA_R_16F, 2, &zero, c2.get(), CUDA_R_16F, 2, CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.rfind("simgpu: cublasGemmEx:", 0), 0u) << err;
}

TEST_F(CublasTest, GemvWithNegativeIncrements) {
  const int m = 3, n = 2, lda = 4;
  const std::vector<float> ha = Random(lda * n, 6), hx = Random(2 * 3, 7), hy = Random(3 * 3, 8);
  for (cublasOperation_t op : {CUBLAS_OP_N, CUBLAS_OP_T}) {
    DeviceBuffer a(ha), x(hx), y(hy);
    const int incx = -2, incy = 3;
    const float alpha = 2.0f, beta = 0.5f;
    ASSERT_OK(
        cublasSgemv(handle_, op, m, n, &alpha, a.get(), lda, x.get(), incx, &beta, y.get(), incy));
    const bool t = op == CUBLAS_OP_T;
    const int rows = t ? n : m, cols = t ? m : n;
    const auto got = y.Read();
    for (int i = 0; i < rows; ++i) {
      double sum = 0;
      for (int l = 0; l < cols; ++l) {
        const float xv = hx[(cols - 1 - l) * 2];  // BLAS: negative increment starts at the end
        sum += double(t ? ha[l + i * lda] : ha[i + l * lda]) * xv;
      }
      EXPECT_NEAR(got[i * incy], alpha * sum + beta * hy[i * incy], 1e-5);
    }
  }
  DeviceBuffer a(ha), x(hx), y(hy);
  const float one = 1.0f;
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, cublasSgemv(handle_, CUBLAS_OP_N, m, n, &one, a.get(), lda,
                                                     x.get(), 0, &one, y.get(), 1));
}

TEST_F(CublasTest, Level1) {
  const std::vector<float> hx = {1, 2, 3, 4, 5, 6}, hy = {10, 20, 30, 40, 50, 60};
  DeviceBuffer x(hx), y(hy);
  const float two = 2.0f;
  ASSERT_OK(cublasSaxpy(handle_, 3, &two, x.get(), 2, y.get(), 1));
  EXPECT_EQ(y.Read(), (std::vector<float>{12, 26, 40, 40, 50, 60}));
  ASSERT_OK(cublasSscal(handle_, 2, &two, y.get(), 3));
  EXPECT_EQ(y.Read(), (std::vector<float>{24, 26, 40, 80, 50, 60}));
  float dot = -1;
  ASSERT_OK(cublasSdot(handle_, 3, x.get(), 1, x.get(), -2, &dot));
  EXPECT_EQ(dot, 1 * 5 + 2 * 3 + 3 * 1);
  ASSERT_OK(cublasSdot(handle_, 0, x.get(), 1, x.get(), 1, &dot));
  EXPECT_EQ(dot, 0.0f);
}

TEST_F(CublasTest, ModesStreamsAndStrings) {
  ASSERT_OK(cublasSetMathMode(handle_, CUBLAS_TF32_TENSOR_OP_MATH));
  cublasMath_t math;
  ASSERT_OK(cublasGetMathMode(handle_, &math));
  EXPECT_EQ(math, CUBLAS_TF32_TENSOR_OP_MATH);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(CUBLAS_STATUS_NOT_SUPPORTED, cublasSetPointerMode(handle_, CUBLAS_POINTER_MODE_DEVICE));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.rfind("simgpu: cublasSetPointerMode_v2:", 0), 0u) << err;
  cublasPointerMode_t pm;
  ASSERT_OK(cublasGetPointerMode(handle_, &pm));
  EXPECT_EQ(pm, CUBLAS_POINTER_MODE_HOST);
  cudaStream_t s = reinterpret_cast<cudaStream_t>(0x10), got;
  ASSERT_OK(cublasSetStream(handle_, s));
  ASSERT_OK(cublasGetStream(handle_, &got));
  EXPECT_EQ(got, s);
  ASSERT_OK(cublasSetStream(handle_, nullptr));
  EXPECT_STREQ(cublasGetStatusName(CUBLAS_STATUS_INVALID_VALUE), "CUBLAS_STATUS_INVALID_VALUE");
  EXPECT_STRNE(cublasGetStatusString(CUBLAS_STATUS_SUCCESS), "");
  int v;
  ASSERT_OK(cublasGetVersion(handle_, &v));
  EXPECT_EQ(v, CUBLAS_VERSION);
}

}  // namespace

namespace {

// The access list reaches the device: a C one page short of m x n is an illegal address there
// (checked in a child process, since the error is sticky).
// Runs the op in the child; returns its exit code.
int ShortOutputChild() {
  cublasHandle_t handle;
  cublasCreate(&handle);
  const int m = 64, n = 64, k = 1;
  void *a, *b, *c;
  simgpu::Device::Get().MemAlloc(m * k * 4, &a);
  simgpu::Device::Get().MemAlloc(k * n * 4, &b);
  simgpu::Device::Get().MemAlloc(m * n * 4 - 4096, &c);
  const float one = 1.0f, zero = 0.0f;
  const cublasStatus_t st =
      cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, static_cast<float*>(a), m,
                  static_cast<float*>(b), k, &zero, static_cast<float*>(c), m);
  // The child exits through std::exit, where LeakSanitizer checks: nothing may be left.
  cublasDestroy(handle);
  return st == CUBLAS_STATUS_EXECUTION_FAILED ? 0 : 1;
}

TEST(CublasDeathTest, OutputPastItsAllocationIsAnIllegalAddress) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::exit(ShortOutputChild()), ::testing::ExitedWithCode(0), "cublasSgemm_v2");
}

}  // namespace
