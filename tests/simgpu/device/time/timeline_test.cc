#include "tests/simgpu/device/time/timeline.h"

#include <gtest/gtest.h>

namespace simgpu {
namespace {

StreamClock Stream(uint64_t id, bool blocking) {
  StreamClock s;
  s.id = id;
  s.blocking = blocking;
  return s;
}

TEST(Timeline, EnginesOverlapAndSerialise) {
  Timeline t;
  StreamClock a = Stream(2, false), b = Stream(3, false);
  Span copy = t.Schedule(a, Engine::kHostToDevice, 100);
  Span kernel = t.Schedule(b, Engine::kCompute, 50);
  EXPECT_EQ(copy.start_ns, 0);
  EXPECT_EQ(kernel.start_ns, 0);  // different engines overlap
  Span kernel2 = t.Schedule(a, Engine::kCompute, 10);
  EXPECT_EQ(kernel2.ready_ns, 100);  // stream order
  EXPECT_EQ(kernel2.start_ns, 100);
  Span kernel3 = t.Schedule(b, Engine::kCompute, 10);
  EXPECT_EQ(kernel3.ready_ns, 50);   // b's own order allows 50...
  EXPECT_EQ(kernel3.start_ns, 110);  // ...but the compute engine is busy until 110
  EXPECT_EQ(t.DeviceDone(), 120);
}

TEST(Timeline, EventsAndHost) {
  Timeline t;
  StreamClock a = Stream(2, false), b = Stream(3, false);
  t.Schedule(a, Engine::kDeviceToHost, 100);
  double ev = t.Record(a);
  EXPECT_EQ(ev, 100);
  t.Wait(b, ev);
  EXPECT_EQ(t.Schedule(b, Engine::kCompute, 5).ready_ns, 100);
  EXPECT_EQ(t.host_ns(), 0);
  t.HostWaitUntil(t.StreamDone(b));
  EXPECT_EQ(t.host_ns(), 105);
  StreamClock c = Stream(4, false);
  EXPECT_EQ(t.Schedule(c, Engine::kCompute, 1).start_ns, 105);  // not before the host issues it
}

TEST(Timeline, LegacyStreamSynchronisesWithBlockingStreamsOnly) {
  Timeline t;
  StreamClock legacy = Stream(0, true);
  legacy.legacy = true;
  StreamClock blocking = Stream(2, true), non_blocking = Stream(3, false);
  t.Schedule(blocking, Engine::kHostToDevice, 100);
  t.Schedule(non_blocking, Engine::kDeviceToHost, 300);
  Span l = t.Schedule(legacy, Engine::kCompute, 10);
  EXPECT_EQ(l.ready_ns, 100);  // waits for the blocking stream, not for the non-blocking one
  EXPECT_EQ(t.Schedule(blocking, Engine::kHostToDevice, 1).ready_ns, 110);  // waits for legacy
  EXPECT_EQ(t.Schedule(non_blocking, Engine::kHostToDevice, 1).ready_ns, 300);
}

}  // namespace
}  // namespace simgpu
