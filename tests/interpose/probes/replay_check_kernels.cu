// replay_check_kernels.cu: the kernel of replay_check_probe.cc, built by nvcc for sm_90
// (tests/interpose/CMakeLists.txt). k_twice writes out = 2 in: its SASS reads word 0x8's target
// and writes word 0x0's, an exact verdict (Note [Verdicts at launch]). Its CPU twin (Note [CPU
// twins]), when REPLAY_CHECK_PROBE_LIE is set, also adds 1 to in[0]: a write the verdict says
// cannot happen, as a wrong verdict on a GPU would hide one. pooch then keeps the recipes that
// read `in` (Note [Replay]), and a replay after the twin ran cannot give the map's bytes: what
// the replay check is for.
#include <cuda_runtime.h>

#include <cstdlib>

__global__ void k_twice(float* out, const float* in, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.0f * in[i];
}

extern "C" cudaError_t LaunchTwice(float* out, const float* in, int n) {
  k_twice<<<(n + 255) / 256, 256>>>(out, in, n);
  return cudaGetLastError();
}

extern "C" void simgpu_twin__Z7k_twicePfPKfi(const unsigned[3], const unsigned[3], unsigned,
                                             void** args) {
  float* out = *static_cast<float**>(args[0]);
  float* in = *static_cast<float**>(args[1]);
  const int n = *static_cast<int*>(args[2]);
  for (int i = 0; i < n; ++i) out[i] = 2.0f * in[i];
  static const bool lie = std::getenv("REPLAY_CHECK_PROBE_LIE") != nullptr;
  if (lie) in[0] += 1.0f;  // the write the kernel's SASS does not make
}
