#include <cstdarg>
#include <cstdio>
#include <vector>

#include "api.h"

namespace simgpu::cudnn {

cudnnStatus_t NotSupported(const char* fn, const char* fmt, ...) {
  char why[256];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(why, sizeof why, fmt, args);
  va_end(args);
  std::fprintf(stderr, "simgpu: %s: not supported: %s\n", fn, why);
  return CUDNN_STATUS_NOT_SUPPORTED;
}

cudnnStatus_t FromErr(Err e) {
  switch (e) {
    case Err::kOk:
      return CUDNN_STATUS_SUCCESS;
    case Err::kInvalidValue:
    case Err::kInvalidHandle:
      return CUDNN_STATUS_BAD_PARAM;
    case Err::kNotSupported:
      return CUDNN_STATUS_NOT_SUPPORTED;
    case Err::kOutOfMemory:
      return CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED;
    case Err::kNotInitialized:
    case Err::kConfig:
      return CUDNN_STATUS_NOT_INITIALIZED;
    case Err::kIllegalAddress:
    case Err::kHazard:
    case Err::kNotReady:
      break;
  }
  return CUDNN_STATUS_EXECUTION_FAILED;
}

cudnnStatus_t AsTensorNd(const char* fn, const cudnnTensorStruct* d, kernels::TensorNd* out) {
  if (d == nullptr || !d->set) return CUDNN_STATUS_BAD_PARAM;
  if (d->type != CUDNN_DATA_FLOAT) {
    return NotSupported(fn, "data type %d (only CUDNN_DATA_FLOAT)", static_cast<int>(d->type));
  }
  out->rank = d->rank;
  for (int i = 0; i < d->rank; ++i) {
    out->dim[i] = d->dim[i];
    out->stride[i] = d->stride[i];
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t AsTensor4(const char* fn, const cudnnTensorStruct* d, kernels::Tensor4* out) {
  kernels::TensorNd nd;
  if (cudnnStatus_t st = AsTensorNd(fn, d, &nd); st != CUDNN_STATUS_SUCCESS) return st;
  if (nd.rank != 4) return NotSupported(fn, "%d-d tensor (only 4-d NCHW)", nd.rank);
  *out = {nd.dim[0],    nd.dim[1],    nd.dim[2],    nd.dim[3],
          nd.stride[0], nd.stride[1], nd.stride[2], nd.stride[3]};
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t Run(cudnnHandle_t handle, const char* op, std::initializer_list<Access> accesses,
                  double flops, double bytes, const std::function<void()>& body) {
  CheckConfigOrExit();
  // Ranges of zero bytes (empty tensors, absent optional buffers) are not touches.
  std::vector<Access> list;
  list.reserve(accesses.size());
  for (const Access& a : accesses) {
    if (a.ptr != nullptr && a.bytes > 0) list.push_back(a);
  }
  return FromErr(Launch(op, handle->stream, list.data(), list.size(), flops, bytes, body));
}

}  // namespace simgpu::cudnn
