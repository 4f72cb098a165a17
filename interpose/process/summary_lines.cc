// The summary's lines (Note [Summary lines]).
#include "interpose/process/summary_lines.h"

#include <cstddef>
#include <iterator>
#include <tuple>
#include <type_traits>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace pooch::interpose {
namespace {

// A member of one of a line's stats structs: an integer prints in decimal, a duration in
// milliseconds with three decimals, a double (microseconds) in milliseconds too.
template <typename... Stats>
using Field = std::variant<int64_t Stats::*..., absl::Duration Stats::*..., double Stats::*...>;

// One figure of a line: `text`, with `#` where the value of `field` goes.
template <typename... Stats>
struct Figure {
  const char* text;
  Field<Stats...> field;
};

template <typename T, typename Struct, typename... Stats>
std::string ValueText(T Struct::*field, const std::tuple<const Stats&...>& stats) {
  const T& value = std::get<const Struct&>(stats).*field;
  if constexpr (std::is_same_v<T, int64_t>) {
    return absl::StrCat(value);
  } else if constexpr (std::is_same_v<T, absl::Duration>) {
    return absl::StrFormat("%.3f", absl::ToDoubleMilliseconds(value));
  } else {
    return absl::StrFormat("%.3f", value / 1000.0);
  }
}

// "<topic> <figure> <figure> ...".
template <typename... Stats, size_t N>
std::string Line(const char* topic, const Figure<Stats...> (&figures)[N], const Stats&... stats) {
  const std::tuple<const Stats&...> all(stats...);
  std::string line = topic;
  for (const Figure<Stats...>& figure : figures) {
    const absl::string_view text = figure.text;
    const size_t at = text.find('#');
    const std::string value =
        std::visit([&](auto field) { return ValueText(field, all); }, figure.field);
    absl::StrAppend(&line, " ", text.substr(0, at), value, text.substr(at + 1));
  }
  return line;
}

// The memory line's one figure that is no stats member.
struct Limit {
  int64_t bytes = 0;
};

constexpr Figure<Limit, ResidencyStats> kMemory[] = {
    {"limit #", &Limit::bytes},
    {"peak_device_bytes #", &ResidencyStats::peak_device_bytes},
    {"peak_host_bytes #", &ResidencyStats::peak_host_bytes},
};

constexpr Figure<ResidencyStats> kSwaps[] = {
    {"out #", &ResidencyStats::swap_outs},
    {"(# bytes)", &ResidencyStats::bytes_swapped_out},
    {"in #", &ResidencyStats::swap_ins},
    {"(# bytes)", &ResidencyStats::bytes_swapped_in},
    {"demand_in #", &ResidencyStats::demand_swap_ins},
    {"cancelled #", &ResidencyStats::cancelled_swap_outs},
    {"wait_ms #", &ResidencyStats::swap_wait},
    {"oom #", &ResidencyStats::out_of_memory},
    {"allocations #", &ResidencyStats::allocations},
    {"frees #", &ResidencyStats::frees},
    {"host_reads #", &ResidencyStats::host_reads},
    {"overwritten_ins #", &ResidencyStats::overwritten_ins},
    {"reserve_outs #", &ResidencyStats::reserve_swap_outs},
    {"current_outs #", &ResidencyStats::current_swap_outs},
    {"(# bytes not copied)", &ResidencyStats::bytes_not_copied_out},
};

// The reuse cache (Note [Reuse cache] in core/residency/parts/reuse_cache.h): freed chunks handed
// out again without a device call, of them `ordered_hits` to a cudaMallocAsync on the stream the
// old owner's work was still queued on (Note [Reuse on the allocating stream]). And Note [Spare
// chunks] (core/residency/residency_swap.cc): mappings served by the chunk a swap-out or a
// release left, with no cuMemCreate; Note [Retained chunks]: swap-ins that found their chunk
// still mapped and copied nothing.
constexpr Figure<ResidencyStats> kReuse[] = {
    {"hits #", &ResidencyStats::reuse_hits},
    {"ordered_hits #", &ResidencyStats::reuse_ordered_hits},
    {"misses #", &ResidencyStats::reuse_misses},
    {"cached_bytes #", &ResidencyStats::cached_bytes},
    {"chunk_reuses #", &ResidencyStats::chunk_reuses},
    {"retained_hits #", &ResidencyStats::retained_hits},
};

// Note [DTR eviction] (core/residency/residency_evict.cc): what eviction dropped and what was
// rebuilt by replay; evictions that swapped are the swaps: line's demand outs.
constexpr Figure<Recomputer::Stats, ResidencyStats> kDtr[] = {
    {"recipes #", &Recomputer::Stats::recipes},
    {"refused #", &Recomputer::Stats::refused},
    {"drops #", &ResidencyStats::eviction_drops},
    {"replays #", &Recomputer::Stats::replays},
    {"chained #", &Recomputer::Stats::chained},
    {"forgotten #", &Recomputer::Stats::forgotten},
    {"failures #", &Recomputer::Stats::failures},
    {"swapped #", &ResidencyStats::demand_swap_outs},
    {"kernel_replays #", &Recomputer::Stats::kernel_replays},
    {"replay_ms # (measured time of the replayed calls)", &Recomputer::Stats::replay_us},
};

// Note [Replay check] (core/recompute/replay_check.h): replays compared with the dropped map's
// copy, bit for bit; bytes they left unwritten (padding its first writer left too); replays of
// maps dropped without a copy (dtr's evictions); the most host memory the copies held.
constexpr Figure<ReplayCheck::Stats> kReplayCheck[] = {
    {"checked #", &ReplayCheck::Stats::checked},
    {"checked_bytes #", &ReplayCheck::Stats::checked_bytes},
    {"unwritten_bytes #", &ReplayCheck::Stats::unwritten_bytes},
    {"unchecked #", &ReplayCheck::Stats::unchecked},
    {"peak_held_bytes #", &ReplayCheck::Stats::peak_held_bytes},
};

// Allocations under POOCH_MIN_SWAP_BYTES (core/small_alloc/small_allocator.h): the slabs they
// live in, and how often an allocation had to wait for freed blocks' work to finish.
constexpr Figure<SmallAllocatorStats> kSmall[] = {
    {"slabs #", &SmallAllocatorStats::slabs},
    {"slab_bytes #", &SmallAllocatorStats::slab_bytes},
    {"peak_slab_bytes #", &SmallAllocatorStats::peak_slab_bytes},
    {"live_blocks #", &SmallAllocatorStats::live_blocks},
    {"live_bytes #", &SmallAllocatorStats::live_bytes},
    {"peak_live_bytes #", &SmallAllocatorStats::peak_live_bytes},
    {"waits #", &SmallAllocatorStats::waits},
};

// " <name> <calls> <name>_ms <milliseconds>".
void AppendCallSum(std::string* line, const char* name, const CallSum& sum) {
  absl::StrAppendFormat(line, " %s %d %s_ms %.3f", name, sum.calls, name, sum.nanoseconds / 1e6);
}

}  // namespace

