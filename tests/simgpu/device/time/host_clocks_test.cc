#include "tests/simgpu/device/time/host_clocks.h"

#include <gtest/gtest.h>

#include <thread>

namespace simgpu {
namespace {

TEST(HostClocks, EachThreadAdvancesItsOwnClock) {
  HostClocks h;
  h.Advance(100);
  double other_start = -1, other_end = -1;
  std::thread t([&] {
    other_start = h.Now();  // a thread not seen yet is at the latest clock
    h.Advance(50);
    other_end = h.Now();
  });
  t.join();
  EXPECT_EQ(other_start, 100);
  EXPECT_EQ(other_end, 150);
  EXPECT_EQ(h.Now(), 100);  // the other thread's work did not cost this one
  EXPECT_EQ(h.Latest(), 150);
  h.Advance(10);
  EXPECT_EQ(h.Now(), 110);
}

TEST(HostClocks, WaitUntilOnlyMovesForward) {
  HostClocks h;
  h.Advance(100);
  h.WaitUntil(40);
  EXPECT_EQ(h.Now(), 100);
  h.WaitUntil(250);
  EXPECT_EQ(h.Now(), 250);
}

TEST(HostClocks, NoClockIsBeforeWorkAnyThreadWaitedFor) {
  HostClocks h;
  h.Advance(100);  // this thread: 100
  std::thread waiter([&] {
    h.Advance(1);      // starts at 100, now 101
    h.WaitUntil(500);  // waits for work that ends at 500
    h.Advance(1000);   // its own costs: 1500
  });
  waiter.join();
  // The work's end is known to every thread; the waiter's own costs are not.
  EXPECT_EQ(h.Now(), 500);
  h.Advance(10);
  EXPECT_EQ(h.Now(), 510);
  EXPECT_EQ(h.Latest(), 1500);
}

TEST(HostClocks, SharedClockIsOneForEveryThread) {
  HostClocks h(/*per_thread=*/false);
  h.Advance(100);
  std::thread t([&] { h.Advance(50); });
  t.join();
  EXPECT_EQ(h.Now(), 150);
}

}  // namespace
}  // namespace simgpu
