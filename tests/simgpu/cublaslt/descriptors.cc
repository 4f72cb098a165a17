// Matrix layouts, matmul descriptors and matmul preferences: create, init, destroy, and the
// attribute calls. Each lives inside its public opaque struct (api.h). An attribute is set or
// read only with a buffer of exactly its documented size (cublasLt.h), else INVALID_VALUE; a
// read with size 0 and `sizeWritten` reports the size, as cuBLASLt does.
#include <cstring>
#include <new>

#include "api.h"

namespace simgpu::cublaslt {

Layout* LayoutOf(cublasLtMatrixLayout_t p) {
  auto* l = reinterpret_cast<Layout*>(p);
  return l != nullptr && l->magic == kLayoutMagic ? l : nullptr;
}

MatmulDesc* DescOf(cublasLtMatmulDesc_t p) {
  auto* d = reinterpret_cast<MatmulDesc*>(p);
  return d != nullptr && d->magic == kDescMagic ? d : nullptr;
}

Preference* PrefOf(cublasLtMatmulPreference_t p) {
  auto* q = reinterpret_cast<Preference*>(p);
  return q != nullptr && q->magic == kPrefMagic ? q : nullptr;
}

cublasStatus_t SetField(void* field, size_t field_size, const void* buf, size_t size) {
  if (buf == nullptr || size != field_size) return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(field, buf, size);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t GetField(const void* field, size_t field_size, void* buf, size_t size,
                        size_t* written) {
  if (size == 0 && written != nullptr) {
    *written = field_size;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (buf == nullptr || size != field_size) return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(buf, field, size);
  if (written != nullptr) *written = field_size;
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace simgpu::cublaslt

namespace {

using simgpu::cublaslt::GetField;
using simgpu::cublaslt::Layout;
using simgpu::cublaslt::MatmulDesc;
using simgpu::cublaslt::Preference;
using simgpu::cublaslt::SetField;

// The field an attribute names, and its size; nullptr for an unknown attribute.
void* LayoutField(Layout& l, cublasLtMatrixLayoutAttribute_t attr, size_t* size) {
#define SIMGPU_FIELD(f) return *size = sizeof(l.f), static_cast<void*>(&l.f)
  switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_TYPE:
      SIMGPU_FIELD(type);
    case CUBLASLT_MATRIX_LAYOUT_ORDER:
      SIMGPU_FIELD(order);
    case CUBLASLT_MATRIX_LAYOUT_ROWS:
      SIMGPU_FIELD(rows);
    case CUBLASLT_MATRIX_LAYOUT_COLS:
      SIMGPU_FIELD(cols);
    case CUBLASLT_MATRIX_LAYOUT_LD:
      SIMGPU_FIELD(ld);
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
      SIMGPU_FIELD(batch_count);
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
      SIMGPU_FIELD(batch_stride);
    case CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET:
      SIMGPU_FIELD(plane_offset);
    case CUBLASLT_MATRIX_LAYOUT_BATCH_MODE:
      SIMGPU_FIELD(batch_mode);
  }
  return nullptr;
#undef SIMGPU_FIELD
}

void* DescField(MatmulDesc& d, cublasLtMatmulDescAttributes_t attr, size_t* size) {
#define SIMGPU_FIELD(f) return *size = sizeof(d.f), static_cast<void*>(&d.f)
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE:
      SIMGPU_FIELD(compute);
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE:
      SIMGPU_FIELD(scale);
    case CUBLASLT_MATMUL_DESC_POINTER_MODE:
      SIMGPU_FIELD(pointer_mode);
    case CUBLASLT_MATMUL_DESC_TRANSA:
      SIMGPU_FIELD(transa);
    case CUBLASLT_MATMUL_DESC_TRANSB:
      SIMGPU_FIELD(transb);
    case CUBLASLT_MATMUL_DESC_TRANSC:
      SIMGPU_FIELD(transc);
    case CUBLASLT_MATMUL_DESC_FILL_MODE:
      SIMGPU_FIELD(fill_mode);
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
      SIMGPU_FIELD(epilogue);
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
      SIMGPU_FIELD(bias);
    case CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE:
      SIMGPU_FIELD(bias_batch_stride);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER:
      SIMGPU_FIELD(aux);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD:
      SIMGPU_FIELD(aux_ld);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE:
      SIMGPU_FIELD(aux_batch_stride);
    case CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE:
      SIMGPU_FIELD(alpha_vector_batch_stride);
    case CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET:
      SIMGPU_FIELD(sm_count_target);
    case CUBLASLT_MATMUL_DESC_A_SCALE_POINTER:
      SIMGPU_FIELD(a_scale);
    case CUBLASLT_MATMUL_DESC_B_SCALE_POINTER:
      SIMGPU_FIELD(b_scale);
    case CUBLASLT_MATMUL_DESC_C_SCALE_POINTER:
      SIMGPU_FIELD(c_scale);
    case CUBLASLT_MATMUL_DESC_D_SCALE_POINTER:
      SIMGPU_FIELD(d_scale);
    case CUBLASLT_MATMUL_DESC_AMAX_D_POINTER:
      SIMGPU_FIELD(amax_d);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE:
      SIMGPU_FIELD(aux_type);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER:
      SIMGPU_FIELD(aux_scale);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER:
      SIMGPU_FIELD(aux_amax);
    case CUBLASLT_MATMUL_DESC_FAST_ACCUM:
      SIMGPU_FIELD(fast_accum);
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
      SIMGPU_FIELD(bias_type);
    case CUBLASLT_MATMUL_DESC_A_SCALE_MODE:
      SIMGPU_FIELD(scale_mode[0]);
    case CUBLASLT_MATMUL_DESC_B_SCALE_MODE:
      SIMGPU_FIELD(scale_mode[1]);
    case CUBLASLT_MATMUL_DESC_C_SCALE_MODE:
      SIMGPU_FIELD(scale_mode[2]);
    case CUBLASLT_MATMUL_DESC_D_SCALE_MODE:
      SIMGPU_FIELD(scale_mode[3]);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_MODE:
      SIMGPU_FIELD(scale_mode[4]);
    case CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER:
      SIMGPU_FIELD(d_out_scale);
    case CUBLASLT_MATMUL_DESC_D_OUT_SCALE_MODE:
      SIMGPU_FIELD(scale_mode[5]);
    case CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR:
      SIMGPU_FIELD(emulation);
  }
  return nullptr;
#undef SIMGPU_FIELD
}

void* PrefField(Preference& p, cublasLtMatmulPreferenceAttributes_t attr, size_t* size) {
#define SIMGPU_FIELD(f) return *size = sizeof(p.f), static_cast<void*>(&p.f)
  switch (attr) {
    case CUBLASLT_MATMUL_PREF_SEARCH_MODE:
      SIMGPU_FIELD(search_mode);
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
      SIMGPU_FIELD(max_workspace);
    case CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK:
      SIMGPU_FIELD(reduction_mask);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
      SIMGPU_FIELD(min_alignment[0]);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
      SIMGPU_FIELD(min_alignment[1]);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
      SIMGPU_FIELD(min_alignment[2]);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
      SIMGPU_FIELD(min_alignment[3]);
    case CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT:
      SIMGPU_FIELD(max_waves);
    case CUBLASLT_MATMUL_PREF_IMPL_MASK:
      SIMGPU_FIELD(impl_mask);
  }
  return nullptr;
#undef SIMGPU_FIELD
}

void InitLayout(void* at, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld) {
  Layout l{};
  l.magic = simgpu::cublaslt::kLayoutMagic;
  l.type = type;
  l.order = CUBLASLT_ORDER_COL;
  l.rows = rows;
  l.cols = cols;
  l.ld = ld;
  l.batch_count = 1;
  l.batch_mode = CUBLASLT_BATCH_MODE_STRIDED;
  std::memcpy(at, &l, sizeof l);
}

void InitDesc(void* at, cublasComputeType_t compute, cudaDataType_t scale) {
  MatmulDesc d{};
  d.magic = simgpu::cublaslt::kDescMagic;
  d.compute = compute;
  d.scale = scale;
  d.pointer_mode = CUBLASLT_POINTER_MODE_HOST;
  d.transa = d.transb = d.transc = CUBLAS_OP_N;
  d.fill_mode = CUBLAS_FILL_MODE_FULL;
  d.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  d.bias_type = d.aux_type = -1;
  std::memcpy(at, &d, sizeof d);
}

void InitPref(void* at) {
  Preference p{};
  p.magic = simgpu::cublaslt::kPrefMagic;
  p.search_mode = CUBLASLT_SEARCH_BEST_FIT;
  p.reduction_mask = CUBLASLT_REDUCTION_SCHEME_MASK;
  p.min_alignment[0] = p.min_alignment[1] = p.min_alignment[2] = p.min_alignment[3] = 256;
  p.impl_mask = ~uint64_t{0};
  std::memcpy(at, &p, sizeof p);
}

// The opaque struct is zeroed on destroy, so a stale handle fails the magic check.
template <typename Opaque>
cublasStatus_t Destroy(Opaque* p) {
  if (p == nullptr) return CUBLAS_STATUS_SUCCESS;  // as cuBLASLt: destroying nothing is fine
  std::memset(p, 0, sizeof *p);
  delete p;
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

// --- Matrix layouts. ---

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
  if (layout == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *layout = new (std::nothrow) cublasLtMatrixLayoutOpaque_t;
  if (*layout == nullptr) return CUBLAS_STATUS_ALLOC_FAILED;
  InitLayout(*layout, type, rows, cols, ld);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutInit_internal(cublasLtMatrixLayout_t layout, size_t size,
                                                 cudaDataType type, uint64_t rows, uint64_t cols,
                                                 int64_t ld) {
  if (layout == nullptr || size < sizeof(Layout)) return CUBLAS_STATUS_INVALID_VALUE;
  InitLayout(layout, type, rows, cols, ld);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  return Destroy(layout);
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, size_t size) {
  Layout* l = simgpu::cublaslt::LayoutOf(layout);
  size_t field_size = 0;
  void* field = l != nullptr ? LayoutField(*l, attr, &field_size) : nullptr;
  if (field == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  return SetField(field, field_size, buf, size);
}

cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t layout,
                                                cublasLtMatrixLayoutAttribute_t attr, void* buf,
                                                size_t size, size_t* written) {
  Layout* l = simgpu::cublaslt::LayoutOf(layout);
  size_t field_size = 0;
  void* field = l != nullptr ? LayoutField(*l, attr, &field_size) : nullptr;
  if (field == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  return GetField(field, field_size, buf, size, written);
}

// --- Matmul descriptors. ---

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute,
                                        cudaDataType_t scale) {
  if (desc == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *desc = new (std::nothrow) cublasLtMatmulDescOpaque_t;
  if (*desc == nullptr) return CUBLAS_STATUS_ALLOC_FAILED;
  InitDesc(*desc, compute, scale);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescInit_internal(cublasLtMatmulDesc_t desc, size_t size,
                                               cublasComputeType_t compute, cudaDataType_t scale) {
  if (desc == nullptr || size < sizeof(MatmulDesc)) return CUBLAS_STATUS_INVALID_VALUE;
  InitDesc(desc, compute, scale);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) { return Destroy(desc); }

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attr, const void* buf,
                                              size_t size) {
  MatmulDesc* d = simgpu::cublaslt::DescOf(desc);
  size_t field_size = 0;
  void* field = d != nullptr ? DescField(*d, attr, &field_size) : nullptr;
  if (field == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  return SetField(field, field_size, buf, size);
}

cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attr, void* buf,
                                              size_t size, size_t* written) {
  MatmulDesc* d = simgpu::cublaslt::DescOf(desc);
  size_t field_size = 0;
  void* field = d != nullptr ? DescField(*d, attr, &field_size) : nullptr;
  if (field == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  return GetField(field, field_size, buf, size, written);
}

// --- Matmul preferences. ---

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  if (pref == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *pref = new (std::nothrow) cublasLtMatmulPreferenceOpaque_t;
  if (*pref == nullptr) return CUBLAS_STATUS_ALLOC_FAILED;
  InitPref(*pref);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceInit_internal(cublasLtMatmulPreference_t pref, size_t size) {
  if (pref == nullptr || size < sizeof(Preference)) return CUBLAS_STATUS_INVALID_VALUE;
  InitPref(pref);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  return Destroy(pref);
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void* buf, size_t size) {
  Preference* p = simgpu::cublaslt::PrefOf(pref);
  size_t field_size = 0;
  void* field = p != nullptr ? PrefField(*p, attr, &field_size) : nullptr;
  if (field == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  return SetField(field, field_size, buf, size);
}

cublasStatus_t cublasLtMatmulPreferenceGetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    void* buf, size_t size, size_t* written) {
  Preference* p = simgpu::cublaslt::PrefOf(pref);
  size_t field_size = 0;
  void* field = p != nullptr ? PrefField(*p, attr, &field_size) : nullptr;
  if (field == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  return GetField(field, field_size, buf, size, written);
}

}  // extern "C"
