// PlanCache: the plans made for reference iterations, by the iteration's signature, so that an
// iteration seen before is planned from the cache when the tracker finds it again.
//
// Note [Plan cache]
// ~~~~~~~~~~~~~~~~~
// A program whose iterations change between a few shapes (an image size drawn per iteration,
// a skip pattern) departs from its profile at each change and, after POOCH_REPROFILE_AFTER
// departures, is profiled again. Without a cache each re-profile costs a swap-all iteration
// (Note [Swap-all profiling]) and a planning, though the shape may have been planned before.
// The plan executor keys each plan it carries out by the reference iteration's events (kind and
// signature, as the tracker compares them: the same op stream, the same allocation sizes);
// a new reference with a known key is carried out with the cached plan at once, the swap-all
// pass and the planner skipped. A cached plan applies to the new reference's profile because
// equal events build equal profiles (BuildProfile numbers tensors and ops by the events), so its
// decisions name the same tensors and intervals; its actions are made from the new profile's
// positions and allocations. Re-plans with headroom (Note [Headroom]) replace the entry. The
// iteration must still be found again (two iterations under the automatic marker): the cache
// saves profiling and planning, not detection. Bounded: kMaxEntries, the oldest dropped.
//
// An iteration that turns out to be another cached reference's shape part-way through switches
// to that plan at the event where it departs (Note [Switching references] in
// core/profile/iteration_tracker.h): each entry keeps the profile and positions its actions are
// made from, and the tracker keeps the reference's events under the same key as an alternate.
//
// Thread safety: thread-compatible; the plan executor calls it under its lock.
#ifndef POOCH_CORE_EXEC_PLAN_CACHE_H_
#define POOCH_CORE_EXEC_PLAN_CACHE_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/plan/plan.h"
#include "core/profile/iteration_tracker.h"
#include "core/profile/op_stream_recorder.h"
#include "core/profile/profile_builder.h"

namespace pooch {

class PlanCache {
 public:
  static constexpr size_t kMaxEntries = 16;

  struct Entry {
    // None: no plan was found for this reference; it runs under demand swapping, with no
    // action of another reference's plan (Note [Switching references]).
    std::optional<PlanResult> plan;
    int64_t headroom_bytes = 0;  // the memory the plan was made without (Note [Headroom])
    int replans = 0;
    std::string plan_line;  // the summary's plan: line when it was made
    // What the plan's actions are made from, for a switch to it mid-iteration.
    std::shared_ptr<const BuiltProfile> built;
    std::shared_ptr<const OpStreamRecorder::Positions> positions;
  };

  // The key of a reference iteration: its events' kinds and signatures, in order.
  static uint64_t Key(const std::vector<StreamEvent>& reference);

  // The entry for `key`, or null; counts a hit or a miss.
  const Entry* Find(uint64_t key);
  // The entry for `key`, or null; counts nothing.
  const Entry* Peek(uint64_t key) const;
  // Stores (or replaces) the entry for `key`, dropping the oldest beyond kMaxEntries; returns
  // the key dropped, if any.
  std::optional<uint64_t> Put(uint64_t key, Entry entry);

  int64_t hits() const { return hits_; }
  int64_t misses() const { return misses_; }
  size_t size() const { return entries_.size(); }

 private:
  absl::flat_hash_map<uint64_t, Entry> entries_;
  std::deque<uint64_t> order_;  // keys, oldest first
  int64_t hits_ = 0;
  int64_t misses_ = 0;
};

}  // namespace pooch

#endif  // POOCH_CORE_EXEC_PLAN_CACHE_H_
