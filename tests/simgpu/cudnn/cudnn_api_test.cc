// libcudnn.so.9 on simgpu, called through the cuDNN API with device memory from the device
// model: descriptor round trips, algorithm queries, each compute call against a naive
// reference, alpha/beta, batch-norm running statistics, and the NOT_SUPPORTED path.
#include <cudnn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "tests/simgpu/device/device.h"

namespace {

#define ASSERT_OK(expr) ASSERT_EQ(CUDNN_STATUS_SUCCESS, (expr))

// Device memory holding `host`, freed at scope exit. Device addresses are host addresses, so the
// test fills and reads it directly.
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

class CudnnTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(cudnnCreate(&handle_));
    for (auto* d : {&x_, &y_, &b_}) ASSERT_OK(cudnnCreateTensorDescriptor(d));
    ASSERT_OK(cudnnCreateFilterDescriptor(&w_));
    ASSERT_OK(cudnnCreateConvolutionDescriptor(&conv_));
  }
  void TearDown() override {
    for (auto d : {x_, y_, b_}) cudnnDestroyTensorDescriptor(d);
    cudnnDestroyFilterDescriptor(w_);
    cudnnDestroyConvolutionDescriptor(conv_);
    cudnnDestroy(handle_);
  }
  cudnnHandle_t handle_ = nullptr;
  cudnnTensorDescriptor_t x_, y_, b_;
  cudnnFilterDescriptor_t w_;
  cudnnConvolutionDescriptor_t conv_;
};

TEST_F(CudnnTest, VersionsStringsAndStream) {
  // Note [Reported cuDNN version]: at least the headers', same major, matching the properties.
  EXPECT_GE(cudnnGetVersion(), static_cast<size_t>(CUDNN_VERSION));
  int major = 0, minor = 0, patch = 0;
  ASSERT_OK(cudnnGetProperty(MAJOR_VERSION, &major));
  ASSERT_OK(cudnnGetProperty(MINOR_VERSION, &minor));
  ASSERT_OK(cudnnGetProperty(PATCH_LEVEL, &patch));
  EXPECT_EQ(major, CUDNN_MAJOR);
  EXPECT_EQ(cudnnGetVersion(), static_cast<size_t>(major * 10000 + minor * 100 + patch));
  EXPECT_STREQ(cudnnGetErrorString(CUDNN_STATUS_NOT_SUPPORTED), "CUDNN_STATUS_NOT_SUPPORTED");
  cudaStream_t s = reinterpret_cast<cudaStream_t>(0x1234);
  ASSERT_OK(cudnnSetStream(handle_, s));
  cudaStream_t got;
  ASSERT_OK(cudnnGetStream(handle_, &got));
  EXPECT_EQ(got, s);
  ASSERT_OK(cudnnSetStream(handle_, nullptr));
  EXPECT_EQ(CUDNN_STATUS_BAD_PARAM, cudnnCreate(nullptr));
}

TEST_F(CudnnTest, TensorAndFilterDescriptorsRoundTrip) {
  ASSERT_OK(cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 2, 3, 4, 5));
  cudnnDataType_t t;
  int n, c, h, w, ns, cs, hs, ws;
  ASSERT_OK(cudnnGetTensor4dDescriptor(x_, &t, &n, &c, &h, &w, &ns, &cs, &hs, &ws));
  EXPECT_EQ(t, CUDNN_DATA_FLOAT);
  EXPECT_EQ((std::vector<int>{n, c, h, w, ns, cs, hs, ws}),
            (std::vector<int>{2, 3, 4, 5, 60, 1, 15, 3}));
  const int dims[5] = {2, 3, 4, 5, 6}, strides[5] = {360, 120, 30, 6, 1};
  ASSERT_OK(cudnnSetTensorNdDescriptor(y_, CUDNN_DATA_FLOAT, 5, dims, strides));
  int rank, d[8], s[8];
  ASSERT_OK(cudnnGetTensorNdDescriptor(y_, 8, &t, &rank, d, s));
  EXPECT_EQ(rank, 5);
  EXPECT_EQ(s[0], 360);
  size_t bytes;
  ASSERT_OK(cudnnGetTensorSizeInBytes(y_, &bytes));
  EXPECT_EQ(bytes, 720u * 4);
  EXPECT_EQ(CUDNN_STATUS_BAD_PARAM,
            cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 0, 1, 1, 1));
  ASSERT_OK(cudnnSetFilter4dDescriptor(w_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 8, 3, 3, 3));
  cudnnTensorFormat_t f;
  int k;
  ASSERT_OK(cudnnGetFilter4dDescriptor(w_, &t, &f, &k, &c, &h, &w));
  EXPECT_EQ((std::vector<int>{k, c, h, w}), (std::vector<int>{8, 3, 3, 3}));
}

