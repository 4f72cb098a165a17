#include "layers/layer.h"

#include <cstdint>

#include "checks.h"

namespace cnn_train {

void* Workspace::Get(size_t bytes) {
  if (bytes == 0) return nullptr;
  if (bytes > bytes_) {
    memory_->Free(buffer_);
    buffer_ = nullptr;
    bytes_ = 0;
    buffer_ = memory_->Allocate(bytes, "convolution workspace");
    bytes_ = bytes;
  }
  return buffer_;
}

TensorDesc::TensorDesc(int n, int c, int h, int w) {
  CUDNN_CHECK(cudnnCreateTensorDescriptor(&desc_));
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(desc_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w));
}

TensorDesc::TensorDesc(int n, const Dims& slice, int64_t sample_stride) {
  CUDNN_CHECK(cudnnCreateTensorDescriptor(&desc_));
  if (sample_stride == slice.count()) {  // the whole tensor: the packed descriptor
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(desc_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, slice.c,
                                           slice.h, slice.w));
    return;
  }
  const int64_t plane = int64_t{slice.h} * slice.w;
  if (sample_stride > INT32_MAX) {
    Fail(kExitUsage, "a tensor is too large for a 32-bit cuDNN stride");
  }
  CUDNN_CHECK(cudnnSetTensor4dDescriptorEx(desc_, CUDNN_DATA_FLOAT, n, slice.c, slice.h, slice.w,
                                           static_cast<int>(sample_stride), static_cast<int>(plane),
                                           slice.w, 1));
}

TensorDesc::~TensorDesc() { cudnnDestroyTensorDescriptor(desc_); }

}  // namespace cnn_train
