// The free functions of simgpu.h, over the process's Device.
#include <cstdio>
#include <cstdlib>

#include "tests/simgpu/device/config/config.h"
#include "tests/simgpu/device/device.h"
#include "tests/simgpu/device/simgpu.h"

namespace simgpu {

Err Launch(const char* op, void* stream, const Access* accesses, size_t n, double flops,
           double bytes, const std::function<void()>& body) {
  return Device::Get().Launch(op, stream, accesses, n, flops, bytes, body);
}

bool ComputeEnabled() { return GlobalConfig().compute == ComputeMode::kMath; }

Err CheckConfig() {
  const Config& c = GlobalConfig();
  if (c.error.empty()) return Err::kOk;
  static bool printed = [&] {
    std::fprintf(stderr, "simgpu: %s\n", c.error.c_str());
    return true;
  }();
  (void)printed;
  return Err::kConfig;
}

void CheckConfigOrExit() {
  if (CheckConfig() != Err::kOk) std::exit(2);
}

int Threads() { return GlobalConfig().threads; }

Err StickyError() { return Device::Get().Sticky(); }

}  // namespace simgpu
