// Paths pooch writes (POOCH_TRACE, POOCH_PLOT, POOCH_SUMMARY_FILE, POOCH_PROFILE_OUT,
// POOCH_LINEAGE_OUT) may name the process that writes them, so that the ranks of one torchrun
// job, each its own pooch, write files of their own:
//   %r  the rank (ProcessRank below); 0 when the process has none
//   %p  the process id
//   %%  a single %
// Any other % sequence (%x, a trailing %) is bad input: CheckPathPattern says so in one line and
// LoadConfig refuses the variable (pooch exits with status 2 at start-up).
//
//   ExpandPathPattern("trace-%r.json", {.rank = 1, .pid = 4242}) == "trace-1.json"
//
// Thread safety: pure functions; ProcessRank calls `getenv` on the calling thread.
#ifndef POOCH_CORE_CONFIG_PATH_PATTERN_H_
#define POOCH_CORE_CONFIG_PATH_PATTERN_H_

#include <functional>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace pooch {

// Who the process is, for %r and %p.
struct ProcessIdentity {
  std::optional<int> rank;  // nullopt: not one rank of several
  int pid = 0;
};

// The rank of a process started by torchrun (or any launcher that sets the same variables): RANK
// (the global rank, unique across nodes), else LOCAL_RANK (unique on this node); nullopt when
// neither holds a non-negative integer.
std::optional<int> ProcessRank(const std::function<const char*(const char*)>& getenv);

// OK when `pattern` holds no % sequence but %r, %p and %%; otherwise InvalidArgument
// "VARIABLE='pattern': unknown pattern '%x' in the path (use %r for the rank, %p for the process
// id, %% for %)".
absl::Status CheckPathPattern(absl::string_view variable, absl::string_view pattern);

// `pattern` with %r, %p and %% replaced; a sequence CheckPathPattern refuses is kept as written.
std::string ExpandPathPattern(absl::string_view pattern, const ProcessIdentity& identity);

}  // namespace pooch

#endif  // POOCH_CORE_CONFIG_PATH_PATTERN_H_
