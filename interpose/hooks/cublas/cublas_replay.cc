// cublas_replay.cc: the program's cuBLAS workspaces, the settings read from its handles, and the
// GEMM replay recipes (Note [GEMM replay] in cublas_gemm.h).
#include "interpose/hooks/cublas/cublas_replay.h"

#include <cstring>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "core/base/mutex.h"
#include "interpose/symbols/hook_table.h"

namespace pooch::interpose {
namespace {

constexpr cublasStatus_t kOk = CUBLAS_STATUS_SUCCESS;

// The workspaces the program set, per handle (cublasSetWorkspace_v2 has no getter).
class Workspaces {
 public:
  static Workspaces& Get() {
    static Workspaces* const w = new Workspaces;  // never destroyed: hooks run at exit
    return *w;
  }
  void Reset(cublasHandle_t h) {
    MutexLock lock(&mu_);
    set_.erase(reinterpret_cast<uintptr_t>(h));
  }
  void Set(cublasHandle_t h, const void* workspace, size_t bytes) {
    MutexLock lock(&mu_);
    set_[reinterpret_cast<uintptr_t>(h)] = {workspace, bytes};
  }
  std::optional<std::pair<const void*, size_t>> Find(cublasHandle_t h) const {
    MutexLock lock(&mu_);
    const auto it = set_.find(reinterpret_cast<uintptr_t>(h));
    if (it == set_.end()) return std::nullopt;
    return it->second;
  }

