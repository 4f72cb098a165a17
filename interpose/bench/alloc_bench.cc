// alloc_bench [PAIRS] [BYTES...]: host time of cudaMalloc and cudaFree, the allocator's cost as a
// framework without a caching allocator sees it (every tensor is one cudaMalloc/cudaFree pair).
// For each size it times PAIRS individual calls of each, after a warm-up, and prints
//   size BYTES malloc_median_ns M malloc_p90_ns P free_median_ns F free_p90_ns Q
// Run it plain and under `pooch run` (scripts/bench_alloc.sh); a benchmark, not a test.
// ALLOC_BENCH_API=async times cudaMallocAsync/cudaFreeAsync on the legacy stream instead, the
// calls of PyTorch's cudaMallocAsync backend (Note [PyTorch's allocator] in
// cli/torch_allocator.h).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
  const long pairs = argc > 1 ? std::atol(argv[1]) : 2000;
  std::vector<size_t> sizes;
  for (int i = 2; i < argc; ++i) sizes.push_back(static_cast<size_t>(std::atoll(argv[i])));
  if (sizes.empty()) sizes = {4096, 262144, 4u << 20, 64u << 20};
  if (pairs < 1) {
    std::fprintf(stderr, "alloc_bench: PAIRS must be >= 1\n");
    return 2;
  }
  const char* api = std::getenv("ALLOC_BENCH_API");
  const bool async = api != nullptr && std::strcmp(api, "async") == 0;
  using Clock = std::chrono::steady_clock;
  for (size_t bytes : sizes) {
    std::vector<double> malloc_ns, free_ns;
    malloc_ns.reserve(pairs);
    free_ns.reserve(pairs);
    for (long i = -pairs / 10; i < pairs; ++i) {  // the first tenth warms up
      void* p = nullptr;
      const auto t0 = Clock::now();
      const cudaError_t e = async ? cudaMallocAsync(&p, bytes, nullptr) : cudaMalloc(&p, bytes);
      const auto t1 = Clock::now();
      if (e != cudaSuccess) {
        std::fprintf(stderr, "alloc_bench: cudaMalloc(%zu): %s\n", bytes, cudaGetErrorString(e));
        return 1;
      }
      const auto t2 = Clock::now();
      const cudaError_t f = async ? cudaFreeAsync(p, nullptr) : cudaFree(p);
      const auto t3 = Clock::now();
      if (f != cudaSuccess) {
        std::fprintf(stderr, "alloc_bench: cudaFree: %s\n", cudaGetErrorString(f));
        return 1;
      }
      if (i < 0) continue;
      malloc_ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
      free_ns.push_back(std::chrono::duration<double, std::nano>(t3 - t2).count());
    }
    std::printf("size %zu malloc_median_ns %.0f malloc_p90_ns %.0f free_median_ns %.0f free_p90_ns %.0f\n",
                bytes, Percentile(malloc_ns, 0.5), Percentile(malloc_ns, 0.9),
                Percentile(free_ns, 0.5), Percentile(free_ns, 0.9));
  }
  return 0;
}
