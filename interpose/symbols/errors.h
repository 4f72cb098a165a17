// errors.h: the one place where pooch's errors become CUDA, cuDNN, cuBLAS and NCCL status codes.
//
//   return StatusTo<cudaError_t>(manager->Free(address));   // OK -> cudaSuccess
//   return NotInitialized<cublasStatus_t>();                  // a real function is missing
//
// absl::Status codes map as the residency manager documents them (core/residency/residency.h):
// ResourceExhausted is the API's out-of-memory code, InvalidArgument/NotFound its
// invalid-value code, anything else its generic internal error; but once the context has a
// sticky error, every failure is that error (Note [Sticky errors]).
//
// Note [Sticky errors]
// ~~~~~~~~~~~~~~~~~~~~
// After an illegal address, a failed launch and the like, the CUDA context
// is unusable and every later call returns the same error (the CUDA documentation of
// cudaErrorIllegalAddress and its kin). pooch serves many calls without touching the device (a
// small block, a cached chunk, a free) and fails others through its own device calls, which would
// read as a generic error; programs and frameworks branch on the sticky code, so pooch remembers
// the first sticky code it sees (NoteResult: from its own driver calls, the results of the
// program's calls it forwards, cudaGetLastError's answer) and answers with it from then on, as
// the real API would.
//
// Note [Last error]
// ~~~~~~~~~~~~~~~~~
// The runtime keeps each thread's last error for cudaGetLastError (which
// returns and clears it) and cudaPeekAtLastError (which only returns it), but it records only the
// errors of calls it sees. An error a runtime hook returns without calling the real function (an
// out-of-memory under the limit, a failed swap-in) goes through RecordRuntimeError: it becomes
// this thread's pooch error, and the runtime's own last error, which it supersedes, is taken
// (cleared). The hooks of cudaGetLastError and cudaPeekAtLastError answer with the runtime's
// error when it holds one (recorded after pooch's, so newer, or a sticky error that the runtime
// does not clear), else with pooch's; cudaGetLastError clears both.
//
// Thread safety: all functions may be called from any thread; the last error is per thread.
#ifndef POOCH_INTERPOSE_SYMBOLS_ERRORS_H_
#define POOCH_INTERPOSE_SYMBOLS_ERRORS_H_

#include <atomic>
#include <type_traits>

#include "absl/status/status.h"
#include "interpose/symbols/cuda_api.h"

namespace pooch::interpose {

// Note [Sticky errors]. The driver codes the CUDA documentation says leave the context unusable;
// the runtime's codes for them have the same numbers.
constexpr bool IsSticky(int code) {
  switch (code) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
      return true;
    default:
      return false;
  }
}
static_assert(static_cast<int>(cudaErrorIllegalAddress) == CUDA_ERROR_ILLEGAL_ADDRESS &&
              static_cast<int>(cudaErrorLaunchTimeout) == CUDA_ERROR_LAUNCH_TIMEOUT &&
              static_cast<int>(cudaErrorAssert) == CUDA_ERROR_ASSERT &&
              static_cast<int>(cudaErrorHardwareStackError) == CUDA_ERROR_HARDWARE_STACK_ERROR &&
              static_cast<int>(cudaErrorIllegalInstruction) == CUDA_ERROR_ILLEGAL_INSTRUCTION &&
              static_cast<int>(cudaErrorMisalignedAddress) == CUDA_ERROR_MISALIGNED_ADDRESS &&
              static_cast<int>(cudaErrorInvalidAddressSpace) == CUDA_ERROR_INVALID_ADDRESS_SPACE &&
              static_cast<int>(cudaErrorInvalidPc) == CUDA_ERROR_INVALID_PC &&
              static_cast<int>(cudaErrorLaunchFailure) == CUDA_ERROR_LAUNCH_FAILED);

// The first sticky code seen (a CUresult's number), 0 while there is none.
inline std::atomic<int> g_sticky{0};

// Remembers `code` if it is sticky (for a cudaError_t or CUresult; other APIs' codes say nothing
// about the context).
template <typename Code>
inline void NoteResult(Code code) {
  if constexpr (std::is_same_v<Code, cudaError_t> || std::is_same_v<Code, CUresult>) {
    if (IsSticky(static_cast<int>(code))) {
      int none = 0;
      g_sticky.compare_exchange_strong(none, static_cast<int>(code), std::memory_order_relaxed);
    }
  }
}

