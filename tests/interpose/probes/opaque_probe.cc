// opaque_probe MODE: calls pooch cannot model (Note [Opaque calls] in interpose/process/opaque.h)
// on memory pooch swapped out. Buffers of 4 MiB of floats; the driver sets POOCH_POLICY=demand
// and a POOCH_MEMORY_LIMIT of 12 MiB (three buffers).
//
// The opaque call is the driver's legacy 32-bit-pointer cuMemcpyDtoD (the export without _v2):
// classes.tsv calls it opaque, and simgpu answers it with CUDA_ERROR_NOT_SUPPORTED, so the probe
// sees what pooch did before the real call ran: the memory pooch reports free (cudaMemGetInfo,
// pooch's answer) drops by what it brought back.
//
//   resident  Fills buffers a and b, then allocates and fills c and d, which swaps a out (four
//       buffers do not fit), frees c and d. a is then on the host, and fits again.
//       The opaque call must find it resident: free memory drops by a's bytes, and the real call's
//       own answer comes back. Then cuMemAllocAsync and cuMemFreeAsync, reached through
//       cuGetProcAddress, must be pooch's opaque hooks. a and b still read back.
//   refuse    Fills four buffers (a swapped out), then the opaque call: everything cannot be
//       resident under the limit, so it must fail with CUDA_ERROR_OUT_OF_MEMORY (the driver
//       checks pooch's line); the buffers still read back.
//
// Prints "opaque_probe MODE ok ..." when every check held (exit 0), else what failed (exit 1).
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

constexpr size_t kFloats = size_t{1} << 20;  // 4 MiB
int g_failures = 0;

bool Ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::printf("opaque_probe: %s: %s\n", what, cudaGetErrorName(e));
  ++g_failures;
  return false;
}

// -1, 0 or 1: sums of up to 2^24 squares are exact in float, whatever the order.
float Value(int buffer, size_t i) { return static_cast<float>((i * 7 + buffer * 13) % 3) - 1; }

float* Filled(int buffer) {
  float* d = nullptr;
  if (!Ok(cudaMalloc(reinterpret_cast<void**>(&d), kFloats * sizeof(float)), "cudaMalloc")) {
    return nullptr;
  }
  std::vector<float> h(kFloats);
  for (size_t i = 0; i < kFloats; ++i) h[i] = Value(buffer, i);
  Ok(cudaMemcpy(d, h.data(), kFloats * sizeof(float), cudaMemcpyHostToDevice), "fill");
  return d;
}

void Expect(const float* d, int buffer, const char* what) {
  std::vector<float> h(kFloats);
  if (!Ok(cudaMemcpy(h.data(), d, kFloats * sizeof(float), cudaMemcpyDeviceToHost), what)) return;
  for (size_t i = 0; i < kFloats; ++i) {
    if (h[i] != Value(buffer, i)) {
      std::printf("opaque_probe: %s: element %zu is %g, want %g\n", what, i, h[i],
                  Value(buffer, i));
      ++g_failures;
      return;
    }
  }
}

// The legacy export, as the preloaded library (pooch's opaque hook) answers it.
using LegacyCopy = CUresult (*)(unsigned int, unsigned int, unsigned int);
LegacyCopy Opaque() { return reinterpret_cast<LegacyCopy>(dlsym(RTLD_DEFAULT, "cuMemcpyDtoD")); }

size_t FreeBytes() {
  size_t free = 0, total = 0;
  Ok(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  return free;
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  const LegacyCopy opaque = Opaque();
  if (opaque == nullptr) {
    std::printf("opaque_probe: no cuMemcpyDtoD export\n");
    return 1;
  }
  float* a = Filled(0);
  float* b = Filled(1);
  float* c = Filled(2);
  float* d = Filled(3);  // four buffers under a three-buffer limit: a is swapped out
  if (a == nullptr || b == nullptr || c == nullptr || d == nullptr) return 1;
  if (std::strcmp(mode, "resident") == 0) {
    Ok(cudaFree(c), "cudaFree c");
    Ok(cudaFree(d), "cudaFree d");
    const size_t before = FreeBytes();
    const CUresult r = opaque(0, 0, 0);
    const size_t after = FreeBytes();
    if (r != CUDA_ERROR_NOT_SUPPORTED) {
      std::printf("opaque_probe: cuMemcpyDtoD: %d, want simgpu's CUDA_ERROR_NOT_SUPPORTED\n",
                  static_cast<int>(r));
      ++g_failures;
    }
    if (before < after || before - after < kFloats * sizeof(float)) {
      std::printf("opaque_probe: free memory went from %zu to %zu: a not made resident\n", before,
                  after);
      ++g_failures;
    }
    // Note [Opaque calls]: a driver look-up of a function pooch does not model gets its hook
    // (cuMemAllocAsync and cuMemFreeAsync: opaque, and served by simgpu's look-up table).
    void* alloc = nullptr;
    void* release = nullptr;
    CUdriverProcAddressQueryResult found{};
    if (cuGetProcAddress("cuMemAllocAsync", &alloc, 13000, 0, &found) != CUDA_SUCCESS ||
        cuGetProcAddress("cuMemFreeAsync", &release, 13000, 0, &found) != CUDA_SUCCESS) {
      std::printf("opaque_probe: cuGetProcAddress(cuMemAllocAsync, cuMemFreeAsync) failed\n");
      ++g_failures;
    } else if (alloc != dlsym(RTLD_DEFAULT, "cuMemAllocAsync") ||
               release != dlsym(RTLD_DEFAULT, "cuMemFreeAsync")) {
      std::printf("opaque_probe: the look-ups did not answer with the preloaded hooks\n");
      ++g_failures;
    } else {
      CUdeviceptr p = 0;
      using Alloc = CUresult (*)(CUdeviceptr*, size_t, CUstream);
      using Release = CUresult (*)(CUdeviceptr, CUstream);
      if (reinterpret_cast<Alloc>(alloc)(&p, 4096, nullptr) != CUDA_SUCCESS ||
          reinterpret_cast<Release>(release)(p, nullptr) != CUDA_SUCCESS) {
        std::printf("opaque_probe: cuMemAllocAsync/cuMemFreeAsync through the look-up failed\n");
        ++g_failures;
      }
    }
    Expect(a, 0, "a");
    Expect(b, 1, "b");
    if (g_failures == 0) {
      std::printf("opaque_probe resident ok made_resident %zu\n", before - after);
    }
  } else if (std::strcmp(mode, "refuse") == 0) {
    const CUresult r = opaque(0, 0, 0);
    if (r != CUDA_ERROR_OUT_OF_MEMORY) {
      std::printf("opaque_probe: cuMemcpyDtoD: %d, want CUDA_ERROR_OUT_OF_MEMORY\n",
                  static_cast<int>(r));
      ++g_failures;
    }
    Expect(a, 0, "a");
    Expect(b, 1, "b");
    Expect(c, 2, "c");
    Expect(d, 3, "d");
    if (g_failures == 0) std::printf("opaque_probe refuse ok status %d\n", static_cast<int>(r));
  } else {
    std::printf("usage: opaque_probe resident|refuse\n");
    return 2;
  }
  return g_failures == 0 ? 0 : 1;
}
