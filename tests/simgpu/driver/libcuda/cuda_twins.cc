// CPU twins looked up by the kernel's mangled name (Note [CPU twins] in cuda_twins.h).
#include "tests/simgpu/driver/libcuda/cuda_twins.h"

#include <dlfcn.h>

#include <string>

namespace simgpu::driver {

CpuTwin FindTwin(Function& f) {
  if (!f.twin_looked_up.load(std::memory_order_acquire)) {
    // Two threads may both look up: the same symbol, stored twice.
    std::string symbol = std::string("simgpu_twin_") + f.name;
    f.twin.store(dlsym(RTLD_DEFAULT, symbol.c_str()), std::memory_order_relaxed);
    f.twin_looked_up.store(true, std::memory_order_release);
  }
  return reinterpret_cast<CpuTwin>(f.twin.load(std::memory_order_relaxed));
}

}  // namespace simgpu::driver