// The sticky error in the API of T; T{} (success) while the context has none.
template <typename T>
T StickyError();
template <>
inline cudaError_t StickyError<cudaError_t>() {
  return static_cast<cudaError_t>(g_sticky.load(std::memory_order_relaxed));
}
template <>
inline CUresult StickyError<CUresult>() {
  return static_cast<CUresult>(g_sticky.load(std::memory_order_relaxed));
}
template <>
inline cudnnStatus_t StickyError<cudnnStatus_t>() {
  return g_sticky.load(std::memory_order_relaxed) != 0 ? CUDNN_STATUS_EXECUTION_FAILED
                                                       : CUDNN_STATUS_SUCCESS;
}
template <>
inline cublasStatus_t StickyError<cublasStatus_t>() {
  return g_sticky.load(std::memory_order_relaxed) != 0 ? CUBLAS_STATUS_EXECUTION_FAILED
                                                       : CUBLAS_STATUS_SUCCESS;
}
// NCCL reports a failed CUDA call as ncclUnhandledCudaError.
template <>
inline ncclResult_t StickyError<ncclResult_t>() {
  return g_sticky.load(std::memory_order_relaxed) != 0 ? ncclUnhandledCudaError : ncclSuccess;
}

// Note [Last error]: makes `error` (not cudaSuccess) this thread's last runtime error.
void RecordRuntimeError(cudaError_t error);
// What cudaGetLastError (clearing) and cudaPeekAtLastError return under pooch.
cudaError_t TakeLastRuntimeError();
cudaError_t PeekLastRuntimeError();

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
// NCCL has no "not initialized" code; a library that cannot be found is a system error to it.
template <>
inline ncclResult_t NotInitialized<ncclResult_t>() {
  return ncclSystemError;
}
// The runtime's registration entry points (__cudaRegisterFatBinary: a null handle; the others
// return nothing).
template <>
inline void** NotInitialized<void**>() {
  return nullptr;
}
template <>
inline void NotInitialized<void>() {}

template <typename T>
T StatusTo(const absl::Status& status);

template <>
inline cudaError_t StatusTo<cudaError_t>(const absl::Status& status) {
  if (const cudaError_t sticky = StickyError<cudaError_t>();
      !status.ok() && sticky != cudaSuccess) {
    return sticky;
  }
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
  if (const CUresult sticky = StickyError<CUresult>(); !status.ok() && sticky != CUDA_SUCCESS) {
    return sticky;
  }
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
  if (const cudnnStatus_t sticky = StickyError<cudnnStatus_t>();
      !status.ok() && sticky != CUDNN_STATUS_SUCCESS) {
    return sticky;
  }
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
  if (const cublasStatus_t sticky = StickyError<cublasStatus_t>();
      !status.ok() && sticky != CUBLAS_STATUS_SUCCESS) {
    return sticky;
  }
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

// NCCL: memory that cannot be made resident is a failed CUDA call to it (as its own failed
// cudaMalloc is).
template <>
inline ncclResult_t StatusTo<ncclResult_t>(const absl::Status& status) {
  if (const ncclResult_t sticky = StickyError<ncclResult_t>();
      !status.ok() && sticky != ncclSuccess) {
    return sticky;
  }
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return ncclSuccess;
    case absl::StatusCode::kResourceExhausted:
      return ncclUnhandledCudaError;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
      return ncclInvalidArgument;
    default:
      return ncclInternalError;
  }
}

// A hook's own failure (not its real function's): `status` as the API's code, recorded as the
// thread's last runtime error for the runtime's API (Note [Last error]).
template <typename T>
T HookFailure(T code) {
  if constexpr (std::is_same_v<T, cudaError_t>) RecordRuntimeError(code);
  return code;
}
template <typename T>
T HookFailure(const absl::Status& status) {
  return HookFailure(StatusTo<T>(status));
}

// CUresult -> absl::Status for core's Device (cuda_device.cc): out of memory is
// ResourceExhausted, everything else Internal with the call's name. Notes a sticky code
// (Note [Sticky errors]).
absl::Status DriverStatus(CUresult result, const char* call);

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_SYMBOLS_ERRORS_H_
