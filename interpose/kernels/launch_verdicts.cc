#include "interpose/kernels/launch_verdicts.h"

#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/base/log.h"
#include "core/base/mutex.h"
#include "core/kernels/cubin_analysis.h"
#include "core/kernels/tools.h"
#include "core/kernels/verdict_cache.h"
#include "interpose/kernels/module_registry.h"
#include "interpose/symbols/hook_table.h"

namespace pooch::interpose {
namespace {

using pooch::kernels::KernelVerdict;

// The verdicts of one module's kernels for the architecture, by name.
struct ModuleVerdicts {
  bool analysed = false;
  absl::flat_hash_map<std::string, KernelVerdict> by_name;
};

class LaunchVerdicts {
 public:
  void Configure(const LaunchVerdictOptions& options) {
    MutexLock lock(&mu_);
    options_ = options;
    if (!options.cache_dir.empty()) {
      cache_ = std::make_unique<pooch::kernels::VerdictDiskCache>(options.cache_dir);
    }
    enabled_.store(options.enabled, std::memory_order_release);
    configured_.store(true, std::memory_order_release);
  }
  bool enabled() const { return enabled_.load(std::memory_order_acquire); }
  bool configured() const { return configured_.load(std::memory_order_acquire); }

  // The verdict of handle `key` of `kind`, found once (`ask_name` gives the kernel's name from
  // the driver when the registry does not know the handle).
  template <typename AskName>
  const KernelVerdict* Find(Handle kind, const void* key, AskName&& ask_name) {
    if (!enabled() || key == nullptr) return nullptr;
    const std::pair<int, uintptr_t> handle{static_cast<int>(kind),
                                           reinterpret_cast<uintptr_t>(key)};
    {
      MutexLock lock(&mu_);
      if (auto it = by_handle_.find(handle); it != by_handle_.end()) return it->second;
    }
    const KernelVerdict* found = Resolve(kind, key, ask_name);
    MutexLock lock(&mu_);
    return by_handle_.emplace(handle, found).first->second;
  }

 private:
  template <typename AskName>
  const KernelVerdict* Resolve(Handle kind, const void* key, AskName&& ask_name) {
    ModuleRegistry& registry = ModuleRegistry::Get();
    ModuleRegistry::Origin origin;
    std::vector<int> modules;
    std::string name;
    if (registry.Find(kind, key, &origin) && origin.module != ModuleRegistry::kNone) {
      modules = {origin.module};
      name = origin.name;
    } else {
      const char* asked = ask_name();
      if (asked == nullptr) return nullptr;
      name = asked;
      modules = registry.ModulesNaming(name);
    }
    if (modules.empty()) return nullptr;
    std::vector<const KernelVerdict*> candidates;
    for (int module : modules) {
      const KernelVerdict* v = InModule(module, name);
      if (v == nullptr) return nullptr;  // one candidate unknown: the kernel is
      candidates.push_back(v);
    }
    if (candidates.size() == 1) return candidates.front();
    MutexLock lock(&mu_);
    merged_.push_back(pooch::kernels::MergeVerdicts(candidates));
    return &merged_.back();
  }

  const KernelVerdict* InModule(int module, const std::string& name) {
    MutexLock lock(&analysis_mu_);
    std::unique_ptr<ModuleVerdicts>& slot = modules_[module];
    if (slot == nullptr) slot = Analyse(module);
    auto it = slot->by_name.find(name);
    return it == slot->by_name.end() ? nullptr : &it->second;
  }

  std::unique_ptr<ModuleVerdicts> Analyse(int module) ABSL_EXCLUSIVE_LOCKS_REQUIRED(analysis_mu_);
  const std::string& Arch() ABSL_EXCLUSIVE_LOCKS_REQUIRED(analysis_mu_);
  bool ToolsFound() ABSL_EXCLUSIVE_LOCKS_REQUIRED(analysis_mu_);

  std::atomic<bool> enabled_{false};
  std::atomic<bool> configured_{false};
  Mutex mu_;
  LaunchVerdictOptions options_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::pair<int, uintptr_t>, const KernelVerdict*> by_handle_
      ABSL_GUARDED_BY(mu_);
  std::deque<KernelVerdict> merged_ ABSL_GUARDED_BY(mu_);
  // One analysis at a time: a module is analysed once, and the tools are heavy.
  // Taken before mu_ when both are held (Arch reads the options).
  Mutex analysis_mu_;
  std::unique_ptr<pooch::kernels::VerdictDiskCache> cache_;  // set by Configure only
  absl::flat_hash_map<int, std::unique_ptr<ModuleVerdicts>> modules_ ABSL_GUARDED_BY(analysis_mu_);
  std::string arch_ ABSL_GUARDED_BY(analysis_mu_);
  int tools_ ABSL_GUARDED_BY(analysis_mu_) = -1;  // -1 not looked for, 0 missing, 1 found
  bool cache_error_said_ ABSL_GUARDED_BY(analysis_mu_) = false;
};

LaunchVerdicts& TheVerdicts() {
  static LaunchVerdicts* verdicts = new LaunchVerdicts;  // never destroyed: hooks run at exit
  return *verdicts;
}

// The folder of libpooch.so, for build/cuda-tools beside it.
std::string LibraryDir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&ConfigureLaunchVerdicts), &info) == 0 ||
      info.dli_fname == nullptr) {
    return "";
  }
  const std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

