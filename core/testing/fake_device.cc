#include "core/testing/fake_device.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace pooch {

class FakeDevice::MemoryImpl final : public FakeDevice::Memory {
 public:
  MemoryImpl(FakeDevice& device, const Command& command) : device_(device), command_(command) {}

  absl::Status Read(DeviceAddress address, void* out,
                    int64_t bytes) override ABSL_NO_THREAD_SAFETY_ANALYSIS {
    uint8_t* p = Translate(address, bytes);
    if (p == nullptr) return absl::FailedPreconditionError("kernel read of unmapped memory");
    std::memcpy(out, p, static_cast<size_t>(bytes));
    return absl::OkStatus();
  }
  absl::Status Write(DeviceAddress address, const void* data,
                     int64_t bytes) override ABSL_NO_THREAD_SAFETY_ANALYSIS {
    uint8_t* p = Translate(address, bytes);
    if (p == nullptr) return absl::FailedPreconditionError("kernel write of unmapped memory");
    std::memcpy(p, data, static_cast<size_t>(bytes));
    return absl::OkStatus();
  }

 private:
  // Runs with device_.mu_ held (kernels execute inside ExecuteLocked).
  uint8_t* Translate(DeviceAddress address, int64_t bytes) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    for (size_t i = 0; i < command_.ranges.size(); ++i) {
      const Range& r = command_.ranges[i];
      if (address >= r.address && address + bytes <= r.address + r.bytes) {
        return device_.TranslateLocked(address, bytes, "kernel", command_.captured[i]);
      }
    }
    device_.ViolationLocked(absl::StrFormat(
        "kernel touched 0x%x (+%d) outside the ranges it was launched with", address, bytes));
    return nullptr;
  }

  FakeDevice& device_;
  const Command& command_;
};

FakeDevice::FakeDevice(Options options) : options_(options), rng_(options.seed) {
  MutexLock lock(&mu_);
  streams_[kDefaultStream];
  if (options_.mode == Mode::kWorker) worker_ = std::thread([this] { WorkerLoop(); });
}

FakeDevice::~FakeDevice() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    changed_.SignalAll();
  }
  if (worker_.joinable()) worker_.join();
  for (auto& [p, bytes] : host_) delete[] p;
}

void FakeDevice::ViolationLocked(std::string what) { violations_.push_back(std::move(what)); }

absl::StatusOr<DeviceMemoryInfo> FakeDevice::MemoryInfo() {
  MutexLock lock(&mu_);
  return DeviceMemoryInfo{options_.capacity - physical_bytes_, options_.capacity};
}

absl::StatusOr<DeviceAddress> FakeDevice::ReserveAddress(int64_t bytes) {
  if (bytes <= 0 || bytes % options_.granularity != 0) {
    return absl::InvalidArgumentError(absl::StrCat("ReserveAddress: bad size ", bytes));
  }
  MutexLock lock(&mu_);
  const DeviceAddress address = next_address_;
  // Leave a gap so that an access past the end of one range never lands in the next.
  next_address_ += static_cast<DeviceAddress>(bytes + options_.granularity);
  reservations_[address] = bytes;
  return address;
}

absl::Status FakeDevice::FreeAddress(DeviceAddress address, int64_t bytes) {
  MutexLock lock(&mu_);
  auto it = reservations_.find(address);
  if (it == reservations_.end() || it->second != bytes) {
    ViolationLocked(absl::StrFormat("FreeAddress(0x%x, %d): no such reservation", address, bytes));
    return absl::InvalidArgumentError("FreeAddress: no such reservation");
  }
  auto m = mappings_.lower_bound(address);
  if (m != mappings_.end() && m->first < address + static_cast<DeviceAddress>(bytes)) {
    ViolationLocked(absl::StrFormat("FreeAddress(0x%x): range still mapped", address));
  }
  reservations_.erase(it);
  return absl::OkStatus();
}

absl::StatusOr<PhysicalHandle> FakeDevice::CreatePhysical(int64_t bytes) {
  if (bytes <= 0 || bytes % options_.granularity != 0) {
    return absl::InvalidArgumentError(absl::StrCat("CreatePhysical: bad size ", bytes));
  }
  MutexLock lock(&mu_);
  ++create_calls_;
  if (fail_create_after_ == 0) {
    fail_create_after_ = -1;
    return absl::ResourceExhaustedError("CreatePhysical: injected out of memory");
  }
  if (fail_create_after_ > 0) --fail_create_after_;
  if (physical_bytes_ + bytes > options_.capacity) {
    return absl::ResourceExhaustedError("CreatePhysical: out of memory");
  }
  const PhysicalHandle handle = next_handle_++;
  physical_[handle].data.assign(static_cast<size_t>(bytes), 0xCD);  // garbage, as on a GPU
  physical_bytes_ += bytes;
  return handle;
}

