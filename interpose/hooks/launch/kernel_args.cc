#include "interpose/hooks/launch/kernel_args.h"

#include <cstdio>
#include <cstring>

#include "absl/container/inlined_vector.h"
#include "interpose/device/cuda_device.h"
#include "interpose/process/process.h"
#include "interpose/symbols/errors.h"
#include "interpose/symbols/hook_table.h"

namespace pooch::interpose {
namespace {

constexpr size_t kMaxParams = 1024;

// Why the calling thread's last scan found no layout (UnknownLayoutReason), and the error code
// of its last failed layout query.
thread_local char t_why[160] = "";
thread_local int t_code = 0;

template <typename... Args>
std::nullopt_t Unknown(const char* format, Args... args) {
  std::snprintf(t_why, sizeof(t_why), format, args...);
  return std::nullopt;
}

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
  t_code = static_cast<int>(e);
  return e == cudaErrorInvalidValue ? ParamLookup::kPastEnd : ParamLookup::kUnknown;
}

// Note [Queries on a thread without a context]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The driver's parameter queries need a current context. A thread that has not yet called the
// runtime has none, and the launch being scanned is what would bind the runtime's context to it:
// PyTorch's autograd thread launches its first kernel (a fill of the gradients) so, and there
// cuKernelGetParamInfo answers CUDA_ERROR_INVALID_CONTEXT, which would make that launch opaque.
// Such a query is asked again with pooch's context (the runtime's primary one,
// CudaDevice::EnsureContext) made current, as the launch itself would make it.
template <typename Query>
CUresult WithContext(Query&& query) {
  CUresult e = query();
  if (e != CUDA_ERROR_INVALID_CONTEXT) return e;
  const CudaDevice* device = Process::Get().device();
  if (device == nullptr || !device->EnsureContext().ok()) return e;
  return query();
}

ParamLookup FromDriver(CUresult e) {
  if (e == CUDA_SUCCESS) return ParamLookup::kFound;
  t_code = static_cast<int>(e);
  return e == CUDA_ERROR_INVALID_VALUE ? ParamLookup::kPastEnd : ParamLookup::kUnknown;
}

// The arguments at `params`, each at the offset `info` gives it.
std::optional<ParamBuffer> CopyParams(
    void* const* params, absl::FunctionRef<ParamLookup(size_t, size_t*, size_t*)> info) {
  ParamBuffer buffer;
  for (size_t i = 0; i < kMaxParams; ++i) {
    size_t offset = 0, size = 0;
    switch (info(i, &offset, &size)) {
      case ParamLookup::kPastEnd:
        return buffer;
      case ParamLookup::kUnknown:
        return std::nullopt;
      case ParamLookup::kFound:
        if (params == nullptr || params[i] == nullptr) return std::nullopt;
        if (buffer.bytes.size() < offset + size) buffer.bytes.resize(offset + size);
        std::memcpy(buffer.bytes.data() + offset, params[i], size);
        buffer.offsets.push_back(offset);
        break;
    }
  }
  return std::nullopt;
}

}  // namespace

const char* UnknownLayoutReason() { return t_why; }

std::optional<pooch::AccessRange::Mode> WordMode(const pooch::kernels::KernelVerdict* verdict,
                                                 size_t offset) {
  using Mode = pooch::AccessRange::Mode;
  if (verdict == nullptr || !verdict->writes_known) return Mode::kReadWrite;
  const int word = static_cast<int>(offset);
  if (verdict->writes.count(word) > 0) return Mode::kReadWrite;
  if (!verdict->reads_known || verdict->reads.count(word) > 0) return Mode::kRead;
  return std::nullopt;
}

