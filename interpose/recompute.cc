// recompute.cc: the Recomputer (Note [Replay] in recompute.h).
#include "interpose/recompute.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "interpose/log.h"
#include "interpose/trace_observer.h"

namespace pooch::interpose {
namespace {

// Deeper chains than this are refused rather than followed (a plan never builds them: each link
// is a dropped map whose producer reads another dropped map).
constexpr int kMaxChain = 256;

std::atomic<Recomputer*> g_recomputer{nullptr};

}  // namespace

Recomputer::~Recomputer() {
  if (wait_event_ != 0) device_.DestroyEvent(wait_event_).IgnoreError();
}

std::optional<std::pair<pooch::DeviceAddress, int64_t>> Recomputer::AllocationOf(
    pooch::DeviceAddress address) const {
  if (std::optional<pooch::AllocationInfo> info = manager_.Lookup(address)) {
    return std::make_pair(info->address, info->bytes);
  }
  if (std::optional<int64_t> bytes = small_.BlockBytes(address)) {
    return std::make_pair(address, *bytes);
  }
  return std::nullopt;
}

bool Recomputer::Offer(ReplayRecipe recipe, double profiled_us) {
  pooch::MutexLock lock(&mu_);
  // The output must be a whole swappable allocation of the manager's: Drop discards all of it.
  const std::optional<pooch::AllocationInfo> out = manager_.Lookup(recipe.output);
  bool ok = out.has_value() && out->address == recipe.output && out->swappable &&
            recipe.output_bytes >= out->bytes && recipe.issue != nullptr;
  std::vector<std::pair<pooch::DeviceAddress, int64_t>> inputs;
  for (const pooch::AccessRange& in : recipe.inputs) {
    if (!ok) break;
    std::optional<std::pair<pooch::DeviceAddress, int64_t>> a = AllocationOf(in.address);
    // An input outside pooch's memory cannot be watched; one inside the output would be lost.
    ok = a.has_value() && a->first != recipe.output;
    if (ok) inputs.push_back(*a);
  }
  if (!ok) {
    ++stats_.refused;
    return false;
  }
  EraseLocked(recipe.output);
  auto entry = std::make_unique<Entry>();
  entry->profiled_us = profiled_us;
  for (const auto& [base, bytes] : inputs) {
    if (std::find(entry->watched.begin(), entry->watched.end(), base) != entry->watched.end()) {
      continue;
    }
    entry->watched.push_back(base);
    Watch& w = watches_[base];
    w.bytes = bytes;
    w.readers.push_back(recipe.output);
  }
  Watch& w = watches_[recipe.output];
  w.bytes = out->bytes;
  w.output = true;
  const pooch::DeviceAddress output = recipe.output;
  entry->recipe = std::move(recipe);
  entries_[output] = std::move(entry);
  entries_count_.store(static_cast<int>(entries_.size()), std::memory_order_relaxed);
  ++stats_.recipes;
  return true;
}

bool Recomputer::Drop(pooch::DeviceAddress address) {
  pooch::MutexLock lock(&mu_);
  auto it = entries_.find(address);
  if (it == entries_.end() || it->second->dropped) return false;
  if (absl::Status s = manager_.Drop(address); !s.ok()) {
    POOCH_LOG_AT(kDebug, "planned drop: %s", std::string(s.message()).c_str());
    return false;
  }
  // The manager keeps data it cannot drop (pinned by an op in flight, on the host, ...).
  const std::optional<pooch::AllocationInfo> info = manager_.Lookup(address);
  if (!info.has_value() || info->state != pooch::ResidencyState::kDropped) return false;
  it->second->dropped = true;
  ++stats_.drops;
  return true;
}

absl::Status Recomputer::BeforeProgramOp(uintptr_t stream,
                                         const std::vector<pooch::AccessRange>& ranges,
                                         bool effects_known) {
  if (entries_count_.load(std::memory_order_relaxed) == 0) return absl::OkStatus();
  pooch::MutexLock lock(&mu_);
  if (!effects_known) {
    // It may write anything: rebuild what is dropped while its inputs are intact, forget the
    // rest.
    std::vector<pooch::DeviceAddress> outputs;
    for (const auto& [output, entry] : entries_) outputs.push_back(output);
    bool rebuilt = false;
    for (pooch::DeviceAddress output : outputs) {
      auto it = entries_.find(output);
      if (it == entries_.end()) continue;  // rebuilt as part of a chain
      if (it->second->dropped) {
        if (absl::Status s = ReplayLocked(output, stream, 0); !s.ok()) return s;
        rebuilt = true;
      } else if (!it->second->kept) {
        EraseLocked(output);
        ++stats_.forgotten;
      }
    }
    return rebuilt ? WaitForStreamLocked(stream) : absl::OkStatus();
  }
  for (const pooch::AccessRange& r : ranges) {
    if (absl::Status s =
            TouchLocked(stream, r.address, r.bytes, r.mode != pooch::AccessRange::Mode::kRead);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> Recomputer::BeforeFree(pooch::DeviceAddress address) {
  if (entries_count_.load(std::memory_order_relaxed) == 0) return false;
  pooch::MutexLock lock(&mu_);
  if (auto it = entries_.find(address); it != entries_.end()) {
    Entry& e = *it->second;
    auto w = watches_.find(address);
    const bool read = w != watches_.end() && !w->second.readers.empty();
    if (read && !e.kept) {
      // Note [Kept inputs]: keep it, without its device memory when it can be dropped.
      e.kept = true;
      if (!e.dropped && manager_.Drop(address).ok()) {
        const std::optional<pooch::AllocationInfo> info = manager_.Lookup(address);
        e.dropped = info.has_value() && info->state == pooch::ResidencyState::kDropped;
      }
      return true;
    }
    // A freed output needs no rebuilding: its recipe goes (the manager frees dropped memory).
    if (!e.dropped) ++stats_.forgotten;
    EraseLocked(address);
  }
  const std::optional<std::pair<pooch::DeviceAddress, int64_t>> a = AllocationOf(address);
  // The legacy default stream: a free has none, and it orders after the program's blocking
  // streams.
  absl::Status s = TouchLocked(0, address, a.has_value() ? a->second : 1, /*writes=*/true);
  if (!s.ok()) return s;
  return false;
}

absl::Status Recomputer::TouchLocked(uintptr_t stream, pooch::DeviceAddress address, int64_t bytes,
                                     bool writes) {
  std::vector<pooch::DeviceAddress> rebuild, rebuild_for_write, forget;
  auto it = watches_.upper_bound(address);
  if (it != watches_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + static_cast<pooch::DeviceAddress>(prev->second.bytes) > address) it = prev;
  }
  const pooch::DeviceAddress end = address + static_cast<pooch::DeviceAddress>(bytes);
  for (; it != watches_.end() && it->first < end; ++it) {
    if (it->first + static_cast<pooch::DeviceAddress>(it->second.bytes) <= address) continue;
    const Watch& w = it->second;
    if (w.output) {
      if (entries_.at(it->first)->dropped) {
        rebuild.push_back(it->first);  // any touch of a dropped map
      } else if (writes) {
        forget.push_back(it->first);  // overwritten after its recipe was taken
      }
    }
    if (!writes) continue;
    for (pooch::DeviceAddress reader : w.readers) {
      (entries_.at(reader)->dropped ? rebuild_for_write : forget).push_back(reader);
    }
  }
  for (pooch::DeviceAddress output : rebuild) {
    if (absl::Status s = ReplayLocked(output, stream, 0); !s.ok()) return s;
  }
  bool rebuilt = false;
  for (pooch::DeviceAddress output : rebuild_for_write) {
    auto e = entries_.find(output);
    if (e == entries_.end() || !e->second->dropped) continue;
    if (absl::Status s = ReplayLocked(output, stream, 0); !s.ok()) return s;
    rebuilt = true;
  }
  if (rebuilt) {
    if (absl::Status s = WaitForStreamLocked(stream); !s.ok()) return s;
  }
  for (pooch::DeviceAddress output : forget) {
    auto e = entries_.find(output);
    // A kept input that is resident is still right: it stays until nothing reads it.
    if (e == entries_.end() || e->second->dropped || e->second->kept) continue;
    EraseLocked(output);
    ++stats_.forgotten;
  }
  return absl::OkStatus();
}

absl::Status Recomputer::ReplayLocked(pooch::DeviceAddress output, uintptr_t stream, int depth) {
  auto it = entries_.find(output);
  if (it == entries_.end() || !it->second->dropped) return absl::OkStatus();
  Entry& e = *it->second;  // owned by a unique_ptr: stable while other entries go
  if (depth > kMaxChain) {
    return absl::FailedPreconditionError(
        absl::StrCat("pooch: recompute chain deeper than ", kMaxChain, " at ", e.recipe.name));
  }
  for (pooch::DeviceAddress input : e.watched) {
    auto d = entries_.find(input);
    if (d == entries_.end() || !d->second->dropped) continue;
    if (absl::Status s = ReplayLocked(input, stream, depth + 1); !s.ok()) return s;
    ++stats_.chained;
  }
  absl::StatusOr<pooch::DeviceAddress> scratch = AllocateScratch(e.recipe.workspace_bytes);
  if (!scratch.ok()) return scratch.status();
  std::vector<pooch::AccessRange> ranges = e.recipe.inputs;
  ranges.push_back({output, e.recipe.output_bytes, pooch::AccessRange::Mode::kWrite});
  if (*scratch != 0) {
    ranges.push_back({*scratch, e.recipe.workspace_bytes, pooch::AccessRange::Mode::kWrite});
  }
  absl::StatusOr<pooch::OpTicket> ticket = manager_.BeforeOp(stream, ranges);
  if (!ticket.ok()) {
    FreeScratch(*scratch, e.recipe.workspace_bytes);
    return ticket.status();  // e.g. no room: the map stays dropped, its recipe kept
  }
  const bool issued = e.recipe.issue(stream, reinterpret_cast<void*>(*scratch));
  absl::Status after = manager_.AfterOp(*std::move(ticket));
  FreeScratch(*scratch, e.recipe.workspace_bytes);
  const std::string name = e.recipe.name;
  if (!issued) {
    ++stats_.failures;
    EraseLocked(output);  // (frees it if it was a kept input)
    return absl::InternalError(
        absl::StrCat("pooch: cannot replay ", name, " to rebuild a dropped feature map"));
  }
  ++stats_.replays;
  stats_.replay_us += e.profiled_us;
  if (e.kept) {
    e.dropped = false;  // resident again; freed when no recipe reads it (Note [Kept inputs])
  } else {
    EraseLocked(output);
  }
  if (trace_ != nullptr) {
    const pooch::TraceArg args[] = {{"call", name}, {"depth", depth}};
    trace_->OnRuntime("recompute", args);
  }
  return after;
}

absl::Status Recomputer::WaitForStreamLocked(uintptr_t stream) {
  if (wait_event_ == 0) {
    absl::StatusOr<pooch::EventHandle> e = device_.CreateEvent();
    if (!e.ok()) return e.status();
    wait_event_ = *e;
  }
  if (absl::Status s = device_.RecordEvent(wait_event_, stream); !s.ok()) return s;
  return device_.SynchronizeEvent(wait_event_);
}

void Recomputer::EraseLocked(pooch::DeviceAddress output) {
  auto it = entries_.find(output);
  if (it == entries_.end()) return;
  std::unique_ptr<Entry> entry = std::move(it->second);
  entries_.erase(it);
  entries_count_.store(static_cast<int>(entries_.size()), std::memory_order_relaxed);
  auto unwatch = [&](pooch::DeviceAddress base, bool as_output) {
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
  for (pooch::DeviceAddress base : entry->watched) {
    unwatch(base, false);
    ReleaseIfUnreadLocked(base);
  }
  if (entry->kept) {
    // The program freed it long ago: free it now.
    if (absl::Status s = manager_.Free(output); !s.ok()) {
      POOCH_LOG_AT(kError, "kept input: %s", std::string(s.message()).c_str());
    }
  }
}

void Recomputer::ReleaseIfUnreadLocked(pooch::DeviceAddress base) {
  auto it = entries_.find(base);
  if (it == entries_.end() || !it->second->kept) return;
  auto w = watches_.find(base);
  if (w != watches_.end() && !w->second.readers.empty()) return;
  EraseLocked(base);  // frees it
}

absl::StatusOr<pooch::DeviceAddress> Recomputer::AllocateScratch(int64_t bytes) {
  if (bytes <= 0) return pooch::DeviceAddress{0};
  return bytes >= min_swap_bytes_ ? manager_.Allocate(bytes) : small_.Allocate(bytes);
}

void Recomputer::FreeScratch(pooch::DeviceAddress address, int64_t bytes) {
  if (address == 0) return;
  // Both frees wait for the replay's queued use before the memory is reused; never blocking.
  absl::Status s = bytes >= min_swap_bytes_ ? manager_.Free(address) : small_.Free(address);
  if (!s.ok()) POOCH_LOG_AT(kError, "replay scratch: %s", std::string(s.message()).c_str());
}

Recomputer::Stats Recomputer::stats() const {
  pooch::MutexLock lock(&mu_);
  return stats_;
}

Recomputer* ExistingRecomputer() { return g_recomputer.load(std::memory_order_acquire); }

void StartRecomputer(pooch::Device& device, pooch::ResidencyManager& manager,
                     pooch::SmallAllocator& small, int64_t min_swap_bytes, TraceObserver* trace) {
  // Never destroyed: hooks may run at exit.
  g_recomputer.store(new Recomputer(device, manager, small, min_swap_bytes, trace),
                     std::memory_order_release);
}

}  // namespace pooch::interpose