std::string MemoryLine(int64_t memory_limit, const ResidencyStats& stats) {
  return Line("memory:", kMemory, Limit{memory_limit}, stats);
}

std::string SwapsLine(const ResidencyStats& stats) { return Line("swaps:", kSwaps, stats); }

std::string ReuseLine(const ResidencyStats& stats) { return Line("reuse:", kReuse, stats); }

// Note [Host time] (core/device/timed_device.h): the hooks' own host time around the real calls,
// and the device calls pooch made, which are part of it.
std::string HostLine(const HookTimes& hooks, const DeviceCallTimes& device_calls) {
  std::string line = "host:";
  constexpr std::pair<HookWork, const char*> kWork[] = {
      {HookWork::kOp, "op"}, {HookWork::kAlloc, "alloc"}, {HookWork::kFree, "free"}};
  for (const auto& [work, name] : kWork) AppendCallSum(&line, name, hooks[work]);
  for (size_t i = 0; i < device_calls.of.size(); ++i) {
    AppendCallSum(&line, DeviceCallKindName(static_cast<DeviceCallKind>(i)), device_calls.of[i]);
  }
  return line;
}

// Note [Steady iterations] (steady_host.h): means per steady iteration, so the counts may have
// decimals.
std::string HostSteadyLine(const std::optional<SteadyHost::PerIteration>& steady) {
  if (!steady.has_value()) {
    return "host_steady: iterations 0 (no steady iteration: no plan followed twice in a row)";
  }
  std::string line = absl::StrFormat("host_steady: iterations %d host_ms %.3f", steady->iterations,
                                     steady->host_ms());
  constexpr std::pair<HookWork, const char*> kWork[] = {
      {HookWork::kOp, "op"}, {HookWork::kAlloc, "alloc"}, {HookWork::kFree, "free"}};
  for (const auto& [work, name] : kWork) {
    absl::StrAppendFormat(&line, " %s_ms %.3f", name, steady->hook_ms[static_cast<size_t>(work)]);
  }
  for (size_t i = 0; i < std::size(steady->device_ms); ++i) {
    absl::StrAppendFormat(&line, " %s_ms %.3f",
                          DeviceCallKindName(static_cast<DeviceCallKind>(i)), steady->device_ms[i]);
  }
  for (size_t i = 0; i < std::size(steady->memory_calls); ++i) {
    absl::StrAppendFormat(&line, " %s %.2f", MemoryCallName(static_cast<MemoryCall>(i)),
                          steady->memory_calls[i]);
  }
  return line;
}

std::string DtrLine(const Recomputer::Stats& recomputer, const ResidencyStats& manager) {
  return Line("dtr:", kDtr, recomputer, manager);
}

std::string ReplayCheckLine(const ReplayCheck::Stats& stats) {
  return Line("replay_check:", kReplayCheck, stats);
}

std::string SmallLine(const SmallAllocatorStats& stats) { return Line("small:", kSmall, stats); }

// Note [Opaque calls] (opaque.h): calls made safe by making everything resident, by name;
// `unclassified` counts calls of functions classes.tsv does not list (there should be none).
std::string OpaqueLine(uint64_t calls, uint64_t unclassified,
                       const std::vector<std::pair<std::string, uint64_t>>& by_name) {
  std::string line = absl::StrCat("opaque: calls ", calls, " unclassified ", unclassified);
  for (const auto& [name, count] : by_name) absl::StrAppend(&line, " ", name, " ", count);
  return line;
}

std::string CallsLine(const char* function, uint64_t top, uint64_t nested) {
  return absl::StrFormat("calls: %s %d (+%d nested)", function, top, nested);
}

}  // namespace pooch::interpose
