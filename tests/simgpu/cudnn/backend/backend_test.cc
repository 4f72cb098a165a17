// cuDNN's backend API, driven as PyTorch's cudnn_frontend drives it, from a program linked
// against the REAL toolkit libcudnn.so.9 and run on simgpu in math mode: convolution forward,
// backward data and backward filter plans give bit for bit what the legacy calls give on the
// same data (both run kernels/linear/conv.h); a fused conv + bias + ReLU graph equals the legacy
// convolution followed by the same element-wise math; bad attributes get BAD_PARAM, graphs
// simgpu does not run get NOT_SUPPORTED, and a freed pointer in the variant pack fails the
// execution. Also: the batch-norm Ex calls against the plain ones.
#include <cstring>
#include <random>

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

constexpr cudnnBackendDescriptorType_t kFwd =
    CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR;
constexpr cudnnBackendDescriptorType_t kDgrad =
    CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR;
constexpr cudnnBackendDescriptorType_t kWgrad =
    CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR;

std::vector<float> Random(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

float* Upload(const std::vector<float>& h) {
  float* d = nullptr;
  EXPECT_EQ(cudaSuccess, cudaMalloc(&d, h.size() * 4));
  EXPECT_EQ(cudaSuccess, cudaMemcpy(d, h.data(), h.size() * 4, cudaMemcpyHostToDevice));
  return d;
}

std::vector<float> Download(const float* d, size_t n) {
  std::vector<float> h(n);
  EXPECT_EQ(cudaSuccess, cudaMemcpy(h.data(), d, n * 4, cudaMemcpyDeviceToHost));
  return h;
}

// n, c, h, w -> packed n, h, w, c.
std::vector<float> ToNhwc(const std::vector<float>& v, int64_t n, int64_t c, int64_t h, int64_t w) {
  std::vector<float> out(v.size());
  for (int64_t a = 0; a < n; ++a)
    for (int64_t b = 0; b < c; ++b)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x)
          out[((a * h + y) * w + x) * c + b] = v[((a * c + b) * h + y) * w + x];
  return out;
}

// A grouped, strided 2-d convolution and its data, with legacy descriptors for the same.
class BackendConvTest : public ::testing::Test {
 public:
  static constexpr int64_t N = 2, C = 4, H = 9, W = 8, K = 6, G = 2, R = 3, S = 3, P = 5, Q = 4;

  void SetUp() override {
    ASSERT_CUDNN(cudnnCreate(&handle_));
    ASSERT_CUDA(cudaStreamCreate(&stream_));
    ASSERT_CUDNN(cudnnSetStream(handle_, stream_));
    hx_ = Random(N * C * H * W, 1);
    hw_ = Random(K * (C / G) * R * S, 2);
    hy_ = Random(N * K * P * Q, 3);
    ASSERT_CUDNN(cudnnCreateTensorDescriptor(&xd_));
    ASSERT_CUDNN(cudnnCreateTensorDescriptor(&yd_));
    ASSERT_CUDNN(cudnnCreateFilterDescriptor(&wd_));
    ASSERT_CUDNN(cudnnCreateConvolutionDescriptor(&cd_));
    ASSERT_CUDNN(cudnnSetTensor4dDescriptor(xd_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, N, C, H, W));
    ASSERT_CUDNN(cudnnSetTensor4dDescriptor(yd_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, N, K, P, Q));
    ASSERT_CUDNN(
        cudnnSetFilter4dDescriptor(wd_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, K, C / G, R, S));
    ASSERT_CUDNN(cudnnSetConvolution2dDescriptor(cd_, 1, 1, 2, 2, 1, 1, CUDNN_CROSS_CORRELATION,
                                                 CUDNN_DATA_FLOAT));
    ASSERT_CUDNN(cudnnSetConvolutionGroupCount(cd_, G));
  }

  void TearDown() override {
    cudnnDestroyTensorDescriptor(xd_);
    cudnnDestroyTensorDescriptor(yd_);
    cudnnDestroyFilterDescriptor(wd_);
    cudnnDestroyConvolutionDescriptor(cd_);
    cudnnDestroy(handle_);
    cudaStreamDestroy(stream_);
  }

