// cublas_gemm.cc: whether a cuBLAS GEMM can be replayed (Note [GEMM replay] in cublas_gemm.h).
#include "interpose/hooks/cublas/cublas_gemm.h"

namespace pooch::interpose {
namespace {

// Real types only: a complex C has complex alpha and beta, which pooch does not copy.
bool IsReal(cudaDataType type) {
  switch (type) {
    case CUDA_R_8I:
    case CUDA_R_8U:
    case CUDA_R_8F_E4M3:
    case CUDA_R_8F_E5M2:
    case CUDA_R_16F:
    case CUDA_R_16BF:
    case CUDA_R_32F:
    case CUDA_R_32I:
    case CUDA_R_64F:
      return true;
    default:
      return false;
  }
}

}  // namespace

size_t GemmExScaleBytes(cublasComputeType_t compute) {
  switch (compute) {
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_16F_PEDANTIC:
      return 2;
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC:
      return 8;
    default:
      return 4;  // float for the 32F types, int32 for 32I
  }
}

bool HostScaleIsZero(const void* p, size_t bytes) {
  if (p == nullptr || bytes == 0) return false;
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < bytes; ++i) {
    if (b[i] != 0) return false;
  }
  return true;
}

const char* GemmNotReplayable(const GemmCall& call, const GemmSettings& settings, bool beta_zero,
                              const std::vector<pooch::AccessRange>& ranges) {
  if (!settings.known) return "the handle's pointer, math or atomics mode could not be read";
  if (settings.pointer_mode != CUBLAS_POINTER_MODE_HOST) {
    return "device pointer mode: alpha and beta may have changed by the time of a replay";
  }
  if (settings.atomics != CUBLAS_ATOMICS_NOT_ALLOWED) {
    return "atomics allowed: the result may differ from run to run";
  }
  if (!IsReal(call.c_type)) return "complex C: its scalars are not copied";
  if (call.scale_bytes > 16 || call.alpha == nullptr) return "no alpha to copy";
  if (!beta_zero) return "beta is not zero: C is an input too, overwritten by the call";
  // A drop discards C's whole span; bytes between its columns (ldc > m) or its matrices (a batch
  // stride beyond one) are not the call's to rebuild.
  if ((call.n > 1 && call.ldc != call.m) ||
      (call.batch > 1 && call.stride_c != call.ldc * call.n)) {
    return "C has gaps the call does not write: a drop would lose them";
  }
  const auto c = reinterpret_cast<pooch::DeviceAddress>(call.C);
  int64_t c_bytes = 0;
  for (const pooch::AccessRange& a : ranges) {
    if (a.address == c && a.mode != pooch::AccessRange::Mode::kRead) c_bytes = a.bytes;
  }
  if (c == 0 || c_bytes <= 0) return "no output";
  for (const pooch::AccessRange& a : ranges) {
    if (a.mode == pooch::AccessRange::Mode::kRead && a.address < c + c_bytes &&
        c < a.address + a.bytes) {
      return "C overlaps an input: the call overwrote what it read";
    }
  }
  return nullptr;
}

}  // namespace pooch::interpose
