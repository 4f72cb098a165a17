// A program linked against the REAL CUDA Toolkit (libcudart.so.13, libcublas.so.13) that runs
// on simgpu through LD_LIBRARY_PATH: its versioned cublas*_v2 references must bind to simgpu's
// libcublas.so.13, on device memory from cudaMalloc and a stream from cudaStreamCreate.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <vector>

namespace {

#define ASSERT_CUDA(expr) ASSERT_EQ(cudaSuccess, (expr))
#define ASSERT_CUBLAS(expr) ASSERT_EQ(CUBLAS_STATUS_SUCCESS, (expr))

TEST(ToolkitCublasTest, GemmAndDotOnAStream) {
  // Column-major A (2x3), B (3x2): C = A * B.
  const std::vector<float> ha = {1, 4, 2, 5, 3, 6}, hb = {1, 0, 1, 0, 1, 1};
  std::vector<float> hc(4, -1);
  float *a, *b, *c;
  ASSERT_CUDA(cudaMalloc(&a, 6 * 4));
  ASSERT_CUDA(cudaMalloc(&b, 6 * 4));
  ASSERT_CUDA(cudaMalloc(&c, 4 * 4));
  ASSERT_CUDA(cudaMemcpy(a, ha.data(), 24, cudaMemcpyHostToDevice));
  ASSERT_CUDA(cudaMemcpy(b, hb.data(), 24, cudaMemcpyHostToDevice));
  cudaStream_t stream;
  ASSERT_CUDA(cudaStreamCreate(&stream));
  cublasHandle_t handle;
  ASSERT_CUBLAS(cublasCreate(&handle));
  ASSERT_CUBLAS(cublasSetStream(handle, stream));
  const float one = 1.0f, zero = 0.0f;
  ASSERT_CUBLAS(
      cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 3, &one, a, 2, b, 2 + 1, &zero, c, 2));
  ASSERT_CUDA(cudaStreamSynchronize(stream));
  ASSERT_CUDA(cudaMemcpy(hc.data(), c, 16, cudaMemcpyDeviceToHost));
  // B (ld 3) columns: (1,0,1) and (0,1,1).
  EXPECT_EQ(hc, (std::vector<float>{1 + 3, 4 + 6, 2 + 3, 5 + 6}));
  float dot = 0;
  ASSERT_CUBLAS(cublasSdot(handle, 6, a, 1, a, 1, &dot));  // waits for the stream
  EXPECT_EQ(dot, 1 + 16 + 4 + 25 + 9 + 36);
  ASSERT_CUBLAS(cublasDestroy(handle));
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  cudaStreamDestroy(stream);
}

}  // namespace
