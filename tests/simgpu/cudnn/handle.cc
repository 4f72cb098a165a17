// Handles, versions and error strings.
#include <cstring>
#include <new>

#include "api.h"

namespace {

// Note [Reported cuDNN version]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// simgpu reports the cuDNN the pinned PyTorch wheel (2.15.0, cu130) was built against, 9.26.0:
// PyTorch refuses a runtime whose minor version is older than its build's. The API simgpu
// implements is that of the 9.19 headers it compiles against (backend attributes newer than
// those get BAD_PARAM, as an unknown attribute does).
constexpr int kMajor = 9, kMinor = 26, kPatch = 0;
static_assert(kMajor == CUDNN_MAJOR && kMinor >= CUDNN_MINOR,
              "report at least the headers' version");

}  // namespace

extern "C" {

size_t cudnnGetVersion(void) { return kMajor * 10000 + kMinor * 100 + kPatch; }
size_t cudnnGetMaxDeviceVersion(void) { return 900; }  // compute capability 9.0, as for Hopper
size_t cudnnGetCudartVersion(void) { return CUDART_VERSION; }

cudnnStatus_t cudnnGetProperty(libraryPropertyType type, int* value) {
  if (value == nullptr) return CUDNN_STATUS_BAD_PARAM;
  switch (type) {
    case MAJOR_VERSION:
      *value = kMajor;
      return CUDNN_STATUS_SUCCESS;
    case MINOR_VERSION:
      *value = kMinor;
      return CUDNN_STATUS_SUCCESS;
    case PATCH_LEVEL:
      *value = kPatch;
      return CUDNN_STATUS_SUCCESS;
  }
  return CUDNN_STATUS_BAD_PARAM;
}

// The sub-library checks of cuDNN 9: everything lives in this one library.
cudnnStatus_t cudnnGraphVersionCheck(void) { return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnOpsVersionCheck(void) { return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnCnnVersionCheck(void) { return CUDNN_STATUS_SUCCESS; }

const char* cudnnGetErrorString(cudnnStatus_t status) {
  switch (status) {
#define SIMGPU_CASE(s) \
  case s:              \
    return #s;
    SIMGPU_CASE(CUDNN_STATUS_SUCCESS)
    SIMGPU_CASE(CUDNN_STATUS_NOT_INITIALIZED)
    SIMGPU_CASE(CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH)
    SIMGPU_CASE(CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH)
    SIMGPU_CASE(CUDNN_STATUS_DEPRECATED)
    SIMGPU_CASE(CUDNN_STATUS_LICENSE_ERROR)
    SIMGPU_CASE(CUDNN_STATUS_RUNTIME_IN_PROGRESS)
    SIMGPU_CASE(CUDNN_STATUS_RUNTIME_FP_OVERFLOW)
    SIMGPU_CASE(CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED)
    SIMGPU_CASE(CUDNN_STATUS_BAD_PARAM)
    SIMGPU_CASE(CUDNN_STATUS_BAD_PARAM_NULL_POINTER)
    SIMGPU_CASE(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER)
    SIMGPU_CASE(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED)
    SIMGPU_CASE(CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND)
    SIMGPU_CASE(CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT)
    SIMGPU_CASE(CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH)
    SIMGPU_CASE(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH)
    SIMGPU_CASE(CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES)
    SIMGPU_CASE(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE)
    SIMGPU_CASE(CUDNN_STATUS_BAD_PARAM_CUDA_GRAPH_MISMATCH)
    SIMGPU_CASE(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE)
    SIMGPU_CASE(CUDNN_STATUS_NOT_SUPPORTED)
    SIMGPU_CASE(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN)
    SIMGPU_CASE(CUDNN_STATUS_NOT_SUPPORTED_SHAPE)
    SIMGPU_CASE(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE)
    SIMGPU_CASE(CUDNN_STATUS_NOT_SUPPORTED_LAYOUT)
    SIMGPU_CASE(CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER)
    SIMGPU_CASE(CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART)
    SIMGPU_CASE(CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH)
    SIMGPU_CASE(CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING)
    SIMGPU_CASE(CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE)
    SIMGPU_CASE(CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT)
    SIMGPU_CASE(CUDNN_STATUS_NOT_SUPPORTED_PADDING)
    SIMGPU_CASE(CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM)
    SIMGPU_CASE(CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API)
    SIMGPU_CASE(CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE)
    SIMGPU_CASE(CUDNN_STATUS_INTERNAL_ERROR)
    SIMGPU_CASE(CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED)
    SIMGPU_CASE(CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE)
    SIMGPU_CASE(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED)
    SIMGPU_CASE(CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
    SIMGPU_CASE(CUDNN_STATUS_INTERNAL_ERROR_BAD_LAUNCH_PARAM)
    SIMGPU_CASE(CUDNN_STATUS_INTERNAL_ERROR_TEXTURE_CREATION_FAILED)
    SIMGPU_CASE(CUDNN_STATUS_EXECUTION_FAILED)
    SIMGPU_CASE(CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER)
    SIMGPU_CASE(CUDNN_STATUS_EXECUTION_FAILED_CUBLAS)
    SIMGPU_CASE(CUDNN_STATUS_EXECUTION_FAILED_CUDART)
    SIMGPU_CASE(CUDNN_STATUS_EXECUTION_FAILED_CURAND)
    SIMGPU_CASE(2001)  // CUDNN_STATUS_INVALID_VALUE, deprecated
#undef SIMGPU_CASE
  }
  return "CUDNN_STATUS_UNKNOWN";
}

void cudnnGetLastErrorString(char* message, size_t max_size) {
  if (message != nullptr && max_size > 0) message[0] = '\0';
}

cudnnStatus_t cudnnCreate(cudnnHandle_t* handle) {
  if (handle == nullptr) return CUDNN_STATUS_BAD_PARAM;
  simgpu::CheckConfigOrExit();
  *handle = new (std::nothrow) cudnnContext;
  return *handle != nullptr ? CUDNN_STATUS_SUCCESS
                            : CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  if (handle == nullptr) return CUDNN_STATUS_BAD_PARAM;
  delete handle;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  if (handle == nullptr) return CUDNN_STATUS_BAD_PARAM;
  handle->stream = stream;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t* stream) {
  if (handle == nullptr || stream == nullptr) return CUDNN_STATUS_BAD_PARAM;
  *stream = handle->stream;
  return CUDNN_STATUS_SUCCESS;
}

}  // extern "C"