TEST_F(CudnnTest, OutputDimsAndAlgorithms) {
  ASSERT_OK(cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 3, 224, 224));
  ASSERT_OK(cudnnSetFilter4dDescriptor(w_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 64, 3, 7, 7));
  ASSERT_OK(cudnnSetConvolution2dDescriptor(conv_, 3, 3, 2, 2, 1, 1, CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT));
  ASSERT_OK(cudnnSetConvolutionMathType(conv_, CUDNN_FMA_MATH));
  cudnnMathType_t math;
  ASSERT_OK(cudnnGetConvolutionMathType(conv_, &math));
  EXPECT_EQ(math, CUDNN_FMA_MATH);
  int n, c, h, w;
  ASSERT_OK(cudnnGetConvolution2dForwardOutputDim(conv_, x_, w_, &n, &c, &h, &w));
  EXPECT_EQ((std::vector<int>{n, c, h, w}), (std::vector<int>{2, 64, 112, 112}));
  ASSERT_OK(cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w));

  int returned = 0;
  cudnnConvolutionFwdAlgoPerf_t fwd[4];
  ASSERT_OK(cudnnGetConvolutionForwardAlgorithm_v7(handle_, x_, w_, conv_, y_, 4, &returned, fwd));
  ASSERT_EQ(returned, 1);
  EXPECT_EQ(fwd[0].algo, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM);
  EXPECT_EQ(fwd[0].status, CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(fwd[0].determinism, CUDNN_DETERMINISTIC);
  EXPECT_EQ(fwd[0].memory, 0u);
  ASSERT_OK(cudnnFindConvolutionForwardAlgorithm(handle_, x_, w_, conv_, y_, 4, &returned, fwd));
  cudnnConvolutionBwdDataAlgoPerf_t bd[2];
  ASSERT_OK(
      cudnnGetConvolutionBackwardDataAlgorithm_v7(handle_, w_, y_, conv_, x_, 2, &returned, bd));
  EXPECT_EQ(bd[0].algo, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1);
  ASSERT_OK(
      cudnnFindConvolutionBackwardDataAlgorithm(handle_, w_, y_, conv_, x_, 2, &returned, bd));
  cudnnConvolutionBwdFilterAlgoPerf_t bf[2];
  ASSERT_OK(
      cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle_, x_, y_, conv_, w_, 2, &returned, bf));
  EXPECT_EQ(bf[0].algo, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1);
  EXPECT_EQ(bf[0].determinism, CUDNN_DETERMINISTIC);
  ASSERT_OK(
      cudnnFindConvolutionBackwardFilterAlgorithm(handle_, x_, y_, conv_, w_, 2, &returned, bf));
  size_t ws = 1;
  ASSERT_OK(cudnnGetConvolutionForwardWorkspaceSize(handle_, x_, w_, conv_, y_,
                                                    CUDNN_CONVOLUTION_FWD_ALGO_FFT, &ws));
  EXPECT_EQ(ws, 0u);
  ASSERT_OK(cudnnGetConvolutionBackwardDataWorkspaceSize(handle_, w_, y_, conv_, x_,
                                                         CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, &ws));
  ASSERT_OK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
      handle_, x_, y_, conv_, w_, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, &ws));
  // A y that does not match the output dims is a bad parameter.
  ASSERT_OK(cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 64, 111, 112));
  EXPECT_EQ(CUDNN_STATUS_BAD_PARAM,
            cudnnGetConvolutionForwardAlgorithm_v7(handle_, x_, w_, conv_, y_, 1, &returned, fwd));
}

