// Stable kernel accesses: the accesses of a kernel op that its parameter words were scanned for
// (guessed, not exact) are kept in a profile only when another recorded iteration's op at the
// same position touched the same tensor (Note [Stable kernel accesses] in stable_accesses.cc).
//
//   IterationAccesses mine = ...;   // filled while walking the recorded window
//   int64_t dropped = KeepStableAccesses(previous, mine, iteration);
//
// Thread safety: pure functions of their arguments.
#ifndef POOCH_CORE_PROFILE_STABLE_ACCESSES_H_
#define POOCH_CORE_PROFILE_STABLE_ACCESSES_H_

#include <cstdint>
#include <vector>

#include "core/profile/profile_builder.h"

namespace pooch {

// Which tensor an access of a recorded iteration touched, in a form that two iterations of the
// same reference can compare: an allocation made in the window by its ordinal among the window's
// managed allocations, an older one by its id (and when it was made).
struct AccessKey {
  bool made_here = false;
  uint64_t value = 0;      // made_here: the ordinal; else the allocation id
  uint64_t alloc_seq = 0;  // the allocation's sequence number (older allocations)
  friend bool operator==(const AccessKey& a, const AccessKey& b) {
    return a.made_here == b.made_here && a.value == b.value;
  }
};

// The ops of one recorded window, in position order (RecordedIteration::ops).
struct IterationAccesses {
  uint64_t first = 0;                        // the window's first sequence number
  std::vector<uint64_t> signatures;          // of each op (Note [Event signatures])
  std::vector<bool> guessed;                 // its accesses came from scanned words
  std::vector<std::vector<AccessKey>> keys;  // of each op's managed accesses, in order
};

// Drops from `iteration` (whose ops `mine` describes) each guessed access that `other`'s op at
// the same position did not make, and from `mine` its key; returns how many were dropped. An
// access to an allocation made before the window but not before `other`'s window cannot be
// compared and is kept. No-op (0) when the two are not the same ops.
int64_t KeepStableAccesses(const IterationAccesses& other, IterationAccesses& mine,
                           RecordedIteration& iteration);

}  // namespace pooch

#endif  // POOCH_CORE_PROFILE_STABLE_ACCESSES_H_
