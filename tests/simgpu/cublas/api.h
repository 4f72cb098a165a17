// simgpu libcublas.so.13: what the library's source files share. The handle struct the public
// header leaves opaque, the mapping of device errors to cublasStatus_t (one place), and Run(),
// which wraps a compute call into simgpu::Launch.
//
// Thread safety: a handle is plain data used by one thread at a time, as in cuBLAS.
#ifndef POOCH_TESTS_SIMGPU_CUBLAS_API_H_
#define POOCH_TESTS_SIMGPU_CUBLAS_API_H_

// Only the API is exported (default visibility here, -fvisibility=hidden elsewhere); the
// version script libcublas.map puts it under the node "libcublas.so.13" like the real library.
// cublas_v2.h maps the unsuffixed names (cublasSgemm) to the _v2 symbols by macro, which is
// what programs built against it reference; the unsuffixed symbols belong to the legacy
// cublas.h API, whose signatures differ, and are not provided.
#pragma GCC visibility push(default)
#include <cublas_v2.h>
#pragma GCC visibility pop

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>

#include "tests/simgpu/device/simgpu.h"

struct cublasContext {
  cudaStream_t stream = nullptr;
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
  cublasAtomicsMode_t atomics = CUBLAS_ATOMICS_NOT_ALLOWED;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

namespace simgpu::cublas {

// Prints one line "simgpu: <fn>: not supported: <why>" and returns CUBLAS_STATUS_NOT_SUPPORTED.
cublasStatus_t NotSupported(const char* fn, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));

cublasStatus_t FromErr(Err e);

// A strided vector of n floats: the lowest address it touches and the bytes it spans, and the
// pointer to its logical element 0 (BLAS: a negative increment starts at the far end).
struct Vec {
  const float* first;  // logical element 0
  const void* lowest;
  size_t bytes;
};
Vec VecOf(const float* p, int64_t n, int64_t inc);

// Bytes a column-major rows x cols matrix with leading dimension ld spans (0 if empty).
inline size_t MatBytes(int64_t rows, int64_t cols, int64_t ld) {
  return rows <= 0 || cols <= 0 ? 0 : static_cast<size_t>((cols - 1) * ld + rows) * 4;
}

// Launches one device op on the handle's stream; Accesses with null ptr or 0 bytes are dropped.
cublasStatus_t Run(cublasHandle_t handle, const char* op, std::initializer_list<Access> accesses,
                   double flops, double bytes, const std::function<void()>& body);

}  // namespace simgpu::cublas

#endif  // POOCH_TESTS_SIMGPU_CUBLAS_API_H_
