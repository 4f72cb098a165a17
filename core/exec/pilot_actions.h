// pilot_actions.h: the pilot model's predictions carried out against the residency manager
// (Note [Pilot model] in core/pilot/pilot.h), with what they did for the summary and the trace.
//
// At a read-back the block that ended is scored and the next one predicted. When the plan
// executor lets the pilot act (no plan that moves anything is being followed and no profiling
// pass is recorded), every unlikely resident allocation is swapped out, least likely first, and
// the likely allocations that are on the host are prefetched, most likely first, into the room
// there is. Nothing here waits for a copy: it runs on the program's thread at a read-back, right
// before the block it predicts is issued, and a prefetch that waited for a swap-out to make its
// room would hold back every op of the block behind it. A likely allocation with no room yet
// comes on demand, into the room being made. Demand swapping stays underneath: a wrong
// prediction costs copies, never results.
//
// Thread safety: none; the plan executor's lock serialises.
#ifndef POOCH_CORE_EXEC_PILOT_ACTIONS_H_
#define POOCH_CORE_EXEC_PILOT_ACTIONS_H_

#include <cstdint>
#include <string>

#include "absl/types/span.h"
#include "core/measure/trace_observer.h"
#include "core/pilot/pilot.h"
#include "core/residency/residency.h"

namespace pooch {

class PilotActions {
 public:
  // `manager` and `trace` (may be null) must outlive this.
  PilotActions(PilotMode mode, ResidencyManager& manager, TraceObserver* trace);

  Pilot& pilot() { return pilot_; }
  void ReadBack(absl::Span<const uint8_t> bytes, bool act);
  // The pilot's line and what its actions did: "pilot: ... prefetches P offloads O no_room N".
  std::string SummaryLine() const;

 private:
  Pilot pilot_;
  ResidencyManager& manager_;
  TraceObserver* const trace_;
  int64_t boundaries_acted_ = 0;
  int64_t prefetches_ = 0;  // swap-ins started
  int64_t offloads_ = 0;    // swap-outs started to make room
  int64_t no_room_ = 0;     // likely allocations on the host that found no room free yet
};

}  // namespace pooch

#endif  // POOCH_CORE_EXEC_PILOT_ACTIONS_H_
