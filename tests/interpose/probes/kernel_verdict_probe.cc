// kernel_verdict_probe: Note [Kernel words] (interpose/hooks/launch/kernel_args.h) on simgpu.
// Allocates `stale` (24 MiB) and fills it, then `out` and `in` (4 MiB each) and `other`
// (24 MiB): under a 40 MiB limit the first, least recently used, is swapped out. Then one launch:
//   exact    k_scale(out, in, stale): the exact kernel cannot reach `stale`, which stays out
//   unknown  k_chase(out, stale): an unknown kernel may touch what its words point into, so
//            `stale` comes back in, as every kernel did before the analysis
// simgpu runs device code in timing mode only, so no byte is checked; the test reads pooch's
// swaps: line. Prints "kernel_verdict ok" when every call succeeded.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>

extern "C" cudaError_t LaunchScale(float* out, const float* in, float* stale, int n);
extern "C" cudaError_t LaunchChase(float* const* slots, float* also, int n);

namespace {

constexpr size_t kMiB = size_t{1} << 20;

bool Ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "kernel_verdict_probe: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

bool Filled(float** p, size_t bytes) {
  return Ok(cudaMalloc(reinterpret_cast<void**>(p), bytes), "cudaMalloc") &&
         Ok(cudaMemset(*p, 1, bytes), "cudaMemset");
}

}  // namespace

int main(int argc, char** argv) {
  const bool exact = argc > 1 && std::strcmp(argv[1], "exact") == 0;
  float *stale = nullptr, *out = nullptr, *in = nullptr, *other = nullptr;
  if (!Filled(&stale, 24 * kMiB) || !Filled(&out, 4 * kMiB) || !Filled(&in, 4 * kMiB) ||
      !Filled(&other, 24 * kMiB) || !Ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize")) {
    return 1;
  }
  const int n = static_cast<int>(4 * kMiB / sizeof(float));
  const cudaError_t launched = exact ? LaunchScale(out, in, stale, n)
                                     : LaunchChase(reinterpret_cast<float* const*>(out), stale, n);
  if (!Ok(launched, "the launch") || !Ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize")) {
    return 1;
  }
  std::printf("kernel_verdict ok\n");
  return 0;
}
