#include "interpose/kernels/launch_verdicts.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/base/log.h"
#include "core/base/mutex.h"
#include "core/kernels/cubin_analysis.h"
#include "core/kernels/cubin_info.h"
#include "core/kernels/tools.h"
#include "core/kernels/verdict_cache.h"
#include "interpose/kernels/module_registry.h"
#include "interpose/symbols/hook_table.h"

namespace pooch::interpose {
namespace {

using pooch::kernels::KernelVerdict;

// A cubin extracted from a module, kept as a file for the process's life.
struct ExtractedCubin {
  std::string path;
  pooch::kernels::CubinInfo info;
};

// The verdicts of one module's kernels for the architecture, by name: those on disk and those
// analysed so far (Note [One kernel at a time] in core/kernels/cubin_analysis.h).
struct ModuleVerdicts {
  std::string key;         // the disk cache's
  bool extracted = false;  // cubins holds what the module has for the architecture
  std::vector<ExtractedCubin> cubins;
  // Node-based: VerdictFor* hand out pointers to its values for the process's life, and a
  // flat map moves them when it grows (a later kernel of the same module analysed).
  absl::node_hash_map<std::string, KernelVerdict> by_name;
  absl::flat_hash_set<std::string> failed;  // analysed and found unknown-worthy: not again
};

// Files written for the tools, removed at exit.
std::vector<std::string>* TempPaths() {
  static auto* paths = new std::vector<std::string>;
  return paths;
}

void RemoveTempPaths() {
  // Files first, then their folders (pushed before them).
  for (auto it = TempPaths()->rbegin(); it != TempPaths()->rend(); ++it) {
    if (unlink(it->c_str()) != 0) rmdir(it->c_str());
  }
}

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
    if (slot == nullptr) slot = LoadModule(module);
    if (slot == nullptr) return nullptr;
    auto it = slot->by_name.find(name);
    if (it == slot->by_name.end() && !slot->failed.contains(name)) {
      Analyse(module, slot.get(), name);
      it = slot->by_name.find(name);
    }
    return it == slot->by_name.end() ? nullptr : &it->second;
  }