// Naive grouped, dilated, strided convolution in double (cross-correlation or convolution).
struct Conv {
  int n, c, h, w, k, r, s, groups, ph, pw, sh, sw, dh, dw;
  bool flip;
  int P() const { return (h + 2 * ph - ((r - 1) * dh + 1)) / sh + 1; }
  int Q() const { return (w + 2 * pw - ((s - 1) * dw + 1)) / sw + 1; }
  template <typename Fn>  // fn(y index, x index, w index)
  void ForEachTap(Fn fn) const {
    const int cg = c / groups, kg = k / groups;
    for (int in = 0; in < n; ++in)
      for (int ik = 0; ik < k; ++ik)
        for (int p = 0; p < P(); ++p)
          for (int q = 0; q < Q(); ++q)
            for (int ic = 0; ic < cg; ++ic)
              for (int ir = 0; ir < r; ++ir)
                for (int is = 0; is < s; ++is) {
                  const int rr = flip ? r - 1 - ir : ir, ss = flip ? s - 1 - is : is;
                  const int hh = p * sh - ph + rr * dh, ww = q * sw - pw + ss * dw;
                  if (hh < 0 || hh >= h || ww < 0 || ww >= w) continue;
                  const int xc = (ik / kg) * cg + ic;
                  fn(((in * k + ik) * P() + p) * Q() + q, ((in * c + xc) * h + hh) * w + ww,
                     ((ik * cg + ic) * r + ir) * s + is);
                }
  }
};

TEST_F(CudnnTest, ConvolutionPassesMatchReference) {
  const Conv cv{2, 4, 7, 6, 6, 3, 2, 2, 1, 0, 2, 1, 1, 2, true};
  ASSERT_OK(
      cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, cv.n, cv.c, cv.h, cv.w));
  ASSERT_OK(cudnnSetFilter4dDescriptor(w_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, cv.k,
                                       cv.c / cv.groups, cv.r, cv.s));
  ASSERT_OK(cudnnSetConvolution2dDescriptor(conv_, cv.ph, cv.pw, cv.sh, cv.sw, cv.dh, cv.dw,
                                            CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT));
  ASSERT_OK(cudnnSetConvolutionGroupCount(conv_, cv.groups));
  ASSERT_OK(cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, cv.n, cv.k, cv.P(),
                                       cv.Q()));
  ASSERT_OK(cudnnSetTensor4dDescriptor(b_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, cv.k, 1, 1));
  const size_t nx = cv.n * cv.c * cv.h * cv.w, nw = cv.k * (cv.c / cv.groups) * cv.r * cv.s,
               ny = cv.n * cv.k * cv.P() * cv.Q();
  const std::vector<float> hx = Random(nx, 1), hw = Random(nw, 2), hdy = Random(ny, 3);
  DeviceBuffer x(hx), w(hw), dy(hdy);
  DeviceBuffer y(std::vector<float>(ny, std::numeric_limits<float>::quiet_NaN()));
  DeviceBuffer dx(std::vector<float>(nx, 1.0f)), dw(std::vector<float>(nw, 1.0f));
  DeviceBuffer db(std::vector<float>(cv.k, 1.0f));
  std::vector<double> ry(ny), rdx(nx), rdw(nw), rdb(cv.k);
  cv.ForEachTap([&](int yi, int xi, int wi) {
    ry[yi] += double(hx[xi]) * hw[wi];
    rdx[xi] += double(hdy[yi]) * hw[wi];
    rdw[wi] += double(hdy[yi]) * hx[xi];
  });
  for (size_t i = 0; i < ny; ++i) rdb[(i / (cv.P() * cv.Q())) % cv.k] += hdy[i];
  const float one = 1.0f, zero = 0.0f, two = 2.0f, half = 0.5f;
  ASSERT_OK(cudnnConvolutionForward(handle_, &two, x_, x.get(), w_, w.get(), conv_,
                                    CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &zero, y_,
                                    y.get()));
  ASSERT_OK(cudnnConvolutionBackwardData(handle_, &one, w_, w.get(), y_, dy.get(), conv_,
                                         CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, nullptr, 0, &half, x_,
                                         dx.get()));
  ASSERT_OK(cudnnConvolutionBackwardFilter(handle_, &one, x_, x.get(), y_, dy.get(), conv_,
                                           CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, nullptr, 0, &half,
                                           w_, dw.get()));
  ASSERT_OK(cudnnConvolutionBackwardBias(handle_, &one, y_, dy.get(), &zero, b_, db.get()));
  const auto gy = y.Read(), gdx = dx.Read(), gdw = dw.Read(), gdb = db.Read();
  for (size_t i = 0; i < ny; ++i) EXPECT_NEAR(gy[i], 2 * ry[i], 1e-4) << i;
  for (size_t i = 0; i < nx; ++i) EXPECT_NEAR(gdx[i], rdx[i] + 0.5, 1e-4) << i;
  for (size_t i = 0; i < nw; ++i) EXPECT_NEAR(gdw[i], rdw[i] + 0.5, 1e-4) << i;
  for (int i = 0; i < cv.k; ++i) EXPECT_NEAR(gdb[i], rdb[i], 1e-4) << i;
}

