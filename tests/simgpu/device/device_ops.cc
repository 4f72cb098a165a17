// Device ops (copies, memsets, launches), streams and events (see "Time" and "Errors" in
// device.h).
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <vector>

#include "tests/simgpu/device/device.h"

namespace simgpu {
namespace {

constexpr uintptr_t kLegacyHandle = 0x1;     // CU_STREAM_LEGACY / cudaStreamLegacy
constexpr uintptr_t kPerThreadHandle = 0x2;  // CU_STREAM_PER_THREAD / cudaStreamPerThread

}  // namespace

StreamClock* Device::ResolveStreamLocked(void* stream) {
  uintptr_t h = reinterpret_cast<uintptr_t>(stream);
  if (h == 0 || h == kLegacyHandle) return &legacy_;
  if (h == kPerThreadHandle) return &per_thread_;
  auto it = streams_.find(stream);
  return it == streams_.end() ? nullptr : it->second.get();
}

Device::Event* Device::ResolveEventLocked(void* event) {
  auto it = events_.find(event);
  return it == events_.end() ? nullptr : it->second.get();
}

double Device::ComputeNs(double flops, double bytes) const {
  const Preset& m = config_.machine;
  double compute_s = flops / (m.fp32_tflops * 1e12 * m.efficiency);
  double memory_s = bytes / (m.mem_gbps * 1e9);
  return (compute_s > memory_s ? compute_s : memory_s) * 1e9 + m.launch_us * 1e3;
}

double Device::LinkNs(Engine engine, double bytes) const {
  const Preset& m = config_.machine;
  double gbps = engine == Engine::kHostToDevice ? m.h2d_gbps : m.d2h_gbps;
  return bytes / gbps + m.launch_us * 1e3;  // bytes / (GB/s) = ns
}

Err Device::IssueLocked(const char* op, StreamClock* s, const Access* accesses, size_t n,
                        Engine engine, double duration_ns, bool host_waits) {
  if (sticky_ != Err::kOk) return sticky_;
  for (size_t i = 0; i < n; ++i) {
    const Access& a = accesses[i];
    Err e = CheckAccessLocked(op, reinterpret_cast<uint64_t>(a.ptr), a.bytes, a.write);
    if (e != Err::kOk) return e;
  }
  double ready = timeline_.ReadyTime(*s);
  if (config_.hazards != HazardMode::kOff) {
    for (size_t i = 0; i < n; ++i) {
      const Access& a = accesses[i];
      uint64_t lo = reinterpret_cast<uint64_t>(a.ptr);
      if (std::optional<Race> race = hazards_.Check(lo, lo + a.bytes, a.write, s->id, ready)) {
        Err e = ReportRaceLocked(op, a.write ? "writes" : "reads", s->id, ready, *race);
        if (e != Err::kOk) return e;
      }
    }
  }
  Span span = timeline_.Schedule(*s, engine, duration_ns);
  trace_.Op(op, s->id, engine, span, engine != Engine::kCompute && n > 0 ? accesses[0].bytes : 0);
  for (size_t i = 0; i < n; ++i) {
    const Access& a = accesses[i];
    uint64_t lo = reinterpret_cast<uint64_t>(a.ptr);
    hazards_.Record(lo, lo + a.bytes, a.write, s->id, span.end_ns, op);
  }
  if (host_waits) HostWaitLocked(op, span.end_ns);
  return Err::kOk;
}

Err Device::Launch(const char* op, void* stream, const Access* accesses, size_t n, double flops,
                   double bytes, const std::function<void()>& body) {
  {
    CallLock lock(*this, HostCall::kLaunch);
    if (sticky_ != Err::kOk) return sticky_;
    StreamClock* s = ResolveStreamLocked(stream);
    if (s == nullptr) return Err::kInvalidHandle;
    if (n > 0 && accesses == nullptr) return Err::kInvalidValue;
    Err e = IssueLocked(op, s, accesses, n, Engine::kCompute, ComputeNs(flops, bytes), false);
    if (e != Err::kOk) return e;
  }
  if (config_.compute == ComputeMode::kMath && body) body();
  return Err::kOk;
}

Err Device::Memcpy(const char* op, void* dst, const void* src, uint64_t bytes, CopyDir dir,
                   void* stream, bool sync) {
  if (bytes == 0) return Sticky();
  if (dst == nullptr || src == nullptr) return Err::kInvalidValue;
  {
    CallLock lock(*this, sync ? HostCall::kCopySync : HostCall::kCopyAsync);
    if (sticky_ != Err::kOk) return sticky_;
    StreamClock* s = ResolveStreamLocked(stream);
    if (s == nullptr) return Err::kInvalidHandle;
    uint64_t d = reinterpret_cast<uint64_t>(dst), r = reinterpret_cast<uint64_t>(src);
    bool dst_dev = InDeviceRange(d, 1), src_dev = InDeviceRange(r, 1);
    if (dir == CopyDir::kDefault) {
      dir = dst_dev ? (src_dev ? CopyDir::kDeviceToDevice : CopyDir::kHostToDevice)
                    : (src_dev ? CopyDir::kDeviceToHost : CopyDir::kHostToHost);
    }
    bool want_dst_dev = dir == CopyDir::kHostToDevice || dir == CopyDir::kDeviceToDevice;
    bool want_src_dev = dir == CopyDir::kDeviceToHost || dir == CopyDir::kDeviceToDevice;
    if (dst_dev != want_dst_dev || src_dev != want_src_dev) {
      std::fprintf(stderr, "simgpu: %s: the pointers do not match the copy kind (dst %s, src %s)\n",
                   op, dst_dev ? "device" : "host", src_dev ? "device" : "host");
      return Err::kInvalidValue;
    }
    // Device-to-device copies never block the host, even in their synchronous forms.
    if (dir == CopyDir::kDeviceToDevice) sync = false;
    if (dir == CopyDir::kHostToHost) {
      // Ordered after the stream's work; the host does the copy (no engine, no time).
      HostWaitLocked(op, timeline_.StreamDone(*s));
    } else {
      // A copy involving pageable host memory is synchronous for the host, as in CUDA.
      bool pageable = false;
      std::vector<Access> acc;
      acc.push_back(Access{src, bytes, false});
      acc.push_back(Access{dst, bytes, true});
      for (const Access& a : acc) {
        uint64_t p = reinterpret_cast<uint64_t>(a.ptr);
        if (!InDeviceRange(p, 1) && ClassifyLocked(p).kind != PtrKind::kPinnedHost) {
          pageable = true;
        }
      }
      // Pageable host memory is not tracked: only device and pinned ranges are checked.
      std::vector<Access> tracked;
      for (const Access& a : acc) {
        uint64_t p = reinterpret_cast<uint64_t>(a.ptr);
        if (InDeviceRange(p, 1) || ClassifyLocked(p).kind == PtrKind::kPinnedHost) {
          tracked.push_back(a);
        }
      }
      Engine engine = dir == CopyDir::kHostToDevice   ? Engine::kHostToDevice
                      : dir == CopyDir::kDeviceToHost ? Engine::kDeviceToHost
                                                      : Engine::kCompute;
      double ns = engine == Engine::kCompute ? ComputeNs(0, 2.0 * static_cast<double>(bytes))
                                             : LinkNs(engine, static_cast<double>(bytes));
      Err e = IssueLocked(op, s, tracked.data(), tracked.size(), engine, ns, sync || pageable);
      if (e != Err::kOk) return e;
    }
  }
  if (config_.compute == ComputeMode::kMath) std::memmove(dst, src, bytes);
  return Err::kOk;
}

Err Device::Memset(const char* op, void* dst, uint8_t value, uint64_t bytes, void* stream,
                   bool sync) {
  if (bytes == 0) return Sticky();
  {
    CallLock lock(*this, sync ? HostCall::kMemsetSync : HostCall::kMemsetAsync);
    if (sticky_ != Err::kOk) return sticky_;
    StreamClock* s = ResolveStreamLocked(stream);
    if (s == nullptr) return Err::kInvalidHandle;
    Access a{dst, bytes, true};
    Err e =
        IssueLocked(op, s, &a, 1, Engine::kCompute, ComputeNs(0, static_cast<double>(bytes)), sync);
    if (e != Err::kOk) return e;
  }
  if (config_.compute == ComputeMode::kMath) std::memset(dst, value, bytes);
  return Err::kOk;
}

// --- Streams ---

Err Device::StreamCreate(bool non_blocking, void** out) {
  if (out == nullptr) return Err::kInvalidValue;
  CallLock lock(*this, HostCall::kStreamCreate);
  if (sticky_ != Err::kOk) return sticky_;
  auto s = std::make_unique<StreamClock>();
  s->id = next_stream_id_++;
  s->blocking = !non_blocking;
  // A new stream starts at the host's present.
  s->ready_ns = timeline_.host_ns();
  void* handle = s.get();
  streams_.emplace(handle, std::move(s));
  *out = handle;
  return Err::kOk;
}

Err Device::StreamDestroy(void* stream) {
  CallLock lock(*this, HostCall::kStreamDestroy);
  // Work already issued completes (in virtual time) as CUDA does; only the handle goes.
  return streams_.erase(stream) == 1 ? Err::kOk : Err::kInvalidHandle;
}

Err Device::StreamSynchronize(void* stream) {
  CallLock lock(*this, HostCall::kSynchronize);
  StreamClock* s = ResolveStreamLocked(stream);
  if (s == nullptr) return Err::kInvalidHandle;
  if (sticky_ != Err::kOk) return sticky_;
  HostWaitLocked("cudaStreamSynchronize", timeline_.StreamDone(*s));
  return Err::kOk;
}

Err Device::StreamQuery(void* stream) {
  CallLock lock(*this, HostCall::kQuery);
  StreamClock* s = ResolveStreamLocked(stream);
  if (s == nullptr) return Err::kInvalidHandle;
  if (sticky_ != Err::kOk) return sticky_;
  if (double done = timeline_.StreamDone(*s); done <= timeline_.host_ns()) {
    timeline_.HostWaitUntil(done);  // seen to have ended (Note [Host clocks])
    return Err::kOk;
  }
  timeline_.HostAdvance(kPollNs);
  return Err::kNotReady;
}

Err Device::StreamWaitEvent(void* stream, void* event) {
  CallLock lock(*this, HostCall::kStreamWait);
  StreamClock* s = ResolveStreamLocked(stream);
  Event* e = ResolveEventLocked(event);
  if (s == nullptr || e == nullptr) return Err::kInvalidHandle;
  if (sticky_ != Err::kOk) return sticky_;
  // Waiting on an event never recorded is a no-op, as in CUDA.
  if (e->recorded) timeline_.Wait(*s, e->time_ns);
  return Err::kOk;
}

// --- Events ---

Err Device::EventCreate(bool timing, void** out) {
  if (out == nullptr) return Err::kInvalidValue;
  CallLock lock(*this, HostCall::kEventCreate);
  if (sticky_ != Err::kOk) return sticky_;
  auto e = std::make_unique<Event>();
  e->timing = timing;
  void* handle = e.get();
  events_.emplace(handle, std::move(e));
  *out = handle;
  return Err::kOk;
}

Err Device::EventDestroy(void* event) {
  CallLock lock(*this, HostCall::kEventDestroy);
  return events_.erase(event) == 1 ? Err::kOk : Err::kInvalidHandle;
}

Err Device::EventRecord(void* event, void* stream) {
  CallLock lock(*this, HostCall::kEventRecord);
  StreamClock* s = ResolveStreamLocked(stream);
  Event* e = ResolveEventLocked(event);
  if (s == nullptr || e == nullptr) return Err::kInvalidHandle;
  if (sticky_ != Err::kOk) return sticky_;
  e->recorded = true;
  e->time_ns = timeline_.Record(*s);
  return Err::kOk;
}

Err Device::EventSynchronize(void* event) {
  CallLock lock(*this, HostCall::kSynchronize);
  Event* e = ResolveEventLocked(event);
  if (e == nullptr) return Err::kInvalidHandle;
  if (sticky_ != Err::kOk) return sticky_;
  if (e->recorded) HostWaitLocked("cudaEventSynchronize", e->time_ns);
  return Err::kOk;
}

Err Device::EventQuery(void* event) {
  CallLock lock(*this, HostCall::kQuery);
  Event* e = ResolveEventLocked(event);
  if (e == nullptr) return Err::kInvalidHandle;
  if (sticky_ != Err::kOk) return sticky_;
  if (!e->recorded) return Err::kOk;
  if (e->time_ns <= timeline_.host_ns()) {
    timeline_.HostWaitUntil(e->time_ns);  // seen to have ended (Note [Host clocks])
    return Err::kOk;
  }
  timeline_.HostAdvance(kPollNs);
  return Err::kNotReady;
}

Err Device::EventElapsed(void* start, void* end, float* ms) {
  if (ms == nullptr) return Err::kInvalidValue;
  CallLock lock(*this, HostCall::kQuery);
  Event* a = ResolveEventLocked(start);
  Event* b = ResolveEventLocked(end);
  if (a == nullptr || b == nullptr) return Err::kInvalidHandle;
  if (sticky_ != Err::kOk) return sticky_;
  if (!a->timing || !b->timing || !a->recorded || !b->recorded) return Err::kInvalidHandle;
  if (a->time_ns > timeline_.host_ns() || b->time_ns > timeline_.host_ns()) {
    return Err::kNotReady;
  }
  *ms = static_cast<float>((b->time_ns - a->time_ns) / 1e6);
  return Err::kOk;
}

Err Device::Synchronize() {
  CallLock lock(*this, HostCall::kSynchronize);
  if (sticky_ != Err::kOk) return sticky_;
  HostWaitLocked("cudaDeviceSynchronize", timeline_.DeviceDone());
  return Err::kOk;
}

void Device::HostWaitLocked(const char* why, double t_ns) {
  const double from = timeline_.host_ns();
  timeline_.HostWaitUntil(t_ns);
  trace_.HostWait(why, from, timeline_.host_ns());
}

double Device::HostTimeNs() {
  std::lock_guard<std::mutex> lock(mu_);
  return timeline_.host_ns();
}

std::optional<double> Device::StreamTimeNs(void* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  StreamClock* s = ResolveStreamLocked(stream);
  if (s == nullptr) return std::nullopt;
  return timeline_.StreamDone(*s);
}

}  // namespace simgpu
