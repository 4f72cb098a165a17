// profiling.h: the runtime's profiling of the program's first iterations (PoocH §4.2).
//
// Under a planned POOCH_POLICY, or whenever POOCH_PROFILE_OUT is set, the hooks report every op,
// allocation and free here. Iterations are found in the op stream (core/iteration_tracker.h);
// while profiling, each op is bracketed with timing events on its stream. When the reference
// iteration is complete its events become a core Profile (core/profile_builder.h), written to
// POOCH_PROFILE_OUT in the format `pooch plan --profile` reads, and planned with the requested
// policy against the memory limit. Later iterations are followed against the reference; an
// iteration that departs from it is counted, and after POOCH_REPROFILE_AFTER departures the
// program is profiled again.
//
// Under a planner policy the plan's swaps are then carried out in each followed iteration
// (Note [Carrying out the plan] in profiling.cc); demand swapping stays underneath as the safety
// net. A map the plan recomputes is dropped after its last forward use and rebuilt by replay
// before its next use (interpose/recompute.h); its producer's recipe is taken at its position.
//
// Thread safety: every function may be called from any thread; one lock serialises the
// recorder. The hooks of a program that runs ops from several threads at once interleave, and
// such a stream rarely repeats; it then stays in profiling, which costs events, never results.
#ifndef POOCH_INTERPOSE_PROFILING_H_
#define POOCH_INTERPOSE_PROFILING_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "core/config.h"
#include "core/device.h"
#include "core/residency.h"
#include "core/small_allocator.h"
#include "interpose/replay_recipe.h"

namespace pooch::interpose {

class TraceObserver;

// Starts profiling if the configuration asks for it (see above); all must outlive the process.
// `trace` (POOCH_TRACE; may be null) gets the iteration starts, the plan and the departures.
void StartProfiling(pooch::Device& device, pooch::ResidencyManager& manager,
                    pooch::SmallAllocator& small, const pooch::Config& config,
                    TraceObserver* trace);

// What ProfileOpBegin hands to ProfileOpEnd.
struct ProfiledOp {
  bool active = false;
  uint64_t seq = 0;
  int64_t position = -1;         // in the reference iteration while following it; else -1
  pooch::EventHandle start = 0;  // 0: the op is not timed
  // The plan recomputes this op's output, at this address: RunOp hands its recipe to
  // OfferRecipe. 0: none.
  uintptr_t record_output = 0;
  double record_us = 0;  // the op's profiled device time
};

// Around an intercepted op (RunOp): Begin after its memory was made resident, End after the
// real call and the manager's AfterOp. `name` outlives the process.
// `replay_capable`: the hook could give a replay recipe (the profile's replay_capable flag).
ProfiledOp ProfileOpBegin(const char* name, uintptr_t stream,
                          const std::vector<pooch::AccessRange>& ranges, bool replay_capable);
// The recipe of an op whose ProfiledOp::record_output was set (nullopt: it could not be made,
// and the map is swapped instead of dropped).
void OfferRecipe(const ProfiledOp& op, std::optional<ReplayRecipe> recipe);
void ProfileOpEnd(const ProfiledOp& op, uintptr_t stream);
// After a successful allocation, and before a free.
void ProfileAlloc(uintptr_t address, int64_t bytes, bool managed);
void ProfileFree(uintptr_t address);
// POOCH_ITERATION_MARKER=sync: the program synchronised the device.
void ProfileSyncMarker();

// The summary's iteration and plan lines (nothing when profiling is off).
void ReportProfiling();

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_PROFILING_H_