  // The module's entry with what the disk cache holds; nullptr when it cannot be analysed.
  std::unique_ptr<ModuleVerdicts> LoadModule(int module)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(analysis_mu_);
  // Analyses kernel `name` of `module` into `m` (or marks it failed).
  void Analyse(int module, ModuleVerdicts* m, const std::string& name)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(analysis_mu_);
  bool Extract(int module, ModuleVerdicts* m) ABSL_EXCLUSIVE_LOCKS_REQUIRED(analysis_mu_);
  void StoreMerged(ModuleVerdicts* m) ABSL_EXCLUSIVE_LOCKS_REQUIRED(analysis_mu_);
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
  std::string temp_dir_ ABSL_GUARDED_BY(analysis_mu_);  // the extracted cubins' folder
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

std::unique_ptr<ModuleVerdicts> LaunchVerdicts::LoadModule(int module) {
  const pooch::kernels::ModuleImage image = ModuleRegistry::Get().Image(module);
  if (image.kind == pooch::kernels::ModuleImage::Kind::kOther || Arch().empty() || tools_ == 0) {
    return nullptr;
  }
  auto out = std::make_unique<ModuleVerdicts>();
  out->key = pooch::kernels::VerdictCacheKey(image.data, image.size, arch_);
  if (cache_ == nullptr) return out;
  if (std::optional<std::vector<KernelVerdict>> cached = cache_->Load(out->key, arch_)) {
    for (KernelVerdict& v : *cached) out->by_name.emplace(v.name, std::move(v));
    Log(Severity::kInfo, "kernel analysis: module %d (%zu bytes, %s): %zu kernels from the cache",
        module, image.size, arch_.c_str(), out->by_name.size());
  }
  return out;
}

bool LaunchVerdicts::Extract(int module, ModuleVerdicts* m) {
  if (m->extracted) return true;
  if (temp_dir_.empty()) {
    char tmpl[] = "/tmp/pooch-kernels-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return false;
    temp_dir_ = tmpl;
    TempPaths()->push_back(temp_dir_);
    atexit(RemoveTempPaths);
  }
  const std::string dir = absl::StrCat(temp_dir_, "/m", module);
  if (mkdir(dir.c_str(), 0700) != 0) return false;
  TempPaths()->push_back(dir);
  const pooch::kernels::ModuleImage image = ModuleRegistry::Get().Image(module);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<std::string>> cubins =
      pooch::kernels::ExtractModuleCubins(image, arch_, dir);
  for (const char* name : {"module.cubin", "module.fatbin"}) {
    TempPaths()->push_back(absl::StrCat(dir, "/", name));
  }
  if (cubins.status().code() == absl::StatusCode::kFailedPrecondition) {
    // The tools cannot read this architecture: no module can be analysed.
    Log(Severity::kInfo, "kernel analysis off: %s (POOCH_KERNEL_ARCH names another)",
        std::string(cubins.status().message()).c_str());
    tools_ = 0;
    return false;
  }
  if (!cubins.ok()) {
    Log(Severity::kInfo,
        "kernel analysis: module %d (%zu bytes) failed: %s; its kernels are unknown", module,
        image.size, std::string(cubins.status().message()).c_str());
    return false;
  }
  for (const std::string& path : *cubins) {
    TempPaths()->push_back(path);
    std::ifstream f(path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (absl::StatusOr<pooch::kernels::CubinInfo> info = pooch::kernels::ReadCubinInfo(bytes);
        info.ok()) {
      m->cubins.push_back({path, std::move(*info)});
    }
  }
  m->extracted = true;
  Log(Severity::kInfo, "kernel analysis: module %d (%zu bytes, %s): %zu cubins extracted in %.3f s",
      module, image.size, arch_.c_str(), m->cubins.size(),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return true;
}

void LaunchVerdicts::Analyse(int module, ModuleVerdicts* m, const std::string& name) {
  m->failed.insert(name);  // unless found below
  if (!ToolsFound() || !Extract(module, m)) return;
  const auto start = std::chrono::steady_clock::now();
  for (const ExtractedCubin& cubin : m->cubins) {
    absl::StatusOr<KernelVerdict> v =
        pooch::kernels::AnalyzeCubinKernel(cubin.path, cubin.info, name);
    if (v.status().code() == absl::StatusCode::kNotFound) continue;
    if (!v.ok()) {
      Log(Severity::kInfo, "kernel analysis: %s in module %d failed: %s; it is unknown",
          name.c_str(), module, std::string(v.status().message()).c_str());
      return;
    }
    m->failed.erase(name);
    m->by_name.emplace(name, std::move(*v));
    Log(Severity::kInfo, "kernel analysis: %s (module %d, %s) in %.3f s", name.c_str(), module,
        arch_.c_str(),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    StoreMerged(m);
    return;
  }
}

// Note [Kernel verdict cache]: the module's file gains each kernel as it is analysed. What
// another process stored meanwhile is read again and kept, so that the last rename loses
// nothing either wrote before it read; two processes renaming at the same instant may still lose
// one's kernels, which the next run analyses again.
void LaunchVerdicts::StoreMerged(ModuleVerdicts* m) {
  if (cache_ == nullptr) return;
  std::vector<KernelVerdict> all;
  if (std::optional<std::vector<KernelVerdict>> on_disk = cache_->Load(m->key, arch_)) {
    for (KernelVerdict& v : *on_disk) {
      if (!m->by_name.contains(v.name)) all.push_back(std::move(v));
    }
  }
  for (const auto& [name, v] : m->by_name) all.push_back(v);
  if (absl::Status s = cache_->Store(m->key, arch_, all); !s.ok() && !cache_error_said_) {
    cache_error_said_ = true;
    LogLine("kernel cache: %s; verdicts are kept in memory only", std::string(s.message()).c_str());
  }
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
