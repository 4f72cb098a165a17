// hook_overhead_bench [CALLS]: ns per call of cudaEventRecord whose real function does nothing
// (trivial_cudart.cc). Run with and without LD_PRELOAD=libpooch.so: the difference is the cost
// of one pass-through hook. Prints "ns_per_call <float>", the best of 20 rounds.
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  const long calls = argc > 1 ? std::atol(argv[1]) : 2000000;
  double best = 1e300;
  for (int round = 0; round < 21; ++round) {
    const auto start = std::chrono::steady_clock::now();
    for (long i = 0; i < calls; ++i) cudaEventRecord(nullptr, nullptr);
    const auto end = std::chrono::steady_clock::now();
    const double ns = std::chrono::duration<double, std::nano>(end - start).count() / calls;
    if (round > 0 && ns < best) best = ns;
  }
  std::printf("ns_per_call %.2f\n", best);
  return 0;
}
