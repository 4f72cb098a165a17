// recomputer.cc: the Recomputer (Note [Replay] in recomputer.h).
#include "core/recompute/recomputer.h"

#include <algorithm>
#include <fstream>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/log.h"
#include "core/measure/trace_observer.h"
#include "nlohmann/json.hpp"

namespace pooch {
namespace {

// Deeper chains than this are refused rather than followed (a plan never builds them: each link
// is a dropped map whose producer reads another dropped map).
constexpr int kMaxChain = 256;

bool Overlaps(const pooch::AccessRange& r, pooch::DeviceAddress base, int64_t bytes) {
  return r.address < base + static_cast<pooch::DeviceAddress>(bytes) &&
         base < r.address + static_cast<pooch::DeviceAddress>(r.bytes);
}

// A recipe reading the allocation it writes (at `base`, `bytes` long).
bool ReadsOutput(const std::vector<pooch::AccessRange>& inputs, pooch::DeviceAddress base,
                 int64_t bytes) {
  return std::any_of(inputs.begin(), inputs.end(),
                     [&](const pooch::AccessRange& r) { return Overlaps(r, base, bytes); });
}

// What replaying a chain reads outside its own output: every link's inputs but the map itself
// (Note [Chained recipes] in core/lineage/lineage.cc).
std::vector<pooch::AccessRange> ChainInputs(const Lineage::Entry& e) {
  std::vector<pooch::AccessRange> ranges;
  for (const ReplayRecipe& link : e.chain) {
    for (const pooch::AccessRange& in : link.inputs) {
      if (!Overlaps(in, e.first().output, e.output_bytes)) ranges.push_back(in);
    }
  }
  return ranges;
}

int64_t ChainWorkspace(const Lineage::Entry& e) {
  int64_t bytes = 0;
  for (const ReplayRecipe& link : e.chain) bytes = std::max(bytes, link.workspace_bytes);
  return bytes;
}

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
  return OfferLocked(std::move(recipe), profiled_us);
}

bool Recomputer::OfferLocked(ReplayRecipe recipe, double profiled_us) {
  // The output must be a whole swappable allocation of the manager's: Drop discards all of it.
  const std::optional<pooch::AllocationInfo> out = manager_.Lookup(recipe.output);
  bool ok = out.has_value() && out->address == recipe.output && out->swappable &&
            recipe.output_bytes >= out->bytes && recipe.issue != nullptr;
  // Note [Chained recipes]: a call that read the map it wrote is a link of the map's chain.
  const bool link = ok && ReadsOutput(recipe.inputs, recipe.output, out->bytes);
  std::vector<Lineage::Allocation> inputs;
  for (const pooch::AccessRange& in : recipe.inputs) {
    if (!ok) break;
    if (link && Overlaps(in, recipe.output, out->bytes)) continue;  // the chain's previous state
    std::optional<std::pair<pooch::DeviceAddress, int64_t>> a = AllocationOf(in.address);
    // An input outside pooch's memory cannot be watched; one inside the output would be lost.
    ok = a.has_value() && a->first != recipe.output;
    if (ok) inputs.push_back({a->first, a->second});
  }
  if (ok && link) ok = !dtr_ && lineage_.Append(std::move(recipe), profiled_us, inputs);
  if (!ok) {
    ++stats_.refused;
    return false;
  }
  if (!link) FreeKeptLocked(lineage_.Add(std::move(recipe), profiled_us, inputs, out->bytes));
  entries_count_.store(static_cast<int>(lineage_.size()), std::memory_order_relaxed);
  ++stats_.recipes;
  return true;
}

bool Recomputer::Drop(pooch::DeviceAddress address) {
  pooch::MutexLock lock(&mu_);
  const Lineage::Entry* e = lineage_.Find(address);
  // A stale entry's recipe no longer rebuilds its data (InvalidateLocked).
  if (e == nullptr || e->dropped || e->stale || e->open) return false;
  if (!DropInManagerLocked(address, "planned drop")) return false;
  ++stats_.drops;
  return true;
}

bool Recomputer::DropInManagerLocked(pooch::DeviceAddress address, const char* what) {
  if (check_ != nullptr) {
    // Note [Replay check]: without its copy the map's replay is counted unchecked.
    if (absl::Status s = check_->Keep(manager_, address); !s.ok()) {
      POOCH_LOG_AT(kWarn, "replay check: no copy of %s: %s", what,
                   std::string(s.message()).c_str());
    }
  }
  if (absl::Status s = manager_.Drop(address); !s.ok()) {
    POOCH_LOG_AT(kWarn, "%s: %s", what, std::string(s.message()).c_str());
  }
  // The manager keeps data it cannot drop (pinned by an op in flight, on the host, ...), and an
  // error may follow a drop that happened (ResidencyManager::Drop): its state decides, so that
  // every dropped map has its recipe marked and is rebuilt before an op reads it.
  const std::optional<pooch::AllocationInfo> info = manager_.Lookup(address);
  const bool dropped = info.has_value() && info->state == pooch::ResidencyState::kDropped;
  lineage_.MarkDropped(address, dropped);
  if (!dropped && check_ != nullptr) check_->Forget(address);
  return dropped;
}

absl::Status Recomputer::BeforeProgramOp(uintptr_t stream,
                                         const std::vector<pooch::AccessRange>& ranges,
                                         bool effects_known,
                                         std::vector<pooch::AllocationId>* held) {
  if (held != nullptr) held->clear();
  if (entries_count_.load(std::memory_order_relaxed) == 0) return absl::OkStatus();
  pooch::MutexLock lock(&mu_);
  ForgetOpenLocked();
  // Note [DTR recipes]: the operands stay put while some of them are rebuilt; after the hold,
  // what the lineage knows of their drops cannot change.
  std::vector<pooch::AllocationId> hold;
  if (dtr_) {
    hold = manager_.Hold(ranges);
    TakeTimingsLocked();
    SyncDropsLocked();
  }
  absl::Status status;
  if (!effects_known) {
    // It may write anything: rebuild what is dropped while its inputs are intact, forget the
    // rest.
    status = ApplyLocked(stream, lineage_.AnyWrite());
  } else {
    for (const pooch::AccessRange& r : ranges) {
      status = TouchLocked(stream, r.address, r.bytes, r.mode != pooch::AccessRange::Mode::kRead);
      if (!status.ok()) break;
    }
  }
  if (held != nullptr && status.ok()) {
    *held = std::move(hold);
  } else {
    manager_.Release(hold);
  }
  return status;
}

pooch::EventHandle Recomputer::BeginProduced(uintptr_t stream) {
  pooch::MutexLock lock(&mu_);
  return timer_.Begin(stream);
}

void Recomputer::AbandonProduced(pooch::EventHandle start) {
  if (start == 0) return;
  pooch::MutexLock lock(&mu_);
  timer_.Abandon(start);
}

bool Recomputer::OfferProduced(std::optional<ReplayRecipe> recipe, uintptr_t stream,
                               pooch::EventHandle start) {
  if (!recipe.has_value()) {
    AbandonProduced(start);
    return false;
  }
  const pooch::DeviceAddress output = recipe->output;
  pooch::MutexLock lock(&mu_);
  TakeTimingsLocked();
  SyncDropsLocked();
  const double estimate = EstimateUsLocked(recipe->output_bytes);
  if (!OfferLocked(*std::move(recipe), estimate)) {
    timer_.Abandon(start);
    return false;
  }
  // Eviction may drop it from now on (Note [DTR eviction]); the write that made it is done.
  if (absl::StatusOr<bool> dropped = manager_.SetRecomputeCost(output, estimate); !dropped.ok()) {
    POOCH_LOG_AT(kDebug, "dtr recipe: %s", std::string(dropped.status().message()).c_str());
  }
  timer_.End(start, stream, output);
  return true;
}

absl::StatusOr<bool> Recomputer::BeforeFree(pooch::DeviceAddress address) {
  if (entries_count_.load(std::memory_order_relaxed) == 0) return false;
  pooch::MutexLock lock(&mu_);
  ForgetOpenLocked();
  SyncDropsLocked();
  if (const Lineage::Entry* e = lineage_.Find(address); e != nullptr) {
    if (lineage_.HasReaders(address) && !e->kept) {
      // Note [Kept inputs]: keep it, without its device memory when it can be dropped.
      lineage_.MarkKept(address);
      if (!e->dropped) DropInManagerLocked(address, "kept input");
      return true;
    }
    // A freed output needs no rebuilding: its recipe goes (the manager frees dropped memory).
    if (!e->dropped) ++stats_.forgotten;
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
  return ApplyLocked(stream, lineage_.Access(address, bytes, writes));
}

absl::Status Recomputer::ApplyLocked(uintptr_t stream, const Lineage::Needs& needs) {
  // Each replay may rebuild or erase other entries (chains, kept inputs released): ReplayLocked
  // does nothing for a map no longer dropped, and InvalidateLocked skips what is gone.
  for (pooch::DeviceAddress output : needs.rebuild) {
    if (absl::Status s = ReplayLocked(output, stream, 0); !s.ok()) return s;
  }
  // Each recipe the access makes wrong goes before the access is issued, its map rebuilt first
  // if dropped, whatever the lineage knew when `needs` was made (a replay above may have dropped
  // or rebuilt it). A recipe that was used goes too: kept, it could drop the map again and
  // rebuild it from inputs that are no longer the ones it read.
  bool rebuilt = false;
  for (const std::vector<pooch::DeviceAddress>* list :
       {&needs.rebuild_for_write, &needs.forget, &needs.stale_kept}) {
    for (pooch::DeviceAddress output : *list) {
      if (list == &needs.forget && OpenLocked(output, needs)) continue;
      if (absl::Status s = InvalidateLocked(stream, output, &rebuilt); !s.ok()) return s;
    }
  }
  return rebuilt ? WaitForStreamLocked(stream) : absl::OkStatus();
}

bool Recomputer::OpenLocked(pooch::DeviceAddress output, const Lineage::Needs& needs) {
  if (dtr_) return false;  // dtr keeps one-call recipes (Note [Chained recipes])
  const Lineage::Entry* e = lineage_.Find(output);
  if (e == nullptr || e->dropped || e->kept || e->stale) return false;
  // Forgotten for its map's write alone, not for a write to one of its inputs.
  if (std::count(needs.forget.begin(), needs.forget.end(), output) !=
      std::count(needs.written.begin(), needs.written.end(), output)) {
    return false;
  }
  if (!e->open) {
    lineage_.MarkOpen(output);
    open_.push_back(output);
  }
  return true;
}

void Recomputer::ForgetOpenLocked() {
  for (pooch::DeviceAddress output : open_) {
    const Lineage::Entry* e = lineage_.Find(output);
    if (e == nullptr || !e->open) continue;  // closed by its link, or gone
    EraseLocked(output);
    ++stats_.forgotten;
  }
  open_.clear();
}

absl::Status Recomputer::ReplayLocked(pooch::DeviceAddress output, uintptr_t stream, int depth) {
  // Stable while other entries go (Lineage::Find): the chain below rebuilds or erases only the
  // entries of its inputs.
  const Lineage::Entry* e = lineage_.Find(output);
  if (e == nullptr || !e->dropped) return absl::OkStatus();
  if (depth > kMaxChain) {
    return absl::FailedPreconditionError(
        absl::StrCat("pooch: recompute chain deeper than ", kMaxChain, " at ", e->first().name));
  }
  if (e->stale) {
    return absl::InternalError(
        absl::StrCat("pooch: ", e->first().name, " no longer rebuilds a map that was dropped"));
  }
  // Note [DTR recipes]: the inputs stay put while the dropped ones among them are rebuilt.
  std::vector<pooch::AccessRange> ranges = ChainInputs(*e);
  std::vector<pooch::AllocationId> held;
  if (dtr_) {
    held = manager_.Hold(ranges);
    SyncDropsLocked();
  }
  for (const Lineage::Allocation& input : e->inputs) {
    const Lineage::Entry* d = lineage_.Find(input.base);
    if (d == nullptr || !d->dropped) continue;
    if (absl::Status s = ReplayLocked(input.base, stream, depth + 1); !s.ok()) {
      manager_.Release(held);
      return s;
    }
    ++stats_.chained;
  }
  const int64_t workspace_bytes = ChainWorkspace(*e);
  absl::StatusOr<pooch::DeviceAddress> scratch = AllocateScratch(workspace_bytes);
  if (!scratch.ok()) {
    manager_.Release(held);
    return scratch.status();
  }
  ranges.push_back({output, e->output_bytes, pooch::AccessRange::Mode::kWrite});
  if (*scratch != 0) {
    ranges.push_back({*scratch, workspace_bytes, pooch::AccessRange::Mode::kWrite});
  }
  absl::StatusOr<pooch::OpTicket> ticket = manager_.BeforeOp(stream, ranges);
  manager_.Release(held);  // pinned by the ticket now, or not needed any more
  if (!ticket.ok()) {
    FreeScratch(*scratch, workspace_bytes);
    return ticket.status();  // e.g. no room: the map stays dropped, its recipe kept
  }
  // Note [Replay check]: the restored output filled so that only what the links write matches.
  bool primed = false;
  if (check_ != nullptr) {
    absl::StatusOr<bool> p = check_->Prime(output, e->output_bytes, stream);
    if (!p.ok()) {
      POOCH_LOG_AT(kWarn, "replay check: %s", std::string(p.status().message()).c_str());
    }
    primed = p.ok() && *p;
  }
  // Note [Chained recipes]: the links in order, all before the op that needs the map.
  bool issued = true;
  for (const ReplayRecipe& link : e->chain) {
    issued = issued && link.issue(stream, reinterpret_cast<void*>(*scratch));
  }
  absl::Status checked = issued ? VerifyLocked(*e, output, stream, primed) : absl::OkStatus();
  absl::Status after = manager_.AfterOp(*std::move(ticket));
  FreeScratch(*scratch, workspace_bytes);
  const std::string name = e->first().name;
  const int links = static_cast<int>(e->chain.size());
  const int kernel_links = static_cast<int>(std::count_if(
      e->chain.begin(), e->chain.end(), [](const ReplayRecipe& link) { return link.kernel; }));
  const double profiled_us = e->profiled_us;
  const bool kept = e->kept;
  if (!issued || !checked.ok()) {
    ++stats_.failures;
    EraseLocked(output);  // (frees it if it was a kept input)
    if (!checked.ok()) return checked;
    return absl::InternalError(
        absl::StrCat("pooch: cannot replay ", name, " to rebuild a dropped feature map"));
  }
  ++stats_.replays;
  stats_.links += links;
  stats_.kernel_replays += kernel_links;
  stats_.replay_us += profiled_us;
  if (kept || dtr_) {
    // Resident again; a kept input is freed when no recipe reads it (Note [Kept inputs]); under
    // dtr the recipe still holds and eviction may drop the map again (Note [DTR recipes]).
    lineage_.MarkDropped(output, false);
  } else {
    EraseLocked(output);
  }
  if (trace_ != nullptr) {
    const pooch::TraceArg args[] = {{"call", name}, {"depth", depth}, {"links", links}};
    trace_->OnRuntime("recompute", args);
  }
  return after;
}

absl::Status Recomputer::VerifyLocked(const Lineage::Entry& e, pooch::DeviceAddress output,
                                      uintptr_t stream, bool primed) {
  if (check_ == nullptr) return absl::OkStatus();
  if (!primed) {
    check_->CountUnchecked();
    return absl::OkStatus();
  }
  std::string calls = e.chain.size() > 1 ? "the chain " : "";
  for (size_t i = 0; i < e.chain.size(); ++i) {
    const ReplayRecipe& link = e.chain[i];
    absl::StrAppend(&calls, i > 0 ? " > " : "", link.kernel ? "kernel " : "",
                    link.name != nullptr ? link.name : "?");
  }
  return check_->Verify(output, stream, calls);
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

void Recomputer::SyncDropsLocked() {
  if (!dtr_) return;
  for (pooch::DeviceAddress address : manager_.TakeEvictionDrops()) {
    const Lineage::Entry* e = lineage_.Find(address);
    // No recipe: the allocation is being freed (its recipe went first, BeforeFree).
    if (e == nullptr || e->dropped) continue;
    lineage_.MarkDropped(address, true);
    ++stats_.drops;
  }
}

absl::Status Recomputer::InvalidateLocked(uintptr_t stream, pooch::DeviceAddress output,
                                          bool* rebuilt) {
  const Lineage::Entry* e = lineage_.Find(output);
  if (e == nullptr) return absl::OkStatus();  // listed twice, or released on the way
  if (dtr_) {
    // From here on eviction only swaps it; a drop it made before is learnt now.
    absl::StatusOr<bool> dropped = manager_.SetRecomputeCost(output, std::nullopt);
    if (dropped.ok() && *dropped && !e->dropped) {
      lineage_.MarkDropped(output, true);
      ++stats_.drops;
    }
  }
  const bool was_dropped = e->dropped;
  if (was_dropped) {
    // Rebuilt from the inputs as they still are: the write has not been issued yet.
    if (absl::Status s = ReplayLocked(output, stream, 0); !s.ok()) return s;
    *rebuilt = true;
  }
  e = lineage_.Find(output);
  if (e == nullptr) return absl::OkStatus();
  if (e->kept) {
    lineage_.MarkStale(output);  // right, but the recipe no longer rebuilds it
    return absl::OkStatus();
  }
  EraseLocked(output);
  if (!was_dropped) ++stats_.forgotten;
  return absl::OkStatus();
}

void Recomputer::TakeTimingsLocked() {
  for (const auto& [key, us] : timer_.Take()) {
    const pooch::DeviceAddress output = key;
    const Lineage::Entry* e = lineage_.Find(output);
    if (e == nullptr) continue;  // forgotten before its timing completed
    measured_us_ += us;
    measured_bytes_ += static_cast<double>(e->output_bytes);
    lineage_.SetProfiledUs(output, us);
    if (e->stale) continue;
    manager_.SetRecomputeCost(output, us).IgnoreError();
  }
}

double Recomputer::EstimateUsLocked(int64_t bytes) const {
  if (measured_bytes_ > 0) return measured_us_ / measured_bytes_ * static_cast<double>(bytes);
  return 2.0 * static_cast<double>(bytes) / 16000.0;
}

void Recomputer::EraseLocked(pooch::DeviceAddress output) {
  // Note [DTR recipes]: never dropped again without a recipe (a no-op once it is freed).
  if (dtr_) manager_.SetRecomputeCost(output, std::nullopt).IgnoreError();
  if (check_ != nullptr) check_->Forget(output);
  FreeKeptLocked(lineage_.Erase(output));
  entries_count_.store(static_cast<int>(lineage_.size()), std::memory_order_relaxed);
}

void Recomputer::FreeKeptLocked(const std::vector<pooch::DeviceAddress>& addresses) {
  for (pooch::DeviceAddress address : addresses) {
    if (check_ != nullptr) check_->Forget(address);
    // The program freed it long ago: free it now.
    if (absl::Status s = manager_.Free(address); !s.ok()) {
      POOCH_LOG_AT(kError, "kept input: %s", std::string(s.message()).c_str());
    }
  }
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

std::optional<ReplayCheck::Stats> Recomputer::check_stats() const {
  pooch::MutexLock lock(&mu_);
  if (check_ == nullptr) return std::nullopt;
  return check_->stats();
}

absl::Status Recomputer::WriteLineage(const std::string& path) const {
  nlohmann::json doc;
  {
    pooch::MutexLock lock(&mu_);
    const Stats& st = stats_;
    doc = {{"format", "pooch-lineage"},
           {"version", 1},
           {"recipes", lineage_.ToJson()},
           {"stats",
            {{"recipes", st.recipes},
             {"refused", st.refused},
             {"drops", st.drops},
             {"replays", st.replays},
             {"links", st.links},
             {"kernel_replays", st.kernel_replays},
             {"chained", st.chained},
             {"forgotten", st.forgotten},
             {"failures", st.failures},
             {"replay_us", st.replay_us}}}};
  }
  // Written outside the lock: hooks on other threads need not wait for the file system.
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", path));
  out << doc.dump(1) << "\n";
  out.close();
  if (!out) return absl::UnavailableError(absl::StrCat("error writing ", path));
  return absl::OkStatus();
}

}  // namespace pooch
