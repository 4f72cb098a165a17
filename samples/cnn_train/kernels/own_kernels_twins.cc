// The CPU twins of own_kernels.cu's kernels (Note [CPU twins] in
// tests/simgpu/driver/libcuda/cuda_twins.h): simgpu calls simgpu_twin_<kernel name> in math
// mode with one pointer per parameter. Each does per element what its kernel does, one fp32
// operation rounded to nearest, so the bits are the kernel's. Linked into the executable, which
// exports them (ENABLE_EXPORTS); nothing calls them directly.
#include <cstdint>

namespace {

template <typename T>
T Arg(void** args, int i) {
  return *static_cast<T*>(args[i]);
}

}  // namespace

#define CNN_TRAIN_TWIN(kernel)                                                 \
  extern "C" __attribute__((visibility("default"))) void simgpu_twin_##kernel( \
      const unsigned* /*grid*/, const unsigned* /*block*/, unsigned /*shared*/, void** args)

CNN_TRAIN_TWIN(cnn_train_relu_forward) {
  float* y = Arg<float*>(args, 0);
  const float* x = Arg<const float*>(args, 1);
  const int64_t n = Arg<int64_t>(args, 2);
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = v > 0.0f ? v : 0.0f;
  }
}

CNN_TRAIN_TWIN(cnn_train_add_forward) {
  float* y = Arg<float*>(args, 0);
  const float* a = Arg<const float*>(args, 1);
  const float* b = Arg<const float*>(args, 2);
  const int64_t n = Arg<int64_t>(args, 3);
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

CNN_TRAIN_TWIN(cnn_train_bias_add) {
  float* y = Arg<float*>(args, 0);
  const float* bias = Arg<const float*>(args, 1);
  const int64_t n = Arg<int64_t>(args, 2);
  const int64_t channels = Arg<int64_t>(args, 3);
  const int64_t spatial = Arg<int64_t>(args, 4);
  for (int64_t i = 0; i < n; ++i) y[i] = bias[(i / spatial) % channels] + y[i];
}