TEST_F(CudnnTest, UnsupportedArgumentsSayWhyOnce) {
  ASSERT_OK(cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NCHW, CUDNN_DATA_HALF, 1, 1, 4, 4));
  ASSERT_OK(cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NCHW, CUDNN_DATA_HALF, 1, 1, 4, 4));
  DeviceBuffer x(std::vector<float>(16, 1.0f)), y(std::vector<float>(16, 0.0f));
  cudnnActivationDescriptor_t act;
  ASSERT_OK(cudnnCreateActivationDescriptor(&act));
  ASSERT_OK(cudnnSetActivationDescriptor(act, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0));
  const float one = 1.0f, zero = 0.0f;
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(CUDNN_STATUS_NOT_SUPPORTED,
            cudnnActivationForward(handle_, act, &one, x_, x.get(), &zero, y_, y.get()));
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.rfind("simgpu: cudnnActivationForward:", 0), 0u) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;

  ASSERT_OK(cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 4, 4));
  ASSERT_OK(cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 4, 4));
  ASSERT_OK(cudnnSetActivationDescriptor(act, CUDNN_ACTIVATION_SWISH, CUDNN_NOT_PROPAGATE_NAN, 0));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(CUDNN_STATUS_NOT_SUPPORTED,
            cudnnActivationForward(handle_, act, &one, x_, x.get(), &zero, y_, y.get()));
  err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  // y was left alone.
  for (float v : y.Read()) EXPECT_EQ(v, 0.0f);
  cudnnDestroyActivationDescriptor(act);

  // An NHWC filter.
  ASSERT_OK(cudnnSetFilter4dDescriptor(w_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, 1, 1, 1, 1));
  ASSERT_OK(cudnnSetConvolution2dDescriptor(conv_, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT));
  size_t ws;
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(CUDNN_STATUS_NOT_SUPPORTED,
            cudnnGetConvolutionForwardWorkspaceSize(handle_, x_, w_, conv_, y_,
                                                    CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, &ws));
  err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("simgpu:"), std::string::npos);
}

