// Error handling for cnn_train: every CUDA, cuDNN and cuBLAS call goes through one of the
// macros below, so that a failure names the call and its error string and exits with the
// documented status. Exit codes are part of the command-line contract that the e2e tests and
// pooch's own tests rely on:
//   2  bad command-line arguments
//   3  out of device memory (names the allocation, see device_memory.h)
//   4  any other CUDA, cuDNN or cuBLAS error
#ifndef POOCH_SAMPLES_CNN_TRAIN_CHECKS_H_
#define POOCH_SAMPLES_CNN_TRAIN_CHECKS_H_

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

namespace cnn_train {

inline constexpr int kExitUsage = 2;
inline constexpr int kExitOutOfMemory = 3;
inline constexpr int kExitApiError = 4;

// Each prints "cnn_train: <function> failed: <error string>" and exits kExitApiError.
// `call` is the stringified call expression; only the function name before '(' is printed.
[[noreturn]] void FailCuda(const char* call, cudaError_t error);
[[noreturn]] void FailCudnn(const char* call, cudnnStatus_t status);
[[noreturn]] void FailCublas(const char* call, cublasStatus_t status);

// Prints "cnn_train: <message>" and exits with `code`.
[[noreturn]] void Fail(int code, const char* format, ...) __attribute__((format(printf, 2, 3)));

}  // namespace cnn_train

#define CUDA_CHECK(call)                              \
  do {                                                \
    const cudaError_t cnn_train_error_ = (call);      \
    if (cnn_train_error_ != cudaSuccess) {            \
      ::cnn_train::FailCuda(#call, cnn_train_error_); \
    }                                                 \
  } while (0)

#define CUDNN_CHECK(call)                               \
  do {                                                  \
    const cudnnStatus_t cnn_train_status_ = (call);     \
    if (cnn_train_status_ != CUDNN_STATUS_SUCCESS) {    \
      ::cnn_train::FailCudnn(#call, cnn_train_status_); \
    }                                                   \
  } while (0)

#define CUBLAS_CHECK(call)                               \
  do {                                                   \
    const cublasStatus_t cnn_train_status_ = (call);     \
    if (cnn_train_status_ != CUBLAS_STATUS_SUCCESS) {    \
      ::cnn_train::FailCublas(#call, cnn_train_status_); \
    }                                                    \
  } while (0)

#endif  // POOCH_SAMPLES_CNN_TRAIN_CHECKS_H_
