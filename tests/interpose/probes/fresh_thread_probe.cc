// fresh_thread_probe: a kernel launched through <<<>>> (__cudaLaunchKernel) by a thread that has
// made no runtime call before, as PyTorch's autograd thread launches its first kernel: no CUDA
// context is current on it until the launch itself binds one. The main thread loads the kernel
// with a first launch; the fresh thread then launches it again, copying a 4 MiB buffer into
// another. simgpu runs device code in timing mode only, so no byte is checked. Prints
// "fresh_thread ok" when both launches succeeded. Under pooch the fresh thread's launch must be
// scanned like any other (Note [Queries on a thread without a context] in
// interpose/hooks/launch/kernel_args.cc), not counted as opaque.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <thread>
#include <vector>

// kernels_test.cu's (tests/simgpu/driver), linked in as an object built by nvcc.
extern "C" cudaError_t LaunchCopyChevrons(float* dst, const float* src, int n, cudaStream_t stream);

namespace {

constexpr int kFloats = 1 << 20;

bool Ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "fresh_thread_probe: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

}  // namespace

int main() {
  float* src = nullptr;
  float* dst = nullptr;
  const size_t bytes = kFloats * sizeof(float);
  const std::vector<float> host(kFloats, 1.0f);
  if (!Ok(cudaMalloc(reinterpret_cast<void**>(&src), bytes), "cudaMalloc") ||
      !Ok(cudaMalloc(reinterpret_cast<void**>(&dst), bytes), "cudaMalloc") ||
      !Ok(cudaMemcpy(src, host.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy") ||
      !Ok(cudaMemset(dst, 0, bytes), "cudaMemset") ||
      !Ok(LaunchCopyChevrons(dst, dst, kFloats, nullptr), "the main thread's launch") ||
      !Ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize")) {
    return 1;
  }
  cudaError_t launched = cudaSuccess;
  std::thread([&] { launched = LaunchCopyChevrons(dst, src, kFloats, nullptr); }).join();
  if (!Ok(launched, "the fresh thread's launch") ||
      !Ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize")) {
    return 1;
  }
  std::printf("fresh_thread ok\n");
  return 0;
}