TEST_F(CudnnTest, ActivationPoolingSoftmaxAndTensorOps) {
  ASSERT_OK(cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 2, 2, 2));
  const std::vector<float> hx = {-1, 2, 3, -4, 5, -6, 7, 8};
  DeviceBuffer x(hx), y(std::vector<float>(8, 0.0f));
  const float one = 1.0f, zero = 0.0f;
  cudnnActivationDescriptor_t act;
  ASSERT_OK(cudnnCreateActivationDescriptor(&act));
  ASSERT_OK(cudnnSetActivationDescriptor(act, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0));
  ASSERT_OK(cudnnActivationForward(handle_, act, &one, x_, x.get(), &zero, x_, y.get()));
  EXPECT_EQ(y.Read(), (std::vector<float>{0, 2, 3, 0, 5, 0, 7, 8}));
  cudnnDestroyActivationDescriptor(act);

  cudnnPoolingDescriptor_t pool;
  ASSERT_OK(cudnnCreatePoolingDescriptor(&pool));
  ASSERT_OK(cudnnSetPooling2dDescriptor(pool, CUDNN_POOLING_MAX, CUDNN_NOT_PROPAGATE_NAN, 2, 2, 0,
                                        0, 2, 2));
  int n, c, h, w;
  ASSERT_OK(cudnnGetPooling2dForwardOutputDim(pool, x_, &n, &c, &h, &w));
  EXPECT_EQ((std::vector<int>{n, c, h, w}), (std::vector<int>{1, 2, 1, 1}));
  ASSERT_OK(cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 2, 1, 1));
  DeviceBuffer py(std::vector<float>(2, 0.0f));
  ASSERT_OK(cudnnPoolingForward(handle_, pool, &one, x_, x.get(), &zero, y_, py.get()));
  EXPECT_EQ(py.Read(), (std::vector<float>{3, 8}));
  DeviceBuffer pdy(std::vector<float>{1, 2}), pdx(std::vector<float>(8, 9.0f));
  ASSERT_OK(cudnnPoolingBackward(handle_, pool, &one, y_, py.get(), y_, pdy.get(), x_, x.get(),
                                 &zero, x_, pdx.get()));
  EXPECT_EQ(pdx.Read(), (std::vector<float>{0, 0, 1, 0, 0, 0, 0, 2}));
  cudnnDestroyPoolingDescriptor(pool);

  // Log-softmax over channels: for each (h, w), log(exp(a) / (exp(a) + exp(b))).
  ASSERT_OK(cudnnSoftmaxForward(handle_, CUDNN_SOFTMAX_LOG, CUDNN_SOFTMAX_MODE_CHANNEL, &one, x_,
                                x.get(), &zero, x_, y.get()));
  const auto ls = y.Read();
  for (int i = 0; i < 4; ++i) {
    const double a = hx[i], b = hx[i + 4];
    EXPECT_NEAR(ls[i], a - std::log(std::exp(a) + std::exp(b)), 1e-5);
  }

  // C = 2 * A + bias broadcast over (n, h, w), via AddTensor then OpTensor(MUL).
  ASSERT_OK(cudnnSetTensor4dDescriptor(b_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 2, 1, 1));
  DeviceBuffer bias(std::vector<float>{10, 20}), cbuf(hx);
  const float two = 2.0f;
  ASSERT_OK(cudnnAddTensor(handle_, &one, b_, bias.get(), &two, x_, cbuf.get()));
  const auto added = cbuf.Read();
  for (int i = 0; i < 8; ++i) EXPECT_EQ(added[i], 2 * hx[i] + (i < 4 ? 10 : 20));
  cudnnOpTensorDescriptor_t op;
  ASSERT_OK(cudnnCreateOpTensorDescriptor(&op));
  ASSERT_OK(cudnnSetOpTensorDescriptor(op, CUDNN_OP_TENSOR_MUL, CUDNN_DATA_FLOAT,
                                       CUDNN_NOT_PROPAGATE_NAN));
  ASSERT_OK(
      cudnnOpTensor(handle_, op, &one, x_, x.get(), &one, b_, bias.get(), &zero, x_, cbuf.get()));
  const auto mul = cbuf.Read();
  for (int i = 0; i < 8; ++i) EXPECT_EQ(mul[i], hx[i] * (i < 4 ? 10 : 20));
  ASSERT_OK(cudnnSetOpTensorDescriptor(op, CUDNN_OP_TENSOR_NOT, CUDNN_DATA_FLOAT,
                                       CUDNN_NOT_PROPAGATE_NAN));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(CUDNN_STATUS_NOT_SUPPORTED, cudnnOpTensor(handle_, op, &one, x_, x.get(), &one, b_,
                                                      bias.get(), &zero, x_, cbuf.get()));
  ::testing::internal::GetCapturedStderr();
  cudnnDestroyOpTensorDescriptor(op);
  const float seven = 7.0f, three = 3.0f;
  ASSERT_OK(cudnnSetTensor(handle_, x_, cbuf.get(), &seven));
  ASSERT_OK(cudnnScaleTensor(handle_, x_, cbuf.get(), &three));
  for (float v : cbuf.Read()) EXPECT_EQ(v, 21.0f);
}