  // Builds the one-operation graph for `kind` over x, w, y (NHWC strides for x and y when
  // `nhwc`, for w when `nhwc_filter`) and runs it with the frontend's uids 'x', 'y', 'w'.
  void RunBackend(cudnnBackendDescriptorType_t kind, void* x, void* w, void* y, bool nhwc = false,
                  bool nhwc_filter = false, float alpha = 1.0f, float beta = 0.0f) {
    const std::vector<int64_t> xdims{N, C, H, W}, wdims{K, C / G, R, S}, ydims{N, K, P, Q};
    Desc xt(CUDNN_BACKEND_TENSOR_DESCRIPTOR), wt(CUDNN_BACKEND_TENSOR_DESCRIPTOR),
        yt(CUDNN_BACKEND_TENSOR_DESCRIPTOR), conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR), op(kind),
        graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR),
        plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR), pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    ASSERT_CUDNN(MakeTensor(&xt, 'x', xdims, Strides(xdims, nhwc)));
    ASSERT_CUDNN(MakeTensor(&yt, 'y', ydims, Strides(ydims, nhwc)));
    ASSERT_CUDNN(MakeTensor(&wt, 'w', wdims, Strides(wdims, nhwc_filter)));
    ASSERT_CUDNN(MakeConv(&conv, {1, 1}, {2, 2}, {1, 1}));
    ASSERT_CUDNN(MakeConvOp(&op, kind, xt, wt, yt, conv, alpha, beta));
    ASSERT_CUDNN(MakeGraph(&graph, handle_, {&op}));
    int64_t ws_bytes = -1;
    MakePlan(handle_, graph, &plan, &ws_bytes);
    void* ws = nullptr;
    if (ws_bytes > 0) {
      ASSERT_CUDA(cudaMalloc(&ws, ws_bytes));
    }
    ASSERT_CUDNN(MakePack(&pack, {'x', 'y', 'w'}, {x, y, w}, ws));
    ASSERT_CUDNN(cudnnBackendExecute(handle_, plan.get(), pack.get()));
    ASSERT_CUDA(cudaStreamSynchronize(stream_));
    if (ws) cudaFree(ws);
  }

  cudnnHandle_t handle_;
  cudaStream_t stream_;
  cudnnTensorDescriptor_t xd_, yd_;
  cudnnFilterDescriptor_t wd_;
  cudnnConvolutionDescriptor_t cd_;
  std::vector<float> hx_, hw_, hy_;
};

TEST_F(BackendConvTest, ForwardMatchesLegacyBitForBit) {
  float *x = Upload(hx_), *w = Upload(hw_), *y1 = Upload(hy_), *y2 = Upload(hy_);
  const float one = 1, zero = 0;
  ASSERT_CUDNN(cudnnConvolutionForward(handle_, &one, xd_, x, wd_, w, cd_,
                                       CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &zero,
                                       yd_, y1));
  RunBackend(kFwd, x, w, y2);
  const auto legacy = Download(y1, hy_.size()), backend = Download(y2, hy_.size());
  EXPECT_NE(legacy, hy_);  // the convolution wrote something
  EXPECT_EQ(0, std::memcmp(legacy.data(), backend.data(), legacy.size() * 4));
  for (float* p : {x, w, y1, y2}) cudaFree(p);
}

TEST_F(BackendConvTest, ForwardWithBetaBlendsThePriorOutput) {
  float *x = Upload(hx_), *w = Upload(hw_), *y1 = Upload(hy_), *y2 = Upload(hy_);
  const float alpha = 0.5f, beta = 2.0f;
  ASSERT_CUDNN(cudnnConvolutionForward(handle_, &alpha, xd_, x, wd_, w, cd_,
                                       CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &beta,
                                       yd_, y1));
  RunBackend(kFwd, x, w, y2, false, false, alpha, beta);
  const auto legacy = Download(y1, hy_.size()), backend = Download(y2, hy_.size());
  EXPECT_EQ(0, std::memcmp(legacy.data(), backend.data(), legacy.size() * 4));
  for (float* p : {x, w, y1, y2}) cudaFree(p);
}

