// Tensor, filter, activation, pooling and op-tensor descriptors: plain data, no device work.
// Setters accept every value cuDNN accepts (a half tensor can be described); the compute calls
// reject what simgpu cannot compute, with NOT_SUPPORTED and one stderr line.
#include <algorithm>
#include <new>

#include "api.h"

namespace {

using simgpu::cudnn::NotSupported;

// Bytes per element; 0 for an unknown type.
size_t ElementBytes(cudnnDataType_t t) {
  switch (t) {
    case CUDNN_DATA_DOUBLE:
    case CUDNN_DATA_INT64:
      return 8;
    case CUDNN_DATA_FLOAT:
    case CUDNN_DATA_INT32:
    case CUDNN_DATA_INT8x4:
    case CUDNN_DATA_UINT8x4:
      return 4;
    case CUDNN_DATA_HALF:
    case CUDNN_DATA_BFLOAT16:
      return 2;
    case CUDNN_DATA_INT8:
    case CUDNN_DATA_UINT8:
    case CUDNN_DATA_BOOLEAN:
    case CUDNN_DATA_FP8_E4M3:
    case CUDNN_DATA_FP8_E5M2:
      return 1;
    case CUDNN_DATA_INT8x32:
      return 32;
    default:
      return 0;
  }
}

template <typename T>
cudnnStatus_t Create(T** out) {
  if (out == nullptr) return CUDNN_STATUS_BAD_PARAM;
  *out = new (std::nothrow) T;
  return *out != nullptr ? CUDNN_STATUS_SUCCESS
                         : CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
}

template <typename T>
cudnnStatus_t Destroy(T* d) {
  delete d;  // cuDNN accepts a null descriptor here
  return CUDNN_STATUS_SUCCESS;
}

// Packed strides for dims in NCHW order; channels-last (NHWC-like) if `channels_last`.
void PackedStrides(int rank, const int* dim, bool channels_last, int* stride) {
  if (!channels_last || rank < 3) {
    int s = 1;
    for (int i = rank - 1; i >= 0; --i) {
      stride[i] = s;
      s *= dim[i];
    }
    return;
  }
  // Order of increasing stride: c, then spatial innermost-first, then n.
  int s = 1;
  stride[1] = s;
  s *= dim[1];
  for (int i = rank - 1; i >= 2; --i) {
    stride[i] = s;
    s *= dim[i];
  }
  stride[0] = s;
}

cudnnStatus_t SetTensor(cudnnTensorDescriptor_t d, cudnnDataType_t type, int rank, const int* dim,
                        const int* stride) {
  if (d == nullptr || dim == nullptr || stride == nullptr) return CUDNN_STATUS_BAD_PARAM;
  if (rank < 1 || rank > CUDNN_DIM_MAX || ElementBytes(type) == 0) return CUDNN_STATUS_BAD_PARAM;
  for (int i = 0; i < rank; ++i) {
    if (dim[i] <= 0 || stride[i] <= 0) return CUDNN_STATUS_BAD_PARAM;
  }
  d->set = true;
  d->type = type;
  d->rank = rank;
  std::copy(dim, dim + rank, d->dim);
  std::copy(stride, stride + rank, d->stride);
  return CUDNN_STATUS_SUCCESS;
}

bool ValidNan(cudnnNanPropagation_t n) {
  return n == CUDNN_NOT_PROPAGATE_NAN || n == CUDNN_PROPAGATE_NAN;
}

}  // namespace

extern "C" {

// ---- Tensors ----

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* d) { return Create(d); }
cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t d) { return Destroy(d); }

cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t d, cudnnTensorFormat_t format,
                                         cudnnDataType_t type, int n, int c, int h, int w) {
  if (format == CUDNN_TENSOR_NCHW_VECT_C) {
    return NotSupported("cudnnSetTensor4dDescriptor", "CUDNN_TENSOR_NCHW_VECT_C");
  }
  if (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC) return CUDNN_STATUS_BAD_PARAM;
  const int dim[4] = {n, c, h, w};
  int stride[4] = {1, 1, 1, 1};
  if (n > 0 && c > 0 && h > 0 && w > 0) PackedStrides(4, dim, format == CUDNN_TENSOR_NHWC, stride);
  return SetTensor(d, type, 4, dim, stride);
}

cudnnStatus_t cudnnSetTensor4dDescriptorEx(cudnnTensorDescriptor_t d, cudnnDataType_t type, int n,
                                           int c, int h, int w, int ns, int cs, int hs, int ws) {
  const int dim[4] = {n, c, h, w}, stride[4] = {ns, cs, hs, ws};
  return SetTensor(d, type, 4, dim, stride);
}

