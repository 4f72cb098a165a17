// cublas_replay.h: the settings of the program's cuBLAS handles, and replay recipes for the GEMMs
// (Note [GEMM replay] in cublas_gemm.h).
//
// Thread safety: all functions may be called from any thread; recipes' issue functions are
// serialised by the caller (the Recomputer's lock).
#ifndef POOCH_INTERPOSE_HOOKS_CUBLAS_CUBLAS_REPLAY_H_
#define POOCH_INTERPOSE_HOOKS_CUBLAS_CUBLAS_REPLAY_H_

#include <cstddef>
#include <optional>
#include <vector>

#include "core/lineage/replay_recipe.h"
#include "interpose/hooks/cublas/cublas_gemm.h"
#include "interpose/symbols/cuda_api.h"

namespace pooch::interpose {

// The hooks of cublasCreate_v2, cublasSetStream_v2 and cublasSetWorkspace_v2 tell what they did:
// a new handle (which may reuse a destroyed one's address) has cuBLAS's default workspace, and
// cublasSetStream_v2 puts a handle back on it (cuBLAS's documentation: it "unconditionally resets
// the cuBLAS library workspace back to the default workspace pool"; PyTorch sets its workspace
// again after every cublasSetStream).
void NoteCublasDefaultWorkspace(cublasHandle_t handle);
void NoteCublasWorkspace(cublasHandle_t handle, const void* workspace, size_t bytes);

// The settings of `handle` now, read with the real getters (known = false when one fails).
GemmSettings ReadGemmSettings(cublasHandle_t handle);

// The recipe of `call` (GemmNotReplayable said yes), whose reads and writes are `ranges`: the same
// entry point on pooch's own handle with `settings` applied, alpha copied, a zero beta.
std::optional<ReplayRecipe> GemmRecipe(const GemmCall& call, const GemmSettings& settings,
                                       const std::vector<pooch::AccessRange>& ranges);

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_HOOKS_CUBLAS_CUBLAS_REPLAY_H_
