// summary_words.h: the summary at exit as a user reads it (docs/usage.md, "The summary").
//
// Note [Summary in words]
// ~~~~~~~~~~~~~~~~~~~~~~~
// At the default log level the summary is a few plain lines: the limit and the peak, what moved
// and how much, the plan with its predicted and measured iteration, and what went wrong if
// anything. The detailed `pooch: <topic>: key value ...` lines (summary_lines.h, and the plan
// executor's) follow only at POOCH_LOG=info, and POOCH_SUMMARY_FILE writes both as one JSON
// object: the plain lines' figures at the top level, and under "detail" each detailed line as an
// object of its keys and values (with its text). The plain lines start with words no detailed
// line starts with ("limit", "moved", "plan", "went", ...), so that scripts reading a detailed
// line by its `topic:` never see a plain one.
#ifndef POOCH_INTERPOSE_PROCESS_SUMMARY_WORDS_H_
#define POOCH_INTERPOSE_PROCESS_SUMMARY_WORDS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/exec/plan_executor.h"
#include "core/recompute/recomputer.h"
#include "core/residency/residency.h"

namespace pooch::interpose {

// What the plain lines and the JSON object say, gathered at exit by Process::WriteSummary.
struct SummaryFacts {
  std::string policy;                    // POOCH_POLICY as text
  std::optional<int> rank;               // RANK or LOCAL_RANK (Note [One pooch per process])
  bool managed = false;                  // the residency manager existed: the figures below are its
  int64_t limit_bytes = 0;               // the limit in force
  std::optional<double> limit_fraction;  // POOCH_MEMORY_LIMIT as a percentage, in (0, 1]
  int64_t device_total_bytes = 0;        // the device's memory, read at start-up
  ResidencyStats memory;
  std::optional<Recomputer::Stats> recompute;  // a recomputer existed
  bool dtr = false;
  std::optional<PlanExecutor::Outcome> plan;  // profiling was on
  uint64_t opaque_refused = 0;                // opaque calls refused for want of memory
};

// The plain lines, without the "pooch: " prefix.
std::vector<std::string> PlainLines(const SummaryFacts& facts);

// One JSON object: `facts`, and `detail_lines` (each "topic: ...", without the prefix) under
// "detail" by topic, each with its keys and values as far as they pair up, and its "text".
std::string SummaryJson(const SummaryFacts& facts, const std::vector<std::string>& detail_lines);

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_PROCESS_SUMMARY_WORDS_H_
