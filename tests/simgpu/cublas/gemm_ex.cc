// Note [Typed GEMM timing]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// A GEMM takes 2*m*n*k*batch FLOPs. The device model (device.h) has one compute peak, the
// preset's fp32 TFLOP/s, and times an op at max(flops / (peak * efficiency), bytes / memory
// bandwidth). A GEMM on tensor cores runs at a multiple of that peak, so the op is issued with
// its FLOPs divided by the multiple of the GPU the preset models (by compute capability), from
// NVIDIA's dense peak figures:
//   Volta (7.x; V100 15.7 fp32, 125 fp16 tensor):   fp16 8x; no tf32 or bf16 tensor cores, so
//                                                  tf32 and bf16 run at the fp32 rate;
//   Ampere (8.x; A100 19.5 fp32, 156 tf32, 312 fp16/bf16): tf32 8x, fp16/bf16 16x;
//   Hopper and later (9.x+; H100 SXM 67 fp32, 495 tf32, 989 fp16/bf16): tf32 7.4x, 14.8x.
// The same efficiency factor is applied to every rate (an assumption: cuBLAS reaches a similar
// fraction of the tensor-core peak on large GEMMs as of the fp32 peak). Bytes count each matrix
// once at its element size (C twice when it is read), which sets the time of skinny GEMMs.
#include "gemm_ex.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "gemm.h"
#include "tests/simgpu/device/device.h"

namespace simgpu::blas {

double RateSpeedup(Rate rate, int cc_major, bool bf16) {
  if (rate == Rate::kFp32 || cc_major < 7) return 1.0;
  if (cc_major == 7) return rate == Rate::kHalf && !bf16 ? 8.0 : 1.0;
  if (cc_major == 8) return rate == Rate::kTf32 ? 8.0 : 16.0;
  return rate == Rate::kTf32 ? 7.4 : 14.8;
}

bool ComputeOf(int type, Compute* out) {
  switch (type) {
    case CUBLAS_COMPUTE_16F:
    case CUDA_R_16F:
      return *out = {CUDA_R_16F, false, false, false}, true;
    case CUBLAS_COMPUTE_16F_PEDANTIC:
      return *out = {CUDA_R_16F, false, false, true}, true;
    case CUBLAS_COMPUTE_32F:
    case CUDA_R_32F:
      return *out = {CUDA_R_32F, false, false, false}, true;
    case CUBLAS_COMPUTE_32F_PEDANTIC:
      return *out = {CUDA_R_32F, false, false, true}, true;
    case CUBLAS_COMPUTE_32F_FAST_TF32:
      return *out = {CUDA_R_32F, true, false, false}, true;
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF:
      return *out = {CUDA_R_32F, false, true, false}, true;
    default:
      return false;
  }
}

Rate RateOf(cudaDataType ab, const Compute& compute, bool tf32_mode) {
  if (ab == CUDA_R_16F || ab == CUDA_R_16BF || compute.half_math) return Rate::kHalf;
  if (compute.tf32 || (tf32_mode && !compute.pedantic)) return Rate::kTf32;
  return Rate::kFp32;
}

int ElementBytes(cudaDataType type) {
  switch (type) {
    case CUDA_R_32F:
      return 4;
    case CUDA_R_16F:
    case CUDA_R_16BF:
      return 2;
    default:
      return 0;
  }
}

size_t SpanBytes(const Matrix& x, int64_t batch) {
  if (x.rows <= 0 || x.cols <= 0 || batch <= 0) return 0;
  const int64_t one = (x.cols - 1) * x.ld + x.rows;
  return static_cast<size_t>((batch - 1) * x.stride + one) * ElementBytes(x.type);
}

bool ScalarToFloat(const void* p, cudaDataType type, float* out) {
  if (type == CUDA_R_32F) {
    std::memcpy(out, p, 4);
    return true;
  }
  uint16_t h;
  if (type == CUDA_R_16BF) {
    std::memcpy(&h, p, 2);
    const uint32_t bits = uint32_t{h} << 16;
    std::memcpy(out, &bits, 4);
    return true;
  }
  if (type != CUDA_R_16F) return false;
  std::memcpy(&h, p, 2);
  // IEEE binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);  // inf, nan
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);  // normal: rebias 15 -> 127
  } else {
    const float sub = static_cast<float>(man) * (1.0f / 16777216.0f);  // man * 2^-24
    std::memcpy(&bits, &sub, 4);
    bits |= sign;
  }
  std::memcpy(out, &bits, 4);
  return true;
}

cublasStatus_t Unsupported(const char* fn, const char* fmt, ...) {
  char why[256];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(why, sizeof why, fmt, args);
  va_end(args);
  std::fprintf(stderr, "simgpu: %s: not supported: %s\n", fn, why);
  return CUBLAS_STATUS_NOT_SUPPORTED;
}

cublasStatus_t StatusOf(Err e) {
  switch (e) {
    case Err::kOk:
      return CUBLAS_STATUS_SUCCESS;
    case Err::kInvalidValue:
    case Err::kInvalidHandle:
      return CUBLAS_STATUS_INVALID_VALUE;
    case Err::kNotSupported:
      return CUBLAS_STATUS_NOT_SUPPORTED;
    case Err::kOutOfMemory:
      return CUBLAS_STATUS_ALLOC_FAILED;
    case Err::kNotInitialized:
    case Err::kConfig:
      return CUBLAS_STATUS_NOT_INITIALIZED;
    case Err::kIllegalAddress:
    case Err::kHazard:
    case Err::kNotReady:
      break;
  }
  return CUBLAS_STATUS_EXECUTION_FAILED;
}

