// lineage.h: the lineage recomputation runs on: every map pooch can rebuild by replay, the
// producer that rebuilds it (its ReplayRecipe) with what that producer reads and writes, and
// so the recompute chains through them (PoocH §4.1).
//
// Note [Lineage]
// ~~~~~~~~~~~~~~
// Lineage holds, per output address, one recipe (an Entry): the chain of replay recipes that
// rebuilds it (one call, or the calls that wrote it since one overwrote it whole: Note [Chained
// recipes] in lineage.cc), its profiled device time, whether the output is dropped (its data exists
// nowhere but in the recipe) and whether it is kept (the program freed it while a recipe read it;
// Note [Kept inputs] in core/recompute/recomputer.h), and the allocations its inputs fall in.
// Alongside, an index by allocation base says which recipes read each allocation and whether it is
// a recipe's output, so an access of any address range finds every recipe it concerns.
//
// It is bookkeeping only: it answers what an access requires under the rules of Note [Replay]
// (core/recompute/recomputer.h) and never acts. It calls no device and no residency manager:
// rebuilding, dropping and freeing are the caller's (the Recomputer's), which is why erasing a
// recipe returns the kept allocations that became unread instead of freeing them.
//
// Thread safety: not thread-safe; the owner serialises every call (the Recomputer calls it
// under its own lock). Const methods may run concurrently with each other.
#ifndef POOCH_CORE_LINEAGE_LINEAGE_H_
#define POOCH_CORE_LINEAGE_LINEAGE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "core/device/device.h"
#include "core/lineage/replay_recipe.h"
#include "nlohmann/json.hpp"

namespace pooch {

class Lineage {
 public:
  // An allocation: its base address and size.
  struct Allocation {
    DeviceAddress base = 0;
    int64_t bytes = 0;
  };

  // The recipe of one output.
  struct Entry {
    // The links, replayed in order: the first overwrites the whole output, each later one
    // (appended by Append) wrote it again in place or in part (Note [Chained recipes]).
    std::vector<ReplayRecipe> chain;
    int64_t output_bytes = 0;  // the output's allocation
    double profiled_us = 0;    // the links' sum
    bool dropped = false;
    bool kept = false;  // the program freed it; the owner holds it (Note [Kept inputs])
    // A kept entry whose input was written since (Needs::stale_kept): its data is right but its
    // recipe no longer rebuilds it, so it must never be dropped again (the owner marks it).
    bool stale = false;
    // Its map is being written by a call that may append itself as the next link (MarkOpen):
    // until then the chain rebuilds nothing the map will hold, so it is never dropped.
    bool open = false;
    std::vector<Allocation> inputs;  // the allocations the links read, each base once
                                     // (the output itself not included)

    const ReplayRecipe& first() const { return chain.front(); }
  };

  // What an access requires, in this order (Note [Replay]): rebuild `rebuild` (dropped outputs
  // the access touches), then `rebuild_for_write` (dropped recipes that read memory the access
  // writes: rebuilt from the inputs as they still are, and finished before the write), then
  // forget `forget` (recipes the write makes wrong, a dropped output written included once
  // rebuilt: Note [Rebuilt then written] in lineage.cc). A rebuild may rebuild or erase other
  // entries on the way (chains), so the caller skips what is no longer dropped, or gone, when
  // it reaches it. An address may appear more than once.
  // `stale_kept`: kept entries, not dropped, whose inputs the access writes: their data stays
  // right (Note [Kept inputs]) but their recipe no longer rebuilds it, so they must not be
  // dropped again (Note [DTR eviction]).
  // `written`: of `forget`, the outputs listed there because the access writes their map (each
  // once per listing there), neither dropped nor kept: one that is listed in `forget` for this
  // reason alone may become the start of a longer chain instead (Note [Chained recipes]).
  struct Needs {
    std::vector<DeviceAddress> rebuild;
    std::vector<DeviceAddress> rebuild_for_write;
    std::vector<DeviceAddress> forget;
    std::vector<DeviceAddress> stale_kept;
    std::vector<DeviceAddress> written;
  };

