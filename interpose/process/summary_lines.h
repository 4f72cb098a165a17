// summary_lines.h: the lines of the summary printed at exit ("pooch: <topic>: <figures>",
// README, "The summary"), each from the stats it reads; Process::WriteSummary prints them.
//
// Note [Summary lines]
// ~~~~~~~~~~~~~~~~~~~~
// Each line that prints fields of a stats struct is one table of figures (summary_lines.cc): a
// figure is its text, with `#` where the value goes, and the struct member it prints. So a figure
// is named once, next to its text, and the line is generated from the table; the order of the
// table is the order of the line. Scripts and tests read these lines by key, so a line's text
// changes only with the README.
#ifndef POOCH_INTERPOSE_PROCESS_SUMMARY_LINES_H_
#define POOCH_INTERPOSE_PROCESS_SUMMARY_LINES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/device/timed_device.h"
#include "core/recompute/recomputer.h"
#include "core/residency/residency.h"
#include "core/small_alloc/small_allocator.h"
#include "interpose/process/host_time.h"
#include "interpose/process/steady_host.h"

namespace pooch::interpose {

// "memory: limit ... peak_device_bytes ... peak_host_bytes ...".
std::string MemoryLine(int64_t memory_limit, const ResidencyStats& stats);
// "swaps: out ... (... bytes) in ...": the manager's swaps, waits and allocations.
std::string SwapsLine(const ResidencyStats& stats);
// "reuse: hits ...": the reuse cache, spare and retained chunks.
std::string ReuseLine(const ResidencyStats& stats);
// "host: op ... op_ms ...": the hooks' host time, then the device calls pooch made in it.
std::string HostLine(const HookTimes& hooks, const DeviceCallTimes& device_calls);
// "host_steady: iterations N host_ms ... cuMemCreate ...": the host: line's figures and each
// driver memory call's count, per steady iteration (Note [Steady iterations]); nullopt: none.
std::string HostSteadyLine(const std::optional<SteadyHost::PerIteration>& steady);
// "dtr: recipes ...": what dtr's eviction dropped and replay rebuilt.
std::string DtrLine(const Recomputer::Stats& recomputer, const ResidencyStats& manager);
// "replay_check: checked ...": POOCH_CHECK_REPLAYS (Note [Replay check] in
// core/recompute/replay_check.h).
std::string ReplayCheckLine(const ReplayCheck::Stats& stats);
// "small: slabs ...": the sub-allocator of small allocations.
std::string SmallLine(const SmallAllocatorStats& stats);
// "opaque: calls ... unclassified ..." and the count of each opaque function called.
std::string OpaqueLine(uint64_t calls, uint64_t unclassified,
                       const std::vector<std::pair<std::string, uint64_t>>& by_name);
// "calls: <function> <top> (+<nested> nested)".
std::string CallsLine(const char* function, uint64_t top, uint64_t nested);

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_PROCESS_SUMMARY_LINES_H_