absl::Status FakeDevice::ReleasePhysical(PhysicalHandle handle) {
  MutexLock lock(&mu_);
  auto it = physical_.find(handle);
  if (it == physical_.end()) {
    ViolationLocked(absl::StrCat("ReleasePhysical(", handle, "): no such chunk"));
    return absl::InvalidArgumentError("ReleasePhysical: no such chunk");
  }
  if (it->second.queued_uses > 0) {
    ViolationLocked(absl::StrCat("ReleasePhysical(", handle, "): ", it->second.queued_uses,
                                 " queued command(s) still use it"));
  }
  for (const auto& [address, m] : mappings_) {
    if (m.handle == handle) {
      ViolationLocked(
          absl::StrFormat("ReleasePhysical(%d): still mapped at 0x%x", handle, address));
    }
  }
  physical_bytes_ -= static_cast<int64_t>(it->second.data.size());
  physical_.erase(it);
  return absl::OkStatus();
}

absl::Status FakeDevice::Map(DeviceAddress address, int64_t bytes, PhysicalHandle handle) {
  MutexLock lock(&mu_);
  const DeviceAddress end = address + static_cast<DeviceAddress>(bytes);
  if (bytes <= 0 || bytes % options_.granularity != 0 || address % options_.granularity != 0) {
    ViolationLocked(
        absl::StrFormat("Map(0x%x, %d): not aligned to the granularity", address, bytes));
    return absl::InvalidArgumentError("Map: not aligned");
  }
  auto r = reservations_.upper_bound(address);
  if (r == reservations_.begin() ||
      std::prev(r)->first + static_cast<DeviceAddress>(std::prev(r)->second) < end) {
    ViolationLocked(absl::StrFormat("Map(0x%x, %d): outside any reservation", address, bytes));
    return absl::InvalidArgumentError("Map: outside any reservation");
  }
  auto next = mappings_.lower_bound(address);
  const bool overlaps_next = next != mappings_.end() && next->first < end;
  const bool overlaps_prev =
      next != mappings_.begin() &&
      std::prev(next)->first + static_cast<DeviceAddress>(std::prev(next)->second.bytes) > address;
  if (overlaps_next || overlaps_prev) {
    ViolationLocked(absl::StrFormat("Map(0x%x, %d): range already mapped", address, bytes));
    return absl::FailedPreconditionError("Map: range already mapped");
  }
  auto p = physical_.find(handle);
  if (p == physical_.end() || static_cast<int64_t>(p->second.data.size()) < bytes) {
    ViolationLocked(absl::StrFormat("Map(0x%x): bad chunk %d", address, handle));
    return absl::InvalidArgumentError("Map: bad chunk");
  }
  mappings_[address] = Mapping{bytes, handle};
  return absl::OkStatus();
}

absl::Status FakeDevice::Unmap(DeviceAddress address, int64_t bytes) {
  MutexLock lock(&mu_);
  auto it = mappings_.find(address);
  if (it == mappings_.end() || it->second.bytes != bytes) {
    ViolationLocked(absl::StrFormat("Unmap(0x%x, %d): not a mapping", address, bytes));
    return absl::InvalidArgumentError("Unmap: not a mapping");
  }
  const DeviceAddress end = address + static_cast<DeviceAddress>(bytes);
  for (const auto& [handle, stream] : streams_) {
    for (const Command& c : stream.queue) {
      for (const Range& r : c.ranges) {
        if (r.address < end && address < r.address + static_cast<DeviceAddress>(r.bytes)) {
          ViolationLocked(
              absl::StrFormat("Unmap(0x%x, %d): a queued command on stream %d still uses it",
                              address, bytes, handle));
        }
      }
    }
  }
  mappings_.erase(it);
  return absl::OkStatus();
}