TEST_F(BackendConvTest, BackwardDataMatchesLegacyBitForBit) {
  float *dy = Upload(hy_), *w = Upload(hw_), *dx1 = Upload(hx_), *dx2 = Upload(hx_);
  const float one = 1, zero = 0;
  ASSERT_CUDNN(cudnnConvolutionBackwardData(handle_, &one, wd_, w, yd_, dy, cd_,
                                            CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, nullptr, 0, &zero,
                                            xd_, dx1));
  RunBackend(kDgrad, dx2, w, dy);
  const auto legacy = Download(dx1, hx_.size()), backend = Download(dx2, hx_.size());
  EXPECT_NE(legacy, hx_);
  EXPECT_EQ(0, std::memcmp(legacy.data(), backend.data(), legacy.size() * 4));
  for (float* p : {dy, w, dx1, dx2}) cudaFree(p);
}

TEST_F(BackendConvTest, BackwardFilterMatchesLegacyBitForBit) {
  float *x = Upload(hx_), *dy = Upload(hy_), *dw1 = Upload(hw_), *dw2 = Upload(hw_);
  const float one = 1, zero = 0;
  ASSERT_CUDNN(cudnnConvolutionBackwardFilter(handle_, &one, xd_, x, yd_, dy, cd_,
                                              CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, nullptr, 0,
                                              &zero, wd_, dw1));
  RunBackend(kWgrad, x, dw2, dy);
  const auto legacy = Download(dw1, hw_.size()), backend = Download(dw2, hw_.size());
  EXPECT_NE(legacy, hw_);
  EXPECT_EQ(0, std::memcmp(legacy.data(), backend.data(), legacy.size() * 4));
  for (float* p : {x, dy, dw1, dw2}) cudaFree(p);
}

// Channels-last data and filter (PyTorch's channels_last memory format): the same numbers in
// another order.
TEST_F(BackendConvTest, ChannelsLastForwardAndBackwardFilterMatchLegacy) {
  float *x = Upload(hx_), *w = Upload(hw_), *y1 = Upload(hy_);
  const float one = 1, zero = 0;
  ASSERT_CUDNN(cudnnConvolutionForward(handle_, &one, xd_, x, wd_, w, cd_,
                                       CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &zero,
                                       yd_, y1));
  float* x_nhwc = Upload(ToNhwc(hx_, N, C, H, W));
  float* w_nhwc = Upload(ToNhwc(hw_, K, C / G, R, S));
  float* y_nhwc = Upload(hy_);
  RunBackend(kFwd, x_nhwc, w_nhwc, y_nhwc, true, true);
  EXPECT_EQ(ToNhwc(Download(y1, hy_.size()), N, K, P, Q), Download(y_nhwc, hy_.size()));

  float* dw1 = Upload(hw_);
  ASSERT_CUDNN(cudnnConvolutionBackwardFilter(handle_, &one, xd_, x, yd_, y1, cd_,
                                              CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, nullptr, 0,
                                              &zero, wd_, dw1));
  float* dw_nhwc = Upload(hw_);
  RunBackend(kWgrad, x_nhwc, dw_nhwc, y_nhwc, true, true);
  EXPECT_EQ(ToNhwc(Download(dw1, hw_.size()), K, C / G, R, S), Download(dw_nhwc, hw_.size()));
  for (float* p : {x, w, y1, x_nhwc, w_nhwc, y_nhwc, dw1, dw_nhwc}) cudaFree(p);
}

