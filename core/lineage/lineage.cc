// lineage.cc: the Lineage (Note [Lineage] in lineage.h).
#include "core/lineage/lineage.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"

namespace pooch {
namespace {

std::string Hex(DeviceAddress address) { return absl::StrFormat("0x%x", address); }

}  // namespace

std::vector<DeviceAddress> Lineage::Add(ReplayRecipe recipe, double profiled_us,
                                        absl::Span<const Allocation> inputs, int64_t output_bytes) {
  const DeviceAddress output = recipe.output;
  std::vector<DeviceAddress> to_free = Erase(output);
  auto entry = std::make_unique<Entry>();
  entry->profiled_us = profiled_us;
  entry->output_bytes = output_bytes;
  for (const Allocation& in : inputs) WatchInput(*entry, output, in);
  Watch& w = watches_[output];
  w.bytes = output_bytes;
  w.output = true;
  max_watch_bytes_ = std::max(max_watch_bytes_, output_bytes);
  entry->chain.push_back(std::move(recipe));
  entries_[output] = std::move(entry);
  return to_free;
}

void Lineage::WatchInput(Entry& entry, DeviceAddress output, const Allocation& in) {
  if (std::any_of(entry.inputs.begin(), entry.inputs.end(),
                  [&](const Allocation& a) { return a.base == in.base; })) {
    return;  // one reader per allocation: Erase removes it once
  }
  entry.inputs.push_back(in);
  Watch& w = watches_[in.base];
  w.bytes = in.bytes;
  w.readers.push_back(output);
  max_watch_bytes_ = std::max(max_watch_bytes_, in.bytes);
}

// Note [Chained recipes]
// ~~~~~~~~~~~~~~~~~~~~~~
// A map written by more than one call (a convolution, then its bias added in place; a decoder
// map, then a skip summed into it) is rebuilt by replaying the chain of those calls in order
// (Note [Chains] in core/model/candidates.cc), the first of which overwrote it whole. The entry
// holds the chain. A write to its map makes the chain wrong unless the writing call becomes its
// next link, which is known only after the call: so when the access writes the map and nothing
// else the entry depends on (Needs::written), the owner may mark the entry open instead of
// forgetting it (planned recomputation does; dtr does not chain); the call's recipe, offered
// right after it, is appended (Append) and closes it. An open entry rebuilds nothing the map
// will hold: it is never dropped, and the owner forgets every entry still open at the next
// access it sees (the call offered no link). A link that reads the map reads the chain's
// previous state on replay, as it did; its other inputs are watched like any recipe's, so a
// write to one of them forgets the whole chain, and the chain is replayed whole, before the
// program touches the map, so its intermediate states are never seen.
bool Lineage::Append(ReplayRecipe link, double profiled_us, absl::Span<const Allocation> inputs) {
  const DeviceAddress output = link.output;
  auto it = entries_.find(output);
  if (it == entries_.end() || !it->second->open) return false;
  Entry& entry = *it->second;
  for (const Allocation& in : inputs) WatchInput(entry, output, in);
  entry.profiled_us += profiled_us;
  entry.chain.push_back(std::move(link));
  entry.open = false;
  return true;
}

const Lineage::Entry* Lineage::Find(DeviceAddress output) const {
  auto it = entries_.find(output);
  return it == entries_.end() ? nullptr : it->second.get();
}

std::vector<DeviceAddress> Lineage::Erase(DeviceAddress output) {
  std::vector<DeviceAddress> to_free;
  EraseInto(output, to_free);
  return to_free;
}

void Lineage::EraseInto(DeviceAddress output, std::vector<DeviceAddress>& to_free) {
  auto it = entries_.find(output);
  if (it == entries_.end()) return;
  std::unique_ptr<Entry> entry = std::move(it->second);
  entries_.erase(it);
  auto unwatch = [&](DeviceAddress base, bool as_output) {
    auto w = watches_.find(base);
    if (w == watches_.end()) return;
    if (as_output) {
      w->second.output = false;
    } else {
      auto& readers = w->second.readers;
      readers.erase(std::remove(readers.begin(), readers.end(), output), readers.end());
    }
    if (!w->second.output && w->second.readers.empty()) watches_.erase(w);
  };
  unwatch(output, true);
  for (const Allocation& in : entry->inputs) {
    unwatch(in.base, false);
    ReleaseIfUnread(in.base, to_free);
  }
  // The program freed it long ago; nothing of pooch's holds it now.
  if (entry->kept) to_free.push_back(output);
}

void Lineage::ReleaseIfUnread(DeviceAddress base, std::vector<DeviceAddress>& to_free) {
  auto it = entries_.find(base);
  if (it == entries_.end() || !it->second->kept) return;
  if (HasReaders(base)) return;
  EraseInto(base, to_free);
}

void Lineage::MarkDropped(DeviceAddress output, bool dropped) {
  if (auto it = entries_.find(output); it != entries_.end()) it->second->dropped = dropped;
}

void Lineage::MarkKept(DeviceAddress output) {
  if (auto it = entries_.find(output); it != entries_.end()) it->second->kept = true;
}

void Lineage::MarkStale(DeviceAddress output) {
  if (auto it = entries_.find(output); it != entries_.end()) it->second->stale = true;
}

void Lineage::MarkOpen(DeviceAddress output) {
  if (auto it = entries_.find(output); it != entries_.end()) it->second->open = true;
}

void Lineage::SetProfiledUs(DeviceAddress output, double profiled_us) {
  if (auto it = entries_.find(output); it != entries_.end()) it->second->profiled_us = profiled_us;
}

bool Lineage::HasReaders(DeviceAddress base) const {
  auto w = watches_.find(base);
  return w != watches_.end() && !w->second.readers.empty();
}

// Note [Rebuilt then written]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A write to a recipe's output forgets the recipe even when the output is dropped and the same
// access rebuilds it first: a write that reads the map (a bias added in place, a skip summed
// into it) or covers only part of it leaves data the producer alone does not make. Planned
// recomputation erased a used recipe anyway, but dtr keeps one past its replays (Note [DTR
// recipes] in core/recompute/recomputer.h): kept, eviction would drop the updated map again and
// its next replay would rebuild it without the update (and an update replayed on top of the
// rebuilt map would count twice). So every map pooch drops was written by the calls of its
// chain alone, the first of which read nothing of it and overwrote it whole, each later one
// appended as it ran (Note [Chained recipes]).

// Note [Overlapping watches]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// Watches need not be disjoint: a kept entry whose input the program freed (it is stale, Note
// [Kept inputs]) still watches that input's old range, and a later allocation may cover it from
// a lower base. So the watch starting last at or before an address is not the only one that can
// hold it: any watch starting less than the longest watch's length before it can. Missing one
// would leave a dropped map unrebuilt before an op reads it (the manager then refuses the op).
// Access therefore looks back that far; the extra watches it passes cost a comparison each.
Lineage::Needs Lineage::Access(DeviceAddress address, int64_t bytes, bool writes) const {
  Needs needs;
  const DeviceAddress reach = static_cast<DeviceAddress>(max_watch_bytes_);
  auto it = address >= reach ? watches_.upper_bound(address - reach) : watches_.begin();
  const DeviceAddress end = address + static_cast<DeviceAddress>(bytes);
  // A kept entry that is resident is never forgotten, whatever is written: it is still right
  // and stays until nothing reads it (Note [Kept inputs]).
  for (; it != watches_.end() && it->first < end; ++it) {
    if (it->first + static_cast<DeviceAddress>(it->second.bytes) <= address) continue;
    const Watch& w = it->second;
    if (w.output) {
      const Entry& e = *entries_.at(it->first);
      if (e.dropped) needs.rebuild.push_back(it->first);  // any touch of a dropped map
      // Overwritten after its recipe was taken, dropped (rebuilt first, above) or not: the recipe
      // no longer makes what the map will hold (Note [Rebuilt then written]).
      if (writes && !e.kept) {
        needs.forget.push_back(it->first);
        if (!e.dropped) needs.written.push_back(it->first);  // Note [Chained recipes]
      }
    }
    if (!writes) continue;
    for (DeviceAddress reader : w.readers) {
      const Entry& e = *entries_.at(reader);
      if (e.dropped) {
        needs.rebuild_for_write.push_back(reader);
      } else if (!e.kept) {
        needs.forget.push_back(reader);  // its input changed: the recipe would build another map
      } else if (!e.stale) {
        needs.stale_kept.push_back(reader);
      }
    }
  }
  return needs;
}

Lineage::Needs Lineage::AnyWrite() const {
  Needs needs;
  for (const auto& [output, entry] : entries_) {
    if (entry->dropped) {
      needs.rebuild_for_write.push_back(output);  // while its inputs are still intact
    } else if (!entry->kept) {
      needs.forget.push_back(output);
    } else if (!entry->stale) {
      needs.stale_kept.push_back(output);
    }
  }
  // The map's order is arbitrary: sorted, the rebuilds happen in the same order every run.
  std::sort(needs.rebuild_for_write.begin(), needs.rebuild_for_write.end());
  std::sort(needs.forget.begin(), needs.forget.end());
  std::sort(needs.stale_kept.begin(), needs.stale_kept.end());
  return needs;
}

nlohmann::json Lineage::ToJson() const {
  std::vector<const Entry*> sorted;
  sorted.reserve(entries_.size());
  for (const auto& [output, entry] : entries_) sorted.push_back(entry.get());
  std::sort(sorted.begin(), sorted.end(),
            [](const Entry* a, const Entry* b) { return a->first().output < b->first().output; });
  nlohmann::json recipes = nlohmann::json::array();
  for (const Entry* e : sorted) {
    nlohmann::json inputs = nlohmann::json::array();
    for (const Allocation& in : e->inputs) {
      inputs.push_back({{"base", Hex(in.base)}, {"bytes", in.bytes}});
    }
    nlohmann::json chain = nlohmann::json::array();
    for (const ReplayRecipe& link : e->chain)
      chain.push_back(link.name != nullptr ? link.name : "");
    recipes.push_back({{"output", Hex(e->first().output)},
                       {"output_bytes", e->output_bytes},
                       {"name", chain[0]},
                       {"links", e->chain.size()},
                       {"chain", std::move(chain)},
                       {"kernel", std::any_of(e->chain.begin(), e->chain.end(),
                                              [](const ReplayRecipe& link) { return link.kernel; })},
                       {"profiled_us", e->profiled_us},
                       {"dropped", e->dropped},
                       {"kept", e->kept},
                       {"inputs", std::move(inputs)}});
  }
  return recipes;
}

}  // namespace pooch