absl::StatusOr<void*> FakeDevice::AllocHost(int64_t bytes) {
  if (bytes <= 0) return absl::InvalidArgumentError("AllocHost: bad size");
  MutexLock lock(&mu_);
  if (fail_host_after_ == 0) {
    fail_host_after_ = -1;
    return absl::ResourceExhaustedError("AllocHost: injected failure");
  }
  if (fail_host_after_ > 0) --fail_host_after_;
  if (host_bytes_ + bytes > options_.host_capacity) {
    return absl::ResourceExhaustedError("AllocHost: out of pinned memory");
  }
  uint8_t* p = new uint8_t[static_cast<size_t>(bytes)];
  host_[p] = bytes;
  host_bytes_ += bytes;
  return static_cast<void*>(p);
}

absl::Status FakeDevice::FreeHost(void* host) {
  MutexLock lock(&mu_);
  auto* p = static_cast<uint8_t*>(host);
  auto it = host_.find(p);
  if (it == host_.end()) {
    ViolationLocked("FreeHost: not a pinned buffer");
    return absl::InvalidArgumentError("FreeHost: not a pinned buffer");
  }
  if (auto q = host_queued_uses_.find(p); q != host_queued_uses_.end() && q->second > 0) {
    ViolationLocked("FreeHost: a queued copy still uses the buffer");
  }
  host_bytes_ -= it->second;
  host_.erase(it);
  delete[] p;
  return absl::OkStatus();
}

absl::StatusOr<StreamHandle> FakeDevice::CreateStream() {
  MutexLock lock(&mu_);
  const StreamHandle handle = next_handle_++;
  streams_[handle];
  return handle;
}

absl::Status FakeDevice::DestroyStream(StreamHandle stream) {
  MutexLock lock(&mu_);
  auto it = streams_.find(stream);
  if (it == streams_.end() || stream == kDefaultStream) {
    return absl::InvalidArgumentError("DestroyStream: no such stream");
  }
  // CUDA lets queued work finish; so do we.
  absl::Status s =
      WaitLocked([&]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return streams_[stream].queue.empty(); },
                 "DestroyStream", stream, 0, 0);
  streams_.erase(stream);
  return s;
}

bool FakeDevice::HostPinnedLocked(const void* host, int64_t bytes) const {
  const auto* p = static_cast<const uint8_t*>(host);
  auto it = host_.upper_bound(p);
  if (it == host_.begin()) return false;
  --it;
  return p >= it->first && p + bytes <= it->first + it->second;
}

PhysicalHandle FakeDevice::ChunkAtLocked(DeviceAddress address) const {
  auto it = mappings_.upper_bound(address);
  if (it == mappings_.begin()) return 0;
  --it;
  if (address >= it->first + static_cast<DeviceAddress>(it->second.bytes)) return 0;
  return it->second.handle;
}

uint8_t* FakeDevice::TranslateLocked(DeviceAddress address, int64_t bytes, absl::string_view what,
                                     PhysicalHandle expected) {
  auto it = mappings_.upper_bound(address);
  if (it == mappings_.begin() ||
      address + static_cast<DeviceAddress>(bytes) >
          std::prev(it)->first + static_cast<DeviceAddress>(std::prev(it)->second.bytes)) {
    ViolationLocked(
        absl::StrFormat("%s: access to unmapped memory 0x%x (+%d)", what, address, bytes));
    return nullptr;
  }
  --it;
  if (expected != 0 && it->second.handle != expected) {
    ViolationLocked(absl::StrFormat(
        "%s: 0x%x was remapped to another chunk after the command was queued", what, address));
    return nullptr;
  }
  auto p = physical_.find(it->second.handle);
  if (p == physical_.end()) {
    ViolationLocked(absl::StrFormat("%s: 0x%x maps a released chunk", what, address));
    return nullptr;
  }
  return p->second.data.data() + (address - it->first);
}

absl::Status FakeDevice::EnqueueLocked(StreamHandle stream, Command command) {
  auto s = streams_.find(stream);
  if (s == streams_.end()) {
    return absl::InvalidArgumentError(absl::StrCat("no such stream ", stream));
  }
  for (const Range& r : command.ranges) {
    const PhysicalHandle chunk = ChunkAtLocked(r.address);
    command.captured.push_back(chunk);
    if (chunk != 0) ++physical_[chunk].queued_uses;
  }
  if (command.host != nullptr) ++host_queued_uses_[static_cast<uint8_t*>(command.host)];
  s->second.queue.push_back(std::move(command));
  switch (options_.mode) {
    case Mode::kImmediate:
      DrainLocked();
      break;
    case Mode::kWorker:
      changed_.SignalAll();
      break;
    case Mode::kManual:
      break;
  }
  return absl::OkStatus();
}

