// module_hooks.cc: module registration and loading, noted for the kernels' verdicts (Note
// [Verdicts at launch] in interpose/kernels/launch_verdicts.h). Each hook forwards and, when the
// real call succeeded, tells the registry which image a handle stands for; nothing else changes.
// They are intercepted always (IsRegistration in interpose/symbols/intercept.h), and note nothing
// once start-up configured the analysis off.
#include <cstring>

#include "interpose/kernels/launch_verdicts.h"
#include "interpose/kernels/module_registry.h"
#include "interpose/symbols/hook_table.h"
#include "interpose/symbols/intercept.h"

namespace pooch::interpose::intercept {
namespace {

// Before start-up configured it (a library registering its fat binaries before libpooch.so's
// constructor runs), everything is noted: the analysis may turn out on.
bool Noting() { return LaunchVerdictsEnabled() || !LaunchVerdictsConfigured(); }

ModuleRegistry& Registry() { return ModuleRegistry::Get(); }

// CU_LIBRARY_BINARY_IS_PRESERVED among cuLibraryLoadData's options: the caller keeps the image.
bool Preserved(const CUlibraryOption* options, void* const* values, unsigned int n) {
  for (unsigned int i = 0; options != nullptr && values != nullptr && i < n; ++i) {
    if (options[i] == CU_LIBRARY_BINARY_IS_PRESERVED) {
      return static_cast<unsigned int>(reinterpret_cast<uintptr_t>(values[i])) != 0;
    }
  }
  return false;
}

}  // namespace

void** __cudaRegisterFatBinary(void* fatCubin) {
  void** handle = real::__cudaRegisterFatBinary()(fatCubin);
  // A registered fat binary lives in its program's or library's data while registered.
  if (handle != nullptr && Noting()) {
    Registry().Bind(Handle::kFatBinary, handle, Registry().AddImage(fatCubin, /*preserved=*/true),
                    nullptr);
  }
  return handle;
}

void __cudaUnregisterFatBinary(void** fatCubinHandle) {
  ModuleRegistry::Origin origin;
  if (Registry().Find(Handle::kFatBinary, fatCubinHandle, &origin))
    Registry().Forget(origin.module);
  real::__cudaUnregisterFatBinary()(fatCubinHandle);
}

void __cudaRegisterFunction(void** fatCubinHandle, const char* hostFun, char* deviceFun,
                            const char* deviceName, int thread_limit, uint3* tid, uint3* bid,
                            dim3* bDim, dim3* gDim, int* wSize) {
  real::__cudaRegisterFunction()(fatCubinHandle, hostFun, deviceFun, deviceName, thread_limit, tid,
                                 bid, bDim, gDim, wSize);
  ModuleRegistry::Origin origin;
  if (Noting() && deviceFun != nullptr &&
      Registry().Find(Handle::kFatBinary, fatCubinHandle, &origin)) {
    Registry().Bind(Handle::kHostStub, hostFun, origin.module, deviceFun);
  }
}

cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* hostFun) {
  const cudaError_t e = real::__cudaGetKernel()(kernel, hostFun);
  ModuleRegistry::Origin origin;
  if (e == cudaSuccess && kernel != nullptr && Noting() &&
      Registry().Find(Handle::kHostStub, hostFun, &origin)) {
    Registry().Bind(Handle::kKernel, *kernel, origin.module, origin.name.c_str());
  }
  return e;
}

namespace {

// A module loaded from `image` (copied: the caller may free it after the call).
CUresult NoteModule(CUresult r, CUmodule* module, const void* image) {
  if (r == CUDA_SUCCESS && module != nullptr && Noting()) {
    Registry().Bind(Handle::kModule, *module, Registry().AddImage(image, /*preserved=*/false),
                    nullptr);
  }
  return r;
}

}  // namespace

CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  return NoteModule(real::cuModuleLoadData()(module, image), module, image);
}

CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int numOptions,
                            CUjit_option* options, void** optionValues) {
  return NoteModule(real::cuModuleLoadDataEx()(module, image, numOptions, options, optionValues),
                    module, image);
}

CUresult cuModuleLoadFatBinary(CUmodule* module, const void* fatCubin) {
  return NoteModule(real::cuModuleLoadFatBinary()(module, fatCubin), module, fatCubin);
}

CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
  const CUresult r = real::cuModuleGetFunction()(hfunc, hmod, name);
  ModuleRegistry::Origin origin;
  if (r == CUDA_SUCCESS && hfunc != nullptr && name != nullptr && Noting() &&
      Registry().Find(Handle::kModule, hmod, &origin)) {
    Registry().Bind(Handle::kFunction, *hfunc, origin.module, name);
  }
  return r;
}

CUresult cuLibraryLoadData(CUlibrary* library, const void* code, CUjit_option* jitOptions,
                           void** jitOptionsValues, unsigned int numJitOptions,
                           CUlibraryOption* libraryOptions, void** libraryOptionValues,
                           unsigned int numLibraryOptions) {
  const CUresult r =
      real::cuLibraryLoadData()(library, code, jitOptions, jitOptionsValues, numJitOptions,
                                libraryOptions, libraryOptionValues, numLibraryOptions);
  if (r == CUDA_SUCCESS && library != nullptr && Noting()) {
    const bool preserved = Preserved(libraryOptions, libraryOptionValues, numLibraryOptions);
    Registry().Bind(Handle::kLibrary, *library, Registry().AddImage(code, preserved), nullptr);
  }
  return r;
}

CUresult cuLibraryGetKernel(CUkernel* pKernel, CUlibrary library, const char* name) {
  const CUresult r = real::cuLibraryGetKernel()(pKernel, library, name);
  ModuleRegistry::Origin origin;
  if (r == CUDA_SUCCESS && pKernel != nullptr && name != nullptr && Noting() &&
      Registry().Find(Handle::kLibrary, library, &origin)) {
    Registry().Bind(Handle::kKernel, *pKernel, origin.module, name);
  }
  return r;
}

}  // namespace pooch::interpose::intercept
