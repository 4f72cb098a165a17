// replay_check_stop.h: what the process does when POOCH_CHECK_REPLAYS finds a replay that did
// not rebuild its map's bytes (Note [Replay check] in core/recompute/replay_check.h).
#ifndef POOCH_INTERPOSE_PROCESS_REPLAY_CHECK_STOP_H_
#define POOCH_INTERPOSE_PROCESS_REPLAY_CHECK_STOP_H_

#include <string>

namespace pooch::interpose {

// docs/usage.md's exit status of a replay check mismatch: EX_SOFTWARE, an internal error.
inline constexpr int kReplayCheckExitStatus = 70;

// Prints "pooch: <line>" and ends the process at once with kReplayCheckExitStatus, before any
// op reads the wrong bytes: no exit handler runs (no summary; the device may hold work in flight).
[[noreturn]] void StopAtReplayMismatch(const std::string& line);

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_PROCESS_REPLAY_CHECK_STOP_H_
