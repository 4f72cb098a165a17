// cublaslt_model.cc: the bookkeeping of Note [Lt matmuls].
#include "interpose/hooks/cublas/cublaslt_model.h"

#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "interpose/hooks/cublas/blas_extent.h"

namespace pooch::interpose {
namespace {

using Mode = pooch::AccessRange::Mode;

constexpr auto TypeBytes = CudaTypeBytes;

// The last value set for `attr`, read as T; `fallback` when never set or of another size.
template <typename T>
T AttrOr(const LtDescriptor& d, int attr, T fallback) {
  for (auto it = d.attrs.rbegin(); it != d.attrs.rend(); ++it) {
    if (it->first != attr) continue;
    if (it->second.size() != sizeof(T)) return fallback;
    T v;
    std::memcpy(&v, it->second.data(), sizeof v);
    return v;
  }
  return fallback;
}

// A layout's extent in bytes, from its first element to one past its last.
absl::StatusOr<int64_t> LayoutBytes(const LtDescriptor& l) {
  const int64_t element = TypeBytes(l.type);
  if (element == 0) return absl::UnavailableError("a matrix has a data type pooch does not size");
  const auto order = AttrOr<int32_t>(l, CUBLASLT_MATRIX_LAYOUT_ORDER, CUBLASLT_ORDER_COL);
  if (AttrOr<int64_t>(l, CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET, 0) != 0) {
    return absl::UnavailableError("a matrix is planar complex");
  }
  if (l.rows == 0 || l.cols == 0) return 0;
  const auto rows = static_cast<int64_t>(l.rows);
  const auto cols = static_cast<int64_t>(l.cols);
  int64_t one = 0;
  if (order == CUBLASLT_ORDER_COL) {
    one = (cols - 1) * l.ld + rows;
  } else if (order == CUBLASLT_ORDER_ROW) {
    one = (rows - 1) * l.ld + cols;
  } else {
    return absl::UnavailableError(absl::StrCat("a matrix has order ", order));
  }
  const auto batch = AttrOr<int32_t>(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, 1);
  const auto stride = AttrOr<int64_t>(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, 0);
  if (batch < 1 || stride < 0) return absl::UnavailableError("a matrix has a bad batch");
  return ((batch - 1) * stride + one) * element;
}

// *beta in the scale type on the host: true when known to be zero.
bool HostZero(cudaDataType_t scale, const void* beta) {
  if (beta == nullptr) return false;
  switch (scale) {
    case CUDA_R_32F: {
      float f;
      std::memcpy(&f, beta, sizeof f);
      return f == 0;
    }
    case CUDA_R_64F: {
      double d;
      std::memcpy(&d, beta, sizeof d);
      return d == 0;
    }
    case CUDA_R_32I: {
      int32_t i;
      std::memcpy(&i, beta, sizeof i);
      return i == 0;
    }
    default:
      return false;  // not read: C counts as read
  }
}

bool Overlaps(const pooch::AccessRange& a, uintptr_t address, int64_t bytes) {
  return a.address < address + static_cast<uintptr_t>(bytes) &&
         address < a.address + static_cast<uintptr_t>(a.bytes);
}

// Opaque: fp8's scale and amax pointers, whose extents pooch does not model.
absl::Status NoScalePointers(const LtDescriptor& op) {
  for (int pointer :
       {CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
        CUBLASLT_MATMUL_DESC_C_SCALE_POINTER, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER,
        CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER,
        CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER, CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER}) {
    if (AttrOr<const void*>(op, pointer, nullptr) != nullptr) {
      return absl::UnavailableError("it has scale or amax pointers");
    }
  }
  return absl::OkStatus();
}

// True for host pointer mode, false for device; an error for the vector modes.
absl::StatusOr<bool> HostPointerMode(const LtDescriptor& op) {
  const auto pointer_mode =
      AttrOr<int32_t>(op, CUBLASLT_MATMUL_DESC_POINTER_MODE, CUBLASLT_POINTER_MODE_HOST);
  if (pointer_mode != CUBLASLT_POINTER_MODE_HOST && pointer_mode != CUBLASLT_POINTER_MODE_DEVICE) {
    return absl::UnavailableError(absl::StrCat("it has pointer mode ", pointer_mode));
  }
  return pointer_mode == CUBLASLT_POINTER_MODE_HOST;
}

// Whether the epilogue reads a bias; an error for the epilogues pooch does not model.
absl::StatusOr<bool> EpilogueReadsBias(const LtDescriptor& op) {
  const auto epilogue =
      AttrOr<uint32_t>(op, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_DEFAULT);
  switch (epilogue) {
    case CUBLASLT_EPILOGUE_DEFAULT:
    case CUBLASLT_EPILOGUE_RELU:
    case CUBLASLT_EPILOGUE_GELU:
      return false;
    case CUBLASLT_EPILOGUE_BIAS:
    case CUBLASLT_EPILOGUE_RELU_BIAS:
    case CUBLASLT_EPILOGUE_GELU_BIAS:
      return true;
    default:
      return absl::UnavailableError(absl::StrCat("it has epilogue ", epilogue));
  }
}

// The bias's extent: D's rows, of BIAS_DATA_TYPE or D's type, per batch BIAS_BATCH_STRIDE apart.
absl::StatusOr<int64_t> BiasBytes(const LtDescriptor& op, const LtDescriptor& d) {
  auto bias_type = AttrOr<int32_t>(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, -1);
  const int64_t element =
      TypeBytes(bias_type == -1 ? d.type : static_cast<cudaDataType_t>(bias_type));
  if (element == 0) return absl::UnavailableError("its bias type is not sized");
  int64_t elements = static_cast<int64_t>(d.rows);
  const auto batch = AttrOr<int32_t>(d, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, 1);
  const auto stride = AttrOr<int64_t>(op, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, 0);
  if (batch > 1 && stride > 0) elements += (batch - 1) * stride;
  return elements * element;
}

}  // namespace

LtModel& LtModel::Get() {
  static LtModel* const model = new LtModel;  // never destroyed: hooks run at exit
  return *model;
}

void LtModel::CreatedDesc(const void* desc, cublasComputeType_t compute, cudaDataType_t scale) {
  LtDescriptor d;
  d.compute = compute;
  d.type = scale;
  MutexLock lock(&mu_);
  descs_[reinterpret_cast<uintptr_t>(desc)] = std::move(d);
}

void LtModel::CreatedLayout(const void* layout, cudaDataType_t type, uint64_t rows, uint64_t cols,
                            int64_t ld) {
  LtDescriptor d;
  d.layout = true;
  d.type = type;
  d.rows = rows;
  d.cols = cols;
  d.ld = ld;
  MutexLock lock(&mu_);
  descs_[reinterpret_cast<uintptr_t>(layout)] = std::move(d);
}

void LtModel::Set(const void* desc, int attr, const void* buf, size_t bytes) {
  if (buf == nullptr && bytes > 0) return;
  const auto* p = static_cast<const unsigned char*>(buf);
  MutexLock lock(&mu_);
  auto it = descs_.find(reinterpret_cast<uintptr_t>(desc));
  if (it == descs_.end()) return;
  LtDescriptor& d = it->second;
  // The creation arguments a layout attribute overrides.
  if (d.layout && bytes == sizeof(uint64_t)) {
    uint64_t v;
    std::memcpy(&v, p, sizeof v);
    if (attr == CUBLASLT_MATRIX_LAYOUT_ROWS) d.rows = v;
    if (attr == CUBLASLT_MATRIX_LAYOUT_COLS) d.cols = v;
    if (attr == CUBLASLT_MATRIX_LAYOUT_LD) d.ld = static_cast<int64_t>(v);
  }
  if (d.layout && attr == CUBLASLT_MATRIX_LAYOUT_TYPE && bytes == sizeof(uint32_t)) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    d.type = static_cast<cudaDataType_t>(v);
  }
  if (!d.layout && attr == CUBLASLT_MATMUL_DESC_SCALE_TYPE && bytes == sizeof(int32_t)) {
    int32_t v;
    std::memcpy(&v, p, sizeof v);
    d.type = static_cast<cudaDataType_t>(v);
  }
  d.attrs.emplace_back(attr, std::vector<unsigned char>(p, p + bytes));
}

