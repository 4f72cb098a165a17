// libcuda.so.1: modules and libraries (cuModule*, cuLibrary*), their functions and kernels
// (cuModuleGetFunction, cuLibraryGetKernel, cuKernel*, cuFunc*) and global variables.
#include "tests/simgpu/driver/modules/cuda_modules.h"

#include <elf.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "tests/simgpu/driver/libcuda/driver_common.h"
#include "tests/simgpu/driver/modules/fatbin.h"
#include "tests/simgpu/driver/modules/ptx.h"

using simgpu::Device;
using simgpu::Err;
using simgpu::driver::BlockLimits;
using simgpu::driver::FindFunction;
using simgpu::driver::Function;
using simgpu::driver::Module;
using simgpu::driver::ToCU;

namespace simgpu::driver {

// A cubin taken out of the module's image (decompressed if need be) and parsed.
struct LoadedCubin {
  std::vector<uint8_t> bytes;  // empty when the cubin is used in place
  cubin::Cubin info;           // its globals' initial contents point into the cubin
  int arch;
};

struct Module {
  std::vector<uint8_t> owned;  // the image's copy, unless the caller keeps it (preserved)
  const uint8_t* image = nullptr;
  uint64_t image_bytes = 0;
  std::vector<fatbin::Entry> entries;       // of a fat binary (empty for a bare cubin or PTX)
  std::vector<const fatbin::Entry*> order;  // its ELF entries, in search order
  size_t parsed = 0;                        // how many of `order` are in `cubins`
  std::vector<std::unique_ptr<LoadedCubin>> cubins;
  std::string ptx;  // the PTX text (a PTX image or a fat binary's PTX entries), when needed
  bool ptx_read = false;
  std::vector<std::unique_ptr<cubin::KernelInfo>> ptx_kernels;  // read from `ptx`
  std::map<std::string, std::unique_ptr<Function>> functions;
  struct Var {
    CUdeviceptr ptr;
    size_t bytes;
  };
  std::map<std::string, Var> globals;  // allocated on first request
};

namespace {

std::mutex g_mu;
// Guarded by g_mu: the live handles, and every Module's lazily filled state.
std::set<Module*>* g_modules = new std::set<Module*>;
std::unordered_map<const void*, Function*>* g_functions =
    new std::unordered_map<const void*, Function*>;
std::set<std::string>* g_names = new std::set<std::string>;  // interned kernel names

Module* FindModuleLocked(const void* handle) {
  auto* m = static_cast<Module*>(const_cast<void*>(handle));
  return g_modules->count(m) != 0 ? m : nullptr;
}

const char* Intern(const std::string& s) { return g_names->insert(s).first->c_str(); }

// The size of a bare cubin: its furthest section or header table.
uint64_t ElfBytes(const uint8_t* p) {
  Elf64_Ehdr eh;
  std::memcpy(&eh, p, sizeof eh);
  uint64_t end = eh.e_shoff + uint64_t{eh.e_shnum} * eh.e_shentsize;
  end = std::max<uint64_t>(end, eh.e_phoff + uint64_t{eh.e_phnum} * eh.e_phentsize);
  for (int i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, p + eh.e_shoff + static_cast<uint64_t>(i) * eh.e_shentsize, sizeof sh);
    if (sh.sh_type != SHT_NOBITS) end = std::max<uint64_t>(end, sh.sh_offset + sh.sh_size);
  }
  return end;
}

bool LooksLikePtx(const char* s) {
  return std::strstr(s, ".version") != nullptr || std::strstr(s, ".entry") != nullptr;
}

// Takes `image` (a fat binary, its wrapper, a cubin or PTX text), copying it unless preserved.
CUresult Load(const char* api, const void* image, bool preserved, Module** out) {
  if (image == nullptr || out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const auto* p = static_cast<const uint8_t*>(image);
  uint32_t magic;
  std::memcpy(&magic, p, sizeof magic);
  if (magic == fatbin::kWrapperMagic) {  // __fatBinC_Wrapper_t: its data is the fat binary
    const void* data;
    std::memcpy(&data, p + 8, sizeof data);
    p = static_cast<const uint8_t*>(data);
    if (p == nullptr) return CUDA_ERROR_INVALID_IMAGE;
    std::memcpy(&magic, p, sizeof magic);
  }
  auto m = std::make_unique<Module>();
  uint64_t bytes = 0;
  if (magic == fatbin::kFatbinMagic) {
    bytes = fatbin::FatbinBytes(p);
  } else if (magic == fatbin::kElfMagic) {
    bytes = ElfBytes(p);
  } else if (LooksLikePtx(reinterpret_cast<const char*>(p))) {
    bytes = std::strlen(reinterpret_cast<const char*>(p)) + 1;
  } else {
    std::fprintf(stderr, "simgpu: %s: the image is not a fat binary, a cubin or PTX\n", api);
    return CUDA_ERROR_INVALID_IMAGE;
  }
  if (preserved) {
    m->image = p;
  } else {
    m->owned.assign(p, p + bytes);
    m->image = m->owned.data();
  }
  m->image_bytes = bytes;
  std::string why;
  if (magic == fatbin::kFatbinMagic) {
    if (!fatbin::ParseFatbin(m->image, bytes, &m->entries, &why)) {
      std::fprintf(stderr, "simgpu: %s: %s\n", api, why.c_str());
      return CUDA_ERROR_INVALID_IMAGE;
    }
    m->order = fatbin::CubinSearchOrder(m->entries, DeviceArch());
  } else if (magic == fatbin::kElfMagic) {
    auto c = std::make_unique<LoadedCubin>();
    if (!cubin::ParseCubin(m->image, bytes, &c->info, &why)) {
      std::fprintf(stderr, "simgpu: %s: %s\n", api, why.c_str());
      return CUDA_ERROR_INVALID_IMAGE;
    }
    c->arch = c->info.arch;
    m->cubins.push_back(std::move(c));
  } else {
    m->ptx.assign(reinterpret_cast<const char*>(m->image));
    m->ptx_read = true;
  }
  std::lock_guard<std::mutex> lock(g_mu);
  *out = m.release();
  g_modules->insert(*out);
  return CUDA_SUCCESS;
}

// Decompresses and parses the module's next ELF entry; false when none is left.
bool ParseNextLocked(Module* m) {
  while (m->parsed < m->order.size()) {
    const fatbin::Entry& e = *m->order[m->parsed++];
    auto c = std::make_unique<LoadedCubin>();
    c->arch = e.arch;
    std::string why;
    const uint8_t* data = e.payload;
    size_t bytes = e.payload_bytes;
    if (e.compression != fatbin::Compression::kNone) {
      if (!fatbin::Decompress(e, &c->bytes, &why)) {
        std::fprintf(stderr, "simgpu: module: sm_%d cubin: %s\n", e.arch, why.c_str());
        continue;
      }
      data = c->bytes.data();
      bytes = c->bytes.size();
    }
    if (!cubin::ParseCubin(data, bytes, &c->info, &why)) {
      std::fprintf(stderr, "simgpu: module: sm_%d cubin: %s\n", e.arch, why.c_str());
      continue;
    }
    m->cubins.push_back(std::move(c));
    return true;
  }
  return false;
}

// The kernel's info from the first cubin (in search order) that has it.
const cubin::KernelInfo* FindKernelLocked(Module* m, const std::string& name, int* arch) {
  for (size_t i = 0;; ++i) {
    if (i == m->cubins.size() && !ParseNextLocked(m)) return nullptr;
    auto it = m->cubins[i]->info.kernels.find(name);
    if (it != m->cubins[i]->info.kernels.end()) {
      *arch = m->cubins[i]->arch;
      return &it->second;
    }
  }
}

// The module's PTX text (a PTX image, or its fat binary's PTX entries), read on first need.
const std::string& PtxLocked(Module* m) {
  if (!m->ptx_read) {
    m->ptx_read = true;
    for (const fatbin::Entry& e : m->entries) {
      if (e.kind != fatbin::Kind::kPtx) continue;
      std::vector<uint8_t> text;
      std::string why;
      if (!fatbin::Decompress(e, &text, &why)) {
        std::fprintf(stderr, "simgpu: module: PTX for sm_%d: %s\n", e.arch, why.c_str());
        continue;
      }
      m->ptx.append(text.begin(), text.end());
      m->ptx.push_back('\n');
    }
  }
  return m->ptx;
}

CUresult GetFunction(Module* m, const char* name, Function** out) {
  std::string key(name);
  auto it = m->functions.find(key);
  if (it != m->functions.end()) {
    *out = it->second.get();
    return CUDA_SUCCESS;
  }
  int arch = 0;
  const cubin::KernelInfo* info = FindKernelLocked(m, key, &arch);
  std::string why;
  if (info == nullptr) {
    // No cubin has it: its PTX declaration (Note [PTX parameters]), if there is one.
    auto k = std::make_unique<cubin::KernelInfo>();
    switch (ptx::ParseEntry(PtxLocked(m), key, k.get(), &why)) {
      case ptx::Found::kNo:
        return CUDA_ERROR_NOT_FOUND;
      case ptx::Found::kYes:
        info = k.get();
        m->ptx_kernels.push_back(std::move(k));
        break;
      case ptx::Found::kMalformed:  // known by name only: it cannot be launched
        why = "no cubin has it and its PTX declaration is not understood: " + why;
        break;
    }
  }
  auto f = std::make_unique<Function>();
  f->module = m;
  f->name = Intern(key);
  f->info = info;
  if (info == nullptr) f->no_info = why;
  f->binary_arch = arch;
  BlockLimits lim = DeviceBlockLimits();
  f->max_dynamic_shared = lim.shared_default - static_cast<int>(info ? info->shared_bytes : 0);
  *out = f.get();
  g_functions->emplace(f.get(), f.get());
  m->functions.emplace(key, std::move(f));
  return CUDA_SUCCESS;
}

CUresult GetGlobal(Module* m, const char* name, CUdeviceptr* dptr, size_t* bytes) {
  auto it = m->globals.find(name);
  if (it == m->globals.end()) {
    if (m->cubins.empty()) ParseNextLocked(m);
    const cubin::Global* g = nullptr;
    for (const auto& c : m->cubins) {
      auto gi = c->info.globals.find(name);
      if (gi != c->info.globals.end()) {
        g = &gi->second;
        break;
      }
    }
    if (g == nullptr) return CUDA_ERROR_NOT_FOUND;
    void* p = nullptr;
    Err e = Device::Get().MemAlloc(g->bytes == 0 ? 1 : g->bytes, &p);
    if (e != Err::kOk) return ToCU(e);
    // Device memory is host memory here; only math mode may touch it (simgpu.h).
    if (ComputeEnabled()) {
      std::memset(p, 0, g->bytes);
      if (g->init != nullptr) std::memcpy(p, g->init, g->bytes);
    }
    it = m->globals.emplace(name, Module::Var{reinterpret_cast<CUdeviceptr>(p), g->bytes}).first;
  }
  if (dptr != nullptr) *dptr = it->second.ptr;
  if (bytes != nullptr) *bytes = it->second.bytes;
  return CUDA_SUCCESS;
}

CUresult Unload(const void* handle) {
  std::vector<CUdeviceptr> globals;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    Module* m = FindModuleLocked(handle);
    if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    for (const auto& [name, f] : m->functions) g_functions->erase(f.get());
    for (const auto& [name, v] : m->globals) globals.push_back(v.ptr);
    g_modules->erase(m);
    delete m;
  }
  for (CUdeviceptr p : globals) Device::Get().MemFree(reinterpret_cast<void*>(p));
  return CUDA_SUCCESS;
}

CUresult ReadFile(const char* api, const char* path, std::vector<uint8_t>* out) {
  if (path == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "simgpu: %s: cannot read %s\n", api, path);
    return CUDA_ERROR_FILE_NOT_FOUND;
  }
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  out->push_back(0);  // PTX text must end in a NUL
  return CUDA_SUCCESS;
}

