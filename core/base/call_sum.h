// call_sum.h: how many calls of one kind were made and the host time they took, summed from
// any thread (the summary's host: line, Note [Host time] in core/device/timed_device.h).
//
//   AtomicCallSum maps;
//   maps.Add(elapsed_ns);          // any thread
//   CallSum now = maps.Load();     // now.calls, now.nanoseconds
#ifndef POOCH_CORE_BASE_CALL_SUM_H_
#define POOCH_CORE_BASE_CALL_SUM_H_

#include <atomic>
#include <cstdint>

namespace pooch {

struct CallSum {
  int64_t calls = 0;
  int64_t nanoseconds = 0;
};

// Thread safety: Add and Load may run concurrently; a Load between two fields' updates may see
// one call without its time, which a summary read at exit never does.
class AtomicCallSum {
 public:
  void Add(int64_t nanoseconds) {
    calls_.fetch_add(1, std::memory_order_relaxed);
    nanoseconds_.fetch_add(nanoseconds, std::memory_order_relaxed);
  }
  CallSum Load() const {
    return {calls_.load(std::memory_order_relaxed), nanoseconds_.load(std::memory_order_relaxed)};
  }

 private:
  std::atomic<int64_t> calls_{0};
  std::atomic<int64_t> nanoseconds_{0};
};

}  // namespace pooch

#endif  // POOCH_CORE_BASE_CALL_SUM_H_
