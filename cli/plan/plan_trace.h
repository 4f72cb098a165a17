// The simulated timeline of a plan as a Chrome trace (core/base/trace.h), for `pooch plan --trace`:
// one process, with the compute engine's ops, the recomputations, the swap-outs and the
// swap-ins on four tracks, and device memory as a counter. Open it in ui.perfetto.dev or
// chrome://tracing.
//
// Thread safety: plain function.
#ifndef POOCH_CLI_PLAN_TRACE_H_
#define POOCH_CLI_PLAN_TRACE_H_

#include <string>

#include "absl/status/status.h"
#include "core/model/model.h"
#include "core/sim/sim.h"

namespace pooch::cli {

// REQUIRES: `sim` was recorded (SimOptions::record) from `profile`. `title` names the process.
absl::Status WritePlanTrace(const std::string& path, const std::string& title,
                            const Profile& profile, const SimResult& sim);

}  // namespace pooch::cli

#endif  // POOCH_CLI_PLAN_TRACE_H_
