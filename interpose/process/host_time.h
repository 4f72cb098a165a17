// host_time.h: the host time pooch's hooks spend around the real calls, for the summary's `host:`
// line (Note [Host time] in core/device/timed_device.h).
//
//   HookTimer timer(HookWork::kOp);   // in a hook, once pooch has work to do
//   timer.Pause();  forward();  timer.Resume();   // the real call is the program's time
//   // the destructor adds the rest
//
// Thread safety: the sums are atomic; a HookTimer belongs to its thread.
#ifndef POOCH_INTERPOSE_PROCESS_HOST_TIME_H_
#define POOCH_INTERPOSE_PROCESS_HOST_TIME_H_

#include <array>
#include <chrono>
#include <cstdint>

#include "core/base/call_sum.h"

namespace pooch::interpose {

// What a hook did for pooch: an op made resident and recorded (RunOp), an allocation or a free.
enum class HookWork { kOp, kAlloc, kFree, kCount };

struct HookTimes {
  std::array<CallSum, static_cast<size_t>(HookWork::kCount)> of{};
  const CallSum& operator[](HookWork work) const { return of[static_cast<size_t>(work)]; }
};

// The process-wide sums.
HookTimes CurrentHookTimes();
void AddHookTime(HookWork work, int64_t nanoseconds);

class HookTimer {
 public:
  explicit HookTimer(HookWork work) : work_(work), started_(Clock::now()) {}
  ~HookTimer() {
    if (!paused_) spent_ += Clock::now() - started_;
    AddHookTime(work_, std::chrono::duration_cast<std::chrono::nanoseconds>(spent_).count());
  }
  HookTimer(const HookTimer&) = delete;
  HookTimer& operator=(const HookTimer&) = delete;

  void Pause() {
    spent_ += Clock::now() - started_;
    paused_ = true;
  }
  void Resume() {
    started_ = Clock::now();
    paused_ = false;
  }

 private:
  using Clock = std::chrono::steady_clock;
  HookWork work_;
  Clock::time_point started_;
  Clock::duration spent_{0};
  bool paused_ = false;
};

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_PROCESS_HOST_TIME_H_