 private:
  mutable Mutex mu_;
  absl::flat_hash_map<uintptr_t, std::pair<const void*, size_t>> set_ ABSL_GUARDED_BY(mu_);
};

cublasHandle_t NewHandle() {
  cublasHandle_t h = nullptr;
  const auto create = real::cublasCreate_v2();
  return create != nullptr && create(&h) == kOk ? h : nullptr;
}

// pooch's own handles, created on first use (null when one cannot be made): one that keeps
// cuBLAS's default workspace, for calls whose program set none, and one that is given the
// Recomputer's scratch before each replay. Replays are serialised by the Recomputer, so setting
// the stream, the math mode and the workspace and then calling is not raced.
cublasHandle_t ReplayHandle(bool set_workspace) {
  static const cublasHandle_t with_default = NewHandle();
  static const cublasHandle_t with_scratch = NewHandle();
  return set_workspace ? with_scratch : with_default;
}

// alpha by value, and the zero beta of the replay (C is not read).
struct Scalars {
  unsigned char alpha[16] = {};
  unsigned char zero[16] = {};
};

bool Issue(cublasHandle_t h, const GemmCall& c, const Scalars& s) {
  const auto* fa = reinterpret_cast<const float*>(s.alpha);
  const auto* fz = reinterpret_cast<const float*>(s.zero);
  const auto* fA = static_cast<const float*>(c.A);
  const auto* fB = static_cast<const float*>(c.B);
  auto* fC = static_cast<float*>(c.C);
  const auto m = static_cast<int>(c.m), n = static_cast<int>(c.n), k = static_cast<int>(c.k);
  const auto lda = static_cast<int>(c.lda), ldb = static_cast<int>(c.ldb);
  const auto ldc = static_cast<int>(c.ldc), batch = static_cast<int>(c.batch);
  switch (c.form) {
    case GemmForm::kSgemm: {
      const auto f = real::cublasSgemm_v2();
      return f != nullptr &&
             f(h, c.transa, c.transb, m, n, k, fa, fA, lda, fB, ldb, fz, fC, ldc) == kOk;
    }
    case GemmForm::kSgemm64: {
      const auto f = real::cublasSgemm_v2_64();
      return f != nullptr && f(h, c.transa, c.transb, c.m, c.n, c.k, fa, fA, c.lda, fB, c.ldb, fz,
                               fC, c.ldc) == kOk;
    }
    case GemmForm::kSgemmEx: {
      const auto f = real::cublasSgemmEx();
      return f != nullptr && f(h, c.transa, c.transb, m, n, k, fa, c.A, c.a_type, lda, c.B,
                               c.b_type, ldb, fz, c.C, c.c_type, ldc) == kOk;
    }
    case GemmForm::kGemmEx: {
      const auto f = real::cublasGemmEx();
      return f != nullptr && f(h, c.transa, c.transb, m, n, k, s.alpha, c.A, c.a_type, lda, c.B,
                               c.b_type, ldb, s.zero, c.C, c.c_type, ldc, c.compute, c.algo) == kOk;
    }
    case GemmForm::kGemmStridedBatchedEx: {
      const auto f = real::cublasGemmStridedBatchedEx();
      return f != nullptr && f(h, c.transa, c.transb, m, n, k, s.alpha, c.A, c.a_type, lda,
                               c.stride_a, c.B, c.b_type, ldb, c.stride_b, s.zero, c.C, c.c_type,
                               ldc, c.stride_c, batch, c.compute, c.algo) == kOk;
    }
    case GemmForm::kSgemmStridedBatched: {
      const auto f = real::cublasSgemmStridedBatched();
      return f != nullptr && f(h, c.transa, c.transb, m, n, k, fa, fA, lda, c.stride_a, fB, ldb,
                               c.stride_b, fz, fC, ldc, c.stride_c, batch) == kOk;
    }
    case GemmForm::kSgemmStridedBatched64: {
      const auto f = real::cublasSgemmStridedBatched_64();
      return f != nullptr && f(h, c.transa, c.transb, c.m, c.n, c.k, fa, fA, c.lda, c.stride_a, fB,
                               c.ldb, c.stride_b, fz, fC, c.ldc, c.stride_c, c.batch) == kOk;
    }
  }
  return false;
}

}  // namespace

void NoteCublasDefaultWorkspace(cublasHandle_t handle) { Workspaces::Get().Reset(handle); }

void NoteCublasWorkspace(cublasHandle_t handle, const void* workspace, size_t bytes) {
  Workspaces::Get().Set(handle, workspace, bytes);
}

GemmSettings ReadGemmSettings(cublasHandle_t handle) {
  GemmSettings s;
  const auto pointer = real::cublasGetPointerMode_v2();
  const auto math = real::cublasGetMathMode();
  const auto atomics = real::cublasGetAtomicsMode();
  s.known = pointer != nullptr && math != nullptr && atomics != nullptr &&
            pointer(handle, &s.pointer_mode) == kOk && math(handle, &s.math) == kOk &&
            atomics(handle, &s.atomics) == kOk;
  if (const auto w = Workspaces::Get().Find(handle)) {
    s.workspace_set = true;
    s.workspace = w->first;
    s.workspace_bytes = w->second;
  }
  return s;
}

std::optional<ReplayRecipe> GemmRecipe(const GemmCall& call, const GemmSettings& settings,
                                       const std::vector<pooch::AccessRange>& ranges) {
  if (call.alpha == nullptr || call.scale_bytes > sizeof(Scalars::alpha)) return std::nullopt;
  ReplayRecipe recipe;
  recipe.name = call.name;
  recipe.output = reinterpret_cast<pooch::DeviceAddress>(call.C);
  for (const pooch::AccessRange& a : ranges) {
    if (a.mode == pooch::AccessRange::Mode::kRead) {
      recipe.inputs.push_back(a);
    } else if (a.address == recipe.output) {
      recipe.output_bytes = a.bytes;
    }
  }
  if (recipe.output == 0 || recipe.output_bytes <= 0) return std::nullopt;
  Scalars s;
  std::memcpy(s.alpha, call.alpha, call.scale_bytes);
  GemmCall c = call;
  c.alpha = c.beta = nullptr;  // the program's scalars: read now, not at the replay
  // The program's workspace is not the replay's: the Recomputer's scratch of the same size is.
  recipe.workspace_bytes =
      settings.workspace_set ? static_cast<int64_t>(settings.workspace_bytes) : 0;
  recipe.issue = [c, s, math = settings.math, set_workspace = settings.workspace_set,
                  workspace_bytes = settings.workspace_bytes](uintptr_t stream, void* workspace) {
    const cublasHandle_t h = ReplayHandle(set_workspace);
    const auto set_stream = real::cublasSetStream_v2();
    const auto set_math = real::cublasSetMathMode();
    const auto set_ws = real::cublasSetWorkspace_v2();
    if (h == nullptr || set_stream == nullptr || set_math == nullptr || set_ws == nullptr ||
        set_stream(h, reinterpret_cast<cudaStream_t>(stream)) != kOk || set_math(h, math) != kOk) {
      return false;
    }
    if (set_workspace && set_ws(h, workspace, workspace_bytes) != kOk) return false;
    return Issue(h, c, s);
  };
  return recipe;
}

}  // namespace pooch::interpose
