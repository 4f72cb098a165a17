// replay_check_probe: a replay that cannot rebuild its map's bytes, for POOCH_CHECK_REPLAYS
// (Note [Replay check] in core/recompute/replay_check.h). The driver (interpose_test.sh, case
// replay_check_stop) runs it under pooch's plan with the check on.
//
// Each iteration: C_i = A W_i by cublasSgemm (beta 0: recipes pooch can replay) for eight 1 MiB
// maps, then k_twice (replay_check_kernels.cu) reads W_0, and with REPLAY_CHECK_PROBE_LIE set its
// CPU twin changes W_0[0] behind its verdict's back; then a 4 MiB scratch is written, and the maps
// are read back in reverse (copied into R) and freed. Under a limit that cannot hold them all, the
// plan drops maps and rebuilds them by replaying their GEMM: C_0's replay uses the changed W_0.
// k_twice's output T is a 128 KiB block of the small-allocation slabs, as W_0 is, so the launch
// touches no memory of the manager's; with REPLAY_CHECK_PROBE_BIG_OUT=1 T is 1 MiB, the
// manager's (Note [Small blocks in the lineage] in interpose/hooks/launch/kernel_args.h: both
// paths of RunOp). Prints "replay_check_probe checksum <hex>" (the bytes of R after the last
// iteration).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

extern "C" cudaError_t LaunchTwice(float* out, const float* in, int n);

namespace {

constexpr int kM = 512, kN = 512, kK = 64, kMaps = 8, kIters = 8;
constexpr size_t kCBytes = size_t{kM} * kN * sizeof(float);  // 1 MiB

bool Ok(bool ok, const char* what) {
  if (!ok) std::printf("replay_check_probe: %s failed\n", what);
  return ok;
}

std::vector<float> Values(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (float& f : v) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    f = static_cast<float>(x >> 8) / static_cast<float>(1u << 23) - 1.0f;
  }
  return v;
}

float* Upload(const std::vector<float>& v) {
  void* d = nullptr;
  if (cudaMalloc(&d, v.size() * 4) != cudaSuccess) return nullptr;
  if (cudaMemcpy(d, v.data(), v.size() * 4, cudaMemcpyHostToDevice) != cudaSuccess) return nullptr;
  return static_cast<float*>(d);
}

}  // namespace

int main() {
  float* a = Upload(Values(size_t{kM} * kK, 1));
  std::vector<float*> w;
  for (int i = 0; i < kMaps; ++i) w.push_back(Upload(Values(size_t{kK} * kN, 2 + i)));
  float* r = Upload(std::vector<float>(size_t{kM} * kN, 0.0f));
  const char* big = std::getenv("REPLAY_CHECK_PROBE_BIG_OUT");
  const bool big_out = big != nullptr && big[0] == '1';
  const size_t t_rows = big_out ? kM : kK;
  float* t = Upload(std::vector<float>(t_rows * kN, 0.0f));
  cublasHandle_t h = nullptr;
  if (!Ok(a != nullptr && r != nullptr && t != nullptr && cublasCreate(&h) == CUBLAS_STATUS_SUCCESS,
          "set-up")) {
    return 1;
  }
  const float one = 1, zero = 0;
  for (int iter = 0; iter < kIters; ++iter) {
    std::vector<void*> c(kMaps, nullptr);
    for (int i = 0; i < kMaps; ++i) {
      if (!Ok(cudaMalloc(&c[i], kCBytes) == cudaSuccess, "cudaMalloc C") ||
          !Ok(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, kM, kN, kK, &one, a, kM, w[i], kK, &zero,
                          static_cast<float*>(c[i]), kM) == CUBLAS_STATUS_SUCCESS,
              "cublasSgemm")) {
        return 1;
      }
    }
    if (!Ok(LaunchTwice(t, w[0], kK * kN) == cudaSuccess, "k_twice")) return 1;
    void* scratch = nullptr;
    if (!Ok(cudaMalloc(&scratch, 4 * kCBytes) == cudaSuccess &&
                cudaMemset(scratch, iter, 4 * kCBytes) == cudaSuccess &&
                cudaFree(scratch) == cudaSuccess,
            "scratch")) {
      return 1;
    }
    for (int i = kMaps - 1; i >= 0; --i) {
      if (!Ok(cudaMemcpy(r, c[i], kCBytes, cudaMemcpyDeviceToDevice) == cudaSuccess, "read C") ||
          !Ok(cudaFree(c[i]) == cudaSuccess, "cudaFree C")) {
        return 1;
      }
    }
    if (!Ok(cudaDeviceSynchronize() == cudaSuccess, "cudaDeviceSynchronize")) return 1;
  }
  std::vector<uint32_t> bytes(size_t{kM} * kN);
  if (!Ok(cudaMemcpy(bytes.data(), r, kCBytes, cudaMemcpyDeviceToHost) == cudaSuccess, "result")) {
    return 1;
  }
  uint64_t sum = 1469598103934665603ull;
  for (uint32_t v : bytes) sum = (sum ^ v) * 1099511628211ull;
  std::printf("replay_check_probe checksum %016llx\n", static_cast<unsigned long long>(sum));
  return 0;
}
