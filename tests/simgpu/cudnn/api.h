// simgpu libcudnn.so.9: what every source file of the library shares. The descriptor structs
// the public headers leave opaque, the conversions from descriptors to the kernels' layouts,
// the mapping of device errors to cudnnStatus_t (one place), and Run(), which wraps a compute
// call into simgpu::Launch with its access list, FLOP and byte counts.
//
// Thread safety: descriptors and handles are plain data owned by the caller, as in cuDNN (one
// thread per handle at a time); everything else here is stateless.
#ifndef POOCH_TESTS_SIMGPU_CUDNN_API_H_
#define POOCH_TESTS_SIMGPU_CUDNN_API_H_

// The API functions are the library's only exports: declare them with default visibility while
// the rest of the library is built with -fvisibility=hidden. The version script
// (libcudnn.map) then puts them under the node "libcudnn.so.9", as the real library does.
#pragma GCC visibility push(default)
#include <cudnn.h>
#pragma GCC visibility pop

#include <cstddef>
#include <functional>
#include <initializer_list>

#include "elementwise.h"
#include "layout.h"
#include "tests/simgpu/device/simgpu.h"

struct cudnnContext {
  cudaStream_t stream = nullptr;
};

struct cudnnTensorStruct {
  bool set = false;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  int rank = 0;
  int dim[CUDNN_DIM_MAX] = {};
  int stride[CUDNN_DIM_MAX] = {};
};

struct cudnnFilterStruct {
  bool set = false;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW;
  int rank = 0;
  int dim[CUDNN_DIM_MAX] = {};  // k, c, then spatial
};

struct cudnnConvolutionStruct {
  bool set = false;
  int spatial = 0;  // number of spatial dims
  int pad[CUDNN_DIM_MAX] = {}, stride[CUDNN_DIM_MAX] = {}, dilation[CUDNN_DIM_MAX] = {};
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  cudnnReorderType_t reorder = CUDNN_DEFAULT_REORDER;
  int groups = 1;
};

struct cudnnActivationStruct {
  bool set = false;
  cudnnActivationMode_t mode = CUDNN_ACTIVATION_RELU;
  cudnnNanPropagation_t nan = CUDNN_NOT_PROPAGATE_NAN;
  double coef = 0.0;
  double swish_beta = 1.0;
};

struct cudnnPoolingStruct {
  bool set = false;
  cudnnPoolingMode_t mode = CUDNN_POOLING_MAX;
  cudnnNanPropagation_t nan = CUDNN_NOT_PROPAGATE_NAN;
  int spatial = 0;
  int window[CUDNN_DIM_MAX] = {}, pad[CUDNN_DIM_MAX] = {}, stride[CUDNN_DIM_MAX] = {};
};

struct cudnnOpTensorStruct {
  bool set = false;
  cudnnOpTensorOp_t op = CUDNN_OP_TENSOR_ADD;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  cudnnNanPropagation_t nan = CUDNN_NOT_PROPAGATE_NAN;
};

// Returns from the enclosing function if `expr` (a cudnnStatus_t) is not SUCCESS.
#define SIMGPU_RETURN_IF_ERROR(expr)                               \
  do {                                                             \
    if (cudnnStatus_t st_ = (expr); st_ != CUDNN_STATUS_SUCCESS) { \
      return st_;                                                  \
    }                                                              \
  } while (0)

namespace simgpu::cudnn {

// Prints one line "simgpu: <fn>: <why>" on stderr and returns CUDNN_STATUS_NOT_SUPPORTED.
cudnnStatus_t NotSupported(const char* fn, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));

// The device's outcome as the status cuDNN would return.
cudnnStatus_t FromErr(Err e);

// The descriptor as a 4-d tensor. kBadParam if unset; NOT_SUPPORTED (with its stderr line,
// naming `fn`) if it is not 4-d fp32.
cudnnStatus_t AsTensor4(const char* fn, const cudnnTensorStruct* d, kernels::Tensor4* out);
// The descriptor as an N-d tensor, same checks but any rank.
cudnnStatus_t AsTensorNd(const char* fn, const cudnnTensorStruct* d, kernels::TensorNd* out);

// Bytes from a tensor's base to one past its farthest element.
inline size_t Bytes(const kernels::Tensor4& t) { return static_cast<size_t>(t.Span()) * 4; }
inline size_t Bytes(const kernels::TensorNd& t) { return static_cast<size_t>(t.Span()) * 4; }

// A read of [p, p + bytes) if `cond` (e.g. beta != 0: the output's prior value), else nothing.
inline Access ReadIf(bool cond, const void* p, size_t bytes) {
  return cond ? Access{p, bytes, false} : Access{nullptr, 0, false};
}

// alpha/beta scalars: host floats for fp32 tensors.
inline float Scalar(const void* p) { return *static_cast<const float*>(p); }

// Launches one device op on the handle's stream; the body runs the math. Returns the device
// outcome as a cudnnStatus_t.
cudnnStatus_t Run(cudnnHandle_t handle, const char* op, std::initializer_list<Access> accesses,
                  double flops, double bytes, const std::function<void()>& body);

}  // namespace simgpu::cudnn

#endif  // POOCH_TESTS_SIMGPU_CUDNN_API_H_
