// launch_hooks.cc: every kernel launch entry point, under a residency policy (intercept.h).
//
// CUDA 13's host stubs launch `<<<>>>` kernels through __cudaLaunchKernel(_ptsz) with a
// cudaKernel_t (crt/host_runtime.h), not cudaLaunchKernel, which libcudart reaches internally
// without the PLT; PyTorch's addmm and NCCL use cudaLaunchKernelExC, Triton cuLaunchKernel,
// cuBLAS cuLaunchKernelEx (FIELD-NOTES, "Interposing CUDA"). Each launch is one op: every managed
// allocation a parameter word points into is a use of it, in the mode the kernel's verdict gives
// the word (Note [Kernel words] in kernel_args.h; read and written when the kernel is unknown);
// a launch whose parameter sizes cannot be found is opaque, so everything is made resident first
// (Note [Opaque calls] in interpose/process/opaque.h). A launch whose kernel's verdict allows it
// is offered as a replay recipe (Note [Kernel recipes] in kernel_replay.h), relaunched through
// the real entry point of its kind. The verdict a launch runs under is the one its scan leaves
// (Note [Conditional escapes] in core/kernels/analysis.h: null when a word the kernel may store
// points into pooch's memory), so that its words' modes, its recipe and its counts agree. The
// _ptsz forms run on the caller's per-thread stream (Note [Per-thread default stream] in
// interpose/process/streams.h).
//
// Note [Kernel writes]
// ~~~~~~~~~~~~~~~~~~~~
// A launch's scanned uses (Note [Kernel words]) are all it may read or write: the manager makes
// only those resident, so a kernel that reached other memory would already read swapped-out
// bytes. For a kernel whose verdict is exact that is proven from its machine code (Note [Kernel
// write sets] in core/kernels/analysis.h, on which the rule's soundness rests): memory it cannot
// reach, such as an allocation a stale pointer in a struct passed by value points into, need not
// be resident and counts as neither read nor written; the words it may write are the only ones
// that count as written. For an unknown kernel the words are a guess: every allocation they
// point into counts as read and written, and kernels that follow pointers stored in device memory
// are outside the rule (docs/usage.md, "Kernel launches"). The recipes of recomputation (Note
// [Replay] in core/recompute/recomputer.h) rest on the same rule: a launch forgets the recipes
// whose inputs or output it may write (small blocks too: Note [Small blocks in the lineage] in
// kernel_args.h), and no other. Forgetting every recipe at every launch, as
// for an opaque call, would leave no recomputation under a framework whose elementwise ops are
// all kernels (PyTorch's ReLU and residual additions between its convolutions). So do the kept
// host copies of Note [Current host copies] (core/residency/residency_swap.cc): a launch makes
// stale the copies of the allocations it may write, and no other; and the profile the planner
// reads records each use in its mode.
#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "core/base/log.h"
#include "core/base/mutex.h"
#include "interpose/hooks/launch/kernel_args.h"
#include "interpose/hooks/launch/kernel_names.h"
#include "interpose/hooks/launch/kernel_replay.h"
#include "interpose/kernels/launch_verdicts.h"
#include "interpose/process/kernel_recipe_counts.h"
#include "interpose/process/managed.h"
#include "interpose/process/opaque.h"
#include "interpose/process/streams.h"
#include "interpose/symbols/hook_table.h"
#include "interpose/symbols/intercept.h"

namespace pooch::interpose::intercept {
namespace {

// Note [Kernel op names]: the op is named after its kernel while the launch runs.
class OpNameScope {
 public:
  explicit OpNameScope(const char* name) : saved_(internal::g_op_name) {
    if (name != nullptr) internal::g_op_name = name;
  }
  ~OpNameScope() { internal::g_op_name = saved_; }
  OpNameScope(const OpNameScope&) = delete;
  OpNameScope& operator=(const OpNameScope&) = delete;