// conv -> (virtual) + bias -> (virtual) ReLU -> y, as PyTorch's fused conv-bias-ReLU graphs.
TEST_F(BackendConvTest, FusedConvBiasReluEqualsLegacyConvThenTheSameMath) {
  const std::vector<int64_t> xdims{N, C, H, W}, wdims{K, C / G, R, S}, ydims{N, K, P, Q},
      bdims{1, K, 1, 1};
  const std::vector<float> hb = Random(K, 4);
  float *x = Upload(hx_), *w = Upload(hw_), *b = Upload(hb), *y = Upload(hy_), *ref = Upload(hy_);
  Desc xt(CUDNN_BACKEND_TENSOR_DESCRIPTOR), wt(CUDNN_BACKEND_TENSOR_DESCRIPTOR),
      bt(CUDNN_BACKEND_TENSOR_DESCRIPTOR), ct(CUDNN_BACKEND_TENSOR_DESCRIPTOR),
      at(CUDNN_BACKEND_TENSOR_DESCRIPTOR), yt(CUDNN_BACKEND_TENSOR_DESCRIPTOR),
      conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR), add(CUDNN_BACKEND_POINTWISE_DESCRIPTOR),
      relu(CUDNN_BACKEND_POINTWISE_DESCRIPTOR), conv_op(kFwd),
      add_op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR),
      relu_op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR),
      graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR), plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR),
      pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  ASSERT_CUDNN(MakeTensor(&xt, 'x', xdims, Strides(xdims)));
  ASSERT_CUDNN(MakeTensor(&wt, 'w', wdims, Strides(wdims)));
  ASSERT_CUDNN(MakeTensor(&bt, 'b', bdims, Strides(bdims)));
  ASSERT_CUDNN(MakeTensor(&ct, 'C', ydims, Strides(ydims), CUDNN_DATA_FLOAT, true));
  ASSERT_CUDNN(MakeTensor(&at, 'A', ydims, Strides(ydims), CUDNN_DATA_FLOAT, true));
  ASSERT_CUDNN(MakeTensor(&yt, 'y', ydims, Strides(ydims)));
  ASSERT_CUDNN(MakeConv(&conv, {1, 1}, {2, 2}, {1, 1}));
  for (auto [pw, mode] :
       {std::pair{&add, CUDNN_POINTWISE_ADD}, {&relu, CUDNN_POINTWISE_RELU_FWD}}) {
    ASSERT_CUDNN(pw->Set1(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, mode));
    ASSERT_CUDNN(pw->Set1(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, CUDNN_DATA_FLOAT));
    ASSERT_CUDNN(pw->Finalize());
  }
  ASSERT_CUDNN(MakeConvOp(&conv_op, kFwd, xt, wt, ct, conv));
  ASSERT_CUDNN(add_op.SetDesc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, add));
  ASSERT_CUDNN(add_op.SetDesc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, ct));
  ASSERT_CUDNN(add_op.SetDesc(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, bt));
  ASSERT_CUDNN(add_op.SetDesc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, at));
  ASSERT_CUDNN(add_op.Finalize());
  ASSERT_CUDNN(relu_op.SetDesc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, relu));
  ASSERT_CUDNN(relu_op.SetDesc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, at));
  ASSERT_CUDNN(relu_op.SetDesc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, yt));
  ASSERT_CUDNN(relu_op.Finalize());
  // Given out of order: the graph orders its operations by data flow.
  ASSERT_CUDNN(MakeGraph(&graph, handle_, {&relu_op, &conv_op, &add_op}));
  int64_t ws_bytes = -1;
  MakePlan(handle_, graph, &plan, &ws_bytes);
  ASSERT_EQ(ws_bytes, 0);
  ASSERT_CUDNN(MakePack(&pack, {'x', 'y', 'w', 'b'}, {x, y, w, b}, nullptr));
  ASSERT_CUDNN(cudnnBackendExecute(handle_, plan.get(), pack.get()));

  const float one = 1, zero = 0;
  ASSERT_CUDNN(cudnnConvolutionForward(handle_, &one, xd_, x, wd_, w, cd_,
                                       CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &zero,
                                       yd_, ref));
  std::vector<float> expect = Download(ref, hy_.size());
  for (int64_t i = 0; i < static_cast<int64_t>(expect.size()); ++i) {
    const float v = expect[i] + hb[(i / (P * Q)) % K];
    expect[i] = v > 0 ? v : 0;
  }
  const std::vector<float> got = Download(y, hy_.size());
  EXPECT_EQ(expect, got);
  EXPECT_GT(std::count(got.begin(), got.end(), 0.0f), 0);  // the ReLU clipped something
  for (float* p : {x, w, b, y, ref}) cudaFree(p);
}