// CU_LIBRARY_BINARY_IS_PRESERVED: the caller keeps `code` alive until the library is unloaded
// (what the runtime passes for the fat binaries it registered).
bool Preserved(const CUlibraryOption* options, void** values, unsigned int n) {
  for (unsigned int i = 0; i < n; ++i) {
    if (options[i] == CU_LIBRARY_BINARY_IS_PRESERVED && values != nullptr && values[i] != nullptr) {
      return *static_cast<unsigned int*>(values[i]) != 0;
    }
  }
  return false;
}

}  // namespace

Function* FindFunction(const void* handle) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_functions->find(handle);
  return it == g_functions->end() ? nullptr : it->second;
}

int DeviceArch() {
  const Preset& m = Device::Get().config().machine;
  return m.cc_major * 10 + m.cc_minor;
}

BlockLimits DeviceBlockLimits() {
  // The preset does not change while the process runs: ask once.
  static const BlockLimits limits = [] {
    auto attr = [](CUdevice_attribute a) {
      int v = 0;
      cuDeviceGetAttribute(&v, a, 0);
      return v;
    };
    BlockLimits l;
    l.max_threads = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    l.max_dim[0] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
    l.max_dim[1] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y);
    l.max_dim[2] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z);
    l.max_grid[0] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
    l.max_grid[1] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
    l.max_grid[2] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
    l.shared_default = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
    l.shared_optin = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    if (l.shared_optin < l.shared_default) l.shared_optin = l.shared_default;
    return l;
  }();
  return limits;
}

}  // namespace simgpu::driver