void ScanWords(const KernelMemory& memory, const void* data, size_t bytes, Ranges* out,
               const pooch::kernels::KernelVerdict* verdict, size_t offset) {
  if (memory.manager == nullptr || data == nullptr) return;
  const char* p = static_cast<const char*>(data);
  for (size_t off = 0; off + sizeof(uint64_t) <= bytes; off += sizeof(uint64_t)) {
    uint64_t word = 0;
    std::memcpy(&word, p + off, sizeof(word));
    if (word == 0) continue;
    // Note [Kernel words]. A parameter is 8-byte aligned when it may hold a pointer, so its
    // words are the buffer's 8-byte words.
    const auto mode = WordMode(verdict, offset + off);
    if (!mode.has_value()) continue;
    const auto address = static_cast<uintptr_t>(word);
    // Note [Words into freed memory] (core/residency/residency.cc): freed memory still held
    // counts too, so that its release waits for the kernel.
    if (memory.manager->Holds(address)) {
      out->Add(address, 1, *mode);
    } else if (*mode != pooch::AccessRange::Mode::kRead && memory.small != nullptr &&
               memory.small->InSlab(address)) {
      out->AddSmallWrite(address, *mode);  // Note [Small blocks in the lineage]
    }
  }
}

const pooch::kernels::KernelVerdict* EscapeVerdict(const KernelMemory& memory,
                                                   const pooch::kernels::KernelVerdict* verdict,
                                                   absl::Span<const ParamBytes> params) {
  if (verdict == nullptr || memory.manager == nullptr) return verdict;
  for (const int word : verdict->escapes) {
    const auto at = static_cast<size_t>(word);
    for (const ParamBytes& p : params) {
      // Note [Conditional escapes]: a pointer is one whole word of one parameter.
      if (p.data == nullptr || p.offset > at || p.offset + p.size < at + sizeof(uint64_t)) continue;
      uint64_t value = 0;
      std::memcpy(&value, static_cast<const char*>(p.data) + (at - p.offset), sizeof(value));
      const auto address = static_cast<uintptr_t>(value);
      if (value != 0 && (memory.manager->Holds(address) ||
                         (memory.small != nullptr && memory.small->InSlab(address)))) {
        return nullptr;
      }
    }
  }
  return verdict;
}

std::optional<Ranges> ScanParams(const KernelMemory& memory, void* const* params,
                                 absl::FunctionRef<ParamLookup(size_t, size_t*, size_t*)> info,
                                 const pooch::kernels::KernelVerdict* verdict,
                                 const pooch::kernels::KernelVerdict** launch_verdict) {
  t_code = 0;
  // Inline: one launch's parameters, without a heap allocation on the launch's path.
  absl::InlinedVector<ParamBytes, 16> found;
  for (size_t i = 0; i < kMaxParams; ++i) {
    size_t offset = 0, size = 0;
    switch (info(i, &offset, &size)) {
      case ParamLookup::kPastEnd: {
        // Note [Conditional escapes]: the verdict first, since it gives each word its mode.
        const pooch::kernels::KernelVerdict* launch = EscapeVerdict(memory, verdict, found);
        if (launch_verdict != nullptr) *launch_verdict = launch;
        Ranges ranges;
        for (const ParamBytes& p : found) {
          ScanWords(memory, p.data, p.size, &ranges, launch, p.offset);
        }
        return ranges;
      }
      case ParamLookup::kUnknown:
        return Unknown("the query for parameter %zu's size failed (error %d)", i, t_code);
      case ParamLookup::kFound:
        if (params == nullptr || params[i] == nullptr) {
          return Unknown("parameter %zu has a size but no argument pointer", i);
        }
        found.push_back({offset, size, params[i]});
        break;
    }
  }
  // More parameters than any kernel has: not a layout to trust.
  return Unknown("over %zu parameters", kMaxParams);
}

