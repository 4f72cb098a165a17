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
// its side outputs, which it writes with the bytes they hold already (Note [Side outputs]), and a
// scratch workspace the Recomputer provides, never the program's.
//
// Note [Side outputs]
// ~~~~~~~~~~~~~~~~~~~
// A kernel launch may write several allocations at once (LayerNorm's output with its mean and
// inverse deviation, dropout's output with its mask) and its parameters cannot be changed to
// leave the others alone, as cuDNN's batch-norm statistics are passed as null. Its recipe
// rebuilds one of them, `output`, the map the plan recomputes; the others are its side outputs,
// which every replay writes again. That is harmless because each side output holds, at every
// replay, exactly the bytes the launch wrote there, and the replay writes those same bytes:
//   - each side output is also one of the recipe's `inputs`, so the lineage watches it like an
//     input (Note [Replay] in core/recompute/recomputer.h): a write to it or a free of it
//     rebuilds a dropped output first, while it still holds the launch's bytes, then forgets the
//     recipe; and the replay makes it resident before it runs, as it does every input;
//   - the recipe's other inputs are unchanged by the same rule, and the call is deterministic
//     (a kernel's verdict is exact and replayable: Note [Kernel recipes] in
//     interpose/hooks/launch/kernel_replay.h), reads none of the allocations it writes, so it
//     writes what it wrote then;
//   - a side output has no recipe of its own while this one lives (a recipe is offered only for
//     the one output the plan asked of the call, ForOutput, and any later writer of the side
//     output would forget this recipe): rebuilding it never needs this replay, so there is no
//     cycle. If the plan also dropped it, it was dropped without a recipe, which Drop refuses.
// A replay's rewrite of a side output is not a write to the program: its host copy, if kept,
// stays current (the bytes are the same), and no recipe that reads it is forgotten.
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
  // The allocations the call writes besides `output` (Note [Side outputs]), at their bases, with
  // their sizes; each is among `inputs` too.
  std::vector<pooch::AccessRange> side_outputs;
  int64_t workspace_bytes = 0;
  // Issues the call on `stream` with a scratch `workspace` of workspace_bytes (null when 0).
  // True when the API accepted it. Called with no hook scope of its own: it calls the real API.
  std::function<bool(uintptr_t stream, void* workspace)> issue;
};

// The same recipe rebuilding `wanted`, which must be its output or one of its side outputs (the
// output becomes a side output in its place: Note [Side outputs]); nullopt when it is neither.
inline std::optional<ReplayRecipe> ForOutput(std::optional<ReplayRecipe> recipe,
                                             pooch::DeviceAddress wanted) {
  if (!recipe.has_value() || recipe->output == wanted) return recipe;
  for (pooch::AccessRange& side : recipe->side_outputs) {
    if (side.address != wanted) continue;
    for (pooch::AccessRange& in : recipe->inputs) {
      if (in.address == wanted) in = {recipe->output, recipe->output_bytes, in.mode};
    }
    const pooch::AccessRange old_output{recipe->output, recipe->output_bytes, side.mode};
    recipe->output = side.address;
    recipe->output_bytes = side.bytes;
    side = old_output;
    return recipe;
  }
  return std::nullopt;
}

// Builds the recipe of the call just made; nullopt when it cannot be replayed exactly (a
// descriptor that cannot be copied, an unsupported data type): the plan then swaps the map.
using ReplaySource = absl::FunctionRef<std::optional<ReplayRecipe>()>;

}  // namespace pooch

#endif  // POOCH_CORE_LINEAGE_REPLAY_RECIPE_H_
