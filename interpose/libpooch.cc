// libpooch.cc: the library's life in the host program. Its constructor runs before the
// program's main (and before the constructors of libraries loaded after it), its destructor at
// exit; both belong to the one Process (interpose/process/process.h).
#include "interpose/process/process.h"

namespace pooch::interpose {
namespace {

__attribute__((constructor)) void Start() { Process::Get().Start(); }

__attribute__((destructor)) void Stop() { Process::Get().Stop(); }

}  // namespace
}  // namespace pooch::interpose
