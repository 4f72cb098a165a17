// opaque_api.h: what the generated opaque hooks call (scripts/gen_opaque_hooks.py writes them
// into the build directory, one file per header set; Note [Opaque calls] in opaque.h).
//
// No CUDA type appears here: the generated files include only their own toolkit headers (the
// legacy cublas.h cannot share a file with cublas_v2.h), so everything they need from pooch is
// out of line, and a status code travels as an int.
//
// Thread safety: everything may be called from any thread.
#ifndef POOCH_INTERPOSE_PROCESS_OPAQUE_API_H_
#define POOCH_INTERPOSE_PROCESS_OPAQUE_API_H_

#include <atomic>
#include <cstdint>

#include "absl/functional/function_ref.h"

namespace pooch::interpose {

// One opaque function: its name, the soname its real definition is in, the real function once
// found (dlsym(RTLD_NEXT), then the soname, as hook_table.h resolves the hooks' reals: lazily,
// so the ~1000 opaque hooks cost nothing until called). Constant-initialised: no guard on calls.
class OpaqueFunction {
 public:
  constexpr OpaqueFunction(const char* name, const char* soname) : name_(name), soname_(soname) {}
  void* Real() {
    void* fn = real_.load(std::memory_order_acquire);
    return fn != nullptr ? fn : Resolve();
  }
  const char* name() const { return name_; }

 private:
  void* Resolve();
  const char* name_;
  const char* soname_;
  std::atomic<void*> real_{nullptr};
  std::atomic<bool> missing_logged_{false};
};

// The API a status code belongs to.
enum class OpaqueApi { kRuntime, kDriver, kCudnn, kCublas };

// The API's "not initialized" code, for a hook whose real function cannot be found.
int OpaqueNotInitialized(OpaqueApi api);
// For the legacy cuBLAS API (no status to return): one `pooch:` line, then abort.
[[noreturn]] void OpaqueMissing(const OpaqueFunction& f);

// The re-entry guard of hook_table.h's HookScope, for an opaque hook: intercept() is true when
// the call is the program's own (no other hook of this thread is running) under a residency
// policy; nested calls (a library calling another library) only forward.
class OpaqueScope {
 public:
  explicit OpaqueScope(const OpaqueFunction& f);
  ~OpaqueScope();
  OpaqueScope(const OpaqueScope&) = delete;
  OpaqueScope& operator=(const OpaqueScope&) = delete;
  bool intercept() const { return intercept_; }

 private:
  bool top_;
  bool intercept_;
};

// RunOpaque (opaque.h) for a call returning `api`'s status: `call` runs the real function.
int OpaqueRun(const OpaqueFunction& f, OpaqueApi api, uintptr_t stream, bool stream_known,
              absl::FunctionRef<int()> call);
// The same for a legacy cuBLAS function (no status): a refused call ends the process after its
// `pooch:` line (the program could not be told, and it must not go on with a result never
// computed).
void OpaqueRunOrDie(const OpaqueFunction& f, uintptr_t stream, bool stream_known,
                    absl::FunctionRef<int()> call);

// The stream a cuBLAS or cuDNN handle's calls run on (cublasGetStream_v2, cudnnGetStream).
uintptr_t OpaqueCublasStream(const void* handle);
uintptr_t OpaqueCudnnStream(const void* handle);

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_PROCESS_OPAQUE_API_H_
