// torch_allocator.h: which PyTorch allocator `pooch run` asks for (Note [PyTorch's allocator]).
#ifndef POOCH_CLI_TORCH_ALLOCATOR_H_
#define POOCH_CLI_TORCH_ALLOCATOR_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace pooch::cli {

// Note [PyTorch's allocator]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// pooch swaps allocations; PyTorch's default caching allocator hands tensors out of large
// cudaMalloc segments it keeps, so pooch would see segments, not tensors, and could not swap one
// tensor without the others of its segment (expandable_segments:True is worse: it maps memory
// through the VMM API and pooch sees nothing). Two settings give pooch one allocation per tensor:
//   PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync   cudaMallocAsync/cudaFreeAsync per tensor,
//       plus the memory-pool calls, which pooch answers about its own memory (Note [Memory
//       pools] in interpose/hooks/runtime/mem_pool.h), so torch.cuda.memory_allocated() and
//       max_memory_allocated() report pooch's device bytes;
//   PYTORCH_NO_CUDA_MEMORY_CACHING=1   cudaMalloc/cudaFree per tensor; torch keeps no statistics
//       (max_memory_allocated() is 0), and without pooch a real cudaFree synchronises.
// Measured on simgpu (docs/measurements.md, "Allocation"), the two cost pooch the same
// host time per allocation, so `pooch run` sets the first, which keeps
// PyTorch's memory statistics truthful. An explicit setting of the user's wins, unchanged; when
// it leaves the caching allocator in place, pooch says so in one line. Under POOCH_POLICY=off
// nothing is set: pooch manages nothing, and PyTorch's default is its fastest.
struct AllocatorChoice {
  // Variables to set (name, value); empty when the user's settings stand.
  std::vector<std::pair<std::string, std::string>> settings;
  // A `pooch:`-less line to print, when the user's setting keeps the caching allocator.
  std::optional<std::string> warning;
};

// `alloc_conf`, `no_caching`: the values of PYTORCH_CUDA_ALLOC_CONF and
// PYTORCH_NO_CUDA_MEMORY_CACHING in pooch run's environment (nullopt when unset); `policy_off`:
// POOCH_POLICY (flag or environment) is off.
AllocatorChoice ChooseAllocator(const std::optional<std::string>& alloc_conf,
                                const std::optional<std::string>& no_caching, bool policy_off);

}  // namespace pooch::cli

#endif  // POOCH_CLI_TORCH_ALLOCATOR_H_
