// replay_recipe.h: a recorded call that can be issued again to rebuild what it wrote
// (recomputation, PoocH §4.1; Note [Replay] in core/recompute/recomputer.h).
//
// A hook that can re-issue its call hands RunOp (managed.h) a ReplaySource; the source is
// called only for the ops whose output the plan recomputes, right after the real call, and
// copies everything the call depends on that the program could change or destroy later: the
// descriptors (cloned), the scaling factors (by value), the algorithm. What it cannot copy are
// the input tensors' contents: the Recomputer watches those (and rebuilds the output before any
// write to them).
//
// A recipe is exact by construction: the only device memory a replay writes is `output`
// (batch-norm's running and saved statistics are passed as null: no side effect is repeated),
// plus a scratch workspace the Recomputer provides, never the program's.
#ifndef POOCH_CORE_LINEAGE_REPLAY_RECIPE_H_
#define POOCH_CORE_LINEAGE_REPLAY_RECIPE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "absl/functional/function_ref.h"
#include "core/device/device.h"
#include "core/residency/residency.h"

namespace pooch {

struct ReplayRecipe {
  const char* name = nullptr;  // the API call, for the summary, the trace and messages
  // A kernel launch's recipe (interpose/hooks/launch/kernel_replay.h; `name` is the kernel's):
  // its replays are counted apart (Recomputer::Stats::kernel_replays).
  bool kernel = false;
  pooch::DeviceAddress output = 0;
  int64_t output_bytes = 0;
  std::vector<pooch::AccessRange> inputs;  // what the call reads (mode kRead)
  int64_t workspace_bytes = 0;
  // Issues the call on `stream` with a scratch `workspace` of workspace_bytes (null when 0).
  // True when the API accepted it. Called with no hook scope of its own: it calls the real API.
  std::function<bool(uintptr_t stream, void* workspace)> issue;
};

// Builds the recipe of the call just made; nullopt when it cannot be replayed exactly (a
// descriptor that cannot be copied, an unsupported data type): the plan then swaps the map.
using ReplaySource = absl::FunctionRef<std::optional<ReplayRecipe>()>;

}  // namespace pooch

#endif  // POOCH_CORE_LINEAGE_REPLAY_RECIPE_H_
