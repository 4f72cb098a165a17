// SteadyHost (steady_host.h): the latest run of steady iterations and its means.
#include "interpose/process/steady_host.h"

namespace pooch::interpose {

double SteadyHost::PerIteration::host_ms() const {
  double sum = 0;
  for (double ms : hook_ms) sum += ms;
  return sum;
}

// Note [Steady iterations]: the iteration that ends here is steady when it followed the plan
// its predecessor followed too, and did not depart; a run of them grows while nothing else ends.
void SteadyHost::IterationStarted(const Start& start, const HostSnapshot& now) {
  MutexLock lock(&mu_);
  if (open_.has_value()) {
    const bool followed =
        open_start_.following && !open_departed_ && start.plan == open_start_.plan;
    const bool steady = followed && previous_followed_ && previous_plan_ == open_start_.plan;
    if (steady) {
      if (!run_open_) {
        first_ = *open_;
        iterations_ = 0;
      }
      last_ = now;
      ++iterations_;
    }
    run_open_ = steady;
    previous_followed_ = followed;
    previous_plan_ = open_start_.plan;
  }
  open_ = now;
  open_start_ = start;
  open_departed_ = false;
}

void SteadyHost::Departed() {
  MutexLock lock(&mu_);
  open_departed_ = true;
}

std::optional<SteadyHost::PerIteration> SteadyHost::PerIterationMean() const {
  MutexLock lock(&mu_);
  if (iterations_ == 0) return std::nullopt;
  PerIteration p;
  p.iterations = iterations_;
  const double n = static_cast<double>(iterations_);
  for (size_t i = 0; i < last_.hooks.of.size(); ++i) {
    p.hook_ms[i] = (last_.hooks.of[i].nanoseconds - first_.hooks.of[i].nanoseconds) / 1e6 / n;
  }
  for (size_t i = 0; i < last_.device_calls.of.size(); ++i) {
    p.device_ms[i] =
        (last_.device_calls.of[i].nanoseconds - first_.device_calls.of[i].nanoseconds) / 1e6 / n;
  }
  for (size_t i = 0; i < last_.memory_calls.of.size(); ++i) {
    p.memory_calls[i] = (last_.memory_calls.of[i] - first_.memory_calls.of[i]) / n;
  }
  return p;
}

}  // namespace pooch::interpose
