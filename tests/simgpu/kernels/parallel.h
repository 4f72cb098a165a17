// simgpu kernels: split a range of independent work items over CPU threads.
// Thread-safe; each call starts and joins its own threads (no pool to outlive exit).
#ifndef POOCH_TESTS_SIMGPU_KERNELS_PARALLEL_H_
#define POOCH_TESTS_SIMGPU_KERNELS_PARALLEL_H_

#include <cstdint>
#include <functional>

namespace simgpu::kernels {

// Calls fn(begin, end) on disjoint contiguous slices that cover [0, n), using at most `threads`
// threads (the caller's included). Work items must be independent: the kernels split over
// outputs only, so results never depend on how many threads ran.
void ParallelFor(int64_t n, int threads, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace simgpu::kernels

#endif  // POOCH_TESTS_SIMGPU_KERNELS_PARALLEL_H_
