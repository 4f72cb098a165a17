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
  // stride 1, and returns its virtual milliseconds (events on the handle's stream). The plan is
  // for global engine `engine`, or (-1) the first heuristics config PyTorch's deterministic,
  // no-TF32 filter keeps.
  float RunConv(cudnnBackendDescriptorType_t kind, std::vector<int64_t> xdims,
                std::vector<int64_t> wdims, cudnnDataType_t type, bool nhwc, int64_t engine = -1) {
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
    if (engine < 0) {
      int64_t ws = -1;
      MakePlan(handle_, graph, &plan, &ws);
    } else {
      EXPECT_EQ(CUDNN_STATUS_SUCCESS, backend_test::MakePlanForEngine(graph, engine, &plan));
    }
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

// The same cost model as the legacy call: a plan takes the time cudnnConvolutionForward takes.
TEST_F(BackendTimingTest, ForwardPlanTakesTheLegacyCallsTime) {
  const int n = 16, c = 64, h = 56, w = 56, k = 128;
  const float plan_ms = RunConv(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                                {n, c, h, w}, {k, c, 3, 3}, CUDNN_DATA_FLOAT, false);
  cudnnTensorDescriptor_t xd, yd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cd;
  ASSERT_CUDNN(cudnnCreateTensorDescriptor(&xd));
  ASSERT_CUDNN(cudnnCreateTensorDescriptor(&yd));
  ASSERT_CUDNN(cudnnCreateFilterDescriptor(&wd));
  ASSERT_CUDNN(cudnnCreateConvolutionDescriptor(&cd));
  ASSERT_CUDNN(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w));
  ASSERT_CUDNN(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, k, h, w));
  ASSERT_CUDNN(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, k, c, 3, 3));
  ASSERT_CUDNN(cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                               CUDNN_DATA_FLOAT));
  void *x, *wt, *y;
  ASSERT_CUDA(cudaMalloc(&x, size_t{4} * n * c * h * w));
  ASSERT_CUDA(cudaMalloc(&wt, size_t{4} * k * c * 9));
  ASSERT_CUDA(cudaMalloc(&y, size_t{4} * n * k * h * w));
  cudaEvent_t start, stop;
  ASSERT_CUDA(cudaEventCreate(&start));
  ASSERT_CUDA(cudaEventCreate(&stop));
  ASSERT_CUDA(cudaEventRecord(start, stream_));
  const float one = 1, zero = 0;
  ASSERT_CUDNN(cudnnConvolutionForward(handle_, &one, xd, x, wd, wt, cd,
                                       CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &zero,
                                       yd, y));
  ASSERT_CUDA(cudaEventRecord(stop, stream_));
  ASSERT_CUDA(cudaEventSynchronize(stop));
  float legacy_ms = -1;
  ASSERT_CUDA(cudaEventElapsedTime(&legacy_ms, start, stop));
  EXPECT_GT(plan_ms, 0.0f);
  EXPECT_NEAR(plan_ms, legacy_ms, 1e-3f * legacy_ms);
  cudaFree(x);
  cudaFree(wt);
  cudaFree(y);
  cudnnDestroyTensorDescriptor(xd);
  cudnnDestroyTensorDescriptor(yd);
  cudnnDestroyFilterDescriptor(wd);
  cudnnDestroyConvolutionDescriptor(cd);
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

