// intercept.h: what a hook does beyond forwarding.
//
// Every exported hook (hooks.cc, generated) counts the call, finds its real function and
// forwards to it, unless ShouldIntercept() says otherwise, in which case it calls the
// function of the same name in namespace intercept, with the same arguments. hooks.cc defines
// each intercept weakly as "forward to the real function"; <library>_hooks.cc overrides the
// ones that do more (driver look-ups always, the memory and compute calls under a residency
// policy).
//
// REQUIRES for an intercept: the real function exists (the generated hook checked).
#ifndef POOCH_INTERPOSE_SYMBOLS_INTERCEPT_H_
#define POOCH_INTERPOSE_SYMBOLS_INTERCEPT_H_

#include <atomic>

#include "interpose/symbols/hook_table.h"

namespace pooch::interpose {

// True once start-up configured a policy other than "off" and the hooks route calls to it.
inline std::atomic<bool> g_managed{false};

// Driver look-ups are always intercepted, even nested (a library resolving its entry points
// inside another hook must still be handed pooch's hooks); other hooks when the call is the
// program's own (not nested) and a policy is active.
constexpr bool IsLookup(FunctionId id) {
  return id == FunctionId::cuGetProcAddress || id == FunctionId::cuGetProcAddress_v2 ||
         id == FunctionId::cudaGetDriverEntryPoint ||
         id == FunctionId::cudaGetDriverEntryPointByVersion;
}

// Module registration and loading are always intercepted too: they only note where each
// kernel's code is (Note [Verdicts at launch] in interpose/kernels/launch_verdicts.h), and the
// runtime registers fat binaries before pooch starts (libraries initialised before libpooch.so)
// and loads them nested, under the first launch's hook.
constexpr bool IsRegistration(FunctionId id) {
  return id == FunctionId::__cudaRegisterFatBinary ||
         id == FunctionId::__cudaUnregisterFatBinary ||
         id == FunctionId::__cudaRegisterFunction || id == FunctionId::__cudaGetKernel ||
         id == FunctionId::cuModuleLoadData || id == FunctionId::cuModuleLoadDataEx ||
         id == FunctionId::cuModuleLoadFatBinary || id == FunctionId::cuModuleGetFunction ||
         id == FunctionId::cuLibraryLoadData || id == FunctionId::cuLibraryGetKernel;
}

inline bool ShouldIntercept(FunctionId id, const HookScope& scope) {
  return IsLookup(id) || IsRegistration(id) ||
         (scope.top() && g_managed.load(std::memory_order_acquire));
}

namespace intercept {
#define POOCH_HOOK(lib, ret, name, params, args) ret name params;
#include "interpose/symbols/hooked_symbols.def"
}  // namespace intercept

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_SYMBOLS_INTERCEPT_H_