cudnnStatus_t cudnnGetTensor4dDescriptor(const cudnnTensorDescriptor_t d, cudnnDataType_t* type,
                                         int* n, int* c, int* h, int* w, int* ns, int* cs, int* hs,
                                         int* ws) {
  if (d == nullptr || !d->set || d->rank != 4) return CUDNN_STATUS_BAD_PARAM;
  if (!type || !n || !c || !h || !w || !ns || !cs || !hs || !ws) return CUDNN_STATUS_BAD_PARAM;
  *type = d->type;
  *n = d->dim[0], *c = d->dim[1], *h = d->dim[2], *w = d->dim[3];
  *ns = d->stride[0], *cs = d->stride[1], *hs = d->stride[2], *ws = d->stride[3];
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t d, cudnnDataType_t type, int rank,
                                         const int dim[], const int stride[]) {
  return SetTensor(d, type, rank, dim, stride);
}

cudnnStatus_t cudnnSetTensorNdDescriptorEx(cudnnTensorDescriptor_t d, cudnnTensorFormat_t format,
                                           cudnnDataType_t type, int rank, const int dim[]) {
  if (format == CUDNN_TENSOR_NCHW_VECT_C) {
    return NotSupported("cudnnSetTensorNdDescriptorEx", "CUDNN_TENSOR_NCHW_VECT_C");
  }
  if (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC) return CUDNN_STATUS_BAD_PARAM;
  if (dim == nullptr || rank < 1 || rank > CUDNN_DIM_MAX) return CUDNN_STATUS_BAD_PARAM;
  for (int i = 0; i < rank; ++i) {
    if (dim[i] <= 0) return CUDNN_STATUS_BAD_PARAM;
  }
  int stride[CUDNN_DIM_MAX];
  PackedStrides(rank, dim, format == CUDNN_TENSOR_NHWC, stride);
  return SetTensor(d, type, rank, dim, stride);
}

cudnnStatus_t cudnnGetTensorNdDescriptor(const cudnnTensorDescriptor_t d, int requested,
                                         cudnnDataType_t* type, int* rank, int dim[],
                                         int stride[]) {
  if (d == nullptr || !d->set || type == nullptr || rank == nullptr || requested < 0) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  *type = d->type;
  *rank = d->rank;
  for (int i = 0; i < std::min(requested, d->rank); ++i) {
    if (dim != nullptr) dim[i] = d->dim[i];
    if (stride != nullptr) stride[i] = d->stride[i];
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetTensorSizeInBytes(const cudnnTensorDescriptor_t d, size_t* size) {
  if (d == nullptr || !d->set || size == nullptr) return CUDNN_STATUS_BAD_PARAM;
  size_t span = 1;
  for (int i = 0; i < d->rank; ++i) span += static_cast<size_t>(d->dim[i] - 1) * d->stride[i];
  *size = span * ElementBytes(d->type);
  return CUDNN_STATUS_SUCCESS;
}

// ---- Filters ----

cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* d) { return Create(d); }
cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t d) { return Destroy(d); }

cudnnStatus_t cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t type,
                                         cudnnTensorFormat_t format, int rank, const int dim[]) {
  if (d == nullptr || dim == nullptr || rank < 3 || rank > CUDNN_DIM_MAX) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  if (ElementBytes(type) == 0) return CUDNN_STATUS_BAD_PARAM;
  if (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC &&
      format != CUDNN_TENSOR_NCHW_VECT_C) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  for (int i = 0; i < rank; ++i) {
    if (dim[i] <= 0) return CUDNN_STATUS_BAD_PARAM;
  }
  d->set = true;
  d->type = type;
  d->format = format;
  d->rank = rank;
  std::copy(dim, dim + rank, d->dim);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t type,
                                         cudnnTensorFormat_t format, int k, int c, int h, int w) {
  const int dim[4] = {k, c, h, w};
  return cudnnSetFilterNdDescriptor(d, type, format, 4, dim);
}

