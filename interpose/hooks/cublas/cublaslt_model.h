// cublaslt_model.h: cuBLASLt's matmul and matrix layout descriptors as the program sets them, and
// what one cublasLtMatmul reads and writes (Note [Lt matmuls]).
//
// Note [Lt matmuls]
// ~~~~~~~~~~~~~~~~~
// cublasLtMatmul(handle, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo,
// workspace, bytes, stream) names its operands' extents only through descriptors created and set
// before, so the hooks (cublaslt_hooks.cc) remember every cublasLtMatmulDescCreate /
// cublasLtMatrixLayoutCreate and each attribute set on them, raw (a replay sets them again on
// descriptors of pooch's own). A layout describes its matrix as stored (the transposes apply on
// top): rows x cols with leading dimension ld, column (ld >= rows) or row (ld >= cols) order,
// BATCH_COUNT matrices STRIDED_BATCH_OFFSET elements apart. What the call touches:
//   A, B           read
//   C              read when beta != 0 (read from the host in host pointer mode; unknown counts as
//                  non-zero); D is read and written when it is C and C is read
//   D              written
//   bias           read for the BIAS epilogues (rows of D elements, of BIAS_DATA_TYPE or D's)
//   alpha, beta    device reads in device pointer mode
//   workspace      written (Note [Scratch workspaces] in cublas_hooks.cc)
// Opaque (the hook must not guess): a descriptor pooch did not see created, another order
// (COL32, ...), planar complex, an unknown data type, a vector pointer mode, scale or amax
// pointers (fp8), and the epilogues with an aux buffer or a bias gradient (RELU_AUX, GELU_AUX,
// DRELU, DGELU, BGRADA, BGRADB), whose extents pooch does not model yet.
//
// Replayable (Note [Replay] in core/recompute/recomputer.h): host pointer mode, beta known zero, a
// given algo (the same algo and workspace size give the same result), and D apart from every
// input (A, B, bias).
//
// Plain bookkeeping over handles (no cuBLASLt call), so that the unit test drives it with fakes.
// Thread safety: all methods may be called from any thread.
#ifndef POOCH_INTERPOSE_HOOKS_CUBLAS_CUBLASLT_MODEL_H_
#define POOCH_INTERPOSE_HOOKS_CUBLAS_CUBLASLT_MODEL_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/base/mutex.h"
#include "core/residency/residency.h"
#include "interpose/symbols/cuda_api.h"

namespace pooch::interpose {

// A descriptor's creation arguments and its attributes as set, in order (attribute, bytes).
struct LtDescriptor {
  bool layout = false;
  // Matmul: compute and scale type. Layout: type, rows, cols, ld.
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cudaDataType_t type = CUDA_R_32F;
  uint64_t rows = 0;
  uint64_t cols = 0;
  int64_t ld = 0;
  std::vector<std::pair<int, std::vector<unsigned char>>> attrs;
};

struct LtMatmulModel {
  std::vector<pooch::AccessRange> ranges;
  bool replayable = false;
  // Copies of the descriptors, for a replay: desc, A, B, C, D.
  LtDescriptor desc, a, b, c, d;
  int64_t scale_bytes = 0;  // the size of alpha and beta in the scale type
};

class LtModel {
 public:
  static LtModel& Get();

  void CreatedDesc(const void* desc, cublasComputeType_t compute, cudaDataType_t scale);
  void CreatedLayout(const void* layout, cudaDataType_t type, uint64_t rows, uint64_t cols,
                     int64_t ld);
  void Set(const void* desc, int attr, const void* buf, size_t bytes);
  void Destroyed(const void* desc);

  // The ranges of one cublasLtMatmul; an error (why) when it is opaque. `alpha`, `beta`: the
  // call's scalars (read on the host in host pointer mode).
  absl::StatusOr<LtMatmulModel> Matmul(const void* desc, const void* alpha, const void* A,
                                       const void* Adesc, const void* B, const void* Bdesc,
                                       const void* beta, const void* C, const void* Cdesc,
                                       const void* D, const void* Ddesc, bool algo_given,
                                       const void* workspace, size_t workspace_bytes) const;

 private:
  // Copies of the descriptors of one matmul into `m`; an error when one was not seen created.
  absl::Status CopyDescriptors(const void* desc, const void* Adesc, const void* Bdesc,
                               const void* Cdesc, const void* Ddesc, LtMatmulModel* m) const
      ABSL_LOCKS_EXCLUDED(mu_);

  mutable Mutex mu_;
  absl::flat_hash_map<uintptr_t, LtDescriptor> descs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_HOOKS_CUBLAS_CUBLASLT_MODEL_H_
