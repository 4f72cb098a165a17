// cublaslt_hooks.cc: cuBLASLt under a residency policy. The descriptor calls forward and, when
// they succeed, tell the LtModel what was set (Note [Lt matmuls] in cublaslt_model.h);
// cublasLtMatmul runs as an op over the memory the model names, with a replay recipe when it is
// replayable.
//
// A matmul the model cannot account for is an opaque call (Note [Opaque calls] in
// interpose/process/opaque.h): every allocation resident around it.
//
// A replay runs on a cuBLASLt handle of pooch's own (a cuBLASLt handle carries no stream: the
// stream is the call's argument), with descriptors of pooch's own made from the recorded
// creation arguments and attributes, the recorded algo and alpha, a zero beta, and the
// Recomputer's scratch workspace of the recorded size.
#include <cstring>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "core/base/log.h"
#include "interpose/hooks/cublas/cublaslt_model.h"
#include "interpose/process/managed.h"
#include "interpose/process/opaque.h"
#include "interpose/symbols/hook_table.h"
#include "interpose/symbols/intercept.h"

namespace pooch::interpose::intercept {
namespace {

constexpr cublasStatus_t kOk = CUBLAS_STATUS_SUCCESS;

template <typename Handle>
using Owned = std::shared_ptr<std::remove_pointer_t<Handle>>;

// A descriptor of pooch's own equal to the recorded one; null when it cannot be made.
Owned<cublasLtMatmulDesc_t> MakeDesc(const LtDescriptor& d) {
  const auto create = real::cublasLtMatmulDescCreate();
  const auto set = real::cublasLtMatmulDescSetAttribute();
  const auto destroy = real::cublasLtMatmulDescDestroy();
  cublasLtMatmulDesc_t h = nullptr;
  if (!create || !set || !destroy || create(&h, d.compute, d.type) != kOk) return nullptr;
  Owned<cublasLtMatmulDesc_t> owned(h, [destroy](cublasLtMatmulDesc_t p) { destroy(p); });
  for (const auto& [attr, bytes] : d.attrs) {
    if (set(h, static_cast<cublasLtMatmulDescAttributes_t>(attr), bytes.data(), bytes.size()) !=
        kOk) {
      return nullptr;
    }
  }
  return owned;
}

Owned<cublasLtMatrixLayout_t> MakeLayout(const LtDescriptor& d) {
  const auto create = real::cublasLtMatrixLayoutCreate();
  const auto set = real::cublasLtMatrixLayoutSetAttribute();
  const auto destroy = real::cublasLtMatrixLayoutDestroy();
  cublasLtMatrixLayout_t h = nullptr;
  if (!create || !set || !destroy || create(&h, d.type, d.rows, d.cols, d.ld) != kOk) {
    return nullptr;
  }
  Owned<cublasLtMatrixLayout_t> owned(h, [destroy](cublasLtMatrixLayout_t p) { destroy(p); });
  for (const auto& [attr, bytes] : d.attrs) {
    if (set(h, static_cast<cublasLtMatrixLayoutAttribute_t>(attr), bytes.data(), bytes.size()) !=
        kOk) {
      return nullptr;
    }
  }
  return owned;
}

cublasLtHandle_t ReplayHandle() {
  static const cublasLtHandle_t handle = [] {
    cublasLtHandle_t h = nullptr;
    const auto create = real::cublasLtCreate();
    return create != nullptr && create(&h) == kOk ? h : nullptr;
  }();
  return handle;
}

std::optional<ReplayRecipe> MatmulRecipe(const Ranges& r, const LtMatmulModel& m, const void* alpha,
                                         const void* A, const void* B, void* D,
                                         const cublasLtMatmulAlgo_t* algo, size_t workspace_bytes) {
  ReplayRecipe recipe;
  recipe.name = "cublasLtMatmul";
  recipe.output = reinterpret_cast<pooch::DeviceAddress>(D);
  for (const pooch::AccessRange& a : r.get()) {
    if (a.mode == pooch::AccessRange::Mode::kRead) {
      recipe.inputs.push_back(a);
    } else if (a.address == recipe.output) {
      recipe.output_bytes = a.bytes;
    }
  }
  if (recipe.output == 0 || recipe.output_bytes <= 0 || algo == nullptr || alpha == nullptr ||
      m.scale_bytes > 16) {
    return std::nullopt;
  }
  Owned<cublasLtMatmulDesc_t> desc = MakeDesc(m.desc);
  Owned<cublasLtMatrixLayout_t> a = MakeLayout(m.a), b = MakeLayout(m.b), d = MakeLayout(m.d);
  if (!desc || !a || !b || !d) return std::nullopt;
  struct Scalars {
    unsigned char alpha[16] = {};
    unsigned char zero[16] = {};
  } s;
  std::memcpy(s.alpha, alpha, static_cast<size_t>(m.scale_bytes));
  recipe.workspace_bytes = static_cast<int64_t>(workspace_bytes);
  recipe.issue = [desc, a, b, d, s, A, B, D, algo = *algo, workspace_bytes](uintptr_t stream,
                                                                            void* workspace) {
    const cublasLtHandle_t h = ReplayHandle();
    const auto matmul = real::cublasLtMatmul();
    // beta = 0: C is not read (it may be gone by now); D, with D's layout, stands in for it.
    return h != nullptr && matmul != nullptr &&
           matmul(h, desc.get(), s.alpha, A, a.get(), B, b.get(), s.zero, D, d.get(), D, d.get(),
                  &algo, workspace, workspace_bytes, reinterpret_cast<cudaStream_t>(stream)) == kOk;
  };
  return recipe;
}

}  // namespace

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* matmulDesc,
                                        cublasComputeType_t computeType, cudaDataType_t scaleType) {
  const cublasStatus_t s = real::cublasLtMatmulDescCreate()(matmulDesc, computeType, scaleType);
  if (s == kOk && matmulDesc != nullptr) {
    LtModel::Get().CreatedDesc(*matmulDesc, computeType, scaleType);
  }
  return s;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc) {
  LtModel::Get().Destroyed(matmulDesc);
  return real::cublasLtMatmulDescDestroy()(matmulDesc);
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc,
                                              cublasLtMatmulDescAttributes_t attr, const void* buf,
                                              size_t sizeInBytes) {
  const cublasStatus_t s =
      real::cublasLtMatmulDescSetAttribute()(matmulDesc, attr, buf, sizeInBytes);
  if (s == kOk) LtModel::Get().Set(matmulDesc, attr, buf, sizeInBytes);
  return s;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* matLayout, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
  const cublasStatus_t s = real::cublasLtMatrixLayoutCreate()(matLayout, type, rows, cols, ld);
  if (s == kOk && matLayout != nullptr) {
    LtModel::Get().CreatedLayout(*matLayout, type, rows, cols, ld);
  }
  return s;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout) {
  LtModel::Get().Destroyed(matLayout);
  return real::cublasLtMatrixLayoutDestroy()(matLayout);
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, size_t sizeInBytes) {
  const cublasStatus_t s =
      real::cublasLtMatrixLayoutSetAttribute()(matLayout, attr, buf, sizeInBytes);
  if (s == kOk) LtModel::Get().Set(matLayout, attr, buf, sizeInBytes);
  return s;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc,
                              const void* alpha, const void* A, cublasLtMatrixLayout_t Adesc,
                              const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta,
                              const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
                              cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo,
                              void* workspace, size_t workspaceSizeInBytes, cudaStream_t stream) {
  const absl::StatusOr<LtMatmulModel> m =
      LtModel::Get().Matmul(computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc,
                            algo != nullptr, workspace, workspaceSizeInBytes);
  const auto forward = [&] {
    return real::cublasLtMatmul()(lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C,
                                  Cdesc, D, Ddesc, algo, workspace, workspaceSizeInBytes, stream);
  };
  if (!m.ok()) {
    // Note [Opaque calls]: pooch cannot name what the call touches, so everything is resident.
    POOCH_LOG_AT(kInfo, "cublasLtMatmul: %.*s: run as an opaque call",
                 static_cast<int>(m.status().message().size()), m.status().message().data());
    return RunOpaque<cublasStatus_t>("cublasLtMatmul", reinterpret_cast<uintptr_t>(stream),
                                     /*stream_known=*/true, forward);
  }
  Ranges r;
  for (const pooch::AccessRange& a : m->ranges) r.Add(a.address, a.bytes, a.mode);
  const auto make_recipe = [&] {
    return MatmulRecipe(r, *m, alpha, A, B, D, algo, workspaceSizeInBytes);
  };
  const ReplaySource replay(make_recipe);
  return RunOp<cublasStatus_t>(reinterpret_cast<uintptr_t>(stream), r, forward,
                               {.replay = m->replayable ? &replay : nullptr});
}

}  // namespace pooch::interpose::intercept