namespace {

CUresult LoadOut(const char* api, const void* image, bool preserved, CUmodule* out) {
  Module* m = nullptr;
  CUresult r = simgpu::driver::Load(api, image, preserved, &m);
  if (r == CUDA_SUCCESS) *out = reinterpret_cast<CUmodule>(m);
  return r;
}

Module* FindModule(const void* handle) {
  std::lock_guard<std::mutex> lock(simgpu::driver::g_mu);
  return simgpu::driver::FindModuleLocked(handle);
}

CUresult GetAttribute(int* pi, CUfunction_attribute attrib, Function* f) {
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  const simgpu::cubin::KernelInfo* k = f->info;
  BlockLimits lim = simgpu::driver::DeviceBlockLimits();
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *pi = k != nullptr && k->max_threads_per_block > 0
                ? std::min(k->max_threads_per_block, lim.max_threads)
                : lim.max_threads;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
      *pi = k != nullptr ? static_cast<int>(k->shared_bytes) : 0;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
      *pi = k != nullptr ? static_cast<int>(k->const_bytes) : 0;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
      *pi = k != nullptr ? static_cast<int>(k->local_bytes) : 0;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
      *pi = k != nullptr ? k->registers : 0;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
      *pi = f->binary_arch != 0 ? f->binary_arch : simgpu::driver::DeviceArch();
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
      *pi = 0;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      *pi = f->max_dynamic_shared;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      *pi = f->carveout;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
      *pi = 0;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult SetAttribute(Function* f, CUfunction_attribute attrib, int value) {
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  BlockLimits lim = simgpu::driver::DeviceBlockLimits();
  int static_shared = f->info != nullptr ? static_cast<int>(f->info->shared_bytes) : 0;
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      if (value < 0 || value + static_shared > lim.shared_optin) return CUDA_ERROR_INVALID_VALUE;
      f->max_dynamic_shared = value;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      if (value < -1 || value > 100) return CUDA_ERROR_INVALID_VALUE;
      f->carveout = value;
      return CUDA_SUCCESS;
    // Cluster shapes and policies change neither simgpu's checks nor its timing.
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult ParamInfo(Function* f, size_t index, size_t* offset, size_t* size) {
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (f->info == nullptr) {
    std::fprintf(stderr, "simgpu: cuFuncGetParamInfo: %s has no parameter info (%s)\n", f->name,
                 f->no_info.c_str());
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  if (index >= f->info->params.size()) return CUDA_ERROR_INVALID_VALUE;
  if (offset != nullptr) *offset = f->info->params[index].offset;
  if (size != nullptr) *size = f->info->params[index].bytes;
  return CUDA_SUCCESS;
}

CUresult Functions(Module* m, std::vector<Function*>* out) {
  std::lock_guard<std::mutex> lock(simgpu::driver::g_mu);
  if (m->cubins.empty() && !simgpu::driver::ParseNextLocked(m)) return CUDA_SUCCESS;
  for (const auto& [name, k] : m->cubins[0]->info.kernels) {
    Function* f = nullptr;
    if (simgpu::driver::GetFunction(m, name.c_str(), &f) == CUDA_SUCCESS) out->push_back(f);
  }
  return CUDA_SUCCESS;
}

}  // namespace

// --- Modules. ---

SIMGPU_EXPORT CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  SIMGPU_DRIVER_ENTER_CTX();
  return LoadOut("cuModuleLoadData", image, false, module);
}

// JIT options only steer PTX compilation, which simgpu never does.
SIMGPU_EXPORT CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int,
                                          CUjit_option*, void**) {
  SIMGPU_DRIVER_ENTER_CTX();
  return LoadOut("cuModuleLoadDataEx", image, false, module);
}

SIMGPU_EXPORT CUresult cuModuleLoadFatBinary(CUmodule* module, const void* fat_cubin) {
  SIMGPU_DRIVER_ENTER_CTX();
  return LoadOut("cuModuleLoadFatBinary", fat_cubin, false, module);
}

SIMGPU_EXPORT CUresult cuModuleLoad(CUmodule* module, const char* fname) {
  SIMGPU_DRIVER_ENTER_CTX();
  std::vector<uint8_t> bytes;
  if (CUresult r = simgpu::driver::ReadFile("cuModuleLoad", fname, &bytes); r != CUDA_SUCCESS) {
    return r;
  }
  return LoadOut("cuModuleLoad", bytes.data(), false, module);
}

SIMGPU_EXPORT CUresult cuModuleUnload(CUmodule hmod) {
  SIMGPU_DRIVER_ENTER();
  return simgpu::driver::Unload(hmod);
}

SIMGPU_EXPORT CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
  SIMGPU_DRIVER_ENTER_CTX();
  if (hfunc == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(simgpu::driver::g_mu);
  Module* m = simgpu::driver::FindModuleLocked(hmod);
  if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  Function* f = nullptr;
  CUresult r = simgpu::driver::GetFunction(m, name, &f);
  if (r == CUDA_SUCCESS) *hfunc = reinterpret_cast<CUfunction>(f);
  return r;
}

SIMGPU_EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr* dptr, size_t* bytes, CUmodule hmod,
                                            const char* name) {
  SIMGPU_DRIVER_ENTER_CTX();
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(simgpu::driver::g_mu);
  Module* m = simgpu::driver::FindModuleLocked(hmod);
  if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return simgpu::driver::GetGlobal(m, name, dptr, bytes);
}

