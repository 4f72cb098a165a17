// JSON forms of the planner's types: the "pooch-profile" file (version 1) that
// POOCH_PROFILE_OUT writes and `pooch plan --profile` reads, and the plan `pooch plan --json`
// writes.
//
//   absl::StatusOr<pooch::Profile> p = pooch::ParseProfileJson(text);
//   if (!p.ok()) std::cerr << "pooch: " << p.status().message() << "\n";
//
// Profile format (optional fields take the defaults of model.h; op index = position in "ops"):
//   {"format": "pooch-profile", "version": 1, "name": "resnet50-b256",
//    "tensors": [{"id": 0, "name": "conv1.out", "bytes": 123,
//                 "alloc_before": 0, "free_after": 57, "swap_out_us": -1, "swap_in_us": -1}],
//    "ops": [{"name": "conv1", "kind": "conv", "phase": "forward", "duration_us": 12.5,
//             "reads": [0], "writes": [1], "workspace_bytes": 0, "replayable": true}]}
//
// Errors are InvalidArgument with one line that starts with the JSON path of the offending
// value, e.g. "ops[12].reads[1]: tensor 400 does not exist". The parser never throws.
//
// Thread safety: plain functions, reentrant.
#ifndef POOCH_CORE_MODEL_MODEL_JSON_H_
#define POOCH_CORE_MODEL_MODEL_JSON_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/model/candidates.h"
#include "core/model/model.h"

namespace pooch {

// Parses and validates (Profile::Validate) a "pooch-profile" version 1 document.
// Required keys: "format" (== "pooch-profile"), "version" (== 1), "tensors", "ops"; in each
// tensor "id" and "bytes"; in each op "name". Everything else defaults as in model.h
// ("kind": "other", "phase": "other", ...). Unknown keys are ignored.
absl::StatusOr<Profile> ParseProfileJson(absl::string_view text);

// The inverse: every field written, so that ParseProfileJson(ProfileToJson(p)) == p.
// `indent` < 0 writes one line.
std::string ProfileToJson(const Profile& profile, int indent = 1);

// The plan, one entry per candidate (an idle interval of a tensor, the list PlanResult holds)
// with its decision:
//   {"format": "pooch-plan", "version": 2, "policy": "pooch", "schedule": "when-memory-allows",
//    "decisions": [{"candidate": 0, "tensor": 3, "name": "conv1.out", "bytes": 123, "open": 4,
//                   "close": 90, "wraps": false, "tail": false, "decision": "swap"}],
//    (a tail's "close" is the op after which the program frees the tensor: Note [Tails])
//    "swap_ins": [{"candidate": 0, "name": "conv1.out", "issue_at": 40}],
//    "counts": {"keep": 10, "swap": 4, "recompute": 2}}
std::string PlanToJson(const Plan& plan, const Profile& profile,
                       const std::vector<Candidate>& candidates, int indent = 1);

// Names used in the JSON forms; the Parse* functions accept exactly these.
const char* SwapInScheduleName(SwapInSchedule schedule);  // "with-previous-op", ...
absl::StatusOr<OpKind> ParseOpKind(absl::string_view name);
absl::StatusOr<Phase> ParsePhase(absl::string_view name);

}  // namespace pooch

#endif  // POOCH_CORE_MODEL_MODEL_JSON_H_
