// errors.h: the one place where pooch's errors become CUDA, cuDNN and cuBLAS status codes.
//
//   return StatusTo<cudaError_t>(manager->Free(address));   // OK -> cudaSuccess
//   return NotInitialized<cublasStatus_t>();                  // a real function is missing
//
// absl::Status codes map as the residency manager documents them (core/residency/residency.h):
// ResourceExhausted is the API's out-of-memory code, InvalidArgument/NotFound its
// invalid-value code, anything else its generic internal error.
//
// Thread safety: pure functions.
#ifndef POOCH_INTERPOSE_SYMBOLS_ERRORS_H_
#define POOCH_INTERPOSE_SYMBOLS_ERRORS_H_

#include "absl/status/status.h"
#include "interpose/symbols/cuda_api.h"

namespace pooch::interpose {

// What a hook returns when its real function cannot be found.
template <typename T>
T NotInitialized();
template <>
inline cudaError_t NotInitialized<cudaError_t>() {
  return cudaErrorInitializationError;
}
template <>
inline CUresult NotInitialized<CUresult>() {
  return CUDA_ERROR_NOT_INITIALIZED;
}
template <>
inline cudnnStatus_t NotInitialized<cudnnStatus_t>() {
  return CUDNN_STATUS_NOT_INITIALIZED;
}
template <>
inline cublasStatus_t NotInitialized<cublasStatus_t>() {
  return CUBLAS_STATUS_NOT_INITIALIZED;
}

template <typename T>
T StatusTo(const absl::Status& status);

template <>
inline cudaError_t StatusTo<cudaError_t>(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return cudaSuccess;
    case absl::StatusCode::kResourceExhausted:
      return cudaErrorMemoryAllocation;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
      return cudaErrorInvalidValue;
    default:
      return cudaErrorUnknown;
  }
}

template <>
inline CUresult StatusTo<CUresult>(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return CUDA_SUCCESS;
    case absl::StatusCode::kResourceExhausted:
      return CUDA_ERROR_OUT_OF_MEMORY;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
      return CUDA_ERROR_INVALID_VALUE;
    default:
      return CUDA_ERROR_UNKNOWN;
  }
}

template <>
inline cudnnStatus_t StatusTo<cudnnStatus_t>(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return CUDNN_STATUS_SUCCESS;
    case absl::StatusCode::kResourceExhausted:
      return CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
      return CUDNN_STATUS_BAD_PARAM;
    default:
      return CUDNN_STATUS_INTERNAL_ERROR;
  }
}

template <>
inline cublasStatus_t StatusTo<cublasStatus_t>(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return CUBLAS_STATUS_SUCCESS;
    case absl::StatusCode::kResourceExhausted:
      return CUBLAS_STATUS_ALLOC_FAILED;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
      return CUBLAS_STATUS_INVALID_VALUE;
    default:
      return CUBLAS_STATUS_INTERNAL_ERROR;
  }
}

// CUresult -> absl::Status for core's Device (cuda_device.cc): out of memory is
// ResourceExhausted, everything else Internal with the call's name.
absl::Status DriverStatus(CUresult result, const char* call);

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_SYMBOLS_ERRORS_H_
