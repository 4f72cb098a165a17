// Mutex, MutexLock and CondVar: absl::Mutex's interface over std::mutex, so that
// ThreadSanitizer sees every lock.
//
// Why not absl::Mutex: the Abseil pooch links is the distribution's prebuilt library, compiled
// without -fsanitize=thread, so TSan does not see absl::Mutex acquire and release and reports
// every access it guards as a race (two threads incrementing a counter under absl::MutexLock
// are reported; checked with the Debian package). std::mutex goes through pthread, which TSan
// intercepts. The thread-safety annotations work as with absl::Mutex.
//
// Thread safety: these are the synchronisation primitives.
#ifndef POOCH_CORE_BASE_MUTEX_H_
#define POOCH_CORE_BASE_MUTEX_H_

#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace pooch {

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

class CondVar {
 public:
  // REQUIRES: `mu` held; it is released while waiting and held again on return.
  void Wait(Mutex* mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // Returns true when the deadline passed (like absl::CondVar::WaitWithDeadline).
  bool WaitWithDeadline(Mutex* mu, absl::Time deadline) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool timed_out =
        cv_.wait_until(lock, absl::ToChronoTime(deadline)) == std::cv_status::timeout;
    lock.release();
    return timed_out;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace pooch

#endif  // POOCH_CORE_BASE_MUTEX_H_
