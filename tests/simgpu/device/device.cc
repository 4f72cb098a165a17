// Device: construction, the singleton, fault injection, pointer classification and the shared
// checks every op goes through. Memory lives in device_memory.cc, ops and streams in
// device_ops.cc.
#include "tests/simgpu/device/device.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>

namespace simgpu {

Device& Device::Get() {
  CheckConfigOrExit();
  // Never destroyed: API calls may arrive from other libraries' destructors at exit.
  static Device* device = new Device(GlobalConfig());
  return *device;
}

Device::Device(const Config& config)
    : config_(config), timeline_(config.host_mode == HostMode::kOn) {
  legacy_.id = 0;
  legacy_.legacy = true;
  legacy_.blocking = true;
  per_thread_.id = 1;
  per_thread_.blocking = true;
  trace_.Open(config_.trace_path);
}

Device::~Device() {
  if (memfd_ >= 0) close(memfd_);
  if (va_base_ != 0) munmap(reinterpret_cast<void*>(va_base_), va_bytes_);
  for (const auto& [base, bytes] : pinned_) munmap(reinterpret_cast<void*>(base), bytes);
}

bool Device::FailNow(const char* api) {
  std::lock_guard<std::mutex> lock(mu_);
  if (config_.fail_api.empty() || config_.fail_api != api) return false;
  if (++fail_seen_ != config_.fail_call) return false;
  std::fprintf(stderr, "simgpu: SIMGPU_FAIL: call %" PRIu64 " of %s fails with out-of-memory\n",
               fail_seen_, api);
  return true;
}

void Device::ChargeLocked(HostCall call, uint64_t pinned_bytes) {
  const HostCosts& c = config_.host_costs;
  double us = c.us[static_cast<int>(call)] +
              c.pinned_us_per_gib * static_cast<double>(pinned_bytes) / double(uint64_t{1} << 30);
  if (us > 0) timeline_.HostAdvance(us * 1e3);
}

Err Device::Sticky() {
  std::lock_guard<std::mutex> lock(mu_);
  return sticky_;
}

bool Device::InDeviceRange(uint64_t addr, uint64_t bytes) const {
  return va_base_ != 0 && addr >= va_base_ && addr - va_base_ <= va_bytes_ &&
         bytes <= va_bytes_ - (addr - va_base_);
}

PtrInfo Device::ClassifyLocked(uint64_t addr) const {
  PtrInfo info;
  if (InDeviceRange(addr, 1)) {
    auto m = mapped_.Find(addr);
    if (m == mapped_.end()) return info;
    info.kind = PtrKind::kDevice;
    if (m->second.value.kind == Mapping::Kind::kMalloc) {
      info.base = m->second.value.owner;
      info.bytes = allocs_.at(info.base).bytes;
    } else {
      info.base = m->first;
      info.bytes = m->second.hi - m->first;
    }
    return info;
  }
  auto it = pinned_.upper_bound(addr);
  if (it != pinned_.begin()) {
    --it;
    if (addr - it->first < it->second) {
      info.kind = PtrKind::kPinnedHost;
      info.base = it->first;
      info.bytes = it->second;
    }
  }
  return info;
}

bool Device::DanglingLocked(uint64_t addr) const {
  if (freed_.Find(addr) != freed_.end()) return true;
  auto r = reserved_.upper_bound(addr);
  if (r == reserved_.begin()) return false;
  --r;
  return addr - r->first < r->second && mapped_.Find(addr) == mapped_.end();
}

PtrInfo Device::Classify(const void* ptr) {
  std::lock_guard<std::mutex> lock(mu_);
  return ClassifyLocked(reinterpret_cast<uint64_t>(ptr));
}

Err Device::CheckAccessLocked(const char* op, uint64_t addr, uint64_t bytes, bool write) {
  if (bytes == 0) return Err::kOk;
  if (!InDeviceRange(addr, bytes)) {
    PtrInfo info = ClassifyLocked(addr);
    if (info.kind == PtrKind::kPinnedHost && addr + bytes <= info.base + info.bytes) {
      return Err::kOk;
    }
  } else {
    uint64_t bad = 0;
    if (mapped_.Covers(
            addr, addr + bytes, [&](const Mapping& m) { return m.read && (!write || m.write); },
            &bad)) {
      return Err::kOk;
    }
    auto m = mapped_.Find(bad);
    const char* why = m == mapped_.end() ? "not mapped (never allocated, freed or unmapped)"
                                         : "not accessible (cuMemSetAccess)";
    std::fprintf(stderr,
                 "simgpu: illegal address: %s %s [0x%" PRIx64 ", +%" PRIu64 "): 0x%" PRIx64
                 " is %s\n",
                 op, write ? "writes" : "reads", addr, bytes, bad, why);
    sticky_ = Err::kIllegalAddress;
    return sticky_;
  }
  std::fprintf(stderr,
               "simgpu: illegal address: %s %s [0x%" PRIx64 ", +%" PRIu64 "): 0x%" PRIx64
               " is not device memory\n",
               op, write ? "writes" : "reads", addr, bytes, addr);
  sticky_ = Err::kIllegalAddress;
  return sticky_;
}

Err Device::ReportRaceLocked(const char* op, const char* what, uint64_t stream, double t_ns,
                             const Race& race) {
  if (config_.hazards == HazardMode::kOff) return Err::kOk;
  auto stream_name = [](uint64_t id) {
    if (id == kHostStreamId) return std::string("the host");
    if (id == 0) return std::string("the legacy default stream");
    return "stream " + std::to_string(id);
  };
  std::fprintf(stderr,
               "simgpu: %s: race: %s on %s %s 0x%" PRIx64
               " at t=%.3f us, but %s on %s %s it "
               "until t=%.3f us (missing event wait or synchronisation)\n",
               config_.hazards == HazardMode::kError ? "error" : "warning", op,
               stream_name(stream).c_str(), what, race.addr, t_ns / 1e3, race.earlier.op,
               stream_name(race.earlier.stream).c_str(), race.earlier_write ? "writes" : "reads",
               race.earlier.end_ns / 1e3);
  if (config_.hazards == HazardMode::kWarn) return Err::kOk;
  sticky_ = Err::kHazard;
  return sticky_;
}

}  // namespace simgpu
