// trace.h: SIMGPU_TRACE, simgpu's timeline in virtual time as Chrome trace events.
//
// pooch's own trace (POOCH_TRACE) stamps events with the host's wall clock, which on simgpu says
// how long the CPU took to compute a kernel, not when the simulated device ran it. This one
// writes every op simgpu schedules at its virtual start and end, one track per engine (compute,
// host to device, device to host), and the intervals the host spent blocked on the device, so
// that a run's virtual time can be read op by op (ui.perfetto.dev, chrome://tracing).
//
// The file is Chrome's JSON array format written as events happen: the device lives until the
// process ends and ops may arrive from other libraries' destructors, so there is no last write
// to close the array; the format allows the closing bracket to be missing. The process's exit
// flushes the file; a Device that is destroyed (tests) closes it.
//
// Thread safety: none; the device's mutex guards it.
#ifndef SIMGPU_DEVICE_TRACE_H_
#define SIMGPU_DEVICE_TRACE_H_

#include <cstdint>
#include <cstdio>
#include <string>

#include "tests/simgpu/device/time/timeline.h"

namespace simgpu {

class TimelineTrace {
 public:
  TimelineTrace() = default;
  TimelineTrace(const TimelineTrace&) = delete;
  TimelineTrace& operator=(const TimelineTrace&) = delete;
  ~TimelineTrace();

  // Opens `path` for writing (an empty path: no trace). False, with one line on stderr, when
  // the file cannot be created; the device then runs without a trace.
  bool Open(const std::string& path);
  bool on() const { return file_ != nullptr; }

  // An op that `stream` ran on `engine` over `span`; `bytes` is a copy's size on a copy engine,
  // 0 on the compute engine (kernels, memsets, device-to-device copies).
  void Op(const char* name, uint64_t stream, Engine engine, const Span& span, uint64_t bytes);
  // The host blocked from `from_ns` to `to_ns` in `why` (an API call); nothing when to <= from.
  void HostWait(const char* why, double from_ns, double to_ns);

 private:
  void Event(const char* name, int track, double start_ns, double end_ns, const std::string& args);

  std::FILE* file_ = nullptr;
};

}  // namespace simgpu

#endif  // SIMGPU_DEVICE_TRACE_H_