 private:
  const char* saved_;
};

// Says once per kernel which kernel is opaque and why: the refusal of an opaque call names only
// the entry point, which thousands of kernels share.
void NoteOpaqueKernel(const char* entry, const char* name) {
  struct Said {
    pooch::Mutex mu;
    absl::flat_hash_set<std::string> kernels ABSL_GUARDED_BY(mu);
  };
  static Said* said = new Said;  // never destroyed: hooks run during exit
  const std::string kernel = name != nullptr ? name : "(unnamed)";
  {
    pooch::MutexLock lock(&said->mu);
    if (!said->kernels.insert(kernel).second) return;
  }
  LogLine("%s: kernel %s: %s, so pooch cannot see which memory it touches: an opaque call", entry,
          kernel.c_str(), UnknownLayoutReason());
}

pooch::ResidencyManager* Manager() { return Process::Get().manager(); }

// Note [Small blocks in the lineage] (kernel_args.h): the slabs' words count too.
KernelMemory Memory() { return {Process::Get().manager(), Process::Get().small()}; }

bool Dtr() {
  const Recomputer* r = Process::Get().recomputer();
  return r != nullptr && r->dtr();
}

// The allocation of pooch's holding `a`: the manager's, or a small block (Note [Small
// allocations]), which is an allocation of the program's of its own though it lies in a slab
// the manager holds. A small block is never swapped nor dropped, so it can be a side output
// (Note [Side outputs] in core/lineage/replay_recipe.h), never the plan's output.
std::optional<pooch::AllocationInfo> LookupAllocation(const pooch::ResidencyManager& manager,
                                                      pooch::DeviceAddress a) {
  if (const pooch::SmallAllocator* small = Process::Get().small(); small != nullptr) {
    if (std::optional<pooch::SmallAllocator::Requested> block = small->BlockContaining(a)) {
      pooch::AllocationInfo info;
      info.address = block->address;
      info.bytes = block->bytes;
      info.swappable = false;
      return info;
    }
    if (small->InSlab(a)) return std::nullopt;  // a slab's free space or rounding
  }
  return manager.Lookup(a);
}

// Counts the launch by the first of Note [Kernel recipes]' rules it breaks
// (kernel_recipe_counts.h).
template <typename CopyParams>
void CountLaunch(const char* name, const pooch::kernels::KernelVerdict* verdict,
                 CopyParams&& copy_params) {
  const pooch::ResidencyManager* manager = Manager();
  if (manager == nullptr) return;
  KernelRecipeWhy why = KernelRecipeWhy::kNoVerdict;
  if (verdict != nullptr && !verdict->Replayable()) {
    why = verdict->Exact() ? KernelRecipeWhy::kNotReplayable : KernelRecipeWhy::kUnknown;
  } else if (verdict != nullptr) {
    const std::optional<ParamBuffer> params = copy_params();
    why = !params.has_value()
              ? KernelRecipeWhy::kLayout
              : KernelRecipeOutputs(verdict, *params, [manager](pooch::DeviceAddress a) {
                  return LookupAllocation(*manager, a);
                });
  }
  CountKernelLaunch(why, name);
}

// One launch of the kernel `name` (null: unknown): its scanned ranges, or everything when they
// are unknown. Its recipe (Note [Kernel recipes] in kernel_replay.h) is offered when `verdict`
// allows one: `copy_params()` gives the parameter buffer, `make_relaunch()` what issues it again.
template <typename Ret, typename Forward, typename CopyParams, typename MakeRelaunch>
Ret Launch(const char* name, uintptr_t stream, const std::optional<Ranges>& ranges,
           const pooch::kernels::KernelVerdict* verdict, Forward&& forward,
           CopyParams&& copy_params, MakeRelaunch&& make_relaunch) {
  const OpNameScope op_name(name);
  if (!ranges.has_value()) {
    const char* entry = kFunctions[Index(HookScope::Current())].name;
    NoteOpaqueKernel(entry, name);
    return RunOpaque<Ret>(entry, stream, /*stream_known=*/true, std::forward<Forward>(forward));
  }
  if (KernelRecipeCountsOn()) CountLaunch(name, verdict, copy_params);
  auto make_recipe = [&]() -> std::optional<ReplayRecipe> {
    const pooch::ResidencyManager* manager = Manager();
    std::optional<ParamBuffer> params = copy_params();
    if (manager == nullptr || !params.has_value()) return std::nullopt;
    return KernelRecipe(
        name, *verdict, *std::move(params),
        [manager](pooch::DeviceAddress a) { return LookupAllocation(*manager, a); },
        make_relaunch());
  };
  const ReplaySource replay(make_recipe);
  // Note [Kernel writes]: what its words point into is all it touches.
  return RunOp<Ret>(
      stream, *ranges, std::forward<Forward>(forward),
      {.scanned = true, .replay = MayReplayKernel(verdict, Dtr()) ? &replay : nullptr});
}

// Relaunches through the runtime's entry points, on pooch's stream.
Relaunch RuntimeRelaunch(const void* func, dim3 grid, dim3 block, size_t shared) {
  return [=](uintptr_t stream, void** args) {
    const auto launch = real::cudaLaunchKernel();
    return launch != nullptr && launch(func, grid, block, args, shared,
                                       reinterpret_cast<cudaStream_t>(stream)) == cudaSuccess;
  };
}

Relaunch CooperativeRelaunch(const void* func, dim3 grid, dim3 block, size_t shared) {
  return [=](uintptr_t stream, void** args) {
    const auto launch = real::cudaLaunchCooperativeKernel();
    return launch != nullptr && launch(func, grid, block, args, shared,
                                       reinterpret_cast<cudaStream_t>(stream)) == cudaSuccess;
  };
}

Relaunch KernelHandleRelaunch(cudaKernel_t kernel, dim3 grid, dim3 block, size_t shared) {
  return [=](uintptr_t stream, void** args) {
    const auto launch = real::__cudaLaunchKernel();
    return launch != nullptr && launch(kernel, grid, block, args, shared,
                                       reinterpret_cast<cudaStream_t>(stream)) == cudaSuccess;
  };
}

// The configuration's launch attributes are copied with it.
Relaunch ExCRelaunch(const cudaLaunchConfig_t& config, const void* func) {
  std::vector<cudaLaunchAttribute> attrs(config.attrs, config.attrs + config.numAttrs);
  return [config, func, attrs = std::move(attrs)](uintptr_t stream, void** args) mutable {
    const auto launch = real::cudaLaunchKernelExC();
    cudaLaunchConfig_t c = config;
    c.stream = reinterpret_cast<cudaStream_t>(stream);
    c.attrs = attrs.data();
    return launch != nullptr && launch(&c, func, args) == cudaSuccess;
  };
}

Relaunch DriverRelaunch(CUfunction f, const unsigned grid[3], const unsigned block[3],
                        unsigned shared) {
  return
      [=, g = std::array<unsigned, 3>{grid[0], grid[1], grid[2]},
       b = std::array<unsigned, 3>{block[0], block[1], block[2]}](uintptr_t stream, void** args) {
        const auto launch = real::cuLaunchKernel();
        return launch != nullptr &&
               launch(f, g[0], g[1], g[2], b[0], b[1], b[2], shared,
                      reinterpret_cast<CUstream>(stream), args, nullptr) == CUDA_SUCCESS;
      };
}

Relaunch DriverExRelaunch(const CUlaunchConfig& config, CUfunction f) {
  std::vector<CUlaunchAttribute> attrs(config.attrs, config.attrs + config.numAttrs);
  return [config, f, attrs = std::move(attrs)](uintptr_t stream, void** args) mutable {
    const auto launch = real::cuLaunchKernelEx();
    CUlaunchConfig c = config;
    c.hStream = reinterpret_cast<CUstream>(stream);
    c.attrs = attrs.data();
    return launch != nullptr && launch(&c, f, args, nullptr) == CUDA_SUCCESS;
  };
}

}  // namespace

cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                               size_t sharedMem, cudaStream_t stream) {
  const pooch::kernels::KernelVerdict* verdict = VerdictForKernel(kernel);
  const std::optional<Ranges> ranges =
      KernelHandleRanges(Memory(), kernel, args, verdict, &verdict);
  return Launch<cudaError_t>(
      KernelHandleName(kernel), StreamAsInteger(stream), ranges, verdict,
      [&] {
        return real::__cudaLaunchKernel()(kernel, gridDim, blockDim, args, sharedMem, stream);
      },
      [&] { return KernelHandleParams(kernel, args); },
      [&] { return KernelHandleRelaunch(kernel, gridDim, blockDim, sharedMem); });
}

cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                                    size_t sharedMem, cudaStream_t stream) {
  const pooch::kernels::KernelVerdict* verdict = VerdictForKernel(kernel);
  const std::optional<Ranges> ranges =
      KernelHandleRanges(Memory(), kernel, args, verdict, &verdict);
  return Launch<cudaError_t>(
      KernelHandleName(kernel), StreamAsInteger(PerThread(stream)), ranges, verdict,
      [&] {
        return real::__cudaLaunchKernel_ptsz()(kernel, gridDim, blockDim, args, sharedMem, stream);
      },
      [&] { return KernelHandleParams(kernel, args); },
      [&] { return KernelHandleRelaunch(kernel, gridDim, blockDim, sharedMem); });
}

cudaError_t cudaLaunchKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                             size_t sharedMem, cudaStream_t stream) {
  const pooch::kernels::KernelVerdict* verdict = VerdictForHostStub(func);
  const std::optional<Ranges> ranges = RuntimeKernelRanges(Memory(), func, args, verdict, &verdict);
  return Launch<cudaError_t>(
      RuntimeFunctionName(func), StreamAsInteger(stream), ranges, verdict,
      [&] { return real::cudaLaunchKernel()(func, gridDim, blockDim, args, sharedMem, stream); },
      [&] { return RuntimeKernelParams(func, args); },
      [&] { return RuntimeRelaunch(func, gridDim, blockDim, sharedMem); });
}

