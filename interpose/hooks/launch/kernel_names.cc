// kernel_names.cc: kernels' names, asked once per handle (Note [Kernel op names]).
#include "interpose/hooks/launch/kernel_names.h"

#include <cstdint>
#include <deque>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "core/base/mutex.h"
#include "interpose/symbols/errors.h"
#include "interpose/symbols/hook_table.h"

namespace pooch::interpose {
namespace {

struct Names {
  Mutex mu;
  // Handle (as an integer, tagged by kind) -> name, null when none could be had.
  absl::flat_hash_map<std::pair<int, uintptr_t>, const char*> by_handle ABSL_GUARDED_BY(mu);
  std::deque<std::string> kept ABSL_GUARDED_BY(mu);  // stable addresses
};

Names& TheNames() {
  static Names* names = new Names;  // never destroyed: hooks run during exit
  return *names;
}

// The cached name of handle (kind, key), asking `ask` (which returns the driver's pointer or
// null) the first time.
template <typename Ask>
const char* Cached(int kind, uintptr_t key, Ask&& ask) {
  Names& n = TheNames();
  {
    MutexLock lock(&n.mu);
    if (auto it = n.by_handle.find({kind, key}); it != n.by_handle.end()) return it->second;
  }
  const char* name = ask();  // outside the lock: a driver call
  MutexLock lock(&n.mu);
  auto [it, fresh] = n.by_handle.emplace(std::make_pair(kind, key), nullptr);
  if (fresh && name != nullptr) {
    n.kept.emplace_back(name);
    it->second = n.kept.back().c_str();
  }
  return it->second;
}

const char* AskFunction(CUfunction f) {
  const auto get_name = real::cuFuncGetName();
  const char* name = nullptr;
  if (get_name == nullptr || get_name(&name, f) != CUDA_SUCCESS) return nullptr;
  return name;
}

}  // namespace

const char* KernelHandleName(cudaKernel_t kernel) {
  return Cached(0, reinterpret_cast<uintptr_t>(kernel), [&]() -> const char* {
    const auto get_name = real::cuKernelGetName();
    const char* name = nullptr;
    if (get_name == nullptr ||
        get_name(&name, reinterpret_cast<CUkernel>(kernel)) != CUDA_SUCCESS) {
      return nullptr;
    }
    return name;
  });
}

const char* DriverFunctionName(CUfunction f) {
  return Cached(1, reinterpret_cast<uintptr_t>(f), [&] { return AskFunction(f); });
}

const char* RuntimeFunctionName(const void* func) {
  return Cached(2, reinterpret_cast<uintptr_t>(func), [&]() -> const char* {
    const auto by_symbol = real::cudaGetFuncBySymbol();
    if (by_symbol == nullptr) return nullptr;
    // A failed look-up must not leave an error the program would see (Note [Last error]).
    const auto peek = real::cudaPeekAtLastError();
    const cudaError_t pending = peek != nullptr ? peek() : cudaSuccess;
    cudaFunction_t f = nullptr;
    const cudaError_t e = by_symbol(&f, func);
    if (const auto get_last = real::cudaGetLastError()) get_last();
    if (pending != cudaSuccess) RecordRuntimeError(pending);
    return e == cudaSuccess ? AskFunction(reinterpret_cast<CUfunction>(f)) : nullptr;
  });
}

}  // namespace pooch::interpose
