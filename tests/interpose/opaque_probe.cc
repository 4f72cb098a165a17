// opaque_probe MODE: calls pooch cannot model (Note [Opaque calls] in interpose/process/opaque.h)
// on memory pooch swapped out. Buffers of 4 MiB of floats; the driver sets POOCH_POLICY=demand
// and a POOCH_MEMORY_LIMIT of 12 MiB (three buffers).
//
//   resident  Fills buffers a and b, then allocates and fills c and d, which swaps a and b out
//       (four buffers do not fit), frees c and d. a and b are then on the host, and both fit.
//       cublasSgemmStridedBatched (a's sum of squares, as a 1 x 1 product a^T a) and
//       cublasSgemmEx (b = a x [1]), which pooch does not model and simgpu computes, must see them
//       resident: the sum is the host's, b reads back equal to a. Then cuMemAllocAsync and
//       cuMemFreeAsync, reached through cuGetProcAddress, must be pooch's opaque hooks.
//   refuse    Fills four buffers (a swapped out), then cublasSgemmEx(b = a x c): everything cannot
//   be
//       resident under the limit, so the call must fail with CUBLAS_STATUS_ALLOC_FAILED (the
//       driver checks pooch's line); the buffers still read back.
//
// Prints "opaque_probe MODE ok ..." when every check held (exit 0), else what failed (exit 1).
#include <cublas_v2.h>
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

double HostSumOfSquares(int buffer) {
  double s = 0;
  for (size_t i = 0; i < kFloats; ++i)
    s += static_cast<double>(Value(buffer, i)) * Value(buffer, i);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  cublasHandle_t handle = nullptr;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    std::printf("opaque_probe: cublasCreate failed\n");
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
    float* sum = nullptr;  // small: always resident
    Ok(cudaMalloc(reinterpret_cast<void**>(&sum), sizeof(float)), "cudaMalloc sum");
    const float one = 1, zero = 0;
    const int k = static_cast<int>(kFloats);
    cublasStatus_t s = cublasSgemmStridedBatched(handle, CUBLAS_OP_T, CUBLAS_OP_N, 1, 1, k, &one, a,
                                                 k, 0, a, k, 0, &zero, sum, 1, 0, 1);
    float got = 0;
    if (s != CUBLAS_STATUS_SUCCESS) {
      std::printf("opaque_probe: cublasSgemmStridedBatched: status %d\n", static_cast<int>(s));
      ++g_failures;
    } else if (Ok(cudaMemcpy(&got, sum, sizeof(float), cudaMemcpyDeviceToHost), "sum") &&
               got != HostSumOfSquares(0)) {
      std::printf("opaque_probe: a^T a = %g, want %g\n", got, HostSumOfSquares(0));
      ++g_failures;
    }
    // b = a x [1]: a k x 1 times a 1 x 1 matrix on the device (the small block `unit`).
    float* unit = nullptr;
    Ok(cudaMalloc(reinterpret_cast<void**>(&unit), sizeof(float)), "cudaMalloc unit");
    Ok(cudaMemcpy(unit, &one, sizeof(float), cudaMemcpyHostToDevice), "unit");
    s = cublasSgemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, k, 1, 1, &one, a, CUDA_R_32F, k, unit,
                      CUDA_R_32F, 1, &zero, b, CUDA_R_32F, k);
    if (s != CUBLAS_STATUS_SUCCESS) {
      std::printf("opaque_probe: cublasSgemmEx: status %d\n", static_cast<int>(s));
      ++g_failures;
    }
    Ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    Expect(b, 0, "b after the copy");
    Expect(a, 0, "a");
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
    if (g_failures == 0) std::printf("opaque_probe resident ok sum %.1f\n", got);
  } else if (std::strcmp(mode, "refuse") == 0) {
    const float one = 1, zero = 0;
    const int k = static_cast<int>(kFloats);
    const cublasStatus_t s =
        cublasSgemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, k, 1, 1, &one, a, CUDA_R_32F, k, c,
                      CUDA_R_32F, 1, &zero, b, CUDA_R_32F, k);
    if (s != CUBLAS_STATUS_ALLOC_FAILED) {
      std::printf("opaque_probe: cublasSgemmEx: status %d, want CUBLAS_STATUS_ALLOC_FAILED\n",
                  static_cast<int>(s));
      ++g_failures;
    }
    Expect(a, 0, "a");
    Expect(b, 1, "b (the refused copy wrote nothing)");
    Expect(d, 3, "d");
    if (g_failures == 0) std::printf("opaque_probe refuse ok status %d\n", static_cast<int>(s));
  } else {
    std::printf("usage: opaque_probe resident|refuse\n");
    return 2;
  }
  cublasDestroy(handle);
  return g_failures == 0 ? 0 : 1;
}