const std::string& LaunchVerdicts::Arch() {
  if (!arch_.empty()) return arch_;
  {
    MutexLock lock(&mu_);
    arch_ = options_.arch;
  }
  if (!arch_.empty()) return arch_;
  CUdevice device = 0;
  if (const auto get_device = real::cuCtxGetDevice();
      get_device == nullptr || get_device(&device) != CUDA_SUCCESS) {
    device = 0;
  }
  int major = 0, minor = 0;
  const auto attribute = real::cuDeviceGetAttribute();
  if (attribute != nullptr &&
      attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device) == CUDA_SUCCESS &&
      attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device) == CUDA_SUCCESS) {
    arch_ = absl::StrCat("sm_", major, minor);
  }
  return arch_;
}

bool LaunchVerdicts::ToolsFound() {
  if (tools_ >= 0) return tools_ == 1;
  tools_ = 1;
  for (const char* tool : {"nvdisasm", "cuobjdump"}) {
    absl::StatusOr<std::string> path = pooch::kernels::FindTool(tool);
    if (!path.ok()) {
      LogLine(
          "kernel analysis off: %s; every kernel counts as reading and writing all its "
          "parameter words point into",
          std::string(path.status().message()).c_str());
      tools_ = 0;
      break;
    }
  }
  return tools_ == 1;
}

std::unique_ptr<ModuleVerdicts> LaunchVerdicts::Analyse(int module) {
  auto out = std::make_unique<ModuleVerdicts>();
  const pooch::kernels::ModuleImage image = ModuleRegistry::Get().Image(module);
  if (image.kind == pooch::kernels::ModuleImage::Kind::kOther || Arch().empty() || tools_ == 0) {
    return out;
  }
  const auto start = std::chrono::steady_clock::now();
  const std::string key = pooch::kernels::VerdictCacheKey(image.data, image.size, arch_);
  std::optional<std::vector<KernelVerdict>> verdicts;
  if (cache_ != nullptr) verdicts = cache_->Load(key, arch_);
  const bool cached = verdicts.has_value();
  if (!cached) {
    if (!ToolsFound()) return out;
    absl::StatusOr<std::vector<KernelVerdict>> analysed =
        pooch::kernels::AnalyzeModuleImage(image, arch_);
    if (analysed.status().code() == absl::StatusCode::kFailedPrecondition) {
      // The tools cannot read this architecture: no module can be analysed.
      Log(Severity::kInfo, "kernel analysis off: %s (POOCH_KERNEL_ARCH names another)",
          std::string(analysed.status().message()).c_str());
      tools_ = 0;
      return out;
    }
    if (!analysed.ok()) {
      Log(Severity::kInfo,
          "kernel analysis: module %d (%zu bytes) failed: %s; its kernels are "
          "unknown",
          module, image.size, std::string(analysed.status().message()).c_str());
      return out;
    }
    verdicts = std::move(*analysed);
    if (cache_ != nullptr) {
      if (absl::Status s = cache_->Store(key, arch_, *verdicts); !s.ok() && !cache_error_said_) {
        cache_error_said_ = true;
        LogLine("kernel cache: %s; verdicts are kept in memory only",
                std::string(s.message()).c_str());
      }
    }
  }
  out->analysed = true;
  for (KernelVerdict& v : *verdicts) out->by_name.emplace(v.name, std::move(v));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Log(Severity::kInfo, "kernel analysis: module %d (%zu bytes, %s): %zu kernels in %.3f s%s",
      module, image.size, arch_.c_str(), out->by_name.size(), seconds, cached ? " (cache)" : "");
  return out;
}

const char* KernelName(CUkernel kernel) {
  const auto get_name = real::cuKernelGetName();
  const char* name = nullptr;
  if (get_name == nullptr || get_name(&name, kernel) != CUDA_SUCCESS) return nullptr;
  return name;
}

const char* FunctionName(CUfunction f) {
  const auto get_name = real::cuFuncGetName();
  const char* name = nullptr;
  if (get_name == nullptr || get_name(&name, f) != CUDA_SUCCESS) return nullptr;
  return name;
}

}  // namespace

void ConfigureLaunchVerdicts(const LaunchVerdictOptions& options) {
  if (const std::string dir = LibraryDir(); !dir.empty()) {
    pooch::kernels::AddToolPrefix(dir + "/../cuda-tools");
  }
  TheVerdicts().Configure(options);
}

bool LaunchVerdictsEnabled() { return TheVerdicts().enabled(); }
bool LaunchVerdictsConfigured() { return TheVerdicts().configured(); }

const KernelVerdict* VerdictForKernel(cudaKernel_t kernel) {
  return TheVerdicts().Find(Handle::kKernel, kernel,
                            [&] { return KernelName(reinterpret_cast<CUkernel>(kernel)); });
}

const KernelVerdict* VerdictForHostStub(const void* func) {
  ModuleRegistry::Origin origin;
  // cudaLaunchKernel accepts a cudaKernel_t in place of a host stub; the driver is not asked for
  // the name of what may be neither.
  const Handle kind = ModuleRegistry::Get().Find(Handle::kHostStub, func, &origin)
                          ? Handle::kHostStub
                          : Handle::kKernel;
  return TheVerdicts().Find(kind, func, []() -> const char* { return nullptr; });
}

const KernelVerdict* VerdictForFunction(CUfunction f) {
  return TheVerdicts().Find(Handle::kFunction, f, [&] { return FunctionName(f); });
}

}  // namespace pooch::interpose
