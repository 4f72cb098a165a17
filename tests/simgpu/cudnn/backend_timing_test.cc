// cuDNN's backend API in timing mode (SIMGPU_COMPUTE=timing, set by the test's environment),
// from a program linked against the REAL toolkit libcudnn.so.9: plans of every convolution pass
// run in fp32, fp16 and bf16, NCHW and channels-last, with virtual time that grows with their
// FLOPs; graphs math mode refuses (half precision, 3-d convolutions, reductions) run here.
#include <cstdlib>

#include "backend_test_util.h"

namespace {

using backend_test::Desc;
using backend_test::MakeConv;
using backend_test::MakeConvOp;
using backend_test::MakeGraph;
using backend_test::MakePack;
using backend_test::MakePlan;
using backend_test::MakeTensor;
using backend_test::Strides;

class BackendTimingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_STREQ(std::getenv("SIMGPU_COMPUTE"), "timing");
    ASSERT_CUDNN(cudnnCreate(&handle_));
    ASSERT_CUDA(cudaStreamCreate(&stream_));
    ASSERT_CUDNN(cudnnSetStream(handle_, stream_));
  }
  void TearDown() override {
    cudnnDestroy(handle_);
    cudaStreamDestroy(stream_);
  }

  // Runs one convolution pass over x (n, c, spatial...), w (k, c, filter...) with pad 1,
  // stride 1, and returns its virtual milliseconds (events on the handle's stream).
  float RunConv(cudnnBackendDescriptorType_t kind, std::vector<int64_t> xdims,
                std::vector<int64_t> wdims, cudnnDataType_t type, bool nhwc) {
    std::vector<int64_t> ydims = xdims;
    ydims[1] = wdims[0];
    for (size_t i = 2; i < xdims.size(); ++i) ydims[i] = xdims[i] + 2 - wdims[i] + 1;
    const int eb = type == CUDNN_DATA_FLOAT ? 4 : 2;
    auto elems = [](const std::vector<int64_t>& d) {
      int64_t n = 1;
      for (int64_t v : d) n *= v;
      return static_cast<size_t>(n);
    };
    void *x = nullptr, *w = nullptr, *y = nullptr;
    EXPECT_EQ(cudaSuccess, cudaMalloc(&x, elems(xdims) * eb));
    EXPECT_EQ(cudaSuccess, cudaMalloc(&w, elems(wdims) * eb));
    EXPECT_EQ(cudaSuccess, cudaMalloc(&y, elems(ydims) * eb));
    const std::vector<int64_t> ones(xdims.size() - 2, 1);
    Desc xt(CUDNN_BACKEND_TENSOR_DESCRIPTOR), wt(CUDNN_BACKEND_TENSOR_DESCRIPTOR),
        yt(CUDNN_BACKEND_TENSOR_DESCRIPTOR), conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR), op(kind),
        graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR),
        plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR), pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    EXPECT_EQ(CUDNN_STATUS_SUCCESS, MakeTensor(&xt, 'x', xdims, Strides(xdims, nhwc), type));
    EXPECT_EQ(CUDNN_STATUS_SUCCESS, MakeTensor(&wt, 'w', wdims, Strides(wdims, nhwc), type));
    EXPECT_EQ(CUDNN_STATUS_SUCCESS, MakeTensor(&yt, 'y', ydims, Strides(ydims, nhwc), type));
    EXPECT_EQ(CUDNN_STATUS_SUCCESS, MakeConv(&conv, ones, ones, ones));
    EXPECT_EQ(CUDNN_STATUS_SUCCESS, MakeConvOp(&op, kind, xt, wt, yt, conv));
    EXPECT_EQ(CUDNN_STATUS_SUCCESS, MakeGraph(&graph, handle_, {&op}));
    int64_t ws = -1;
    MakePlan(handle_, graph, &plan, &ws);
    EXPECT_EQ(CUDNN_STATUS_SUCCESS, MakePack(&pack, {'x', 'y', 'w'}, {x, y, w}, nullptr));
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    cudaEventRecord(start, stream_);
    EXPECT_EQ(CUDNN_STATUS_SUCCESS, cudnnBackendExecute(handle_, plan.get(), pack.get()));
    cudaEventRecord(stop, stream_);
    cudaEventSynchronize(stop);
    float ms = -1;
    EXPECT_EQ(cudaSuccess, cudaEventElapsedTime(&ms, start, stop));
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    cudaFree(x);
    cudaFree(w);
    cudaFree(y);
    return ms;
  }

  cudnnHandle_t handle_;
  cudaStream_t stream_;
};

