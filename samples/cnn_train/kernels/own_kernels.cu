// cnn_train's own kernels (own_kernels.h), compiled by nvcc. The kernels have C linkage so that
// their names, and their CPU twins' (own_kernels_twins.cc), are short and fixed. Each thread
// handles elements i, i + stride, ... of a grid-stride loop, so the result does not depend on
// the grid.
#include "kernels/own_kernels.h"

extern "C" {

__global__ void cnn_train_relu_forward(float* y, const float* x, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const float v = x[i];
    y[i] = v > 0.0f ? v : 0.0f;
  }
}

__global__ void cnn_train_add_forward(float* y, const float* a, const float* b, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    y[i] = __fadd_rn(a[i], b[i]);
  }
}

__global__ void cnn_train_bias_add(float* y, const float* bias, int64_t n, int64_t channels,
                                   int64_t spatial) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    y[i] = __fadd_rn(bias[(i / spatial) % channels], y[i]);
  }
}

}  // extern "C"

namespace cnn_train {
namespace {

constexpr int kBlock = 256;
constexpr int64_t kMaxBlocks = 65535;

unsigned Blocks(int64_t n) {
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  return static_cast<unsigned>(blocks < kMaxBlocks ? (blocks > 0 ? blocks : 1) : kMaxBlocks);
}

}  // namespace

bool OwnKernelsBuilt() { return true; }

cudaError_t LaunchReluForward(float* y, const float* x, int64_t n) {
  cnn_train_relu_forward<<<Blocks(n), kBlock>>>(y, x, n);
  return cudaGetLastError();
}

cudaError_t LaunchAddForward(float* y, const float* a, const float* b, int64_t n) {
  cnn_train_add_forward<<<Blocks(n), kBlock>>>(y, a, b, n);
  return cudaGetLastError();
}

cudaError_t LaunchBiasAdd(float* y, const float* bias, int64_t n, int64_t channels,
                          int64_t spatial) {
  cnn_train_bias_add<<<Blocks(n), kBlock>>>(y, bias, n, channels, spatial);
  return cudaGetLastError();
}

}  // namespace cnn_train