  Lineage() = default;
  Lineage(const Lineage&) = delete;
  Lineage& operator=(const Lineage&) = delete;

  // Records `recipe` for the allocation at recipe.output (`output_bytes` long), reading
  // `inputs` (allocations, duplicates allowed). An older recipe of the same output is erased
  // first; returns what that erase reports (see Erase).
  [[nodiscard]] std::vector<DeviceAddress> Add(ReplayRecipe recipe, double profiled_us,
                                               absl::Span<const Allocation> inputs,
                                               int64_t output_bytes);
  // Note [Chained recipes]: appends `link` (which wrote link.output again, reading it or not)
  // to the open entry of its output, reading `inputs` too (allocations other than the output),
  // and closes it. False (nothing changed) when that output has no open entry.
  [[nodiscard]] bool Append(ReplayRecipe link, double profiled_us,
                            absl::Span<const Allocation> inputs);
  // The recipe of `output`; null when there is none. Stable until that recipe is erased.
  const Entry* Find(DeviceAddress output) const;
  // Forgets the recipe of `output` (no-op when there is none) and, with it, every kept entry
  // that no recipe reads any more (recursively: their own recipes go too). Returns the
  // addresses of the kept entries erased, `output` included when it was kept, innermost first:
  // the program freed them already, so the caller must free them now.
  [[nodiscard]] std::vector<DeviceAddress> Erase(DeviceAddress output);
  // Sets the flags of an existing recipe (no-op when there is none).
  void MarkDropped(DeviceAddress output, bool dropped);
  void MarkKept(DeviceAddress output);
  void MarkStale(DeviceAddress output);
  void MarkOpen(DeviceAddress output);
  // Sets the recipe's device time (dtr measures it after the call completed).
  void SetProfiledUs(DeviceAddress output, double profiled_us);

  // Whether a recipe reads the allocation at `base`.
  bool HasReaders(DeviceAddress base) const;
  // What an access of [address, address + bytes) requires; `writes`: it may write the range.
  Needs Access(DeviceAddress address, int64_t bytes, bool writes) const;
  // What an op that may write anything requires: every dropped output rebuilt before it (in
  // rebuild_for_write), every recipe neither dropped nor kept forgotten (a kept resident entry
  // is still right, and stale_kept).
  Needs AnyWrite() const;

  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }

  // Every recipe, by output address: [{"output": "0x...", "output_bytes", "name" (the first
  // link's), "links" (the chain's length), "chain" (the links' names), "kernel" (whether a link
  // is a kernel launch), "profiled_us", "dropped", "kept", "inputs": [{"base": "0x...",
  // "bytes"}]}].
  nlohmann::json ToJson() const;

 private:
  // A watched allocation: the recipes that read it, and whether it is a recipe's output.
  struct Watch {
    int64_t bytes = 0;
    std::vector<DeviceAddress> readers;  // outputs of the recipes that read it
    bool output = false;
  };

  void EraseInto(DeviceAddress output, std::vector<DeviceAddress>& to_free);
  // Adds `in` to the entry's inputs and watches it, read by `output`'s recipe.
  void WatchInput(Entry& entry, DeviceAddress output, const Allocation& in);
  // After a recipe reading `base` is gone: erases `base` if it is a kept entry nothing reads.
  void ReleaseIfUnread(DeviceAddress base, std::vector<DeviceAddress>& to_free);

  // unique_ptr: an Entry stays put while others come and go (Find's promise).
  absl::flat_hash_map<DeviceAddress, std::unique_ptr<Entry>> entries_;
  absl::btree_map<DeviceAddress, Watch> watches_;  // by base: finds ranges' overlaps
  // The longest watch ever added: Note [Overlapping watches] in lineage.cc.
  int64_t max_watch_bytes_ = 0;
};

}  // namespace pooch

#endif  // POOCH_CORE_LINEAGE_LINEAGE_H_