constexpr cudnnBackendDescriptorType_t kPasses[] = {
    CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
    CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
    CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR};

TEST_F(BackendTimingTest, TimeGrowsWithFlopsInEveryPass) {
  // Compute-bound 3x3 convolutions; 4x the output channels is 4x the FLOPs.
  for (auto kind : kPasses) {
    const float small = RunConv(kind, {16, 64, 56, 56}, {64, 64, 3, 3}, CUDNN_DATA_FLOAT, false);
    const float large = RunConv(kind, {16, 64, 56, 56}, {256, 64, 3, 3}, CUDNN_DATA_FLOAT, false);
    EXPECT_GT(small, 0.0f) << kind;
    EXPECT_GT(large, 3.0f * small) << kind;
    EXPECT_LT(large, 5.0f * small) << kind;
  }
}

TEST_F(BackendTimingTest, HalfBfloatChannelsLastAnd3dConvolutionsRun) {
  for (auto kind : kPasses) {
    EXPECT_GT(RunConv(kind, {8, 32, 28, 28}, {64, 32, 3, 3}, CUDNN_DATA_HALF, true), 0.0f);
    EXPECT_GT(RunConv(kind, {8, 32, 28, 28}, {64, 32, 3, 3}, CUDNN_DATA_BFLOAT16, false), 0.0f);
    EXPECT_GT(RunConv(kind, {2, 8, 8, 8, 8}, {16, 8, 3, 3, 3}, CUDNN_DATA_FLOAT, false), 0.0f);
  }
}

TEST_F(BackendTimingTest, ReductionGraphRunsAndTouchesItsTensors) {
  // y (1, c, 1, 1) = sum over n, h, w of x: a memory-bound graph of one reduction.
  const std::vector<int64_t> xdims{32, 64, 28, 28}, ydims{1, 64, 1, 1};
  void *x = nullptr, *y = nullptr;
  ASSERT_CUDA(cudaMalloc(&x, 32 * 64 * 28 * 28 * 4));
  ASSERT_CUDA(cudaMalloc(&y, 64 * 4));
  Desc xt(CUDNN_BACKEND_TENSOR_DESCRIPTOR), yt(CUDNN_BACKEND_TENSOR_DESCRIPTOR),
      red(CUDNN_BACKEND_REDUCTION_DESCRIPTOR), op(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR),
      graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR), plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR),
      pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  ASSERT_CUDNN(MakeTensor(&xt, 'x', xdims, Strides(xdims)));
  ASSERT_CUDNN(MakeTensor(&yt, 'y', ydims, Strides(ydims)));
  ASSERT_CUDNN(red.Set1(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE,
                        CUDNN_REDUCE_TENSOR_ADD));
  ASSERT_CUDNN(red.Set1(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, CUDNN_DATA_FLOAT));
  ASSERT_CUDNN(red.Finalize());
  ASSERT_CUDNN(op.SetDesc(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, xt));
  ASSERT_CUDNN(op.SetDesc(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, yt));
  ASSERT_CUDNN(op.SetDesc(CUDNN_ATTR_OPERATION_REDUCTION_DESC, red));
  ASSERT_CUDNN(op.Finalize());
  ASSERT_CUDNN(MakeGraph(&graph, handle_, {&op}));
  int64_t ws = -1;
  MakePlan(handle_, graph, &plan, &ws, CUDNN_HEUR_MODE_FALLBACK);
  ASSERT_CUDNN(MakePack(&pack, {'x', 'y'}, {x, y}, nullptr));
  ASSERT_CUDNN(cudnnBackendExecute(handle_, plan.get(), pack.get()));
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  cudaFree(x);
  cudaFree(y);
}

}  // namespace
