#include "interpose/hooks/kernel_args.h"

#include <cstring>

#include "interpose/symbols/errors.h"
#include "interpose/symbols/hook_table.h"

namespace pooch::interpose {
namespace {

constexpr size_t kMaxParams = 1024;

}  // namespace

void ScanWords(const pooch::ResidencyManager* manager, const void* data, size_t bytes,
               Ranges* out) {
  if (manager == nullptr || data == nullptr) return;
  const char* p = static_cast<const char*>(data);
  for (size_t off = 0; off + sizeof(uint64_t) <= bytes; off += sizeof(uint64_t)) {
    uint64_t word = 0;
    std::memcpy(&word, p + off, sizeof(word));
    if (word == 0) continue;
    if (manager->Lookup(static_cast<uintptr_t>(word)).has_value()) {
      out->Add(static_cast<uintptr_t>(word), 1, pooch::AccessRange::Mode::kReadWrite);
    }
  }
}

Ranges RuntimeKernelRanges(const pooch::ResidencyManager* manager, const void* func, void** args) {
  Ranges ranges;
  if (manager == nullptr || args == nullptr) return ranges;
  const auto param_info = real::cudaFuncGetParamInfo();
  if (param_info == nullptr) return ranges;
  // An error of the program's own still pending must survive the one pooch causes below.
  const auto peek = real::cudaPeekAtLastError();
  const cudaError_t pending = peek != nullptr ? peek() : cudaSuccess;
  for (size_t i = 0; i < kMaxParams; ++i) {
    size_t offset = 0, size = 0;
    if (param_info(func, i, &offset, &size) != cudaSuccess) break;
    ScanWords(manager, args[i], size, &ranges);
  }
  // The call past the last parameter left an error behind; the program must not see it.
  if (const auto get_last = real::cudaGetLastError()) get_last();
  if (pending != cudaSuccess) RecordRuntimeError(pending);  // Note [Last error]
  return ranges;
}

Ranges DriverKernelRanges(const pooch::ResidencyManager* manager, CUfunction f,
                          void** kernel_params, void** extra) {
  Ranges ranges;
  if (manager == nullptr) return ranges;
  if (kernel_params != nullptr) {
    const auto param_info = real::cuFuncGetParamInfo();
    if (param_info == nullptr) return ranges;
    for (size_t i = 0; i < kMaxParams; ++i) {
      size_t offset = 0, size = 0;
      if (param_info(f, i, &offset, &size) != CUDA_SUCCESS) break;
      ScanWords(manager, kernel_params[i], size, &ranges);
    }
  } else if (extra != nullptr) {
    const void* buffer = nullptr;
    size_t size = 0;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END && i < 2 * kMaxParams; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) buffer = extra[i + 1];
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1] != nullptr) {
        std::memcpy(&size, extra[i + 1], sizeof(size));
      }
    }
    ScanWords(manager, buffer, size, &ranges);
  }
  return ranges;
}

}  // namespace pooch::interpose