cudnnStatus_t cudnnGetFilter4dDescriptor(const cudnnFilterDescriptor_t d, cudnnDataType_t* type,
                                         cudnnTensorFormat_t* format, int* k, int* c, int* h,
                                         int* w) {
  if (d == nullptr || !d->set || d->rank != 4) return CUDNN_STATUS_BAD_PARAM;
  if (!type || !format || !k || !c || !h || !w) return CUDNN_STATUS_BAD_PARAM;
  *type = d->type;
  *format = d->format;
  *k = d->dim[0], *c = d->dim[1], *h = d->dim[2], *w = d->dim[3];
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetFilterNdDescriptor(const cudnnFilterDescriptor_t d, int requested,
                                         cudnnDataType_t* type, cudnnTensorFormat_t* format,
                                         int* rank, int dim[]) {
  if (d == nullptr || !d->set || !type || !format || !rank || requested < 0) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  *type = d->type;
  *format = d->format;
  *rank = d->rank;
  for (int i = 0; i < std::min(requested, d->rank) && dim != nullptr; ++i) dim[i] = d->dim[i];
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetFilterSizeInBytes(const cudnnFilterDescriptor_t d, size_t* size) {
  if (d == nullptr || !d->set || size == nullptr) return CUDNN_STATUS_BAD_PARAM;
  size_t n = 1;
  for (int i = 0; i < d->rank; ++i) n *= static_cast<size_t>(d->dim[i]);
  *size = n * ElementBytes(d->type);
  return CUDNN_STATUS_SUCCESS;
}

// ---- Activations ----

cudnnStatus_t cudnnCreateActivationDescriptor(cudnnActivationDescriptor_t* d) { return Create(d); }
cudnnStatus_t cudnnDestroyActivationDescriptor(cudnnActivationDescriptor_t d) { return Destroy(d); }

cudnnStatus_t cudnnSetActivationDescriptor(cudnnActivationDescriptor_t d,
                                           cudnnActivationMode_t mode, cudnnNanPropagation_t nan,
                                           double coef) {
  if (d == nullptr || !ValidNan(nan)) return CUDNN_STATUS_BAD_PARAM;
  if (mode < CUDNN_ACTIVATION_SIGMOID || mode > CUDNN_ACTIVATION_SWISH) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  d->set = true;
  d->mode = mode;
  d->nan = nan;
  d->coef = coef;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetActivationDescriptor(const cudnnActivationDescriptor_t d,
                                           cudnnActivationMode_t* mode, cudnnNanPropagation_t* nan,
                                           double* coef) {
  if (d == nullptr || !mode || !nan || !coef) return CUDNN_STATUS_BAD_PARAM;
  *mode = d->mode;
  *nan = d->nan;
  *coef = d->coef;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetActivationDescriptorSwishBeta(cudnnActivationDescriptor_t d, double beta) {
  if (d == nullptr) return CUDNN_STATUS_BAD_PARAM;
  d->swish_beta = beta;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetActivationDescriptorSwishBeta(cudnnActivationDescriptor_t d, double* beta) {
  if (d == nullptr || beta == nullptr) return CUDNN_STATUS_BAD_PARAM;
  *beta = d->swish_beta;
  return CUDNN_STATUS_SUCCESS;
}

// ---- Pooling ----

cudnnStatus_t cudnnCreatePoolingDescriptor(cudnnPoolingDescriptor_t* d) { return Create(d); }
cudnnStatus_t cudnnDestroyPoolingDescriptor(cudnnPoolingDescriptor_t d) { return Destroy(d); }

cudnnStatus_t cudnnSetPoolingNdDescriptor(cudnnPoolingDescriptor_t d, const cudnnPoolingMode_t mode,
                                          const cudnnNanPropagation_t nan, int spatial,
                                          const int window[], const int pad[], const int stride[]) {
  if (d == nullptr || !window || !pad || !stride || !ValidNan(nan)) return CUDNN_STATUS_BAD_PARAM;
  if (spatial < 1 || spatial > CUDNN_DIM_MAX - 2) return CUDNN_STATUS_BAD_PARAM;
  if (mode < CUDNN_POOLING_MAX || mode > CUDNN_POOLING_MAX_DETERMINISTIC) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  for (int i = 0; i < spatial; ++i) {
    if (window[i] <= 0 || pad[i] < 0 || stride[i] <= 0) return CUDNN_STATUS_BAD_PARAM;
  }
  d->set = true;
  d->mode = mode;
  d->nan = nan;
  d->spatial = spatial;
  std::copy(window, window + spatial, d->window);
  std::copy(pad, pad + spatial, d->pad);
  std::copy(stride, stride + spatial, d->stride);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetPooling2dDescriptor(cudnnPoolingDescriptor_t d, cudnnPoolingMode_t mode,
                                          cudnnNanPropagation_t nan, int wh, int ww, int ph, int pw,
                                          int sh, int sw) {
  const int window[2] = {wh, ww}, pad[2] = {ph, pw}, stride[2] = {sh, sw};
  return cudnnSetPoolingNdDescriptor(d, mode, nan, 2, window, pad, stride);
}

cudnnStatus_t cudnnGetPooling2dDescriptor(const cudnnPoolingDescriptor_t d,
                                          cudnnPoolingMode_t* mode, cudnnNanPropagation_t* nan,
                                          int* wh, int* ww, int* ph, int* pw, int* sh, int* sw) {
  if (d == nullptr || !d->set || d->spatial != 2) return CUDNN_STATUS_BAD_PARAM;
  if (!mode || !nan || !wh || !ww || !ph || !pw || !sh || !sw) return CUDNN_STATUS_BAD_PARAM;
  *mode = d->mode;
  *nan = d->nan;
  *wh = d->window[0], *ww = d->window[1];
  *ph = d->pad[0], *pw = d->pad[1];
  *sh = d->stride[0], *sw = d->stride[1];
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetPoolingNdDescriptor(const cudnnPoolingDescriptor_t d, int requested,
                                          cudnnPoolingMode_t* mode, cudnnNanPropagation_t* nan,
                                          int* spatial, int window[], int pad[], int stride[]) {
  if (d == nullptr || !d->set || !mode || !nan || !spatial || requested < 0) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  *mode = d->mode;
  *nan = d->nan;
  *spatial = d->spatial;
  for (int i = 0; i < std::min(requested, d->spatial); ++i) {
    if (window) window[i] = d->window[i];
    if (pad) pad[i] = d->pad[i];
    if (stride) stride[i] = d->stride[i];
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetPoolingNdForwardOutputDim(const cudnnPoolingDescriptor_t d,
                                                const cudnnTensorDescriptor_t x, int rank,
                                                int out[]) {
  if (d == nullptr || !d->set || x == nullptr || !x->set || out == nullptr) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  if (rank != x->rank || rank != d->spatial + 2) return CUDNN_STATUS_BAD_PARAM;
  out[0] = x->dim[0];
  out[1] = x->dim[1];
  for (int i = 0; i < d->spatial; ++i) {
    const int room = x->dim[i + 2] + 2 * d->pad[i] - d->window[i];
    if (room < 0) return CUDNN_STATUS_BAD_PARAM;
    out[i + 2] = 1 + room / d->stride[i];
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetPooling2dForwardOutputDim(const cudnnPoolingDescriptor_t d,
                                                const cudnnTensorDescriptor_t x, int* n, int* c,
                                                int* h, int* w) {
  if (!n || !c || !h || !w) return CUDNN_STATUS_BAD_PARAM;
  int out[4];
  if (cudnnStatus_t st = cudnnGetPoolingNdForwardOutputDim(d, x, 4, out);
      st != CUDNN_STATUS_SUCCESS) {
    return st;
  }
  *n = out[0], *c = out[1], *h = out[2], *w = out[3];
  return CUDNN_STATUS_SUCCESS;
}

// ---- Op tensor ----

cudnnStatus_t cudnnCreateOpTensorDescriptor(cudnnOpTensorDescriptor_t* d) { return Create(d); }
cudnnStatus_t cudnnDestroyOpTensorDescriptor(cudnnOpTensorDescriptor_t d) { return Destroy(d); }

cudnnStatus_t cudnnSetOpTensorDescriptor(cudnnOpTensorDescriptor_t d, cudnnOpTensorOp_t op,
                                         cudnnDataType_t compute, cudnnNanPropagation_t nan) {
  if (d == nullptr || !ValidNan(nan) || ElementBytes(compute) == 0) return CUDNN_STATUS_BAD_PARAM;
  if (op < CUDNN_OP_TENSOR_ADD || op > CUDNN_OP_TENSOR_NOT) return CUDNN_STATUS_BAD_PARAM;
  d->set = true;
  d->op = op;
  d->compute = compute;
  d->nan = nan;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetOpTensorDescriptor(const cudnnOpTensorDescriptor_t d, cudnnOpTensorOp_t* op,
                                         cudnnDataType_t* compute, cudnnNanPropagation_t* nan) {
  if (d == nullptr || !op || !compute || !nan) return CUDNN_STATUS_BAD_PARAM;
  *op = d->op;
  *compute = d->compute;
  *nan = d->nan;
  return CUDNN_STATUS_SUCCESS;
}

}  // extern "C"
