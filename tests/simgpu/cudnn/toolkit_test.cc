// A program linked against the REAL CUDA Toolkit (libcudart.so.13, libcudnn.so.9) that runs on
// simgpu through LD_LIBRARY_PATH: the dynamic loader must bind its versioned cudnn* references
// to simgpu's libcudnn.so.9, and device memory from cudaMalloc must work with it.
#include <cuda_runtime.h>
#include <cudnn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace {

#define ASSERT_CUDA(expr) ASSERT_EQ(cudaSuccess, (expr))
#define ASSERT_CUDNN(expr) ASSERT_EQ(CUDNN_STATUS_SUCCESS, (expr))

TEST(ToolkitCudnnTest, ConvolutionOnAStreamMatchesReferenceAndTakesVirtualTime) {
  const int n = 2, c = 3, h = 9, w = 8, k = 4, r = 3, s = 3;  // pad 1, stride 1
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> hx(n * c * h * w), hw(k * c * r * s), hy(n * k * h * w);
  for (float& v : hx) v = d(rng);
  for (float& v : hw) v = d(rng);
  float *x, *wt, *y;
  ASSERT_CUDA(cudaMalloc(&x, hx.size() * 4));
  ASSERT_CUDA(cudaMalloc(&wt, hw.size() * 4));
  ASSERT_CUDA(cudaMalloc(&y, hy.size() * 4));
  ASSERT_CUDA(cudaMemcpy(x, hx.data(), hx.size() * 4, cudaMemcpyHostToDevice));
  ASSERT_CUDA(cudaMemcpy(wt, hw.data(), hw.size() * 4, cudaMemcpyHostToDevice));
  cudaStream_t stream;
  ASSERT_CUDA(cudaStreamCreate(&stream));

  cudnnHandle_t handle;
  ASSERT_CUDNN(cudnnCreate(&handle));
  ASSERT_CUDNN(cudnnSetStream(handle, stream));
  cudnnTensorDescriptor_t xd, yd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cd;
  ASSERT_CUDNN(cudnnCreateTensorDescriptor(&xd));
  ASSERT_CUDNN(cudnnCreateTensorDescriptor(&yd));
  ASSERT_CUDNN(cudnnCreateFilterDescriptor(&wd));
  ASSERT_CUDNN(cudnnCreateConvolutionDescriptor(&cd));
  ASSERT_CUDNN(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w));
  ASSERT_CUDNN(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, k, c, r, s));
  ASSERT_CUDNN(cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                               CUDNN_DATA_FLOAT));
  int on, oc, oh, ow;
  ASSERT_CUDNN(cudnnGetConvolution2dForwardOutputDim(cd, xd, wd, &on, &oc, &oh, &ow));
  ASSERT_EQ(oh, h);
  ASSERT_CUDNN(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, on, oc, oh, ow));
  cudnnConvolutionFwdAlgoPerf_t perf;
  int returned;
  ASSERT_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(handle, xd, wd, cd, yd, 1, &returned, &perf));
  size_t ws_bytes;
  ASSERT_CUDNN(
      cudnnGetConvolutionForwardWorkspaceSize(handle, xd, wd, cd, yd, perf.algo, &ws_bytes));
  void* ws = nullptr;
  if (ws_bytes > 0) {
    ASSERT_CUDA(cudaMalloc(&ws, ws_bytes));
  }

  cudaEvent_t start, stop;
  ASSERT_CUDA(cudaEventCreate(&start));
  ASSERT_CUDA(cudaEventCreate(&stop));
  ASSERT_CUDA(cudaEventRecord(start, stream));
  const float one = 1.0f, zero = 0.0f;
  ASSERT_CUDNN(cudnnConvolutionForward(handle, &one, xd, x, wd, wt, cd, perf.algo, ws, ws_bytes,
                                       &zero, yd, y));
  ASSERT_CUDA(cudaEventRecord(stop, stream));
  ASSERT_CUDA(cudaEventSynchronize(stop));
  float ms = 0;
  ASSERT_CUDA(cudaEventElapsedTime(&ms, start, stop));
  EXPECT_GT(ms, 0.0f);
  ASSERT_CUDA(cudaMemcpy(hy.data(), y, hy.size() * 4, cudaMemcpyDeviceToHost));

  for (int in = 0; in < n; ++in)
    for (int ik = 0; ik < k; ++ik)
      for (int p = 0; p < h; ++p)
        for (int q = 0; q < w; ++q) {
          double sum = 0;
          for (int ic = 0; ic < c; ++ic)
            for (int ir = 0; ir < r; ++ir)
              for (int is = 0; is < s; ++is) {
                const int hh = p - 1 + ir, ww = q - 1 + is;
                if (hh < 0 || hh >= h || ww < 0 || ww >= w) continue;
                sum += double(hx[((in * c + ic) * h + hh) * w + ww]) *
                       hw[((ik * c + ic) * r + ir) * s + is];
              }
          EXPECT_NEAR(hy[((in * k + ik) * h + p) * w + q], sum, 1e-4);
        }

  cudnnDestroyTensorDescriptor(xd);
  cudnnDestroyTensorDescriptor(yd);
  cudnnDestroyFilterDescriptor(wd);
  cudnnDestroyConvolutionDescriptor(cd);
  ASSERT_CUDNN(cudnnDestroy(handle));
  cudaFree(x);
  cudaFree(wt);
  cudaFree(y);
  if (ws) cudaFree(ws);
  cudaStreamDestroy(stream);
}

}  // namespace
