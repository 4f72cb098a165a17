#include "tests/simgpu/device/time/host_clocks.h"

#include <algorithm>

namespace simgpu {

double& HostClocks::Clock() {
  double& c = per_thread_
                  ? by_thread_.try_emplace(std::this_thread::get_id(), latest_ns_).first->second
                  : shared_ns_;
  c = std::max(c, waited_ns_);
  return c;
}

double HostClocks::Now() const {
  double c = shared_ns_;
  if (per_thread_) {
    auto it = by_thread_.find(std::this_thread::get_id());
    c = it == by_thread_.end() ? latest_ns_ : it->second;
  }
  return std::max(c, waited_ns_);
}

void HostClocks::Advance(double ns) {
  double& c = Clock();
  c += ns;
  latest_ns_ = std::max(latest_ns_, c);
}

void HostClocks::WaitUntil(double t_ns) {
  waited_ns_ = std::max(waited_ns_, t_ns);
  double& c = Clock();
  latest_ns_ = std::max(latest_ns_, c);
}

}  // namespace simgpu
