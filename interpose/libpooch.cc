// libpooch.cc: the library's life in the host program. Its constructor runs before the
// program's main (and before the constructors of libraries loaded after it), its destructor at
// exit; both belong to the one Process (interpose/process/process.h).
#include "core/kernels/verdict_cache.h"
#include "interpose/kernels/launch_verdicts.h"
#include "interpose/process/process.h"
#include "interpose/symbols/intercept.h"

namespace pooch::interpose {
namespace {

// Note [Verdicts at launch] (interpose/kernels/launch_verdicts.h): on under a policy that
// manages memory, unless POOCH_KERNEL_ANALYSIS=off.
LaunchVerdictOptions VerdictOptions(const Config& config) {
  LaunchVerdictOptions options;
  options.enabled = config.kernel_analysis && g_managed.load(std::memory_order_acquire);
  options.arch = config.kernel_arch;
  if (config.kernel_cache != "off") {
    options.cache_dir = config.kernel_cache.empty() ? pooch::kernels::VerdictDiskCache::DefaultDir()
                                                    : config.kernel_cache;
  }
  return options;
}

__attribute__((constructor)) void Start() {
  Process::Get().Start();
  ConfigureLaunchVerdicts(VerdictOptions(Process::Get().config()));
}

__attribute__((destructor)) void Stop() { Process::Get().Stop(); }

}  // namespace
}  // namespace pooch::interpose
