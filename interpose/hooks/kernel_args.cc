#include "interpose/hooks/kernel_args.h"

#include <cstring>

#include "interpose/symbols/errors.h"
#include "interpose/symbols/hook_table.h"

namespace pooch::interpose {
namespace {

constexpr size_t kMaxParams = 1024;

// Runs `body` with the program's pending runtime error kept: a query past the last parameter
// leaves an error behind that the program must not see (Note [Last error]).
template <typename Body>
auto KeepingLastError(Body&& body) {
  const auto peek = real::cudaPeekAtLastError();
  const cudaError_t pending = peek != nullptr ? peek() : cudaSuccess;
  auto result = body();
  if (const auto get_last = real::cudaGetLastError()) get_last();
  if (pending != cudaSuccess) RecordRuntimeError(pending);
  return result;
}

ParamLookup FromRuntime(cudaError_t e) {
  if (e == cudaSuccess) return ParamLookup::kFound;
  return e == cudaErrorInvalidValue ? ParamLookup::kPastEnd : ParamLookup::kUnknown;
}

ParamLookup FromDriver(CUresult e) {
  if (e == CUDA_SUCCESS) return ParamLookup::kFound;
  return e == CUDA_ERROR_INVALID_VALUE ? ParamLookup::kPastEnd : ParamLookup::kUnknown;
}

}  // namespace

void ScanWords(const pooch::ResidencyManager* manager, const void* data, size_t bytes,
               Ranges* out) {
  if (manager == nullptr || data == nullptr) return;
  const char* p = static_cast<const char*>(data);
  for (size_t off = 0; off + sizeof(uint64_t) <= bytes; off += sizeof(uint64_t)) {
    uint64_t word = 0;
    std::memcpy(&word, p + off, sizeof(word));
    if (word == 0) continue;
    // Note [Words into freed memory] (core/residency/residency.cc): freed memory still held
    // counts too, so that its release waits for the kernel.
    if (manager->Holds(static_cast<uintptr_t>(word))) {
      out->Add(static_cast<uintptr_t>(word), 1, pooch::AccessRange::Mode::kReadWrite);
    }
  }
}

std::optional<Ranges> ScanParams(const pooch::ResidencyManager* manager, void* const* params,
                                 absl::FunctionRef<ParamLookup(size_t, size_t*, size_t*)> info) {
  Ranges ranges;
  for (size_t i = 0; i < kMaxParams; ++i) {
    size_t offset = 0, size = 0;
    switch (info(i, &offset, &size)) {
      case ParamLookup::kPastEnd:
        return ranges;
      case ParamLookup::kUnknown:
        return std::nullopt;
      case ParamLookup::kFound:
        if (params == nullptr || params[i] == nullptr) return std::nullopt;
        ScanWords(manager, params[i], size, &ranges);
        break;
    }
  }
  return std::nullopt;  // more parameters than any kernel has: not a layout to trust
}

std::optional<Ranges> RuntimeKernelRanges(const pooch::ResidencyManager* manager, const void* func,
                                          void** args) {
  if (manager == nullptr) return Ranges{};
  const auto param_info = real::cudaFuncGetParamInfo();
  if (param_info == nullptr) return std::nullopt;
  return KeepingLastError([&] {
    return ScanParams(manager, args, [&](size_t i, size_t* offset, size_t* size) {
      return FromRuntime(param_info(func, i, offset, size));
    });
  });
}

std::optional<Ranges> KernelHandleRanges(const pooch::ResidencyManager* manager,
                                         cudaKernel_t kernel, void** args) {
  if (manager == nullptr) return Ranges{};
  const auto param_info = real::cuKernelGetParamInfo();
  if (param_info == nullptr) return std::nullopt;
  return ScanParams(manager, args, [&](size_t i, size_t* offset, size_t* size) {
    return FromDriver(param_info(reinterpret_cast<CUkernel>(kernel), i, offset, size));
  });
}

std::optional<Ranges> DriverKernelRanges(const pooch::ResidencyManager* manager, CUfunction f,
                                         void** kernel_params, void** extra) {
  if (manager == nullptr) return Ranges{};
  if (kernel_params != nullptr || extra == nullptr) {
    const auto param_info = real::cuFuncGetParamInfo();
    if (param_info == nullptr) return std::nullopt;
    return ScanParams(manager, kernel_params, [&](size_t i, size_t* offset, size_t* size) {
      return FromDriver(param_info(f, i, offset, size));
    });
  }
  Ranges ranges;
  const void* buffer = nullptr;
  size_t size = 0;
  bool sized = false;
  for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END && i < 2 * kMaxParams; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) buffer = extra[i + 1];
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1] != nullptr) {
      std::memcpy(&size, extra[i + 1], sizeof(size));
      sized = true;
    }
  }
  if (buffer != nullptr && !sized) return std::nullopt;
  ScanWords(manager, buffer, size, &ranges);
  return ranges;
}

}  // namespace pooch::interpose
