// module_registry.h: where each kernel's code is: the fat binaries and cubins the program
// registers (__cudaRegisterFatBinary, __cudaRegisterFunction) or loads (cuModuleLoad*,
// cuLibraryLoadData), and which module and name each launch handle (host stub, CUkernel,
// CUfunction) stands for (Note [Verdicts at launch] in launch_verdicts.h).
//
// Images are kept by pointer when they stay mapped (a registered fat binary lives in its
// program's or library's data; cuLibraryLoadData with CU_LIBRARY_BINARY_IS_PRESERVED promises
// the same), and copied otherwise: cuModuleLoadData's caller (Triton, a Python bytes object) may
// free its image as soon as the call returns. The same image seen twice (the runtime loads the
// fat binaries it registered through cuLibraryLoadData) is one module.
//
// Thread safety: thread-safe.
#ifndef POOCH_INTERPOSE_KERNELS_MODULE_REGISTRY_H_
#define POOCH_INTERPOSE_KERNELS_MODULE_REGISTRY_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/base/mutex.h"
#include "core/kernels/module_image.h"

namespace pooch::interpose {

// The kinds of handle the registry maps; each kind is a separate key space.
enum class Handle : int {
  kFatBinary,  // __cudaRegisterFatBinary's returned handle
  kHostStub,   // __cudaRegisterFunction's hostFun, what cudaLaunchKernel gets
  kKernel,     // cudaKernel_t / CUkernel
  kFunction,   // CUfunction
  kModule,     // CUmodule
  kLibrary,    // CUlibrary
};

class ModuleRegistry {
 public:
  static constexpr int kNone = -1;

  // The process's registry (never destroyed: hooks run during exit).
  static ModuleRegistry& Get();

  // Notes the module image at `image`; its id (the same for the same image), or kNone when it
  // holds no fat binary or cubin (PTX text). `preserved`: the image stays mapped while loaded.
  int AddImage(const void* image, bool preserved);
  // Handle `key` of `kind` stands for kernel `name` (null: a module or library handle) of
  // module `module` (kNone: not known; the name alone is noted).
  void Bind(Handle kind, const void* key, int module, const char* name);
  // Forgets the image of a module being unregistered (its memory may be unmapped); verdicts
  // already found stay.
  void Forget(int module);

  struct Origin {
    int module = kNone;
    std::string name;  // empty for a module or library handle
  };
  // What `key` was bound to; false when it never was.
  bool Find(Handle kind, const void* key, Origin* out) const;
  // The modules that hold a kernel named `name`, as the bindings saw them.
  std::vector<int> ModulesNaming(const std::string& name) const;
  // The image of `module` (kind kOther once forgotten, or for kNone).
  pooch::kernels::ModuleImage Image(int module) const;

 private:
  struct Module {
    pooch::kernels::ModuleImage image;
    std::unique_ptr<uint8_t[]> copy;  // when the caller's bytes may go
  };
  mutable pooch::Mutex mu_;
  std::deque<Module> modules_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<const void*, int> by_data_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::pair<int, uintptr_t>, Origin> handles_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::vector<int>> by_name_ ABSL_GUARDED_BY(mu_);
};

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_KERNELS_MODULE_REGISTRY_H_
