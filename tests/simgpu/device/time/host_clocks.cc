#include "tests/simgpu/device/time/host_clocks.h"

#include <algorithm>

namespace simgpu {

double& HostClocks::Clock() {
  if (!per_thread_) return shared_ns_;
  return by_thread_.try_emplace(std::this_thread::get_id(), latest_ns_).first->second;
}

double HostClocks::Now() const {
  if (!per_thread_) return shared_ns_;
  auto it = by_thread_.find(std::this_thread::get_id());
  return it == by_thread_.end() ? latest_ns_ : it->second;
}

void HostClocks::Advance(double ns) {
  double& c = Clock();
  c += ns;
  latest_ns_ = std::max(latest_ns_, c);
}

void HostClocks::WaitUntil(double t_ns) {
  double& c = Clock();
  c = std::max(c, t_ns);
  latest_ns_ = std::max(latest_ns_, c);
}

}  // namespace simgpu