bool FakeDevice::RunnableLocked(const Command& command) const {
  if (command.kind != Kind::kWait) return true;
  return RecordDoneLocked(command.generation);
}

void FakeDevice::ExecuteLocked(Command& c) {
  switch (c.kind) {
    case Kind::kCopyToHost: {
      uint8_t* src = TranslateLocked(c.ranges[0].address, c.bytes, "CopyToHost", c.captured[0]);
      if (src != nullptr) std::memcpy(c.host, src, static_cast<size_t>(c.bytes));
      clock_us_ += static_cast<double>(c.bytes) / options_.copy_bytes_per_us;
      break;
    }
    case Kind::kCopyToDevice: {
      uint8_t* dst = TranslateLocked(c.ranges[0].address, c.bytes, "CopyToDevice", c.captured[0]);
      if (dst != nullptr) std::memcpy(dst, c.host, static_cast<size_t>(c.bytes));
      clock_us_ += static_cast<double>(c.bytes) / options_.copy_bytes_per_us;
      break;
    }
    case Kind::kRecord: {
      pending_records_.erase(c.generation);
      auto e = events_.find(c.event);
      if (e != events_.end() && e->second.latest == c.generation) {
        e->second.completed_at_us = clock_us_;
      }
      break;
    }
    case Kind::kWait:
      break;
    case Kind::kKernel: {
      MemoryImpl memory(*this, c);
      c.kernel(memory);
      break;
    }
  }
  for (PhysicalHandle chunk : c.captured) {
    if (chunk == 0) continue;
    auto p = physical_.find(chunk);
    if (p != physical_.end()) --p->second.queued_uses;
  }
  if (c.host != nullptr) --host_queued_uses_[static_cast<uint8_t*>(c.host)];
}

bool FakeDevice::StepLocked() {
  std::vector<Stream*> runnable;
  for (auto& [handle, stream] : streams_) {
    if (!stream.queue.empty() && RunnableLocked(stream.queue.front())) runnable.push_back(&stream);
  }
  if (runnable.empty()) return false;
  Stream* s = runnable[rng_() % runnable.size()];
  Command c = std::move(s->queue.front());
  s->queue.pop_front();
  ExecuteLocked(c);
  return true;
}

void FakeDevice::DrainLocked() {
  bool ran = false;
  while (StepLocked()) ran = true;
  if (ran) changed_.SignalAll();
}

absl::Status FakeDevice::WaitLocked(const std::function<bool()>& done, absl::string_view what,
                                    StreamHandle stream, EventHandle event, uint64_t generation) {
  if (options_.mode == Mode::kWorker) {
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (!done()) {
      if (changed_.WaitWithDeadline(&mu_, deadline) && !done()) {
        ViolationLocked(absl::StrCat(what, ": waited 30 s; deadlock"));
        return absl::DeadlineExceededError(absl::StrCat(what, ": deadlock"));
      }
    }
    return absl::OkStatus();
  }
  if (options_.mode == Mode::kManual) {
    if (event != 0) {
      RunUntilRecordedLocked(generation, 0);
    } else {
      RunStreamLocked(stream, done, 0);
    }
  } else {
    DrainLocked();
  }
  if (!done()) {
    ViolationLocked(absl::StrCat(what, ": would block forever"));
    return absl::FailedPreconditionError(absl::StrCat(what, ": would block forever"));
  }
  return absl::OkStatus();
}

bool FakeDevice::RunUntilRecordedLocked(uint64_t record, int depth) {
  if (RecordDoneLocked(record)) return true;
  if (depth > 64) return false;
  for (auto& [handle, stream] : streams_) {
    for (const Command& c : stream.queue) {
      if (c.kind == Kind::kRecord && c.generation == record) {
        const StreamHandle target = handle;
        return RunStreamLocked(
            target, [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return RecordDoneLocked(record); },
            depth + 1);
      }
    }
  }
  return false;
}

bool FakeDevice::RunStreamLocked(StreamHandle stream, const std::function<bool()>& done,
                                 int depth) {
  while (!done()) {
    auto s = streams_.find(stream);
    if (s == streams_.end() || s->second.queue.empty()) return done();
    Command& head = s->second.queue.front();
    if (!RunnableLocked(head)) {
      if (!RunUntilRecordedLocked(head.generation, depth + 1)) return false;
      continue;
    }
    Command c = std::move(head);
    s->second.queue.pop_front();
    ExecuteLocked(c);
    changed_.SignalAll();
  }
  return true;
}