namespace {

// op(X) (rows x cols) of batch member i of a column-major fp32 matrix.
kernels::MatView View(const Matrix& x, bool t, int64_t i) {
  const float* p = static_cast<const float*>(x.ptr) + i * x.stride;
  return t ? kernels::MatView{p, x.ld, 1} : kernels::MatView{p, 1, x.ld};
}

// The CPU math of an all-fp32 op: D = alpha * op(A) op(B) + beta * C, then the epilogue.
void ComputeOnCpu(const GemmOp& op) {
  for (int64_t i = 0; i < op.batch; ++i) {
    float* d = static_cast<float*>(const_cast<void*>(op.d.ptr)) + i * op.d.stride;
    const float* c = static_cast<const float*>(op.c.ptr) + i * op.c.stride;
    if (op.beta != 0.0f && c != d) {  // D starts as C, then the GEMM accumulates into it
      for (int64_t j = 0; j < op.n; ++j) std::memmove(d + j * op.d.ld, c + j * op.c.ld, op.m * 4);
    }
    kernels::Gemm(op.m, op.n, op.k, op.alpha, View(op.a, op.ta, i), View(op.b, op.tb, i), op.beta,
                  {d, 1, op.d.ld}, Threads());
    if (op.epilogue.bias == nullptr && !op.epilogue.relu) continue;
    for (int64_t j = 0; j < op.n; ++j) {
      for (int64_t r = 0; r < op.m; ++r) {
        float& v = d[j * op.d.ld + r];
        if (op.epilogue.bias != nullptr) v += op.epilogue.bias[r];
        if (op.epilogue.relu && v < 0.0f) v = 0.0f;
      }
    }
  }
}

bool LdOk(const Matrix& x) { return x.ld >= (x.rows > 1 ? x.rows : 1); }

}  // namespace

cublasStatus_t Check(const GemmOp& op) {
  CheckConfigOrExit();
  if (op.m < 0 || op.n < 0 || op.k < 0 || op.batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
  // Stored shapes must be those of op(A) (m x k), op(B) (k x n), C and D (m x n).
  const bool shapes = op.a.rows == (op.ta ? op.k : op.m) && op.a.cols == (op.ta ? op.m : op.k) &&
                      op.b.rows == (op.tb ? op.n : op.k) && op.b.cols == (op.tb ? op.k : op.n) &&
                      op.c.rows == op.m && op.c.cols == op.n && op.d.rows == op.m &&
                      op.d.cols == op.n;
  if (!shapes || !LdOk(op.a) || !LdOk(op.b) || !LdOk(op.c) || !LdOk(op.d)) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  for (const Matrix* x : {&op.a, &op.b, &op.c, &op.d}) {
    if (ElementBytes(x->type) == 0) {
      return Unsupported(op.fn, "data type %d (fp32, fp16 and bf16 only)", x->type);
    }
    if (x->stride < 0) return Unsupported(op.fn, "negative batch strides");
  }
  // cuBLAS's combinations: A and B of one type; C and D of one type, that type or fp32.
  if (op.a.type != op.b.type || op.c.type != op.d.type ||
      (op.c.type != op.a.type && op.c.type != CUDA_R_32F)) {
    return Unsupported(op.fn, "A/B/C/D types %d/%d/%d/%d", op.a.type, op.b.type, op.c.type,
                       op.d.type);
  }
  const bool all_fp32 = op.a.type == CUDA_R_32F && op.c.type == CUDA_R_32F;
  if (ComputeEnabled() && (!all_fp32 || !op.math_ok)) {
    return Unsupported(op.fn, "%s in math mode (run with SIMGPU_COMPUTE=timing)",
                       all_fp32 ? op.math_why : "fp16/bf16 data");
  }
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t Run(const GemmOp& op) {
  if (cublasStatus_t st = Check(op); st != CUBLAS_STATUS_SUCCESS) return st;
  if (op.m == 0 || op.n == 0 || op.batch == 0) return CUBLAS_STATUS_SUCCESS;
  const bool reads_ab = op.alpha != 0.0f && op.k > 0;
  if ((reads_ab && (op.a.ptr == nullptr || op.b.ptr == nullptr)) || op.d.ptr == nullptr ||
      (op.beta != 0.0f && op.c.ptr == nullptr)) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }

  std::vector<Access> accesses = {
      {reads_ab ? op.a.ptr : nullptr, SpanBytes(op.a, op.batch), false},
      {reads_ab ? op.b.ptr : nullptr, SpanBytes(op.b, op.batch), false},
      {op.beta != 0.0f ? op.c.ptr : nullptr, SpanBytes(op.c, op.batch), false},
      {op.d.ptr, SpanBytes(op.d, op.batch), true}};
  accesses.insert(accesses.end(), op.extra.begin(), op.extra.end());
  std::vector<Access> live;
  for (const Access& a : accesses) {
    if (a.ptr != nullptr && a.bytes > 0) live.push_back(a);
  }
  const double mn = double(op.m) * op.n, batch = double(op.batch);
  const double ab = ElementBytes(op.a.type), cd = ElementBytes(op.d.type);
  const double bytes =
      batch * ((reads_ab ? (double(op.m) * op.k + double(op.k) * op.n) * ab : 0.0) +
               mn * cd * (op.beta != 0.0f ? 2 : 1)) +
      op.extra_bytes;
  const Preset& gpu = Device::Get().config().machine;
  const double speedup = RateSpeedup(op.rate, gpu.cc_major, op.a.type == CUDA_R_16BF);
  const double flops = 2.0 * mn * op.k * batch / speedup;
  return StatusOf(
      Launch(op.fn, op.stream, live.data(), live.size(), flops, bytes, [&] { ComputeOnCpu(op); }));
}

}  // namespace simgpu::blas
