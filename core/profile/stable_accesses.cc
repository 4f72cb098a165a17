#include "core/profile/stable_accesses.h"

#include <algorithm>

namespace pooch {

// Note [Stable kernel accesses]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A kernel's accesses are guessed from its parameter words, and a struct parameter may hold
// stale words (PyTorch's ReduceOp, passed by value to reduce_kernel, carries unset output and
// buffer pointers) that point at whatever was allocated there last. Which tensor that is follows
// address reuse, hence the order in which the host saw completions and PyTorch's threads reached
// the hooks: it changes from run to run, and a profile that counts it moves idle intervals and
// the plan with them. So when a profile is made from a window and another window of the same
// reference was recorded (the iteration before it, when the two are the same events; or the
// reference the swap-all pass measured again, Note [Swap-all profiling] in
// core/exec/plan_executor.cc), a guessed access is kept only when the other window's op at the
// same position touched the same tensor: the same ordinal among the window's allocations, or the
// same older allocation. The plan ignores the others; the runtime does not: RunOp still makes
// every allocation a kernel's words point into resident, so what the plan ignores is at worst a
// demand swap-in, never a wrong result. An access that cannot be compared (an allocation made
// between the two windows) is kept, and exact accesses (library calls) are never dropped: they
// are part of the op's signature, equal in both windows by construction.

namespace {

bool Comparable(const AccessKey& key, const IterationAccesses& other) {
  return key.made_here || key.alloc_seq < other.first;
}

}  // namespace

int64_t KeepStableAccesses(const IterationAccesses& other, IterationAccesses& mine,
                           RecordedIteration& iteration) {
  if (other.signatures != mine.signatures || mine.keys.size() != iteration.ops.size()) return 0;
  int64_t dropped = 0;
  for (size_t op = 0; op < iteration.ops.size(); ++op) {
    if (!mine.guessed[op]) continue;
    std::vector<RecordedAccess>& accesses = iteration.ops[op].accesses;
    std::vector<AccessKey>& keys = mine.keys[op];
    const std::vector<AccessKey>& theirs = other.keys[op];
    size_t kept = 0;
    for (size_t i = 0; i < keys.size(); ++i) {
      const bool stable = !Comparable(keys[i], other) ||
                          std::find(theirs.begin(), theirs.end(), keys[i]) != theirs.end();
      if (!stable) {
        ++dropped;
        continue;
      }
      accesses[kept] = accesses[i];
      keys[kept] = keys[i];
      ++kept;
    }
    accesses.resize(kept);
    keys.resize(kept);
  }
  return dropped;
}

}  // namespace pooch