void LtModel::Destroyed(const void* desc) {
  MutexLock lock(&mu_);
  descs_.erase(reinterpret_cast<uintptr_t>(desc));
}

absl::Status LtModel::CopyDescriptors(const void* desc, const void* Adesc, const void* Bdesc,
                                      const void* Cdesc, const void* Ddesc,
                                      LtMatmulModel* m) const {
  MutexLock lock(&mu_);
  auto find = [&](const void* h, bool layout, LtDescriptor* out) {
    auto it = descs_.find(reinterpret_cast<uintptr_t>(h));
    if (it == descs_.end() || it->second.layout != layout) return false;
    *out = it->second;
    return true;
  };
  if (!find(desc, false, &m->desc)) {
    return absl::UnavailableError("its matmul descriptor was not seen created");
  }
  if (!find(Adesc, true, &m->a) || !find(Bdesc, true, &m->b) || !find(Cdesc, true, &m->c) ||
      !find(Ddesc, true, &m->d)) {
    return absl::UnavailableError("a matrix layout was not seen created");
  }
  return absl::OkStatus();
}

absl::StatusOr<LtMatmulModel> LtModel::Matmul(const void* desc, const void* alpha, const void* A,
                                              const void* Adesc, const void* B, const void* Bdesc,
                                              const void* beta, const void* C, const void* Cdesc,
                                              const void* D, const void* Ddesc, bool algo_given,
                                              const void* workspace, size_t workspace_bytes) const {
  LtMatmulModel m;
  if (absl::Status s = CopyDescriptors(desc, Adesc, Bdesc, Cdesc, Ddesc, &m); !s.ok()) return s;
  const LtDescriptor& op = m.desc;
  if (absl::Status s = NoScalePointers(op); !s.ok()) return s;
  const absl::StatusOr<bool> host = HostPointerMode(op);
  if (!host.ok()) return host.status();
  const absl::StatusOr<bool> bias = EpilogueReadsBias(op);
  if (!bias.ok()) return bias.status();
  absl::StatusOr<int64_t> a_bytes = LayoutBytes(m.a);
  absl::StatusOr<int64_t> b_bytes = LayoutBytes(m.b);
  absl::StatusOr<int64_t> c_bytes = LayoutBytes(m.c);
  absl::StatusOr<int64_t> d_bytes = LayoutBytes(m.d);
  for (const absl::StatusOr<int64_t>* s : {&a_bytes, &b_bytes, &c_bytes, &d_bytes}) {
    if (!s->ok()) return s->status();
  }
  m.scale_bytes = TypeBytes(m.desc.type);
  if (m.scale_bytes == 0) return absl::UnavailableError("its scale type is not sized");
  absl::StatusOr<int64_t> bias_bytes = *bias ? BiasBytes(op, m.d) : absl::StatusOr<int64_t>(0);
  if (!bias_bytes.ok()) return bias_bytes.status();

  auto add = [&](const void* p, int64_t bytes, Mode mode) {
    if (p == nullptr || bytes <= 0) return;
    m.ranges.push_back({reinterpret_cast<uintptr_t>(p), bytes, mode});
  };
  const bool c_read = !(*host && HostZero(m.desc.type, beta));
  add(A, *a_bytes, Mode::kRead);
  add(B, *b_bytes, Mode::kRead);
  if (*bias) {
    add(AttrOr<const void*>(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, nullptr), *bias_bytes,
        Mode::kRead);
  }
  if (!*host) {
    add(alpha, m.scale_bytes, Mode::kRead);
    add(beta, m.scale_bytes, Mode::kRead);
  }
  const bool d_is_c = C == D;
  if (c_read && !d_is_c) add(C, *c_bytes, Mode::kRead);
  add(D, *d_bytes, d_is_c && c_read ? Mode::kReadWrite : Mode::kWrite);
  // Note [Scratch workspaces] in cublas_hooks.cc: written, never read as an input.
  add(workspace, static_cast<int64_t>(workspace_bytes), Mode::kWrite);

  m.replayable = *host && !c_read && algo_given && D != nullptr;
  for (const pooch::AccessRange& r : m.ranges) {
    if (r.mode == Mode::kRead && Overlaps(r, reinterpret_cast<uintptr_t>(D), *d_bytes)) {
      m.replayable = false;
    }
  }
  return m;
}

}  // namespace pooch::interpose
