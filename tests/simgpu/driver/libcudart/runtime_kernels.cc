// libcudart.so.13: the registry of nvcc-registered kernels and variables (Note [Lazy
// registration] in runtime_kernels.h) and the __cudaRegister* entry points that fill it.
#include "tests/simgpu/driver/libcudart/runtime_kernels.h"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "tests/simgpu/driver/libcudart/runtime_driver.h"
#include "tests/simgpu/driver/modules/fatbin.h"

namespace simgpu::runtime {
namespace {

struct RtModule {
  const void* fatbin;             // the wrapper's data, or nullptr if the wrapper was not one
  std::vector<const void*> keys;  // host addresses registered from this module
  bool managed = false;           // has __managed__ variables (not supported)
  std::once_flag loaded;
  CUlibrary library = nullptr;
  CUresult result = CUDA_SUCCESS;
};

struct RtKernel {
  RtModule* module;
  const char* name;  // the program's string, alive while its module is registered
  std::once_flag found;
  CUkernel kernel = nullptr;
  CUresult result = CUDA_SUCCESS;
  std::atomic<bool> loaded{false};  // `found` ran and gave `kernel`
};

struct RtVar {
  RtModule* module;
  const char* name;
};

// Entries are never freed: a module unregisters at exit (atexit), when other threads may still
// hold pointers to them. What they hold is small.
struct Registry {
  std::mutex mu;
  std::unordered_map<const void*, RtKernel*> kernels;  // by host function address
  std::unordered_map<const void*, RtVar*> vars;        // by host shadow variable address
};

Registry& Reg() {
  static Registry* r = new Registry;  // outlives static destruction: modules unregister at exit
  return *r;
}

CUresult LoadModule(const KernelDriverTable& t, RtModule* m) {
  std::call_once(m->loaded, [&] {
    if (m->fatbin == nullptr) {
      std::fprintf(stderr, "simgpu: libcudart: a registered fat binary has no valid wrapper\n");
      m->result = CUDA_ERROR_INVALID_IMAGE;
      return;
    }
    CUlibraryOption opt = CU_LIBRARY_BINARY_IS_PRESERVED;
    unsigned int one = 1;
    void* value = &one;
    m->result = t.cuLibraryLoadData(&m->library, m->fatbin, nullptr, nullptr, 0, &opt, &value, 1);
  });
  return m->result;
}

KernelDriverTable LoadTable(const DriverTable& drv, cudaError_t* err) {
  KernelDriverTable t;
  CUdriverProcAddressQueryResult found;
#define SIMGPU_LOOKUP(name, type)                                                    \
  if (drv.cuGetProcAddress(#name, reinterpret_cast<void**>(&t.name), CUDART_VERSION, \
                           CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS ||   \
      t.name == nullptr) {                                                           \
    std::fprintf(stderr, "simgpu: libcudart: the driver has no %s\n", #name);        \
    *err = cudaErrorInsufficientDriver;                                              \
    return t;                                                                        \
  }
  SIMGPU_RUNTIME_KERNEL_CALLS(SIMGPU_LOOKUP)
#undef SIMGPU_LOOKUP
  return t;
}

}  // namespace

const KernelDriverTable* KernelDriver(cudaError_t* err) {
  const DriverTable* drv = Driver(err);
  if (drv == nullptr) return nullptr;
  static cudaError_t load_err = cudaSuccess;
  static KernelDriverTable* table = new KernelDriverTable(LoadTable(*drv, &load_err));
  if (load_err != cudaSuccess) {
    *err = load_err;
    return nullptr;
  }
  return table;
}

void** RegisterModule(const void* fat_cubin) {
  auto* m = new RtModule;
  m->fatbin = nullptr;
  if (fat_cubin != nullptr) {
    uint32_t magic;
    std::memcpy(&magic, fat_cubin, sizeof magic);
    if (magic == fatbin::kWrapperMagic) {
      std::memcpy(&m->fatbin, static_cast<const uint8_t*>(fat_cubin) + 8, sizeof m->fatbin);
    } else if (magic == fatbin::kFatbinMagic) {
      m->fatbin = fat_cubin;
    }
  }
  return reinterpret_cast<void**>(m);
}

// Forgets the module's host addresses. A module already loaded stays in the driver (its
// cuLibraryUnload is not called): unregistration runs from atexit handlers, when the driver's
// state may be going, and a program that unloads a CUDA library mid-run (dlclose) is rare; the
// cost is the module's parsed cubins and any globals it allocated.
void UnregisterModule(void** handle) {
  if (handle == nullptr) return;
  auto* m = reinterpret_cast<RtModule*>(handle);
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const void* key : m->keys) {
    auto k = r.kernels.find(key);
    if (k != r.kernels.end() && k->second->module == m) r.kernels.erase(k);
    auto v = r.vars.find(key);
    if (v != r.vars.end() && v->second->module == m) r.vars.erase(v);
  }
  m->keys.clear();
}

void RegisterFunction(void** handle, const void* host_fun, const char* device_name) {
  if (handle == nullptr || host_fun == nullptr || device_name == nullptr) return;
  auto* m = reinterpret_cast<RtModule*>(handle);
  auto* k = new RtKernel;
  k->module = m;
  k->name = device_name;
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  r.kernels[host_fun] = k;
  m->keys.push_back(host_fun);
}

void RegisterVar(void** handle, const void* host_var, const char* device_name, size_t) {
  if (handle == nullptr || host_var == nullptr || device_name == nullptr) return;
  auto* m = reinterpret_cast<RtModule*>(handle);
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  r.vars[host_var] = new RtVar{m, device_name};
  m->keys.push_back(host_var);
}

void MarkManaged(void** handle) {
  if (handle != nullptr) reinterpret_cast<RtModule*>(handle)->managed = true;
}

bool HasManaged(void** handle) {
  return handle != nullptr && reinterpret_cast<RtModule*>(handle)->managed;
}

cudaError_t KernelError(CUresult r) {
  switch (r) {
    case CUDA_ERROR_INVALID_IMAGE:
      return cudaErrorInvalidKernelImage;
    case CUDA_ERROR_NOT_FOUND:
      return cudaErrorInvalidDeviceFunction;
    case CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE:
      return cudaErrorCooperativeLaunchTooLarge;
    case CUDA_ERROR_FILE_NOT_FOUND:
      return cudaErrorFileNotFound;
    default:
      return ToRuntime(r);
  }
}

cudaError_t KernelOf(const void* host_fun, CUkernel* out) {
  RtKernel* k = nullptr;
  {
    Registry& r = Reg();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.kernels.find(host_fun);
    if (it != r.kernels.end()) k = it->second;
  }
  // A kernel already loaded is answered without the driver, so without making the context
  // current on the calling thread: NVIDIA's runtime leaves that to the launch (on an H200, driver
  // 580.159.04, PyTorch's autograd thread reached __cudaLaunchKernel, after the stub's
  // __cudaGetKernel, with no current context).
  if (k != nullptr && k->loaded.load(std::memory_order_acquire)) {
    *out = k->kernel;
    return cudaSuccess;
  }
  cudaError_t err = cudaSuccess;
  const KernelDriverTable* t = KernelDriver(&err);
  if (t == nullptr) return err;
  if (k == nullptr) {
    // A cudaKernel_t where a host function was expected (cudaLaunchKernel accepts both).
    if (host_fun == nullptr) return cudaErrorInvalidDeviceFunction;
    CUfunction f = nullptr;
    auto* k = static_cast<CUkernel>(const_cast<void*>(host_fun));
    CUresult r = t->cuKernelGetFunction(&f, k);
    if (r == CUDA_ERROR_INVALID_HANDLE) return cudaErrorInvalidDeviceFunction;
    if (r == CUDA_SUCCESS) *out = k;
    return KernelError(r);  // the sticky error, after a fault
  }
  std::call_once(k->found, [&] {
    k->result = LoadModule(*t, k->module);
    if (k->result == CUDA_SUCCESS) {
      k->result = t->cuLibraryGetKernel(&k->kernel, k->module->library, k->name);
    }
    k->loaded.store(k->result == CUDA_SUCCESS, std::memory_order_release);
  });
  if (k->result != CUDA_SUCCESS) return KernelError(k->result);
  *out = k->kernel;
  return cudaSuccess;
}

cudaError_t FunctionOf(const void* host_fun, CUfunction* out) {
  CUkernel k = nullptr;
  if (cudaError_t e = KernelOf(host_fun, &k); e != cudaSuccess) return e;
  cudaError_t err = cudaSuccess;
  const KernelDriverTable* t = KernelDriver(&err);
  if (t == nullptr) return err;
  return KernelError(t->cuKernelGetFunction(out, k));
}

cudaError_t SymbolOf(const void* host_var, CUdeviceptr* ptr, size_t* bytes) {
  cudaError_t err = cudaSuccess;
  const KernelDriverTable* t = KernelDriver(&err);
  if (t == nullptr) return err;
  RtVar* v = nullptr;
  {
    Registry& r = Reg();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.vars.find(host_var);
    if (it != r.vars.end()) v = it->second;
  }
  if (v == nullptr) return cudaErrorInvalidSymbol;
  if (CUresult r = LoadModule(*t, v->module); r != CUDA_SUCCESS) return KernelError(r);
  CUresult r = t->cuLibraryGetGlobal(ptr, bytes, v->module->library, v->name);
  return r == CUDA_ERROR_NOT_FOUND ? cudaErrorInvalidSymbol : KernelError(r);
}

}  // namespace simgpu::runtime

// --- What nvcc's generated code calls (crt/host_runtime.h; declared here because that header
// is meant for nvcc's own compilation). ---

SIMGPU_RT_EXPORT void** __cudaRegisterFatBinary(void* fat_cubin) {
  return simgpu::runtime::RegisterModule(fat_cubin);
}

SIMGPU_RT_EXPORT void __cudaRegisterFatBinaryEnd(void**) {}

SIMGPU_RT_EXPORT void __cudaUnregisterFatBinary(void** handle) {
  simgpu::runtime::UnregisterModule(handle);
}

SIMGPU_RT_EXPORT void __cudaRegisterFunction(void** handle, const char* host_fun, char*,
                                             const char* device_name, int, uint3*, uint3*, dim3*,
                                             dim3*, int*) {
  simgpu::runtime::RegisterFunction(handle, host_fun, device_name);
}

SIMGPU_RT_EXPORT void __cudaRegisterVar(void** handle, char* host_var, char*,
                                        const char* device_name, int, size_t size, int, int) {
  simgpu::runtime::RegisterVar(handle, host_var, device_name, size);
}

// A __managed__ variable needs unified memory at a fixed host address, which simgpu does not
// model: the module's __cudaInitModule reports it and fails.
SIMGPU_RT_EXPORT void __cudaRegisterManagedVar(void** handle, void**, char*, const char*, int,
                                               size_t, int, int) {
  simgpu::runtime::MarkManaged(handle);
}

SIMGPU_RT_EXPORT char __cudaInitModule(void** handle) {
  if (simgpu::runtime::HasManaged(handle)) {
    std::fprintf(stderr, "simgpu: __cudaInitModule: __managed__ variables are not supported\n");
    return 0;
  }
  return 1;
}

// Texture and surface references were removed in CUDA 12; nvcc still declares these.
SIMGPU_RT_EXPORT void __cudaRegisterTexture(void**, const void*, const void**, const char*, int,
                                            int, int) {}
SIMGPU_RT_EXPORT void __cudaRegisterSurface(void**, const void*, const void**, const char*, int,
                                            int) {}