cudaError_t cudaLaunchKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                  size_t sharedMem, cudaStream_t stream) {
  const pooch::kernels::KernelVerdict* verdict = VerdictForHostStub(func);
  const std::optional<Ranges> ranges = RuntimeKernelRanges(Memory(), func, args, verdict, &verdict);
  return Launch<cudaError_t>(
      RuntimeFunctionName(func), StreamAsInteger(PerThread(stream)), ranges, verdict,
      [&] {
        return real::cudaLaunchKernel_ptsz()(func, gridDim, blockDim, args, sharedMem, stream);
      },
      [&] { return RuntimeKernelParams(func, args); },
      [&] { return RuntimeRelaunch(func, gridDim, blockDim, sharedMem); });
}

cudaError_t cudaLaunchCooperativeKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                        size_t sharedMem, cudaStream_t stream) {
  const pooch::kernels::KernelVerdict* verdict = VerdictForHostStub(func);
  const std::optional<Ranges> ranges = RuntimeKernelRanges(Memory(), func, args, verdict, &verdict);
  return Launch<cudaError_t>(
      RuntimeFunctionName(func), StreamAsInteger(stream), ranges, verdict,
      [&] {
        return real::cudaLaunchCooperativeKernel()(func, gridDim, blockDim, args, sharedMem,
                                                   stream);
      },
      [&] { return RuntimeKernelParams(func, args); },
      [&] { return CooperativeRelaunch(func, gridDim, blockDim, sharedMem); });
}

cudaError_t cudaLaunchCooperativeKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim,
                                             void** args, size_t sharedMem, cudaStream_t stream) {
  const pooch::kernels::KernelVerdict* verdict = VerdictForHostStub(func);
  const std::optional<Ranges> ranges = RuntimeKernelRanges(Memory(), func, args, verdict, &verdict);
  return Launch<cudaError_t>(
      RuntimeFunctionName(func), StreamAsInteger(PerThread(stream)), ranges, verdict,
      [&] {
        return real::cudaLaunchCooperativeKernel_ptsz()(func, gridDim, blockDim, args, sharedMem,
                                                        stream);
      },
      [&] { return RuntimeKernelParams(func, args); },
      [&] { return CooperativeRelaunch(func, gridDim, blockDim, sharedMem); });
}

// The stream is in the configuration; a null configuration is the real call's error to give.
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args) {
  if (config == nullptr) return real::cudaLaunchKernelExC()(config, func, args);
  const pooch::kernels::KernelVerdict* verdict = VerdictForHostStub(func);
  const std::optional<Ranges> ranges = RuntimeKernelRanges(Memory(), func, args, verdict, &verdict);
  return Launch<cudaError_t>(
      RuntimeFunctionName(func), StreamAsInteger(config->stream), ranges, verdict,
      [&] { return real::cudaLaunchKernelExC()(config, func, args); },
      [&] { return RuntimeKernelParams(func, args); }, [&] { return ExCRelaunch(*config, func); });
}

cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config, const void* func,
                                     void** args) {
  if (config == nullptr) return real::cudaLaunchKernelExC_ptsz()(config, func, args);
  const pooch::kernels::KernelVerdict* verdict = VerdictForHostStub(func);
  const std::optional<Ranges> ranges = RuntimeKernelRanges(Memory(), func, args, verdict, &verdict);
  return Launch<cudaError_t>(
      RuntimeFunctionName(func), StreamAsInteger(PerThread(config->stream)), ranges, verdict,
      [&] { return real::cudaLaunchKernelExC_ptsz()(config, func, args); },
      [&] { return RuntimeKernelParams(func, args); }, [&] { return ExCRelaunch(*config, func); });
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                        unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                        void** kernelParams, void** extra) {
  const unsigned grid[3] = {gridDimX, gridDimY, gridDimZ};
  const unsigned block[3] = {blockDimX, blockDimY, blockDimZ};
  const pooch::kernels::KernelVerdict* verdict = VerdictForFunction(f);
  const std::optional<Ranges> ranges =
      DriverKernelRanges(Memory(), f, kernelParams, extra, verdict, &verdict);
  return Launch<CUresult>(
      DriverFunctionName(f), StreamAsInteger(hStream), ranges, verdict,
      [&] {
        return real::cuLaunchKernel()(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
                                      blockDimZ, sharedMemBytes, hStream, kernelParams, extra);
      },
      [&] { return DriverKernelParams(f, kernelParams); },
      [&] { return DriverRelaunch(f, grid, block, sharedMemBytes); });
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                             unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                             unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                             void** kernelParams, void** extra) {
  const unsigned grid[3] = {gridDimX, gridDimY, gridDimZ};
  const unsigned block[3] = {blockDimX, blockDimY, blockDimZ};
  const pooch::kernels::KernelVerdict* verdict = VerdictForFunction(f);
  const std::optional<Ranges> ranges =
      DriverKernelRanges(Memory(), f, kernelParams, extra, verdict, &verdict);
  return Launch<CUresult>(
      DriverFunctionName(f), StreamAsInteger(PerThread(hStream)), ranges, verdict,
      [&] {
        return real::cuLaunchKernel_ptsz()(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
                                           blockDimZ, sharedMemBytes, hStream, kernelParams, extra);
      },
      [&] { return DriverKernelParams(f, kernelParams); },
      [&] { return DriverRelaunch(f, grid, block, sharedMemBytes); });
}

CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                          void** extra) {
  if (config == nullptr) return real::cuLaunchKernelEx()(config, f, kernelParams, extra);
  const pooch::kernels::KernelVerdict* verdict = VerdictForFunction(f);
  const std::optional<Ranges> ranges =
      DriverKernelRanges(Memory(), f, kernelParams, extra, verdict, &verdict);
  return Launch<CUresult>(
      DriverFunctionName(f), StreamAsInteger(config->hStream), ranges, verdict,
      [&] { return real::cuLaunchKernelEx()(config, f, kernelParams, extra); },
      [&] { return DriverKernelParams(f, kernelParams); },
      [&] { return DriverExRelaunch(*config, f); });
}

CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                               void** extra) {
  if (config == nullptr) return real::cuLaunchKernelEx_ptsz()(config, f, kernelParams, extra);
  const pooch::kernels::KernelVerdict* verdict = VerdictForFunction(f);
  const std::optional<Ranges> ranges =
      DriverKernelRanges(Memory(), f, kernelParams, extra, verdict, &verdict);
  return Launch<CUresult>(
      DriverFunctionName(f), StreamAsInteger(PerThread(config->hStream)), ranges, verdict,
      [&] { return real::cuLaunchKernelEx_ptsz()(config, f, kernelParams, extra); },
      [&] { return DriverKernelParams(f, kernelParams); },
      [&] { return DriverExRelaunch(*config, f); });
}

}  // namespace pooch::interpose::intercept
