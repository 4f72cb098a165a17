// libcudart.so.13: cudaProfilerStart/Stop. No profiler ever attaches to simgpu, and with none
// attached the real runtime's calls do nothing and succeed; so do these.
#include <cuda_profiler_api.h>

#include "tests/simgpu/driver/libcudart/runtime_driver.h"

SIMGPU_RT_EXPORT cudaError_t cudaProfilerStart() { return cudaSuccess; }

SIMGPU_RT_EXPORT cudaError_t cudaProfilerStop() { return cudaSuccess; }
