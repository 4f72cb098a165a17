#include "parallel.h"

#include <algorithm>
#include <thread>
#include <vector>

namespace simgpu::kernels {

void ParallelFor(int64_t n, int threads, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int64_t t = std::clamp<int64_t>(threads, 1, n);
  if (t == 1) {
    fn(0, n);
    return;
  }
  std::vector<std::thread> workers;
  workers.reserve(t - 1);
  for (int64_t i = 1; i < t; ++i) {
    workers.emplace_back([&fn, i, n, t] { fn(n * i / t, n * (i + 1) / t); });
  }
  fn(0, n / t);
  for (std::thread& w : workers) w.join();
}

}  // namespace simgpu::kernels