// Runs a forward plan whose x was freed; the process exit code says whether it failed with
// EXECUTION_FAILED (0) or not.
int ExecuteWithFreedInput(cudnnHandle_t handle, const std::vector<float>& hx,
                          const std::vector<float>& hw, const std::vector<float>& hy) {
  using T = BackendConvTest;
  float *x = Upload(hx), *w = Upload(hw), *y = Upload(hy);
  cudaFree(x);
  const std::vector<int64_t> xdims{T::N, T::C, T::H, T::W}, wdims{T::K, T::C / T::G, T::R, T::S},
      ydims{T::N, T::K, T::P, T::Q};
  Desc xt(CUDNN_BACKEND_TENSOR_DESCRIPTOR), wt(CUDNN_BACKEND_TENSOR_DESCRIPTOR),
      yt(CUDNN_BACKEND_TENSOR_DESCRIPTOR), conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR), op(kFwd),
      graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR), plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR),
      pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  if (MakeTensor(&xt, 'x', xdims, Strides(xdims)) || MakeTensor(&yt, 'y', ydims, Strides(ydims)) ||
      MakeTensor(&wt, 'w', wdims, Strides(wdims)) || MakeConv(&conv, {1, 1}, {2, 2}, {1, 1}) ||
      MakeConvOp(&op, kFwd, xt, wt, yt, conv) || MakeGraph(&graph, handle, {&op})) {
    return 1;
  }
  int64_t ws = -1;
  MakePlan(handle, graph, &plan, &ws);
  if (MakePack(&pack, {'x', 'y', 'w'}, {x, y, w}, nullptr)) return 2;
  const cudnnStatus_t st = cudnnBackendExecute(handle, plan.get(), pack.get());
  return st == CUDNN_STATUS_EXECUTION_FAILED ? 0 : 10 + static_cast<int>(st);
}

TEST_F(BackendConvTest, FreedDataPointerFailsTheExecution) {
  // The failure is sticky for the device, so it runs in a child process. The device names the
  // op and the address on stderr.
  EXPECT_EXIT(std::exit(ExecuteWithFreedInput(handle_, hx_, hw_, hy_)),
              ::testing::ExitedWithCode(0), "cudnnBackendExecute");
}

TEST_F(BackendConvTest, BadAttributesAreBadParam) {
  Desc t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  // Wrong attribute type, too many elements, an attribute a tensor does not have.
  EXPECT_EQ(CUDNN_STATUS_BAD_PARAM, t.Set1(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_FLOAT, 1.0f));
  EXPECT_EQ(CUDNN_STATUS_BAD_PARAM,
            t.Set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, std::vector<int64_t>(9, 1)));
  EXPECT_EQ(CUDNN_STATUS_BAD_PARAM,
            t.Set1(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, int64_t{2}));
  // Finalize without a uid; then complete, finalize, and setting afterwards.
  const std::vector<int64_t> dims{1, 2, 3, 4};
  ASSERT_CUDNN(t.Set1(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, CUDNN_DATA_FLOAT));
  ASSERT_CUDNN(t.Set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, dims));
  ASSERT_CUDNN(t.Set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, Strides(dims)));
  ASSERT_CUDNN(t.Set1(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, int64_t{4}));
  EXPECT_EQ(CUDNN_STATUS_BAD_PARAM, t.Finalize());
  ASSERT_CUDNN(t.Set1(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, int64_t{7}));
  ASSERT_CUDNN(t.Finalize());
  EXPECT_EQ(CUDNN_STATUS_BAD_PARAM,
            t.Set1(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, int64_t{8}));
  int64_t got[8], n = 0;
  ASSERT_CUDNN(cudnnBackendGetAttribute(t.get(), CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 8,
                                        &n, got));
  EXPECT_EQ(n, 4);
  EXPECT_EQ(std::vector<int64_t>(got, got + 4), dims);

  // A convolution whose output extents disagree with its input, filter and strides.
  const std::vector<int64_t> xdims{N, C, H, W}, wdims{K, C / G, R, S}, bad{N, K, P + 1, Q};
  Desc xt(CUDNN_BACKEND_TENSOR_DESCRIPTOR), wt(CUDNN_BACKEND_TENSOR_DESCRIPTOR),
      yt(CUDNN_BACKEND_TENSOR_DESCRIPTOR), conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR), op(kFwd);
  ASSERT_CUDNN(MakeTensor(&xt, 'x', xdims, Strides(xdims)));
  ASSERT_CUDNN(MakeTensor(&wt, 'w', wdims, Strides(wdims)));
  ASSERT_CUDNN(MakeTensor(&yt, 'y', bad, Strides(bad)));
  ASSERT_CUDNN(MakeConv(&conv, {1, 1}, {2, 2}, {1, 1}));
  EXPECT_EQ(CUDNN_STATUS_BAD_PARAM, MakeConvOp(&op, kFwd, xt, wt, yt, conv));
  // A tensor where a convolution descriptor belongs.
  Desc op2(kFwd);
  EXPECT_EQ(CUDNN_STATUS_BAD_PARAM,
            op2.SetDesc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, xt));
  // A descriptor that is not finalized.
  Desc unfinished(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  EXPECT_NE(CUDNN_STATUS_SUCCESS,
            op2.SetDesc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, unfinished));
  // Heuristics results before Finalize.
  Desc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  int64_t count = 0;
  EXPECT_NE(CUDNN_STATUS_SUCCESS,
            cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
  // A variant pack with fewer pointers than uids.
  Desc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  EXPECT_EQ(CUDNN_STATUS_BAD_PARAM, MakePack(&pack, {'x', 'y'}, {nullptr}, nullptr));
}

