#include "core/exec/pilot_actions.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"

namespace pooch {
namespace {

bool OnHost(const std::optional<AllocationInfo>& info) {
  return info.has_value() && info->state == ResidencyState::kOnHost;
}

}  // namespace

PilotActions::PilotActions(PilotMode mode, ResidencyManager& manager, TraceObserver* trace)
    : pilot_(mode), manager_(manager), trace_(trace) {}

void PilotActions::ReadBack(absl::Span<const uint8_t> bytes, bool act) {
  const Pilot::Prediction p = pilot_.ReadBack(bytes);
  if (trace_ != nullptr) {
    const Pilot::Block& b = pilot_.last_block();
    const Pilot::ModelStats& s = b.scored[b.acting];
    // Held here: a TraceArg is a view, and the array outlives its initialisers' temporaries.
    const std::string signature = absl::StrFormat("%016x", b.signature);
    const TraceArg args[] = {{"ordinal", b.ordinal},
                             {"ops", b.ops},
                             {"signature", signature},
                             {"model", Pilot::ModelName(b.acting)},
                             {"hits", s.hits},
                             {"misses", s.misses},
                             {"wasted", s.wasted},
                             {"next_likely", static_cast<int64_t>(p.likely.size())},
                             {"next_unlikely", static_cast<int64_t>(p.unlikely.size())}};
    trace_->OnRuntime("pilot block", args);
  }
  if (!act || p.likely.empty()) return;
  ++boundaries_acted_;
  // The likely allocations on the host.
  std::vector<DeviceAddress> wanted;
  for (PilotKey key : p.likely) {
    const DeviceAddress address = static_cast<DeviceAddress>(key);
    if (!OnHost(manager_.Lookup(address))) continue;  // resident, in flight, dropped or gone
    wanted.push_back(address);
  }
  if (wanted.empty()) return;
  // Room first (Note [Pilot model]): every resident candidate the next block is not predicted
  // to touch goes, least likely first; their copies are queued, not waited for. Not only enough
  // to cover the wanted bytes: the block's misses and its new allocations would then make their
  // room on demand, behind swap-outs.
  for (PilotKey key : p.unlikely) {
    const DeviceAddress victim = static_cast<DeviceAddress>(key);
    std::optional<AllocationInfo> info = manager_.Lookup(victim);
    if (!info.has_value() || info->state != ResidencyState::kResident || !info->swappable) {
      continue;
    }
    const int64_t before = manager_.Stats().planned_swap_outs;
    if (manager_.Offload(victim).ok() && manager_.Stats().planned_swap_outs > before) ++offloads_;
  }
  // Then the prefetches, most likely first, into the room there is now: the program's thread
  // never waits here (Note [Pilot model]); what finds no room comes on demand, into the room
  // being made.
  for (DeviceAddress address : wanted) {
    absl::StatusOr<bool> issued = manager_.Prefetch(address, /*may_wait=*/false);
    if (issued.ok() && *issued) {
      ++prefetches_;
    } else if (issued.ok()) {
      ++no_room_;
    }
  }
}

std::string PilotActions::SummaryLine() const {
  return absl::StrFormat("%s acted_at %lld prefetches %lld offloads %lld no_room %lld",
                         pilot_.SummaryLine(), static_cast<long long>(boundaries_acted_),
                         static_cast<long long>(prefetches_), static_cast<long long>(offloads_),
                         static_cast<long long>(no_room_));
}

}  // namespace pooch
