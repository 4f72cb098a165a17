// small_calls_bench [CALLS] [KIND]: host time per call of a cheap, asynchronous CUDA call, the
// case where an interposer's overhead shows most. KIND:
//   memset   cudaMemsetAsync of 256 bytes on a stream (default; runs on simgpu and a real GPU)
//   event    cudaEventRecord on a stream
//   cudnn    cudnnAddTensor on a 1x1x1x64 tensor (cuDNN's dispatch path)
// Prints "ns_per_call <float>" (the best of 5 timed rounds after a warm-up round); used by
// scripts/bench_passthrough.sh, not a test.
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

bool Ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) std::fprintf(stderr, "bench: %s: %s\n", what, cudaGetErrorString(e));
  return e == cudaSuccess;
}

}  // namespace

int main(int argc, char** argv) {
  const long calls = argc > 1 ? std::atol(argv[1]) : 200000;
  const char* kind = argc > 2 ? argv[2] : "memset";
  cudaStream_t stream = nullptr;
  cudaEvent_t event = nullptr;
  void* buf = nullptr;
  if (!Ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream") ||
      !Ok(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "event") ||
      !Ok(cudaMalloc(&buf, 1024), "cudaMalloc")) {
    return 1;
  }
  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t desc = nullptr;
  const bool use_cudnn = std::strcmp(kind, "cudnn") == 0;
  if (use_cudnn) {
    if (cudnnCreate(&handle) != CUDNN_STATUS_SUCCESS || cudnnSetStream(handle, stream) != 0 ||
        cudnnCreateTensorDescriptor(&desc) != 0 ||
        cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 1, 64) != 0) {
      std::fprintf(stderr, "bench: cuDNN set-up failed\n");
      return 1;
    }
  }
  const float one = 1.0f;
  double best_ns = 1e300;
  for (int round = 0; round < 6; ++round) {
    const auto start = std::chrono::steady_clock::now();
    for (long i = 0; i < calls; ++i) {
      if (use_cudnn) {
        cudnnAddTensor(handle, &one, desc, buf, &one, desc, buf);
      } else if (kind[0] == 'e') {
        cudaEventRecord(event, stream);
      } else {
        cudaMemsetAsync(buf, 0, 256, stream);
      }
    }
    const auto end = std::chrono::steady_clock::now();
    if (!Ok(cudaStreamSynchronize(stream), "sync")) return 1;
    const double ns = std::chrono::duration<double, std::nano>(end - start).count() / calls;
    if (round > 0 && ns < best_ns) best_ns = ns;  // round 0 warms up
  }
  std::printf("ns_per_call %.2f\n", best_ns);
  return 0;
}
