#include "layers/layer.h"

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

TensorDesc::~TensorDesc() { cudnnDestroyTensorDescriptor(desc_); }

}  // namespace cnn_train
