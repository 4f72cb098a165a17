// A kernel compiled to PTX only (CMakeLists.txt: code=compute_80): its fat binary has no cubin,
// so simgpu has no parameter info for it and must refuse to launch it.
#include <cuda_runtime_api.h>

__global__ void k_ptx_only(float* out) { out[threadIdx.x] = 1.0f; }

extern "C" const void* KernelPtxOnly() { return reinterpret_cast<const void*>(k_ptx_only); }
