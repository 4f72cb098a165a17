// timeline.h: simgpu's virtual clocks (DESIGN.md Decision 7).
//
// Times are nanoseconds of virtual time as doubles; the same program gives the same times on
// every run. There is a host clock, one clock per stream (when its last op ends), and three
// engines that each run one op at a time: compute (kernels, memsets, device-to-device copies),
// host-to-device copy and device-to-host copy, so copies overlap compute and each other as on a
// GPU. The host clocks are per thread (Note [Host clocks] in host_clocks.h): "the host" below is
// the calling thread's clock. The legacy default stream waits for all earlier work of blocking streams, and blocking
// streams wait for earlier work of the legacy stream; non-blocking streams wait for neither.
//
// Thread safety: none; the device's mutex guards it.
#ifndef SIMGPU_DEVICE_TIMELINE_H_
#define SIMGPU_DEVICE_TIMELINE_H_

#include <cstdint>

#include "tests/simgpu/device/time/host_clocks.h"

namespace simgpu {

enum class Engine { kCompute = 0, kHostToDevice = 1, kDeviceToHost = 2 };

struct StreamClock {
  uint64_t id = 0;       // 0: legacy default stream; 1: CU_STREAM_PER_THREAD; then created ones
  bool legacy = false;   // the legacy default stream
  bool blocking = true;  // synchronises with the legacy default stream
  double ready_ns = 0;   // when the last op issued to this stream ends
};

struct Span {
  double ready_ns;  // earliest start allowed by explicit ordering (stream, host, legacy stream)
  double start_ns;  // actual start: also waits for the engine
  double end_ns;
};

class Timeline {
 public:
  // `per_thread_host` false: one host clock for every thread.
  explicit Timeline(bool per_thread_host = true) : host_(per_thread_host) {}

  // Earliest time an op issued now on `s` may start, by explicit ordering only: the stream's
  // previous work, the host's issue time and the legacy stream's implicit synchronisation.
  double ReadyTime(const StreamClock& s) const;

  // Issues an op of `duration_ns` on `s` running on `engine`.
  Span Schedule(StreamClock& s, Engine engine, double duration_ns);

  // Records an event on `s`: returns its timestamp (all earlier work of `s` done).
  double Record(StreamClock& s);

  // Makes later work of `s` wait until `t_ns` (cudaStreamWaitEvent).
  void Wait(StreamClock& s, double t_ns);

  // When all work issued so far on `s` ends (for the legacy stream: and all blocking streams).
  double StreamDone(const StreamClock& s) const;
  // When all work issued so far ends.
  double DeviceDone() const { return device_done_ns_; }

  // The calling thread blocks until `t_ns` (no-op if its clock is already later).
  void HostWaitUntil(double t_ns) { host_.WaitUntil(t_ns); }
  // The calling thread spends `ns` (an API call's cost, a query's poll).
  void HostAdvance(double ns) { host_.Advance(ns); }
  // The calling thread's clock.
  double host_ns() const { return host_.Now(); }

 private:
  void SetReady(StreamClock& s, double t_ns);

  HostClocks host_;
  double engine_ready_ns_[3] = {0, 0, 0};
  double legacy_ready_ns_ = 0;   // = the legacy stream's ready_ns
  double blocking_done_ns_ = 0;  // max ready_ns over blocking streams
  double device_done_ns_ = 0;    // max ready_ns over all streams
};

}  // namespace simgpu

#endif  // SIMGPU_DEVICE_TIMELINE_H_