// Engine 1 (tensor cores) exists where the preset's GPU has tensor cores for the data type and
// runs the convolution's FLOPs at the multiple cuBLAS's typed GEMMs use: fp16 8x on Volta,
// 16x on Ampere; bf16 and tf32 (fp32 data) none on Volta, 16x and 8x on Ampere. The test runs
// on the default V100 and again on an A100 (CMakeLists.txt).
TEST_F(BackendTimingTest, TensorCoreEngineRunsAtTheTensorCoreRate) {
  int device = 0;
  cudaDeviceProp prop;
  ASSERT_CUDA(cudaGetDevice(&device));
  ASSERT_CUDA(cudaGetDeviceProperties(&prop, device));
  struct Case {
    cudnnDataType_t type;
    double speedup;  // 0: no tensor-core engine
  };
  const bool volta = prop.major == 7;
  ASSERT_TRUE(volta || prop.major == 8) << "expected a V100 or A100 preset, got " << prop.name;
  const Case cases[] = {{CUDNN_DATA_HALF, volta ? 8.0 : 16.0},
                        {CUDNN_DATA_BFLOAT16, volta ? 0.0 : 16.0},
                        {CUDNN_DATA_FLOAT, volta ? 0.0 : 8.0}};
  for (const Case& c : cases) {
    // Compute-bound even at the tensor-core rate (the bytes take well under 1/16 of the time).
    const std::vector<int64_t> xdims{32, 128, 28, 28}, wdims{256, 128, 3, 3};
    const float fp32_units = RunConv(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, xdims,
                                     wdims, c.type, true, 0);
    Desc graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    Desc xt(CUDNN_BACKEND_TENSOR_DESCRIPTOR), wt(CUDNN_BACKEND_TENSOR_DESCRIPTOR),
        yt(CUDNN_BACKEND_TENSOR_DESCRIPTOR), conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR),
        op(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR),
        heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR), plan1(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    ASSERT_CUDNN(MakeTensor(&xt, 'x', xdims, Strides(xdims, true), c.type));
    ASSERT_CUDNN(MakeTensor(&wt, 'w', wdims, Strides(wdims, true), c.type));
    ASSERT_CUDNN(MakeTensor(&yt, 'y', {32, 256, 28, 28}, Strides({32, 256, 28, 28}, true), c.type));
    ASSERT_CUDNN(MakeConv(&conv, {1, 1}, {1, 1}, {1, 1}));
    ASSERT_CUDNN(
        MakeConvOp(&op, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, xt, wt, yt, conv));
    ASSERT_CUDNN(MakeGraph(&graph, handle_, {&op}));
    ASSERT_CUDNN(heur.SetDesc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph));
    ASSERT_CUDNN(heur.Set1(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, CUDNN_HEUR_MODE_A));
    ASSERT_CUDNN(heur.Finalize());
    int64_t count = -1;
    ASSERT_CUDNN(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
    if (c.speedup == 0.0) {
      EXPECT_EQ(count, 1) << c.type;
      EXPECT_EQ(CUDNN_STATUS_NOT_SUPPORTED, backend_test::MakePlanForEngine(graph, 1, &plan1));
      continue;
    }
    // Ranked first, with the note PyTorch's no-TF32 filter looks for.
    ASSERT_EQ(count, 2) << c.type;
    Desc first(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR), second(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    cudnnBackendDescriptor_t raw[2] = {first.get(), second.get()};
    ASSERT_CUDNN(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 2, &count, raw));
    EXPECT_TRUE(backend_test::FilteredOut(raw[0]));
    EXPECT_FALSE(backend_test::FilteredOut(raw[1]));
    const float tensor_cores = RunConv(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                                       xdims, wdims, c.type, true, 1);
    EXPECT_GT(tensor_cores, 0.0f);
    EXPECT_NEAR(fp32_units / tensor_cores, c.speedup, 0.15 * c.speedup) << c.type;
  }
}

// PyTorch's mixed precision hands batch norm half data with fp32 parameters: timing mode takes
// it (math mode refuses it, see backend_test.cc), and the time follows the bytes.
TEST_F(BackendTimingTest, BatchNormExTakesHalfDataAndTimeFollowsBytes) {
  auto run = [&](cudnnDataType_t type, int n) {
    const int c = 64, h = 56, w = 56;
    cudnnTensorDescriptor_t xd, pd;
    EXPECT_EQ(CUDNN_STATUS_SUCCESS, cudnnCreateTensorDescriptor(&xd));
    EXPECT_EQ(CUDNN_STATUS_SUCCESS, cudnnCreateTensorDescriptor(&pd));
    EXPECT_EQ(CUDNN_STATUS_SUCCESS,
              cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NHWC, type, n, c, h, w));
    const cudnnBatchNormMode_t mode = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;
    EXPECT_EQ(CUDNN_STATUS_SUCCESS, cudnnDeriveBNTensorDescriptor(pd, xd, mode));
    const size_t eb = type == CUDNN_DATA_FLOAT ? 4 : 2, bytes = size_t{1} * n * c * h * w * eb;
    void *x, *y, *p[6];
    EXPECT_EQ(cudaSuccess, cudaMalloc(&x, bytes));
    EXPECT_EQ(cudaSuccess, cudaMalloc(&y, bytes));
    for (void*& q : p) EXPECT_EQ(cudaSuccess, cudaMalloc(&q, c * 4));
    const float one = 1, zero = 0;
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    cudaEventRecord(start, stream_);
    EXPECT_EQ(CUDNN_STATUS_SUCCESS, cudnnBatchNormalizationForwardTrainingEx(
                                        handle_, mode, CUDNN_BATCHNORM_OPS_BN, &one, &zero, xd, x,
                                        nullptr, nullptr, xd, y, pd, p[0], p[1], 0.1, p[2], p[3],
                                        1e-5, p[4], p[5], nullptr, nullptr, 0, nullptr, 0));
    cudaEventRecord(stop, stream_);
    cudaEventSynchronize(stop);
    float ms = -1;
    EXPECT_EQ(cudaSuccess, cudaEventElapsedTime(&ms, start, stop));
    cudaFree(x);
    cudaFree(y);
    for (void* q : p) cudaFree(q);
    cudnnDestroyTensorDescriptor(xd);
    cudnnDestroyTensorDescriptor(pd);
    return ms;
  };
  const float half = run(CUDNN_DATA_HALF, 64), single = run(CUDNN_DATA_FLOAT, 64);
  EXPECT_GT(half, 0.0f);
  EXPECT_GT(single, 1.5f * half);  // memory-bound: twice the bytes
  EXPECT_GT(run(CUDNN_DATA_BFLOAT16, 128), 1.5f * half);
}

}  // namespace
