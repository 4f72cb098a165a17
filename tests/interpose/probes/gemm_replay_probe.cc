// gemm_replay_probe: cuBLAS GEMM outputs rebuilt by replay are the very bytes the calls wrote
// (Note [GEMM replay] in interpose/hooks/cublas/cublas_gemm.h). The driver (interpose_test.sh, case
// gemm_replay) runs it without pooch, then under POOCH_POLICY=dtr at a limit that cannot hold
// everything, with the hazard checker at error.
//
// A (m x k) and B (k x n) hold values whose products round, so that another summation order
// would show in the bits. Four replayable GEMMs (beta = 0, host pointer mode) write C1..C4:
//   C1 = A B          cublasGemmEx, fp32, on handle h1, which has a workspace set (as PyTorch's)
//   C2 = 0.5 A B      cublasSgemm_v2 on h2 (cuBLAS's default workspace)
//   C3 = A B          cublasGemmEx on h2 with B given transposed (Bt, n x k)
//   C4 = -A B         cublasSgemm_v2 on h1 (tensor-op math mode set)
//   C5 = [A B, A B]   cublasGemmStridedBatchedEx on h1, two matrices (A and B strides 0)
// and two that must get no recipe, beta != 0 (C is read and overwritten):
//   D1 = A B + D1     cublasSgemm_v2
//   D2 = A B + 2 D2   cublasGemmEx
// Each output is copied to the host right after its call. Then filler buffers are allocated
// and written: the limit makes eviction drop or swap most of the outputs, and every output is
// read back and compared byte for byte with its copy (a dropped one is rebuilt first).
//
// Prints "gemm_replay_probe ok" when every check held (exit 0), else what failed (exit 1).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

constexpr int kM = 512, kN = 512, kK = 256;
constexpr size_t kCBytes = size_t{kM} * kN * sizeof(float);  // 1 MiB
constexpr int kFillers = 8;                                  // 1 MiB each
int g_failures = 0;

bool Ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::printf("gemm_replay_probe: %s: %s\n", what, cudaGetErrorName(e));
  ++g_failures;
  return false;
}

bool Ok(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return true;
  std::printf("gemm_replay_probe: %s: cuBLAS status %d\n", what, static_cast<int>(s));
  ++g_failures;
  return false;
}

// Deterministic values in [-1, 1) with a full mantissa.
std::vector<float> Values(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (float& f : v) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    f = static_cast<float>(x >> 8) / static_cast<float>(1u << 23) - 1.0f;
  }
  return v;
}

void* Alloc(size_t bytes, const std::vector<float>* fill) {
  void* d = nullptr;
  if (!Ok(cudaMalloc(&d, bytes), "cudaMalloc")) return nullptr;
  if (fill != nullptr) Ok(cudaMemcpy(d, fill->data(), bytes, cudaMemcpyHostToDevice), "fill");
  return d;
}

std::vector<unsigned char> Copy(const void* d, size_t bytes, const char* what) {
  std::vector<unsigned char> h(bytes);
  Ok(cudaMemcpy(h.data(), d, bytes, cudaMemcpyDeviceToHost), what);
  return h;
}

// The results are what was asked (C3 = C1, C5 = [C1, C1], C2 = C1 / 2 and C4 = -C1 exactly:
// scaling by a power of two and negation are exact), so that comparing with copies is not
// comparing nothing.
bool ResultsAsAsked(const std::vector<std::vector<unsigned char>>& want) {
  const auto* c1 = reinterpret_cast<const float*>(want[0].data());
  const auto* c2 = reinterpret_cast<const float*>(want[1].data());
  const auto* c4 = reinterpret_cast<const float*>(want[3].data());
  bool nonzero = false;
  for (size_t i = 0; i < kCBytes / 4; ++i) {
    nonzero = nonzero || c1[i] != 0;
    if (c2[i] != c1[i] * 0.5f || c4[i] != -c1[i]) {
      std::printf("gemm_replay_probe: element %zu: C1 %g C2 %g C4 %g\n", i, c1[i], c2[i], c4[i]);
      return false;
    }
  }
  const std::vector<unsigned char> c5_first(want[4].begin(), want[4].begin() + kCBytes);
  const std::vector<unsigned char> c5_second(want[4].begin() + kCBytes, want[4].end());
  if (c5_first != want[0] || c5_second != want[0]) {
    std::printf("gemm_replay_probe: C5's matrices differ from C1\n");
    return false;
  }
  if (want[2] != want[0] || !nonzero) {
    std::printf("gemm_replay_probe: C3 differs from C1, or C1 is all zero\n");
    return false;
  }
  return true;
}

}  // namespace

