// replay_check_stop.cc: the replay check's stop (replay_check_stop.h).
#include "interpose/process/replay_check_stop.h"

#include <unistd.h>

#include "core/base/log.h"

namespace pooch::interpose {

void StopAtReplayMismatch(const std::string& line) {
  LogLine("%s", line.c_str());
  _exit(kReplayCheckExitStatus);
}

}  // namespace pooch::interpose