TEST_F(BackendConvTest, VariantPackWithoutATensorsUidIsBadParam) {
  float *x = Upload(hx_), *w = Upload(hw_);
  const std::vector<int64_t> xdims{N, C, H, W}, wdims{K, C / G, R, S}, ydims{N, K, P, Q};
  Desc xt(CUDNN_BACKEND_TENSOR_DESCRIPTOR), wt(CUDNN_BACKEND_TENSOR_DESCRIPTOR),
      yt(CUDNN_BACKEND_TENSOR_DESCRIPTOR), conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR), op(kFwd),
      graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR), plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR),
      pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  ASSERT_CUDNN(MakeTensor(&xt, 'x', xdims, Strides(xdims)));
  ASSERT_CUDNN(MakeTensor(&yt, 'y', ydims, Strides(ydims)));
  ASSERT_CUDNN(MakeTensor(&wt, 'w', wdims, Strides(wdims)));
  ASSERT_CUDNN(MakeConv(&conv, {1, 1}, {2, 2}, {1, 1}));
  ASSERT_CUDNN(MakeConvOp(&op, kFwd, xt, wt, yt, conv));
  ASSERT_CUDNN(MakeGraph(&graph, handle_, {&op}));
  int64_t ws = -1;
  MakePlan(handle_, graph, &plan, &ws);
  ASSERT_CUDNN(MakePack(&pack, {'x', 'w'}, {x, w}, nullptr));
  EXPECT_EQ(CUDNN_STATUS_BAD_PARAM, cudnnBackendExecute(handle_, plan.get(), pack.get()));
  cudaFree(x);
  cudaFree(w);
}

