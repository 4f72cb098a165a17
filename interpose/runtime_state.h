// runtime_state.h: pooch's process-wide state inside the host program: the configuration read
// at load, and (under a residency policy) the manager the hooks drive.
//
// Start-up (init.cc, a constructor that runs before the program's main): the POOCH_* variables
// are read with core's LoadConfig; a bad value prints one "pooch: ..." line and exits with
// status 2. At exit, unless POOCH_SUMMARY=0, a summary goes to stderr: the policy and, for each
// hook the program called, "pooch: calls: <name> <top> (+<nested> nested)".
//
// Thread safety: Config() is immutable after start-up.
#ifndef POOCH_INTERPOSE_RUNTIME_STATE_H_
#define POOCH_INTERPOSE_RUNTIME_STATE_H_

#include "core/config.h"

namespace pooch::interpose {

// The configuration read at load (defaults if a hook runs before the constructor did).
const pooch::Config& GetConfig();

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_RUNTIME_STATE_H_
