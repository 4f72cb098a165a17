#include "tests/simgpu/device/time/timeline.h"

#include <algorithm>

namespace simgpu {

double Timeline::ReadyTime(const StreamClock& s) const {
  double t = std::max(s.ready_ns, host_.Now());
  if (s.legacy) {
    t = std::max(t, blocking_done_ns_);
  } else if (s.blocking) {
    t = std::max(t, legacy_ready_ns_);
  }
  return t;
}

void Timeline::SetReady(StreamClock& s, double t_ns) {
  s.ready_ns = t_ns;
  if (s.legacy) legacy_ready_ns_ = t_ns;
  if (s.blocking && !s.legacy) blocking_done_ns_ = std::max(blocking_done_ns_, t_ns);
  device_done_ns_ = std::max(device_done_ns_, t_ns);
}

Span Timeline::Schedule(StreamClock& s, Engine engine, double duration_ns) {
  Span span;
  span.ready_ns = ReadyTime(s);
  double& engine_ready = engine_ready_ns_[static_cast<int>(engine)];
  span.start_ns = std::max(span.ready_ns, engine_ready);
  span.end_ns = span.start_ns + duration_ns;
  engine_ready = span.end_ns;
  SetReady(s, span.end_ns);
  return span;
}

double Timeline::Record(StreamClock& s) {
  double t = ReadyTime(s);
  SetReady(s, t);
  return t;
}

void Timeline::Wait(StreamClock& s, double t_ns) {
  if (t_ns > s.ready_ns) SetReady(s, t_ns);
}

double Timeline::StreamDone(const StreamClock& s) const {
  return s.legacy ? std::max(s.ready_ns, blocking_done_ns_) : s.ready_ns;
}

}  // namespace simgpu
