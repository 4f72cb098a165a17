// host_clocks.h: the virtual host clocks, one per calling thread (Note [Host clocks]).
//
// Thread safety: none; the device's mutex guards it. It reads the calling thread's id.
#ifndef SIMGPU_DEVICE_HOST_CLOCKS_H_
#define SIMGPU_DEVICE_HOST_CLOCKS_H_

#include <thread>
#include <unordered_map>

namespace simgpu {

// Note [Host clocks]
// ~~~~~~~~~~~~~~~~~~
// The host is part of the machine: each API call costs the thread that makes it its host time
// (config/host_costs.h), and work a call enqueues cannot start before that thread issued it.
// Each thread has its own clock, so a thread of an interposer's own overlaps the program's, as
// two CPU cores do. Clocks meet only through the device: a wait (a synchronising call, a
// synchronous copy) sets the waiting thread's clock to max(its clock, the time the work ends),
// and no thread's clock is ever earlier than the latest end of work that any thread has waited
// for. That end is a fact any thread may have learnt since, through CPU synchronisation simgpu
// cannot see (pooch's own state, a mutex, a join): without the rule a thread that lags would
// unmap memory another thread has waited for and be reported a race. Only the work's end is
// shared, never the waiting thread's clock, so one thread's host costs do not pace another. A
// thread's first call starts at the latest clock of any thread: it was started by a thread
// that had reached its own present. A thread that waited on another on the CPU resumes at its
// own clock: PyTorch's backward, run on its autograd thread while the main thread waits,
// charges the autograd thread, and the main thread's clock does not include it.
// SIMGPU_HOST_COSTS=shared gives every thread one clock for programs whose threads take turns;
// SIMGPU_HOST_COSTS=off gives one clock and no costs (the model before host costs: the clock
// moves only on waits and polls).
class HostClocks {
 public:
  // `per_thread` false: one clock for every thread.
  explicit HostClocks(bool per_thread = true) : per_thread_(per_thread) {}

  // The calling thread's clock, ns (the latest clock for a thread not seen yet; never before
  // the latest end of work any thread waited for).
  double Now() const;
  // Advances the calling thread's clock by `ns`.
  void Advance(double ns);
  // The calling thread waited for work that ends at `t_ns`: its clock becomes at least t_ns,
  // and so does every thread's from now on.
  void WaitUntil(double t_ns);
  // The latest clock of any thread.
  double Latest() const { return latest_ns_; }

 private:
  double& Clock();

  bool per_thread_;
  double shared_ns_ = 0;
  double latest_ns_ = 0;
  double waited_ns_ = 0;  // the latest end of work any thread waited for
  std::unordered_map<std::thread::id, double> by_thread_;
};

}  // namespace simgpu

#endif  // SIMGPU_DEVICE_HOST_CLOCKS_H_