void FakeDevice::WorkerLoop() {
  MutexLock lock(&mu_);
  while (!stopping_) {
    if (StepLocked()) {
      changed_.SignalAll();
      if (options_.command_delay > absl::ZeroDuration()) {
        mu_.Unlock();
        absl::SleepFor(options_.command_delay);
        mu_.Lock();
      }
    } else {
      changed_.Wait(&mu_);
    }
  }
}

absl::Status FakeDevice::CopyToHostAsync(void* host, DeviceAddress device, int64_t bytes,
                                         StreamHandle stream) {
  MutexLock lock(&mu_);
  if (!HostPinnedLocked(host, bytes)) ViolationLocked("CopyToHostAsync: host side is not pinned");
  if (ChunkAtLocked(device) == 0) {
    ViolationLocked(absl::StrFormat("CopyToHostAsync: 0x%x is not mapped", device));
    return absl::InvalidArgumentError("CopyToHostAsync: not mapped");
  }
  Command c;
  c.kind = Kind::kCopyToHost;
  c.ranges = {Range{device, bytes}};
  c.host = host;
  c.bytes = bytes;
  return EnqueueLocked(stream, std::move(c));
}

absl::Status FakeDevice::CopyToDeviceAsync(DeviceAddress device, const void* host, int64_t bytes,
                                           StreamHandle stream) {
  MutexLock lock(&mu_);
  if (!HostPinnedLocked(host, bytes)) ViolationLocked("CopyToDeviceAsync: host side is not pinned");
  if (ChunkAtLocked(device) == 0) {
    ViolationLocked(absl::StrFormat("CopyToDeviceAsync: 0x%x is not mapped", device));
    return absl::InvalidArgumentError("CopyToDeviceAsync: not mapped");
  }
  Command c;
  c.kind = Kind::kCopyToDevice;
  c.ranges = {Range{device, bytes}};
  c.host = const_cast<void*>(host);
  c.bytes = bytes;
  return EnqueueLocked(stream, std::move(c));
}

absl::StatusOr<EventHandle> FakeDevice::CreateEvent() {
  MutexLock lock(&mu_);
  const EventHandle handle = next_handle_++;
  events_[handle];
  return handle;
}

absl::StatusOr<EventHandle> FakeDevice::CreateTimingEvent() {
  MutexLock lock(&mu_);
  const EventHandle handle = next_handle_++;
  events_[handle].timing = true;
  return handle;
}

absl::StatusOr<double> FakeDevice::ElapsedMicroseconds(EventHandle start, EventHandle end) {
  MutexLock lock(&mu_);
  auto s = events_.find(start);
  auto e = events_.find(end);
  if (s == events_.end() || e == events_.end()) {
    return absl::InvalidArgumentError("ElapsedMicroseconds: no such event");
  }
  for (const Event* ev : {&s->second, &e->second}) {
    if (!ev->timing) {
      return absl::FailedPreconditionError("ElapsedMicroseconds: not a timing event");
    }
    if (ev->latest == 0 || !RecordDoneLocked(ev->latest)) {
      return absl::FailedPreconditionError("ElapsedMicroseconds: event not recorded or not done");
    }
  }
  return e->second.completed_at_us - s->second.completed_at_us;
}

absl::Status FakeDevice::DestroyEvent(EventHandle event) {
  MutexLock lock(&mu_);
  // Like CUDA, a destroyed event's queued record still completes harmlessly; we keep the entry
  // so that queued waits on it stay well defined.
  if (!events_.contains(event)) return absl::InvalidArgumentError("DestroyEvent: no such event");
  return absl::OkStatus();
}

absl::Status FakeDevice::RecordEvent(EventHandle event, StreamHandle stream) {
  MutexLock lock(&mu_);
  auto e = events_.find(event);
  if (e == events_.end()) return absl::InvalidArgumentError("RecordEvent: no such event");
  Command c;
  c.kind = Kind::kRecord;
  c.event = event;
  c.generation = next_record_++;
  e->second.latest = c.generation;
  pending_records_.insert(c.generation);
  return EnqueueLocked(stream, std::move(c));
}

absl::StatusOr<bool> FakeDevice::QueryEvent(EventHandle event) {
  MutexLock lock(&mu_);
  auto e = events_.find(event);
  if (e == events_.end()) return absl::InvalidArgumentError("QueryEvent: no such event");
  if (fail_query_after_ == 0) {
    fail_query_after_ = -1;
    return absl::InternalError("QueryEvent: injected failure");
  }
  if (fail_query_after_ > 0) --fail_query_after_;
  return RecordDoneLocked(e->second.latest);
}