TEST_F(CudnnTest, BatchNormTrainingUpdatesRunningStatistics) {
  const int n = 4, c = 2, h = 3, w = 2, m = n * h * w;
  ASSERT_OK(cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w));
  ASSERT_OK(cudnnDeriveBNTensorDescriptor(b_, x_, CUDNN_BATCHNORM_SPATIAL));
  cudnnDataType_t t;
  int dn, dc, dh, dw, s0, s1, s2, s3;
  ASSERT_OK(cudnnGetTensor4dDescriptor(b_, &t, &dn, &dc, &dh, &dw, &s0, &s1, &s2, &s3));
  EXPECT_EQ((std::vector<int>{dn, dc, dh, dw}), (std::vector<int>{1, c, 1, 1}));
  const std::vector<float> hx = Random(n * c * h * w, 7);
  DeviceBuffer x(hx), y(std::vector<float>(hx.size(), std::nanf("")));
  DeviceBuffer scale(std::vector<float>{1.5f, -0.5f}), bias(std::vector<float>{0.1f, 0.2f});
  DeviceBuffer rm(std::vector<float>{1.0f, 2.0f}), rv(std::vector<float>{3.0f, 4.0f});
  DeviceBuffer sm{std::vector<float>(c)}, siv{std::vector<float>(c)};
  const float one = 1.0f, zero = 0.0f;
  const double factor = 0.25, eps = 1e-5;
  ASSERT_OK(cudnnBatchNormalizationForwardTraining(
      handle_, CUDNN_BATCHNORM_SPATIAL, &one, &zero, x_, x.get(), x_, y.get(), b_, scale.get(),
      bias.get(), factor, rm.get(), rv.get(), eps, sm.get(), siv.get()));
  const auto grm = rm.Read(), grv = rv.Read(), gsm = sm.Read(), gsiv = siv.Read(), gy = y.Read();
  const float rm0[2] = {1.0f, 2.0f}, rv0[2] = {3.0f, 4.0f}, sc[2] = {1.5f, -0.5f},
              bi[2] = {0.1f, 0.2f};
  for (int ch = 0; ch < c; ++ch) {
    double mean = 0, var = 0;
    for (int in = 0; in < n; ++in)
      for (int i = 0; i < h * w; ++i) mean += hx[(in * c + ch) * h * w + i] / double(m);
    for (int in = 0; in < n; ++in)
      for (int i = 0; i < h * w; ++i) {
        const double d = hx[(in * c + ch) * h * w + i] - mean;
        var += d * d / m;
      }
    EXPECT_NEAR(grm[ch], (1 - factor) * rm0[ch] + factor * mean, 1e-6);
    EXPECT_NEAR(grv[ch], (1 - factor) * rv0[ch] + factor * var * m / (m - 1), 1e-6);
    EXPECT_NEAR(gsm[ch], mean, 1e-6);
    EXPECT_NEAR(gsiv[ch], 1 / std::sqrt(var + eps), 1e-4);
    for (int in = 0; in < n; ++in)
      for (int i = 0; i < h * w; ++i) {
        const int idx = (in * c + ch) * h * w + i;
        EXPECT_NEAR(gy[idx], sc[ch] * (hx[idx] - mean) / std::sqrt(var + eps) + bi[ch], 1e-5);
      }
  }
  // Backward runs and the bias gradient is the plain sum of dy.
  const std::vector<float> hdy = Random(hx.size(), 8);
  DeviceBuffer dy{hdy}, dx{std::vector<float>(hx.size())}, ds{std::vector<float>(c)},
      dbias{std::vector<float>(c)};
  ASSERT_OK(cudnnBatchNormalizationBackward(
      handle_, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, x_, x.get(), x_, dy.get(), x_,
      dx.get(), b_, scale.get(), ds.get(), dbias.get(), eps, sm.get(), siv.get()));
  const auto gdb = dbias.Read();
  for (int ch = 0; ch < c; ++ch) {
    double sum = 0;
    for (int in = 0; in < n; ++in)
      for (int i = 0; i < h * w; ++i) sum += hdy[(in * c + ch) * h * w + i];
    EXPECT_NEAR(gdb[ch], sum, 1e-5);
  }
  // Ex with an activation is not supported.
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(CUDNN_STATUS_NOT_SUPPORTED,
            cudnnBatchNormalizationForwardTrainingEx(
                handle_, CUDNN_BATCHNORM_SPATIAL, CUDNN_BATCHNORM_OPS_BN_ACTIVATION, &one, &zero,
                x_, x.get(), nullptr, nullptr, x_, y.get(), b_, scale.get(), bias.get(), factor,
                rm.get(), rv.get(), eps, sm.get(), siv.get(), nullptr, nullptr, 0, nullptr, 0));
  ::testing::internal::GetCapturedStderr();
}

}  // namespace

namespace {

// The access list reaches the device: an output one element short of its descriptor is an
// illegal address there (checked in a child process, since the error is sticky).
// Runs the op in the child; returns its exit code.
int ShortOutputChild() {
  cudnnHandle_t handle;
  cudnnTensorDescriptor_t t;
  cudnnActivationDescriptor_t act;
  cudnnCreate(&handle);
  cudnnCreateTensorDescriptor(&t);
  cudnnCreateActivationDescriptor(&act);
  cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 64, 64);
  cudnnSetActivationDescriptor(act, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0);
  void *x, *y;
  simgpu::Device::Get().MemAlloc(64 * 64 * 4, &x);
  simgpu::Device::Get().MemAlloc(64 * 64 * 4 - 4096, &y);
  const float one = 1.0f, zero = 0.0f;
  const cudnnStatus_t st = cudnnActivationForward(handle, act, &one, t, x, &zero, t, y);
  // The child exits through std::exit, where LeakSanitizer checks: nothing may be left.
  cudnnDestroyActivationDescriptor(act);
  cudnnDestroyTensorDescriptor(t);
  cudnnDestroy(handle);
  return st == CUDNN_STATUS_EXECUTION_FAILED ? 0 : 1;
}

TEST(CudnnDeathTest, OutputPastItsAllocationIsAnIllegalAddress) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::exit(ShortOutputChild()), ::testing::ExitedWithCode(0),
              "cudnnActivationForward");
}

}  // namespace
