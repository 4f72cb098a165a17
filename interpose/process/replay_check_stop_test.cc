// The replay check's stop: one "pooch: replay check: ..." line and exit status 70 (docs/usage.md).
#include "interpose/process/replay_check_stop.h"

#include "gtest/gtest.h"

namespace pooch::interpose {
namespace {

TEST(ReplayCheckStopTest, OneLineAndExitStatus70) {
  EXPECT_EXIT(StopAtReplayMismatch("replay check: kernel k rebuilt the map at 0x10 (4 bytes) with "
                                   "other bytes than were dropped: first at offset 2 (0x01 "
                                   "dropped, 0x02 rebuilt)"),
              ::testing::ExitedWithCode(70),
              "^pooch: replay check: kernel k rebuilt the map at 0x10 \\(4 bytes\\) with other "
              "bytes than were dropped: first at offset 2 \\(0x01 dropped, 0x02 rebuilt\\)\n$");
}

}  // namespace
}  // namespace pooch::interpose
