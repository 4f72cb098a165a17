// steady_state_bench [STEPS] [OPS]: host time per intercepted compute call in a training-like
// loop, for the interposer's cost once profiling is over (issue 5: median under 1 µs).
//
// Each step allocates a 2 MiB "feature map" (at or above POOCH_MIN_SWAP_BYTES, so the residency
// manager owns it), runs OPS cudnnAddTensor calls that read a persistent 2 MiB "weight" and
// write the map (64 floats each, so the device work is tiny and the host path dominates), and
// frees it: an iteration the tracker finds after two steps. Each step's host time per call is
// recorded; steps before STEPS/4 are warm-up (profiling). Prints
//   "ns_per_call_median <float> ns_per_call_p90 <float> steps <n>"
// Used by scripts/bench_overhead.sh; not a test.
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

bool Ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) std::fprintf(stderr, "bench: %s: %s\n", what, cudaGetErrorString(e));
  return e == cudaSuccess;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 400;
  const int ops = argc > 2 ? std::atoi(argv[2]) : 50;
  constexpr size_t kBytes = size_t{2} << 20;
  cudaStream_t stream = nullptr;
  void* weight = nullptr;
  if (!Ok(cudaStreamCreate(&stream), "stream") || !Ok(cudaMalloc(&weight, kBytes), "weight") ||
      !Ok(cudaMemset(weight, 0, kBytes), "memset")) {
    return 1;
  }
  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t desc = nullptr;
  if (cudnnCreate(&handle) != CUDNN_STATUS_SUCCESS || cudnnSetStream(handle, stream) != 0 ||
      cudnnCreateTensorDescriptor(&desc) != 0 ||
      cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 1, 64) != 0) {
    std::fprintf(stderr, "bench: cuDNN set-up failed\n");
    return 1;
  }
  const float one = 1.0f;
  std::vector<double> per_call;
  for (int step = 0; step < steps; ++step) {
    void* map = nullptr;
    if (!Ok(cudaMalloc(&map, kBytes), "cudaMalloc")) return 1;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < ops; ++i) {
      if (cudnnAddTensor(handle, &one, desc, weight, &one, desc, map) != CUDNN_STATUS_SUCCESS) {
        std::fprintf(stderr, "bench: cudnnAddTensor failed\n");
        return 1;
      }
    }
    const auto end = std::chrono::steady_clock::now();
    // The step ends as a training step does: wait for the device, then free.
    if (!Ok(cudaStreamSynchronize(stream), "sync") || !Ok(cudaFree(map), "cudaFree")) return 1;
    if (step >= steps / 4) {
      per_call.push_back(std::chrono::duration<double, std::nano>(end - start).count() / ops);
    }
  }
  std::sort(per_call.begin(), per_call.end());
  std::printf("ns_per_call_median %.1f ns_per_call_p90 %.1f steps %zu\n",
              per_call[per_call.size() / 2], per_call[per_call.size() * 9 / 10], per_call.size());
  return 0;
}
