// The GEMM that cuBLAS's typed entry points (cublasGemmEx, cublasGemmStridedBatchedEx,
// cublasSgemmEx, the _64 forms) and cuBLASLt's cublasLtMatmul share: D = alpha * op(A) op(B) +
// beta * C over a strided batch, with fp32, tf32, fp16 and bf16 data. Linked into both
// libcublas.so.13 and libcublasLt.so.13 (a static library with hidden symbols).
//
// What it models (Note [Typed GEMM timing]): the device op's accesses (A and B read when alpha
// != 0 and k > 0, C read when beta != 0, D written, plus the caller's extras such as a bias or
// an epilogue's auxiliary matrix), its bytes (each matrix once at its element size) and its
// FLOPs, 2*m*n*k per batch, on the math units the types select (GemmRate). The math runs only for
// all-fp32 data (the existing fp32 kernel); other types need SIMGPU_COMPUTE=timing, and say so.
//
// Thread safety: stateless.
#ifndef POOCH_TESTS_SIMGPU_CUBLAS_GEMM_EX_H_
#define POOCH_TESTS_SIMGPU_CUBLAS_GEMM_EX_H_

#include <cublas_api.h>
#include <library_types.h>

#include <cstdint>
#include <vector>

#include "tests/simgpu/device/simgpu.h"

namespace simgpu::blas {

// The math units a GEMM runs on, which set its peak rate (Note [Typed GEMM timing]).
enum class Rate {
  kFp32,  // fp32 FMA units
  kTf32,  // tensor cores on fp32 data rounded to tf32
  kHalf,  // tensor cores on fp16 or bf16 data
};

// How many times the fp32 peak `rate` runs at on a GPU of compute capability `cc_major`.
double RateSpeedup(Rate rate, int cc_major, bool bf16);

// What a compute type (cublasComputeType_t) means here: the scalars' type, and whether it lets
// fp32 data run on tensor cores.
struct Compute {
  cudaDataType scalar = CUDA_R_32F;
  bool tf32 = false;       // fp32 data may be rounded to tf32
  bool half_math = false;  // fp32 data may be rounded to fp16/bf16
  bool pedantic = false;
};

// False for a compute type simgpu does not model (64F, 32I, the emulated forms). The legacy
// cudaDataType values (CUDA_R_32F, CUDA_R_16F) older callers pass mean 32F and 16F.
bool ComputeOf(int type, Compute* out);

// The math units of data of type `ab` under `compute`; `tf32_mode`: the handle's math mode
// allows TF32 tensor cores.
Rate RateOf(cudaDataType ab, const Compute& compute, bool tf32_mode);

// One operand as stored: column-major, rows x cols, leading dimension ld (elements), the
// distance between batch members (elements; 0 repeats the matrix).
struct Matrix {
  const void* ptr = nullptr;
  cudaDataType type = CUDA_R_32F;
  int64_t rows = 0, cols = 0, ld = 0, stride = 0;
};

// In math mode (fp32 data only): what follows the product, per element of D.
struct MathEpilogue {
  const float* bias = nullptr;  // one per row of D, added (broadcast over columns)
  bool relu = false;
};

struct GemmOp {
  const char* fn = nullptr;  // the API's name, for messages (a literal)
  void* stream = nullptr;
  bool ta = false, tb = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  Matrix a, b, c, d;  // c.ptr may equal d.ptr (in place, as cuBLAS's C)
  float alpha = 1, beta = 0;
  Rate rate = Rate::kFp32;
  std::vector<Access> extra;  // more device memory the op touches (bias, auxiliary output)
  double extra_bytes = 0;
  MathEpilogue epilogue;
  bool math_ok = true;               // false: the caller has parts the CPU math cannot honour
  const char* math_why = "this op";  // what math mode cannot do, when !math_ok
};

// Element size of a data type this GEMM accepts, or 0 for any other.
int ElementBytes(cudaDataType type);

// Bytes spanned by a batch of `batch` column-major matrices (0 when empty).
size_t SpanBytes(const Matrix& x, int64_t batch);

// A scalar (alpha or beta) of type `type` at host address p, as float; false for a type that is
// not fp32, fp16 or bf16 (the caller reports it).
bool ScalarToFloat(const void* p, cudaDataType type, float* out);

// Checks the shapes (INVALID_VALUE) and the type combination (NOT_SUPPORTED, one line), and
// that the op can run in the current mode: fp16/bf16 data (or !math_ok) in math mode is
// NOT_SUPPORTED with a line that says to use SIMGPU_COMPUTE=timing.
cublasStatus_t Check(const GemmOp& op);

// Check(), then issues the device op (nothing for an empty product).
cublasStatus_t Run(const GemmOp& op);

// "simgpu: <fn>: not supported: <why>" on stderr; returns CUBLAS_STATUS_NOT_SUPPORTED.
cublasStatus_t Unsupported(const char* fn, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));

cublasStatus_t StatusOf(Err e);

}  // namespace simgpu::blas

#endif  // POOCH_TESTS_SIMGPU_CUBLAS_GEMM_EX_H_
