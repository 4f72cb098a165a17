// cublasLtMatmul and its heuristic, over the shared GEMM of ../cublas/gemm_ex.h.
//
// D = epilogue(alpha * op(A) op(B) + beta * C), with the shapes, types, batch counts and strides
// of the four layouts and the descriptor's compute type, scale type, transposes and epilogue.
// Epilogues are modelled for their memory: a bias vector is read (BIAS variants) or written
// (BGRAD variants), an auxiliary matrix written (*_AUX) or read (DRELU, DGELU), each checked for
// mapping and hazards like A..D. The CPU math (fp32 data, math mode) does DEFAULT, BIAS, RELU
// and RELU_BIAS; the others need SIMGPU_COMPUTE=timing and say so. fp8 scaling, device pointer
// modes, row-major or tiled orders and pointer-array batches are not supported (one line).
//
// The heuristic returns one algorithm that needs no workspace, so it fits every preference's
// workspace limit; the matmul accepts that algorithm or none.
#include <algorithm>
#include <iterator>
#include <tuple>

#include "api.h"
#include "gemm_ex.h"

namespace {

using simgpu::blas::GemmOp;
using simgpu::blas::Matrix;
using simgpu::blas::Unsupported;
using simgpu::cublaslt::Layout;
using simgpu::cublaslt::MatmulDesc;

bool Transposed(int32_t op, bool* t) {
  if (op == CUBLAS_OP_N) return *t = false, true;
  if (op == CUBLAS_OP_T || op == CUBLAS_OP_C) return *t = true, true;  // real data: C == T
  return false;
}

cublasStatus_t MatrixOf(const char* fn, const Layout* l, const void* ptr, Matrix* out) {
  if (l == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (l->order != CUBLASLT_ORDER_COL) return Unsupported(fn, "matrix order %d", l->order);
  if (l->batch_mode != CUBLASLT_BATCH_MODE_STRIDED) {
    return Unsupported(fn, "pointer-array batches");
  }
  if (l->plane_offset != 0) return Unsupported(fn, "planar complex layouts");
  if (l->batch_count < 1) return CUBLAS_STATUS_INVALID_VALUE;
  *out = {ptr,
          static_cast<cudaDataType>(l->type),
          static_cast<int64_t>(l->rows),
          static_cast<int64_t>(l->cols),
          l->ld,
          l->batch_stride};
  return CUBLAS_STATUS_SUCCESS;
}

bool Has(uint32_t epilogue, uint32_t part) { return (epilogue & part) == part; }

// Bytes of `count` batch members of `n` elements (or bits) each `stride` apart.
size_t Span(int64_t one, int64_t stride, int64_t count) {
  return one <= 0 ? 0 : static_cast<size_t>((count - 1) * stride + one);
}

// The epilogue's extra accesses and what the CPU math can do with it.
cublasStatus_t AddEpilogue(const MatmulDesc& d, GemmOp* op) {
  const uint32_t e = d.epilogue;
  const uint32_t known[] = {
      CUBLASLT_EPILOGUE_DEFAULT,  CUBLASLT_EPILOGUE_RELU,        CUBLASLT_EPILOGUE_RELU_AUX,
      CUBLASLT_EPILOGUE_BIAS,     CUBLASLT_EPILOGUE_RELU_BIAS,   CUBLASLT_EPILOGUE_RELU_AUX_BIAS,
      CUBLASLT_EPILOGUE_DRELU,    CUBLASLT_EPILOGUE_DRELU_BGRAD, CUBLASLT_EPILOGUE_GELU,
      CUBLASLT_EPILOGUE_GELU_AUX, CUBLASLT_EPILOGUE_GELU_BIAS,   CUBLASLT_EPILOGUE_GELU_AUX_BIAS,
      CUBLASLT_EPILOGUE_DGELU,    CUBLASLT_EPILOGUE_DGELU_BGRAD, CUBLASLT_EPILOGUE_BGRADA,
      CUBLASLT_EPILOGUE_BGRADB};
  if (std::find(std::begin(known), std::end(known), e) == std::end(known)) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  const bool bias_in = Has(e, CUBLASLT_EPILOGUE_BIAS);
  const bool bias_out =
      Has(e, 16) || e == CUBLASLT_EPILOGUE_BGRADA || e == CUBLASLT_EPILOGUE_BGRADB;
  const bool backward = e == CUBLASLT_EPILOGUE_DRELU || e == CUBLASLT_EPILOGUE_DRELU_BGRAD ||
                        e == CUBLASLT_EPILOGUE_DGELU || e == CUBLASLT_EPILOGUE_DGELU_BGRAD;
  const bool aux = Has(e, 128);  // written forward, read by the backward forms
  const bool relu_bits = Has(e, CUBLASLT_EPILOGUE_RELU) || e == CUBLASLT_EPILOGUE_DRELU ||
                         e == CUBLASLT_EPILOGUE_DRELU_BGRAD;
  if (bias_in || bias_out) {
    if (d.bias == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    const cudaDataType type = d.bias_type < 0 ? op->d.type : static_cast<cudaDataType>(d.bias_type);
    const int size = simgpu::blas::ElementBytes(type);
    if (size == 0) return Unsupported(op->fn, "bias data type %d", type);
    // A bias has one element per row of D; BGRADB's gradient one per column.
    const int64_t len = e == CUBLASLT_EPILOGUE_BGRADB ? op->n : op->m;
    const size_t bytes = Span(len, d.bias_batch_stride, op->batch) * size;
    op->extra.push_back({d.bias, bytes, bias_out});
    op->extra_bytes += double(len) * size * op->batch;
    if (bias_in && type == CUDA_R_32F) op->epilogue.bias = static_cast<const float*>(d.bias);
    if (bias_in && type != CUDA_R_32F) op->math_ok = false, op->math_why = "a non-fp32 bias";
  }
  if (aux) {
    if (d.aux == nullptr || d.aux_ld < op->m) return CUBLAS_STATUS_INVALID_VALUE;
    const cudaDataType type = d.aux_type < 0 ? op->d.type : static_cast<cudaDataType>(d.aux_type);
    // RELU's auxiliary output is a bit mask (ld in bits); GELU's holds the inputs of the GELU.
    const double elem = relu_bits ? 1.0 / 8 : simgpu::blas::ElementBytes(type);
    if (elem == 0) return Unsupported(op->fn, "auxiliary data type %d", type);
    const int64_t one = (op->n - 1) * d.aux_ld + op->m;
    const size_t bytes =
        static_cast<size_t>((Span(one, d.aux_batch_stride, op->batch) * elem) + 0.999);
    op->extra.push_back({d.aux, bytes, !backward});
    op->extra_bytes += double(op->m) * op->n * op->batch * elem;
  }
  if (e == CUBLASLT_EPILOGUE_RELU || e == CUBLASLT_EPILOGUE_RELU_BIAS) op->epilogue.relu = true;
  if (e != CUBLASLT_EPILOGUE_DEFAULT && e != CUBLASLT_EPILOGUE_BIAS &&
      e != CUBLASLT_EPILOGUE_RELU && e != CUBLASLT_EPILOGUE_RELU_BIAS) {
    op->math_ok = false;
    op->math_why = "this epilogue";
  }
  return CUBLAS_STATUS_SUCCESS;
}

// The GemmOp a matmul describes (alpha and beta are read only when given).
cublasStatus_t Plan(const char* fn, cublasLtMatmulDesc_t desc, const void* alpha, const void* a,
                    cublasLtMatrixLayout_t adesc, const void* b, cublasLtMatrixLayout_t bdesc,
                    const void* beta, const void* c, cublasLtMatrixLayout_t cdesc, void* d,
                    cublasLtMatrixLayout_t ddesc, cudaStream_t stream, GemmOp* op) {
  const MatmulDesc* md = simgpu::cublaslt::DescOf(desc);
  if (md == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  op->fn = fn;
  op->stream = stream;
  if (!Transposed(md->transa, &op->ta) || !Transposed(md->transb, &op->tb)) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (md->transc != CUBLAS_OP_N) return Unsupported(fn, "CUBLASLT_MATMUL_DESC_TRANSC");
  if (md->pointer_mode != CUBLASLT_POINTER_MODE_HOST) {
    return Unsupported(fn, "pointer mode %d (host only)", md->pointer_mode);
  }
  if (md->a_scale || md->b_scale || md->c_scale || md->d_scale || md->amax_d || md->aux_scale ||
      md->aux_amax || md->d_out_scale || md->emulation) {
    return Unsupported(fn, "scaling (fp8) or emulation attributes");
  }
  simgpu::blas::Compute compute;
  if (!simgpu::blas::ComputeOf(md->compute, &compute)) {
    return Unsupported(fn, "compute type %d", md->compute);
  }
  const auto scale = static_cast<cudaDataType>(md->scale);
  if (simgpu::blas::ElementBytes(scale) == 0) return Unsupported(fn, "scale type %d", scale);
  const Layout* la = simgpu::cublaslt::LayoutOf(adesc);
  const Layout* lb = simgpu::cublaslt::LayoutOf(bdesc);
  const Layout* lc = simgpu::cublaslt::LayoutOf(cdesc);
  const Layout* ld = simgpu::cublaslt::LayoutOf(ddesc);
  for (auto [l, p, x] : {std::tuple{la, a, &op->a}, std::tuple{lb, b, &op->b},
                         std::tuple{lc, c, &op->c}, std::tuple{ld, (const void*)d, &op->d}}) {
    if (cublasStatus_t st = MatrixOf(fn, l, p, x); st != CUBLAS_STATUS_SUCCESS) return st;
  }
  if (la->batch_count != ld->batch_count || lb->batch_count != ld->batch_count ||
      lc->batch_count != ld->batch_count) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  op->m = op->d.rows;
  op->n = op->d.cols;
  op->k = op->ta ? op->a.rows : op->a.cols;
  op->batch = ld->batch_count;
  if (alpha != nullptr) simgpu::blas::ScalarToFloat(alpha, scale, &op->alpha);
  if (beta != nullptr) simgpu::blas::ScalarToFloat(beta, scale, &op->beta);
  op->rate = simgpu::blas::RateOf(op->a.type, compute, false);
  return AddEpilogue(*md, op);
}

}  // namespace

extern "C" {

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t adesc,
    cublasLtMatrixLayout_t bdesc, cublasLtMatrixLayout_t cdesc, cublasLtMatrixLayout_t ddesc,
    cublasLtMatmulPreference_t pref, int requested, cublasLtMatmulHeuristicResult_t results[],
    int* returned) {
  const char* fn = "cublasLtMatmulAlgoGetHeuristic";
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (requested <= 0 || results == nullptr || returned == nullptr ||
      simgpu::cublaslt::PrefOf(pref) == nullptr) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  *returned = 0;
  GemmOp op;
  // Placeholder scalars: the problem, not the values, decides whether it can run.
  op.alpha = 1.0f;
  op.beta = 1.0f;
  if (cublasStatus_t st = Plan(fn, desc, nullptr, nullptr, adesc, nullptr, bdesc, nullptr, nullptr,
                               cdesc, nullptr, ddesc, nullptr, &op);
      st != CUBLAS_STATUS_SUCCESS) {
    return st;
  }
  if (cublasStatus_t st = simgpu::blas::Check(op); st != CUBLAS_STATUS_SUCCESS) return st;
  cublasLtMatmulHeuristicResult_t& r = results[0];
  r = {};
  r.algo.data[0] = simgpu::cublaslt::kAlgoId;
  r.workspaceSize = 0;  // within any MAX_WORKSPACE_BYTES
  r.state = CUBLAS_STATUS_SUCCESS;
  r.wavesCount = 1.0f;
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha,
                              const void* a, cublasLtMatrixLayout_t adesc, const void* b,
                              cublasLtMatrixLayout_t bdesc, const void* beta, const void* c,
                              cublasLtMatrixLayout_t cdesc, void* d, cublasLtMatrixLayout_t ddesc,
                              const cublasLtMatmulAlgo_t* algo, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream) {
  const char* fn = "cublasLtMatmul";
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (alpha == nullptr || beta == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (algo != nullptr && algo->data[0] != simgpu::cublaslt::kAlgoId) {
    return Unsupported(fn, "an algorithm not returned by cublasLtMatmulAlgoGetHeuristic");
  }
  GemmOp op;
  if (cublasStatus_t st =
          Plan(fn, desc, alpha, a, adesc, b, bdesc, beta, c, cdesc, d, ddesc, stream, &op);
      st != CUBLAS_STATUS_SUCCESS) {
    return st;
  }
  return simgpu::blas::Run(op);
}

}  // extern "C"