TEST_F(BackendConvTest, GraphsSimgpuDoesNotRunAreNotSupported) {
  // Two convolutions chained through a virtual tensor.
  const std::vector<int64_t> xdims{N, C, H, W}, w1dims{C, 1, 3, 3}, w2dims{K, C / G, R, S},
      ydims{N, K, P, Q};
  Desc xt(CUDNN_BACKEND_TENSOR_DESCRIPTOR), w1(CUDNN_BACKEND_TENSOR_DESCRIPTOR),
      mid(CUDNN_BACKEND_TENSOR_DESCRIPTOR), w2(CUDNN_BACKEND_TENSOR_DESCRIPTOR),
      yt(CUDNN_BACKEND_TENSOR_DESCRIPTOR), same(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR),
      down(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR), op1(kFwd), op2(kFwd),
      graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  ASSERT_CUDNN(MakeTensor(&xt, 'x', xdims, Strides(xdims)));
  ASSERT_CUDNN(MakeTensor(&w1, 'v', w1dims, Strides(w1dims)));
  ASSERT_CUDNN(MakeTensor(&mid, 'm', xdims, Strides(xdims), CUDNN_DATA_FLOAT, true));
  ASSERT_CUDNN(MakeTensor(&w2, 'w', w2dims, Strides(w2dims)));
  ASSERT_CUDNN(MakeTensor(&yt, 'y', ydims, Strides(ydims)));
  ASSERT_CUDNN(MakeConv(&same, {1, 1}, {1, 1}, {1, 1}));
  ASSERT_CUDNN(MakeConv(&down, {1, 1}, {2, 2}, {1, 1}));
  ASSERT_CUDNN(MakeConvOp(&op1, kFwd, xt, w1, mid, same));
  ASSERT_CUDNN(MakeConvOp(&op2, kFwd, mid, w2, yt, down));
  EXPECT_EQ(CUDNN_STATUS_NOT_SUPPORTED, MakeGraph(&graph, handle_, {&op1, &op2}));

  // In math mode, half precision.
  const std::vector<int64_t> wdims{K, C / G, R, S};
  Desc hx(CUDNN_BACKEND_TENSOR_DESCRIPTOR), hw(CUDNN_BACKEND_TENSOR_DESCRIPTOR),
      hy(CUDNN_BACKEND_TENSOR_DESCRIPTOR), op3(kFwd),
      graph2(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  ASSERT_CUDNN(MakeTensor(&hx, 'x', xdims, Strides(xdims), CUDNN_DATA_HALF));
  ASSERT_CUDNN(MakeTensor(&hw, 'w', wdims, Strides(wdims), CUDNN_DATA_HALF));
  ASSERT_CUDNN(MakeTensor(&hy, 'y', ydims, Strides(ydims), CUDNN_DATA_HALF));
  ASSERT_CUDNN(MakeConvOp(&op3, kFwd, hx, hw, hy, down));
  EXPECT_EQ(CUDNN_STATUS_NOT_SUPPORTED, MakeGraph(&graph2, handle_, {&op3}));

  // A descriptor type simgpu does not implement, and capture into a CUDA graph.
  cudnnBackendDescriptor_t rng = nullptr;
  EXPECT_EQ(CUDNN_STATUS_NOT_SUPPORTED,
            cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR, &rng));
  EXPECT_EQ(CUDNN_STATUS_NOT_SUPPORTED,
            cudnnBackendPopulateCudaGraph(handle_, nullptr, nullptr, nullptr));
}

// ---- Batch normalization: the Ex calls (bnOps = BN) against the plain ones. ----

