// cnn_train's own CUDA kernels (--own-kernels): the forward ReLU, bias addition and residual
// addition as kernels of this program instead of cuDNN calls, as a framework's elementwise
// kernels are, so that pooch's kernel analysis and replay have real device code to work on.
// Each kernel gives the same bits as the cuDNN call it replaces (simgpu's and a GPU's: one
// fp32 comparison or addition per element, no contraction), and each has a CPU twin
// (own_kernels_twins.cc) that simgpu runs in math mode (Note [CPU twins] in
// tests/simgpu/driver/libcuda/cuda_twins.h). All launch on the default stream, as every layer
// call does (layer.h). Built by nvcc for sm_80, sm_90 and sm_100 (CMakeLists.txt); without nvcc
// the launchers fail and OwnKernelsBuilt() says so.
#ifndef POOCH_SAMPLES_CNN_TRAIN_KERNELS_OWN_KERNELS_H_
#define POOCH_SAMPLES_CNN_TRAIN_KERNELS_OWN_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace cnn_train {

// False when cnn_train was built without nvcc (then every launcher returns
// cudaErrorNotSupported).
bool OwnKernelsBuilt();

// y[i] = x[i] > 0 ? x[i] : 0 for i < n (cudnnActivationForward, RELU, NOT_PROPAGATE_NAN).
cudaError_t LaunchReluForward(float* y, const float* x, int64_t n);
// y[i] = a[i] + b[i] for i < n (cudnnOpTensor ADD with alphas 1 and beta 0); y may be a or b.
cudaError_t LaunchAddForward(float* y, const float* a, const float* b, int64_t n);
// y[i] += bias[(i / spatial) % channels] for i < n: y is NCHW with `channels` channels of
// `spatial` elements each (cudnnAddTensor of a 1xCx1x1 bias with alpha and beta 1).
cudaError_t LaunchBiasAdd(float* y, const float* bias, int64_t n, int64_t channels,
                          int64_t spatial);

}  // namespace cnn_train

#endif  // POOCH_SAMPLES_CNN_TRAIN_KERNELS_OWN_KERNELS_H_