std::optional<Ranges> RuntimeKernelRanges(const KernelMemory& memory, const void* func, void** args,
                                          const pooch::kernels::KernelVerdict* verdict,
                                          const pooch::kernels::KernelVerdict** launch_verdict) {
  if (launch_verdict != nullptr) *launch_verdict = verdict;
  if (memory.manager == nullptr) return Ranges{};
  const auto param_info = real::cudaFuncGetParamInfo();
  if (param_info == nullptr) return Unknown("the runtime has no cudaFuncGetParamInfo");
  return KeepingLastError([&] {
    return ScanParams(
        memory, args,
        [&](size_t i, size_t* offset, size_t* size) {
          return FromRuntime(param_info(func, i, offset, size));
        },
        verdict, launch_verdict);
  });
}

std::optional<Ranges> KernelHandleRanges(const KernelMemory& memory, cudaKernel_t kernel,
                                         void** args, const pooch::kernels::KernelVerdict* verdict,
                                         const pooch::kernels::KernelVerdict** launch_verdict) {
  if (launch_verdict != nullptr) *launch_verdict = verdict;
  if (memory.manager == nullptr) return Ranges{};
  const auto param_info = real::cuKernelGetParamInfo();
  if (param_info == nullptr) return Unknown("the driver has no cuKernelGetParamInfo");
  return ScanParams(
      memory, args,
      [&](size_t i, size_t* offset, size_t* size) {
        return FromDriver(WithContext(
            [&] { return param_info(reinterpret_cast<CUkernel>(kernel), i, offset, size); }));
      },
      verdict, launch_verdict);
}

std::optional<Ranges> DriverKernelRanges(const KernelMemory& memory, CUfunction f,
                                         void** kernel_params, void** extra,
                                         const pooch::kernels::KernelVerdict* verdict,
                                         const pooch::kernels::KernelVerdict** launch_verdict) {
  if (launch_verdict != nullptr) *launch_verdict = verdict;
  if (memory.manager == nullptr) return Ranges{};
  if (kernel_params != nullptr || extra == nullptr) {
    const auto param_info = real::cuFuncGetParamInfo();
    if (param_info == nullptr) return Unknown("the driver has no cuFuncGetParamInfo");
    return ScanParams(
        memory, kernel_params,
        [&](size_t i, size_t* offset, size_t* size) {
          return FromDriver(WithContext([&] { return param_info(f, i, offset, size); }));
        },
        verdict, launch_verdict);
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
  if (buffer != nullptr && !sized) return Unknown("an argument buffer without its size");
  // The buffer is laid out as the parameters are: its words are theirs.
  const pooch::kernels::KernelVerdict* launch = EscapeVerdict(memory, verdict, {{0, size, buffer}});
  if (launch_verdict != nullptr) *launch_verdict = launch;
  ScanWords(memory, buffer, size, &ranges, launch);
  return ranges;
}

std::optional<ParamBuffer> RuntimeKernelParams(const void* func, void* const* args) {
  const auto param_info = real::cudaFuncGetParamInfo();
  if (param_info == nullptr) return std::nullopt;
  return KeepingLastError([&] {
    return CopyParams(args, [&](size_t i, size_t* offset, size_t* size) {
      return FromRuntime(param_info(func, i, offset, size));
    });
  });
}

std::optional<ParamBuffer> KernelHandleParams(cudaKernel_t kernel, void* const* args) {
  const auto param_info = real::cuKernelGetParamInfo();
  if (param_info == nullptr) return std::nullopt;
  return CopyParams(args, [&](size_t i, size_t* offset, size_t* size) {
    return FromDriver(WithContext(
        [&] { return param_info(reinterpret_cast<CUkernel>(kernel), i, offset, size); }));
  });
}

std::optional<ParamBuffer> DriverKernelParams(CUfunction f, void* const* kernel_params) {
  const auto param_info = real::cuFuncGetParamInfo();
  if (param_info == nullptr || kernel_params == nullptr) return std::nullopt;
  return CopyParams(kernel_params, [&](size_t i, size_t* offset, size_t* size) {
    return FromDriver(WithContext([&] { return param_info(f, i, offset, size); }));
  });
}

}  // namespace pooch::interpose