TEST(BatchNormExTest, ForwardTrainingAndBackwardMatchTheNonExCalls) {
  const int n = 4, c = 3, h = 5, w = 6;
  cudnnHandle_t handle;
  ASSERT_CUDNN(cudnnCreate(&handle));
  cudnnTensorDescriptor_t xd, pd;
  ASSERT_CUDNN(cudnnCreateTensorDescriptor(&xd));
  ASSERT_CUDNN(cudnnCreateTensorDescriptor(&pd));
  ASSERT_CUDNN(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w));
  const cudnnBatchNormMode_t mode = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;
  ASSERT_CUDNN(cudnnDeriveBNTensorDescriptor(pd, xd, mode));
  const std::vector<float> hx = Random(n * c * h * w, 5), hdy = Random(n * c * h * w, 6);
  const std::vector<float> hscale = Random(c, 7), hbias = Random(c, 8), zeros(c, 0.0f),
                           ones(c, 1.0f);
  float *x = Upload(hx), *dy = Upload(hdy), *scale = Upload(hscale), *bias = Upload(hbias);
  struct Out {
    float *y, *rm, *rv, *sm, *siv, *dx, *ds, *db;
  } plain{}, ex{};
  for (Out* o : {&plain, &ex}) {
    o->y = Upload(hx);
    o->rm = Upload(zeros);
    o->rv = Upload(ones);
    o->sm = Upload(zeros);
    o->siv = Upload(zeros);
    o->dx = Upload(hx);
    o->ds = Upload(zeros);
    o->db = Upload(zeros);
  }
  const float one = 1, zero = 0;
  const double factor = 0.1, eps = 1e-5;
  ASSERT_CUDNN(cudnnBatchNormalizationForwardTraining(handle, mode, &one, &zero, xd, x, xd, plain.y,
                                                      pd, scale, bias, factor, plain.rm, plain.rv,
                                                      eps, plain.sm, plain.siv));
  ASSERT_CUDNN(cudnnBatchNormalizationBackward(handle, mode, &one, &zero, &one, &zero, xd, x, xd,
                                               dy, xd, plain.dx, pd, scale, plain.ds, plain.db, eps,
                                               plain.sm, plain.siv));

  size_t fws = 1, bws = 1, reserve = 1;
  const cudnnBatchNormOps_t ops = CUDNN_BATCHNORM_OPS_BN;
  ASSERT_CUDNN(cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(
      handle, mode, ops, xd, nullptr, xd, pd, nullptr, &fws));
  ASSERT_CUDNN(cudnnGetBatchNormalizationBackwardExWorkspaceSize(handle, mode, ops, xd, xd, xd,
                                                                 nullptr, xd, pd, nullptr, &bws));
  ASSERT_CUDNN(cudnnGetBatchNormalizationTrainingExReserveSpaceSize(handle, mode, ops, nullptr, xd,
                                                                    &reserve));
  void *ws = nullptr, *rs = nullptr;
  const size_t ws_bytes = std::max(fws, bws);
  if (ws_bytes > 0) {
    ASSERT_CUDA(cudaMalloc(&ws, ws_bytes));
  }
  if (reserve > 0) {
    ASSERT_CUDA(cudaMalloc(&rs, reserve));
  }
  ASSERT_CUDNN(cudnnBatchNormalizationForwardTrainingEx(
      handle, mode, ops, &one, &zero, xd, x, nullptr, nullptr, xd, ex.y, pd, scale, bias, factor,
      ex.rm, ex.rv, eps, ex.sm, ex.siv, nullptr, ws, fws, rs, reserve));
  ASSERT_CUDNN(cudnnBatchNormalizationBackwardEx(handle, mode, ops, &one, &zero, &one, &zero, xd, x,
                                                 nullptr, nullptr, xd, dy, nullptr, nullptr, xd,
                                                 ex.dx, pd, scale, bias, ex.ds, ex.db, eps, ex.sm,
                                                 ex.siv, nullptr, ws, bws, rs, reserve));
  // Activation fusion is reported as not supported rather than computed wrongly.
  EXPECT_EQ(CUDNN_STATUS_NOT_SUPPORTED,
            cudnnGetBatchNormalizationTrainingExReserveSpaceSize(
                handle, mode, CUDNN_BATCHNORM_OPS_BN_ACTIVATION, nullptr, xd, &reserve));

  const size_t big = hx.size();
  EXPECT_EQ(Download(plain.y, big), Download(ex.y, big));
  EXPECT_EQ(Download(plain.dx, big), Download(ex.dx, big));
  for (auto field : {&Out::rm, &Out::rv, &Out::sm, &Out::siv, &Out::ds, &Out::db}) {
    EXPECT_EQ(Download(plain.*field, c), Download(ex.*field, c));
  }
  EXPECT_NE(Download(ex.rm, c), zeros);  // the running mean moved
  // Half data computes only in timing mode (backend_timing_test.cc).
  cudnnTensorDescriptor_t hd;
  ASSERT_CUDNN(cudnnCreateTensorDescriptor(&hd));
  ASSERT_CUDNN(cudnnSetTensor4dDescriptor(hd, CUDNN_TENSOR_NCHW, CUDNN_DATA_HALF, n, c, h, w));
  EXPECT_EQ(CUDNN_STATUS_NOT_SUPPORTED,
            cudnnBatchNormalizationForwardTrainingEx(
                handle, mode, ops, &one, &zero, hd, x, nullptr, nullptr, hd, ex.y, pd, scale, bias,
                factor, ex.rm, ex.rv, eps, ex.sm, ex.siv, nullptr, ws, fws, rs, reserve));
  cudnnDestroyTensorDescriptor(hd);
  EXPECT_NE(Download(ex.db, c), zeros);
  cudnnDestroyTensorDescriptor(xd);
  cudnnDestroyTensorDescriptor(pd);
  cudnnDestroy(handle);
}

}  // namespace
