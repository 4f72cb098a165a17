// cublas_gemm.h: one cuBLAS GEMM call as the hooks see it, the settings of the program's handle
// that decide its result, and whether the call can be replayed bit for bit (Note [GEMM replay]).
// Plain data and pure functions (no cuBLAS call), so that the unit test drives them directly.
//
// Note [GEMM replay]
// ~~~~~~~~~~~~~~~~~~
// The cuBLAS GEMMs PyTorch and cnn_train call (cublasGemmEx, cublasGemmStridedBatchedEx,
// cublasSgemmEx, cublasSgemm_v2(_64), cublasSgemmStridedBatched(_64)) rebuild their output C by
// being called again (Note [Replay] in core/recompute/recomputer.h), on a cuBLAS handle of pooch's
// own (cublas_replay.cc), never the program's: its stream, its settings and its use from other
// threads stay the program's. A replay must give the very bytes of the call, so it needs everything
// that decides them:
//   - the arguments: copied into the recipe (the operands' addresses; the Recomputer watches their
//     contents), alpha by value;
//   - the handle's math mode (tensor-op, TF32, reduced-precision reductions): read from the
//     program's handle at the call with the real getter and set on pooch's handle before the
//     replay. (The SM count target, cublasSetSmCountTarget, is not read: simgpu lacks its getter.
//     PyTorch leaves it at its default, which pooch's handle has too; a program that sets it
//     could see another algorithm in a replay. Not done yet.)
//   - its workspace: cuBLAS may pick another algorithm for another workspace size. A program that
//     set one (PyTorch does, cublasSetWorkspace_v2 with the size CUBLAS_WORKSPACE_CONFIG or its
//     default says) has its size recorded by the hook of cublasSetWorkspace_v2 (and forgotten by
//     cublasSetStream_v2's, which puts the handle back on the default workspace); the replay then
//     sets a scratch buffer of that size, the Recomputer's (recipe.workspace_bytes), on pooch's
//     handle. A program that set none runs on the default workspace cuBLAS gives a new handle,
//     which the same library in the same process (with the same CUBLAS_WORKSPACE_CONFIG) gives
//     pooch's handle too: replays of such calls go to a second handle of pooch's that never has a
//     workspace set.
// What cannot be reproduced makes the call not replayable (no recipe: the plan swaps its output):
//   - device pointer mode: alpha and beta are device memory that may hold other values by the
//     time of a replay;
//   - atomics allowed: cuBLAS may then accumulate in any order, so two runs may differ;
//   - beta not known zero: C is read as well as written, and the call overwrote the C it read,
//     so a replay would read the call's own result. (-0.0 counts as non-zero: the bytes decide.)
//   - complex C: pooch copies real scalars only;
//   - C overlapping A or B (in place): the inputs are gone once the call ran;
//   - C with gaps (ldc > m, or a batch stride other than ldc x n): a drop discards the whole span,
//     and the bytes between are not the call's to rebuild;
//   - a handle whose settings could not be read.
// With beta zero in host pointer mode C is not read (cuBLAS does not read C when beta is zero),
// and the hook reports it as written only.
#ifndef POOCH_INTERPOSE_HOOKS_CUBLAS_CUBLAS_GEMM_H_
#define POOCH_INTERPOSE_HOOKS_CUBLAS_CUBLAS_GEMM_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/residency/residency.h"
#include "interpose/symbols/cuda_api.h"

namespace pooch::interpose {

// Which entry point a call came through: a replay calls the same one.
enum class GemmForm {
  kSgemm,                  // cublasSgemm_v2
  kSgemm64,                // cublasSgemm_v2_64
  kSgemmEx,                // cublasSgemmEx
  kGemmEx,                 // cublasGemmEx
  kGemmStridedBatchedEx,   // cublasGemmStridedBatchedEx
  kSgemmStridedBatched,    // cublasSgemmStridedBatched
  kSgemmStridedBatched64,  // cublasSgemmStridedBatched_64
};

// C = alpha op(A) op(B) + beta C, `batch` times with the strides (1 and 0 for the plain forms).
// The S forms are CUDA_R_32F throughout, with a float scale.
struct GemmCall {
  const char* name = nullptr;
  GemmForm form = GemmForm::kSgemm;
  cublasOperation_t transa = CUBLAS_OP_N;
  cublasOperation_t transb = CUBLAS_OP_N;
  int64_t m = 0, n = 0, k = 0;
  const void* alpha = nullptr;
  size_t scale_bytes = sizeof(float);  // of alpha and beta
  const void* A = nullptr;
  cudaDataType a_type = CUDA_R_32F;
  int64_t lda = 0, stride_a = 0;
  const void* B = nullptr;
  cudaDataType b_type = CUDA_R_32F;
  int64_t ldb = 0, stride_b = 0;
  const void* beta = nullptr;
  void* C = nullptr;
  cudaDataType c_type = CUDA_R_32F;
  int64_t ldc = 0, stride_c = 0;
  int64_t batch = 1;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;  // the Ex forms
  cublasGemmAlgo_t algo = CUBLAS_GEMM_DEFAULT;       // the Ex forms
};

// The settings of the program's handle at the call that decide its result.
struct GemmSettings {
  bool known = false;  // pointer, math and atomics mode were read
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
  cublasAtomicsMode_t atomics = CUBLAS_ATOMICS_NOT_ALLOWED;
  bool workspace_set = false;       // the program called cublasSetWorkspace_v2 on the handle
  const void* workspace = nullptr;  // the program's buffer, which the call writes
  size_t workspace_bytes = 0;
};

// The size of alpha and beta for cublasGemmEx's compute types.
size_t GemmExScaleBytes(cublasComputeType_t compute);

// True when the host scalar `p` of `bytes` bytes is all zero bits (a null `p` is not).
bool HostScaleIsZero(const void* p, size_t bytes);

// Null when `call`, made on a handle in `settings`, with `ranges` its reads and writes (C among
// them at call.C, written), can be replayed bit for bit; otherwise why not (Note [GEMM replay]).
// `beta_zero`: beta was read on the host and is zero.
const char* GemmNotReplayable(const GemmCall& call, const GemmSettings& settings, bool beta_zero,
                              const std::vector<pooch::AccessRange>& ranges);

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_HOOKS_CUBLAS_CUBLAS_GEMM_H_