SIMGPU_EXPORT CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode* mode) {
  SIMGPU_DRIVER_ENTER();
  if (mode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *mode = CU_MODULE_LAZY_LOADING;
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuModuleGetFunctionCount(unsigned int* count, CUmodule mod) {
  SIMGPU_DRIVER_ENTER_CTX();
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Module* m = FindModule(mod);
  if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  std::vector<Function*> fs;
  CUresult r = Functions(m, &fs);
  *count = static_cast<unsigned int>(fs.size());
  return r;
}

SIMGPU_EXPORT CUresult cuModuleEnumerateFunctions(CUfunction* functions, unsigned int n,
                                                  CUmodule mod) {
  SIMGPU_DRIVER_ENTER_CTX();
  if (functions == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Module* m = FindModule(mod);
  if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  std::vector<Function*> fs;
  CUresult r = Functions(m, &fs);
  for (unsigned int i = 0; i < n && i < fs.size(); ++i) {
    functions[i] = reinterpret_cast<CUfunction>(fs[i]);
  }
  return r;
}

// --- Libraries (context-independent modules; one device, so the same objects). ---

SIMGPU_EXPORT CUresult cuLibraryLoadData(CUlibrary* library, const void* code, CUjit_option*,
                                         void**, unsigned int, CUlibraryOption* options,
                                         void** values, unsigned int n_options) {
  SIMGPU_DRIVER_ENTER_CTX();
  if (library == nullptr || (n_options > 0 && options == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  bool preserved = simgpu::driver::Preserved(options, values, n_options);
  return LoadOut("cuLibraryLoadData", code, preserved, reinterpret_cast<CUmodule*>(library));
}

SIMGPU_EXPORT CUresult cuLibraryLoadFromFile(CUlibrary* library, const char* file_name,
                                             CUjit_option*, void**, unsigned int, CUlibraryOption*,
                                             void**, unsigned int) {
  SIMGPU_DRIVER_ENTER_CTX();
  if (library == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::vector<uint8_t> bytes;
  CUresult r = simgpu::driver::ReadFile("cuLibraryLoadFromFile", file_name, &bytes);
  if (r != CUDA_SUCCESS) return r;
  return LoadOut("cuLibraryLoadFromFile", bytes.data(), false,
                 reinterpret_cast<CUmodule*>(library));
}

SIMGPU_EXPORT CUresult cuLibraryUnload(CUlibrary library) {
  SIMGPU_DRIVER_ENTER();
  return simgpu::driver::Unload(library);
}

SIMGPU_EXPORT CUresult cuLibraryGetKernel(CUkernel* kernel, CUlibrary library, const char* name) {
  SIMGPU_DRIVER_ENTER();
  if (kernel == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(simgpu::driver::g_mu);
  Module* m = simgpu::driver::FindModuleLocked(library);
  if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  Function* f = nullptr;
  CUresult r = simgpu::driver::GetFunction(m, name, &f);
  if (r == CUDA_SUCCESS) *kernel = reinterpret_cast<CUkernel>(f);
  return r;
}

SIMGPU_EXPORT CUresult cuLibraryGetModule(CUmodule* module, CUlibrary library) {
  SIMGPU_DRIVER_ENTER_CTX();
  if (module == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (FindModule(library) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *module = reinterpret_cast<CUmodule>(library);
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr* dptr, size_t* bytes, CUlibrary library,
                                          const char* name) {
  return cuModuleGetGlobal_v2(dptr, bytes, reinterpret_cast<CUmodule>(library), name);
}

SIMGPU_EXPORT CUresult cuLibraryGetManaged(CUdeviceptr*, size_t*, CUlibrary, const char*) {
  SIMGPU_DRIVER_ENTER();
  simgpu::driver::Unsupported("cuLibraryGetManaged", "managed variables");
  return CUDA_ERROR_NOT_SUPPORTED;
}

SIMGPU_EXPORT CUresult cuLibraryGetUnifiedFunction(void**, CUlibrary, const char*) {
  SIMGPU_DRIVER_ENTER();
  simgpu::driver::Unsupported("cuLibraryGetUnifiedFunction", "unified functions");
  return CUDA_ERROR_NOT_SUPPORTED;
}

SIMGPU_EXPORT CUresult cuLibraryGetKernelCount(unsigned int* count, CUlibrary lib) {
  return cuModuleGetFunctionCount(count, reinterpret_cast<CUmodule>(lib));
}

SIMGPU_EXPORT CUresult cuLibraryEnumerateKernels(CUkernel* kernels, unsigned int n, CUlibrary lib) {
  return cuModuleEnumerateFunctions(reinterpret_cast<CUfunction*>(kernels), n,
                                    reinterpret_cast<CUmodule>(lib));
}

// --- Kernels and functions (the same objects). ---

SIMGPU_EXPORT CUresult cuKernelGetFunction(CUfunction* func, CUkernel kernel) {
  SIMGPU_DRIVER_ENTER_CTX();
  if (func == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (FindFunction(kernel) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *func = reinterpret_cast<CUfunction>(kernel);
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuKernelGetLibrary(CUlibrary* lib, CUkernel kernel) {
  SIMGPU_DRIVER_ENTER();
  if (lib == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Function* f = FindFunction(kernel);
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *lib = reinterpret_cast<CUlibrary>(f->module);
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuKernelGetAttribute(int* pi, CUfunction_attribute attrib, CUkernel kernel,
                                            CUdevice dev) {
  SIMGPU_DRIVER_ENTER();
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  return GetAttribute(pi, attrib, FindFunction(kernel));
}

SIMGPU_EXPORT CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel,
                                            CUdevice dev) {
  SIMGPU_DRIVER_ENTER();
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  return SetAttribute(FindFunction(kernel), attrib, val);
}

// Cache preferences are hints; simgpu's timing has no L1/shared split.
SIMGPU_EXPORT CUresult cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache, CUdevice dev) {
  SIMGPU_DRIVER_ENTER();
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  return FindFunction(kernel) != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

SIMGPU_EXPORT CUresult cuKernelGetName(const char** name, CUkernel kernel) {
  SIMGPU_DRIVER_ENTER();
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Function* f = FindFunction(kernel);
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *name = f->name;
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuKernelGetParamInfo(CUkernel kernel, size_t index, size_t* offset,
                                            size_t* size) {
  SIMGPU_DRIVER_ENTER();
  // As seen on an H200 (driver 580.159.04): on a thread with no current context the query fails,
  // although a CUkernel belongs to no context (PyTorch's autograd thread before its first launch).
  if (simgpu::driver::CurrentContext() == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  return ParamInfo(FindFunction(kernel), index, offset, size);
}

SIMGPU_EXPORT CUresult cuFuncGetAttribute(int* pi, CUfunction_attribute attrib, CUfunction hfunc) {
  SIMGPU_DRIVER_ENTER();
  return GetAttribute(pi, attrib, FindFunction(hfunc));
}

SIMGPU_EXPORT CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib,
                                          int value) {
  SIMGPU_DRIVER_ENTER();
  return SetAttribute(FindFunction(hfunc), attrib, value);
}

SIMGPU_EXPORT CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache) {
  SIMGPU_DRIVER_ENTER();
  return FindFunction(hfunc) != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

SIMGPU_EXPORT CUresult cuFuncGetParamInfo(CUfunction func, size_t index, size_t* offset,
                                          size_t* size) {
  SIMGPU_DRIVER_ENTER();
  return ParamInfo(FindFunction(func), index, offset, size);
}

SIMGPU_EXPORT CUresult cuFuncGetName(const char** name, CUfunction hfunc) {
  return cuKernelGetName(name, reinterpret_cast<CUkernel>(hfunc));
}

SIMGPU_EXPORT CUresult cuFuncGetModule(CUmodule* hmod, CUfunction hfunc) {
  SIMGPU_DRIVER_ENTER();
  if (hmod == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Function* f = FindFunction(hfunc);
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *hmod = reinterpret_cast<CUmodule>(f->module);
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuFuncIsLoaded(CUfunctionLoadingState* state, CUfunction function) {
  SIMGPU_DRIVER_ENTER();
  if (state == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (FindFunction(function) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *state = CU_FUNCTION_LOADING_STATE_LOADED;
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuFuncLoad(CUfunction function) {
  SIMGPU_DRIVER_ENTER();
  return FindFunction(function) != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