absl::Status FakeDevice::SynchronizeEvent(EventHandle event) {
  MutexLock lock(&mu_);
  auto e = events_.find(event);
  if (e == events_.end()) return absl::InvalidArgumentError("SynchronizeEvent: no such event");
  const uint64_t target = e->second.latest;
  return WaitLocked([&]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return RecordDoneLocked(target); },
                    "SynchronizeEvent", 0, event, target);
}

absl::Status FakeDevice::StreamWaitEvent(StreamHandle stream, EventHandle event) {
  MutexLock lock(&mu_);
  auto e = events_.find(event);
  if (e == events_.end()) return absl::InvalidArgumentError("StreamWaitEvent: no such event");
  Command c;
  c.kind = Kind::kWait;
  c.event = event;
  c.generation = e->second.latest;
  return EnqueueLocked(stream, std::move(c));
}

absl::Status FakeDevice::Launch(StreamHandle stream, std::vector<Range> ranges, Kernel kernel) {
  MutexLock lock(&mu_);
  for (const Range& r : ranges) {
    if (ChunkAtLocked(r.address) == 0) {
      ViolationLocked(
          absl::StrFormat("Launch: 0x%x is not mapped when the kernel is queued", r.address));
    }
  }
  Command c;
  c.kind = Kind::kKernel;
  c.ranges = std::move(ranges);
  c.kernel = std::move(kernel);
  return EnqueueLocked(stream, std::move(c));
}

absl::Status FakeDevice::Write(DeviceAddress address, const void* data, int64_t bytes) {
  MutexLock lock(&mu_);
  uint8_t* p = TranslateLocked(address, bytes, "Write");
  if (p == nullptr) return absl::FailedPreconditionError("Write: unmapped memory");
  std::memcpy(p, data, static_cast<size_t>(bytes));
  return absl::OkStatus();
}

absl::Status FakeDevice::Read(DeviceAddress address, void* out, int64_t bytes) {
  MutexLock lock(&mu_);
  uint8_t* p = TranslateLocked(address, bytes, "Read");
  if (p == nullptr) return absl::FailedPreconditionError("Read: unmapped memory");
  std::memcpy(out, p, static_cast<size_t>(bytes));
  return absl::OkStatus();
}

void FakeDevice::RunPending() {
  MutexLock lock(&mu_);
  if (options_.mode == Mode::kWorker) {
    WaitLocked(
        [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
          for (const auto& [h, s] : streams_) {
            if (!s.queue.empty()) return false;
          }
          return true;
        },
        "RunPending", 0, 0, 0)
        .IgnoreError();
  } else {
    DrainLocked();
  }
}

absl::Status FakeDevice::SynchronizeStream(StreamHandle stream) {
  MutexLock lock(&mu_);
  if (!streams_.contains(stream)) return absl::InvalidArgumentError("no such stream");
  return WaitLocked([&]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return streams_[stream].queue.empty(); },
                    "SynchronizeStream", stream, 0, 0);
}

void FakeDevice::FailCreatePhysicalAfter(int successes) {
  MutexLock lock(&mu_);
  fail_create_after_ = successes;
}

void FakeDevice::FailAllocHostAfter(int successes) {
  MutexLock lock(&mu_);
  fail_host_after_ = successes;
}

void FakeDevice::FailQueryEventAfter(int successes) {
  MutexLock lock(&mu_);
  fail_query_after_ = successes;
}

std::vector<std::string> FakeDevice::violations() const {
  MutexLock lock(&mu_);
  return violations_;
}

int64_t FakeDevice::physical_bytes() const {
  MutexLock lock(&mu_);
  return physical_bytes_;
}

int64_t FakeDevice::host_bytes() const {
  MutexLock lock(&mu_);
  return host_bytes_;
}

int64_t FakeDevice::mapped_bytes() const {
  MutexLock lock(&mu_);
  int64_t total = 0;
  for (const auto& [a, m] : mappings_) total += m.bytes;
  return total;
}

int64_t FakeDevice::create_physical_calls() const {
  MutexLock lock(&mu_);
  return create_calls_;
}

int64_t FakeDevice::queued_commands() const {
  MutexLock lock(&mu_);
  int64_t n = 0;
  for (const auto& [h, s] : streams_) n += static_cast<int64_t>(s.queue.size());
  return n;
}

}  // namespace pooch