int main() {
  const std::vector<float> a = Values(size_t{kM} * kK, 1), b = Values(size_t{kK} * kN, 2);
  std::vector<float> bt(b.size());  // B transposed: n x k, column major
  for (int i = 0; i < kK; ++i) {
    for (int j = 0; j < kN; ++j) bt[j + size_t{kN} * i] = b[i + size_t{kK} * j];
  }
  const std::vector<float> d_init = Values(size_t{kM} * kN, 3);
  auto* A = static_cast<float*>(Alloc(a.size() * 4, &a));
  auto* B = static_cast<float*>(Alloc(b.size() * 4, &b));
  auto* Bt = static_cast<float*>(Alloc(bt.size() * 4, &bt));
  cublasHandle_t h1 = nullptr, h2 = nullptr;
  if (!Ok(cublasCreate(&h1), "cublasCreate") || !Ok(cublasCreate(&h2), "cublasCreate")) return 1;
  void* workspace = Alloc(size_t{1} << 20, nullptr);
  Ok(cublasSetWorkspace(h1, workspace, size_t{1} << 20), "cublasSetWorkspace");
  Ok(cublasSetMathMode(h1, CUBLAS_TENSOR_OP_MATH), "cublasSetMathMode");
  float* c[5];
  float* d[2];
  for (int i = 0; i < 4; ++i) c[i] = static_cast<float*>(Alloc(kCBytes, nullptr));
  c[4] = static_cast<float*>(Alloc(2 * kCBytes, nullptr));
  for (float*& p : d) p = static_cast<float*>(Alloc(kCBytes, &d_init));
  if (g_failures > 0) return 1;

  const float one = 1, half = 0.5f, minus = -1, zero = 0, two = 2;
  std::vector<std::vector<unsigned char>> want;
  Ok(cublasGemmEx(h1, CUBLAS_OP_N, CUBLAS_OP_N, kM, kN, kK, &one, A, CUDA_R_32F, kM, B, CUDA_R_32F,
                  kK, &zero, c[0], CUDA_R_32F, kM, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
     "C1 cublasGemmEx");
  want.push_back(Copy(c[0], kCBytes, "C1 copy"));
  Ok(cublasSgemm(h2, CUBLAS_OP_N, CUBLAS_OP_N, kM, kN, kK, &half, A, kM, B, kK, &zero, c[1], kM),
     "C2 cublasSgemm");
  want.push_back(Copy(c[1], kCBytes, "C2 copy"));
  Ok(cublasGemmEx(h2, CUBLAS_OP_N, CUBLAS_OP_T, kM, kN, kK, &one, A, CUDA_R_32F, kM, Bt, CUDA_R_32F,
                  kN, &zero, c[2], CUDA_R_32F, kM, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
     "C3 cublasGemmEx");
  want.push_back(Copy(c[2], kCBytes, "C3 copy"));
  Ok(cublasSgemm(h1, CUBLAS_OP_N, CUBLAS_OP_N, kM, kN, kK, &minus, A, kM, B, kK, &zero, c[3], kM),
     "C4 cublasSgemm");
  want.push_back(Copy(c[3], kCBytes, "C4 copy"));
  Ok(cublasGemmStridedBatchedEx(h1, CUBLAS_OP_N, CUBLAS_OP_N, kM, kN, kK, &one, A, CUDA_R_32F, kM,
                                0, B, CUDA_R_32F, kK, 0, &zero, c[4], CUDA_R_32F, kM,
                                static_cast<long long>(kM) * kN, 2, CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT),
     "C5 cublasGemmStridedBatchedEx");
  want.push_back(Copy(c[4], 2 * kCBytes, "C5 copy"));
  Ok(cublasSgemm(h2, CUBLAS_OP_N, CUBLAS_OP_N, kM, kN, kK, &one, A, kM, B, kK, &one, d[0], kM),
     "D1 cublasSgemm");
  want.push_back(Copy(d[0], kCBytes, "D1 copy"));
  Ok(cublasGemmEx(h1, CUBLAS_OP_N, CUBLAS_OP_N, kM, kN, kK, &one, A, CUDA_R_32F, kM, B, CUDA_R_32F,
                  kK, &two, d[1], CUDA_R_32F, kM, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
     "D2 cublasGemmEx");
  want.push_back(Copy(d[1], kCBytes, "D2 copy"));
  if (!ResultsAsAsked(want)) return 1;

  // Pressure: the fillers need room, which eviction makes from the older buffers.
  std::vector<void*> fillers;
  for (int i = 0; i < kFillers; ++i) {
    fillers.push_back(Alloc(kCBytes, nullptr));
    Ok(cudaMemset(fillers.back(), i + 1, kCBytes), "filler memset");
  }
  Ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");

  const char* names[] = {"C1", "C2", "C3", "C4", "C5", "D1", "D2"};
  float* outputs[] = {c[0], c[1], c[2], c[3], c[4], d[0], d[1]};
  for (int i = 0; i < 7; ++i) {
    const size_t bytes = i == 4 ? 2 * kCBytes : kCBytes;
    const std::vector<unsigned char> got = Copy(outputs[i], bytes, names[i]);
    if (got != want[static_cast<size_t>(i)]) {
      size_t at = 0;
      while (at < bytes && got[at] == want[static_cast<size_t>(i)][at]) ++at;
      std::printf("gemm_replay_probe: %s differs from its first result at byte %zu\n", names[i],
                  at);
      ++g_failures;
    }
  }
  for (void* p : fillers) Ok(cudaFree(p), "cudaFree");
  for (float* p : outputs) Ok(cudaFree(p), "cudaFree");
  Ok(cudaFree(A), "cudaFree");
  Ok(cudaFree(B), "cudaFree");
  Ok(cudaFree(Bt), "cudaFree");
  Ok(cudaFree(workspace), "cudaFree");
  cublasDestroy(h1);
  cublasDestroy(h2);
  if (g_failures > 0) return 1;
  std::printf("gemm_replay_probe ok\n");
  return 0;
}
