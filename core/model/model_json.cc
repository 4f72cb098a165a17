// JSON forms of profiles and plans (model_json.h).
//
// nlohmann::json throws; every call into it that can throw is inside a try block here, so no
// exception leaves this file. Parsing is strict about types: sizes and indices must be JSON
// integers within range (1.0 and 1e3 are not sizes), times any finite number.
#include "core/model/model_json.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/model/candidates.h"
#include "nlohmann/json.hpp"

namespace pooch {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kFormat = "pooch-profile";
constexpr int kVersion = 1;

absl::Status InvalidField(const std::string& path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

// Readers for one member of an object. `path` names the member ("tensors[3].bytes").
// A missing optional member leaves *out unchanged.
class Reader {
 public:
  Reader(const Json& object, std::string path) : object_(object), path_(std::move(path)) {}

  std::string Path(absl::string_view key) const {
    return path_.empty() ? std::string(key) : absl::StrCat(path_, ".", key);
  }

  const Json* Find(absl::string_view key, bool required, absl::Status* status) const {
    auto it = object_.find(std::string(key));
    if (it == object_.end()) {
      if (required) *status = InvalidField(Path(key), "missing");
      return nullptr;
    }
    return &*it;
  }

  absl::Status Int(absl::string_view key, bool required, int64_t lo, int64_t hi,
                   int64_t* out) const {
    absl::Status status;
    const Json* v = Find(key, required, &status);
    if (v == nullptr) return status;
    return ToInt(*v, Path(key), lo, hi, out);
  }

  template <typename T>
  absl::Status Int(absl::string_view key, bool required, int64_t lo, int64_t hi, T* out) const {
    int64_t value = *out;
    absl::Status status = Int(key, required, lo, hi, &value);
    *out = static_cast<T>(value);
    return status;
  }

  absl::Status Number(absl::string_view key, double* out) const {
    absl::Status status;
    const Json* v = Find(key, false, &status);
    if (v == nullptr) return status;
    if (!v->is_number()) return InvalidField(Path(key), "must be a number");
    const double d = v->get<double>();
    if (!std::isfinite(d)) return InvalidField(Path(key), "must be finite");
    *out = d;
    return absl::OkStatus();
  }

  absl::Status Bool(absl::string_view key, bool* out) const {
    absl::Status status;
    const Json* v = Find(key, false, &status);
    if (v == nullptr) return status;
    if (!v->is_boolean()) return InvalidField(Path(key), "must be true or false");
    *out = v->get<bool>();
    return absl::OkStatus();
  }

  absl::Status String(absl::string_view key, bool required, std::string* out) const {
    absl::Status status;
    const Json* v = Find(key, required, &status);
    if (v == nullptr) return status;
    if (!v->is_string()) return InvalidField(Path(key), "must be a string");
    *out = v->get<std::string>();
    return absl::OkStatus();
  }

  // An array of tensor ids.
  absl::Status Ids(absl::string_view key, std::vector<TensorId>* out) const {
    absl::Status status;
    const Json* v = Find(key, false, &status);
    if (v == nullptr) return status;
    if (!v->is_array()) return InvalidField(Path(key), "must be an array of tensor ids");
    out->clear();
    for (size_t i = 0; i < v->size(); ++i) {
      int64_t id = 0;
      absl::Status s = ToInt((*v)[i], absl::StrCat(Path(key), "[", i, "]"), 0,
                             std::numeric_limits<TensorId>::max(), &id);
      if (!s.ok()) return s;
      out->push_back(static_cast<TensorId>(id));
    }
    return absl::OkStatus();
  }

  static absl::Status ToInt(const Json& v, const std::string& path, int64_t lo, int64_t hi,
                            int64_t* out) {
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(hi)) {
        return InvalidField(path, absl::StrFormat("%u is out of range (at most %d)", u, hi));
      }
      *out = static_cast<int64_t>(u);
    } else if (v.is_number_integer()) {
      *out = v.get<int64_t>();
    } else if (v.is_number_float()) {
      return InvalidField(
          path, absl::StrFormat("%g is not an integer (or is out of range)", v.get<double>()));
    } else {
      return InvalidField(path, "must be an integer");
    }
    if (*out < lo || *out > hi) {
      return InvalidField(path, absl::StrFormat("%d is out of range [%d, %d]", *out, lo, hi));
    }
    return absl::OkStatus();
  }

 private:
  const Json& object_;
  std::string path_;
};

#define POOCH_RETURN_IF_ERROR(expr)           \
  do {                                        \
    if (absl::Status s_ = (expr); !s_.ok()) { \
      return s_;                              \
    }                                         \
  } while (0)

constexpr int64_t kMaxIndex = std::numeric_limits<int32_t>::max();
constexpr int64_t kMaxBytes = std::numeric_limits<int64_t>::max();

absl::Status ParseTensor(const Json& j, size_t index, Tensor* t) {
  const std::string path = absl::StrCat("tensors[", index, "]");
  if (!j.is_object()) return InvalidField(path, "must be an object");
  Reader r(j, path);
  POOCH_RETURN_IF_ERROR(r.Int("id", true, 0, kMaxIndex, &t->id));
  POOCH_RETURN_IF_ERROR(r.String("name", false, &t->name));
  POOCH_RETURN_IF_ERROR(r.Int("bytes", true, 0, kMaxBytes, &t->bytes));
  POOCH_RETURN_IF_ERROR(r.Int("device_bytes", false, 0, kMaxBytes, &t->device_bytes));
  // Written by version-1 files of earlier pooch releases; candidates now come from the access
  // pattern (Note [Idle intervals] in candidates.cc), so it is read and ignored.
  bool feature_map = false;
  POOCH_RETURN_IF_ERROR(r.Bool("feature_map", &feature_map));
  POOCH_RETURN_IF_ERROR(r.Int("alloc_before", false, -1, kMaxIndex, &t->alloc_before));
  POOCH_RETURN_IF_ERROR(r.Int("free_after", false, -1, kMaxIndex, &t->free_after));
  POOCH_RETURN_IF_ERROR(r.Number("swap_out_us", &t->swap_out_us));
  POOCH_RETURN_IF_ERROR(r.Number("swap_in_us", &t->swap_in_us));
  return absl::OkStatus();
}

absl::Status ParseOp(const Json& j, size_t index, Op* op) {
  const std::string path = absl::StrCat("ops[", index, "]");
  if (!j.is_object()) return InvalidField(path, "must be an object");
  Reader r(j, path);
  POOCH_RETURN_IF_ERROR(r.String("name", true, &op->name));
  std::string kind = OpKindName(op->kind);
  POOCH_RETURN_IF_ERROR(r.String("kind", false, &kind));
  absl::StatusOr<OpKind> k = ParseOpKind(kind);
  if (!k.ok()) return InvalidField(r.Path("kind"), k.status().message());
  op->kind = *k;
  std::string phase = PhaseName(op->phase);
  POOCH_RETURN_IF_ERROR(r.String("phase", false, &phase));
  absl::StatusOr<Phase> ph = ParsePhase(phase);
  if (!ph.ok()) return InvalidField(r.Path("phase"), ph.status().message());
  op->phase = *ph;
  POOCH_RETURN_IF_ERROR(r.Number("duration_us", &op->duration_us));
  if (op->duration_us < 0) return InvalidField(r.Path("duration_us"), "must not be negative");
  POOCH_RETURN_IF_ERROR(r.Ids("reads", &op->reads));
  POOCH_RETURN_IF_ERROR(r.Ids("writes", &op->writes));
  POOCH_RETURN_IF_ERROR(r.Ids("overwrites", &op->overwrites));
  POOCH_RETURN_IF_ERROR(r.Int("workspace_bytes", false, 0, kMaxBytes, &op->workspace_bytes));
  POOCH_RETURN_IF_ERROR(r.Bool("replayable", &op->replayable));
  POOCH_RETURN_IF_ERROR(
      r.Int("unprofiled_inputs_until", false, -1, kMaxIndex, &op->unprofiled_inputs_until));
  POOCH_RETURN_IF_ERROR(r.Int("to_host_bytes", false, 0, kMaxBytes, &op->to_host_bytes));
  POOCH_RETURN_IF_ERROR(r.Int("to_device_bytes", false, 0, kMaxBytes, &op->to_device_bytes));
  if (op->to_host_bytes > 0 && op->to_device_bytes > 0) {
    return InvalidField(r.Path("to_device_bytes"),
                        "an op copies one way: to_host_bytes is set too");
  }
  return absl::OkStatus();
}

absl::StatusOr<Profile> ParseProfile(const Json& doc) {
  if (!doc.is_object()) return InvalidField("(document)", "must be a JSON object");
  Reader top(doc, "");
  std::string format;
  POOCH_RETURN_IF_ERROR(top.String("format", true, &format));
  if (format != kFormat) {
    return InvalidField("format", absl::StrCat("is '", format, "', expected '", kFormat, "'"));
  }
  int64_t version = 0;
  POOCH_RETURN_IF_ERROR(top.Int("version", true, 0, kMaxIndex, &version));
  if (version != kVersion) {
    return InvalidField(
        "version",
        absl::StrCat(version, " is not supported (this pooch reads version ", kVersion, ")"));
  }
  Profile profile;
  POOCH_RETURN_IF_ERROR(top.String("name", false, &profile.name));
  absl::Status status;
  const Json* tensors = top.Find("tensors", true, &status);
  if (tensors == nullptr) return status;
  if (!tensors->is_array()) return InvalidField("tensors", "must be an array");
  const Json* ops = top.Find("ops", true, &status);
  if (ops == nullptr) return status;
  if (!ops->is_array()) return InvalidField("ops", "must be an array");
  profile.tensors.resize(tensors->size());
  for (size_t i = 0; i < tensors->size(); ++i) {
    POOCH_RETURN_IF_ERROR(ParseTensor((*tensors)[i], i, &profile.tensors[i]));
  }
  profile.ops.resize(ops->size());
  for (size_t i = 0; i < ops->size(); ++i) {
    POOCH_RETURN_IF_ERROR(ParseOp((*ops)[i], i, &profile.ops[i]));
  }
  POOCH_RETURN_IF_ERROR(profile.Validate());
  return profile;
}

std::string JsonText(const Json& j, int indent) {
  // `replace` keeps dump from throwing on invalid UTF-8 in names.
  return j.dump(indent < 0 ? -1 : indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace

absl::StatusOr<OpKind> ParseOpKind(absl::string_view name) {
  for (int k = 0; k <= static_cast<int>(OpKind::kOther); ++k) {
    if (name == OpKindName(static_cast<OpKind>(k))) return static_cast<OpKind>(k);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown op kind '", name,
      "' (use conv, batchnorm, activation, pool, fc, add, softmax, loss, copy, optimizer, "
      "other)"));
}

absl::StatusOr<Phase> ParsePhase(absl::string_view name) {
  for (Phase p : {Phase::kForward, Phase::kBackward, Phase::kOther}) {
    if (name == PhaseName(p)) return p;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown phase '", name, "' (use forward, backward, other)"));
}

const char* SwapInScheduleName(SwapInSchedule schedule) {
  switch (schedule) {
    case SwapInSchedule::kWithPreviousOp:
      return "with-previous-op";
    case SwapInSchedule::kWithPreviousConv:
      return "with-previous-conv";
    case SwapInSchedule::kWhenMemoryAllows:
      return "when-memory-allows";
  }
  return "?";
}

absl::StatusOr<Profile> ParseProfileJson(absl::string_view text) {
  try {
    Json doc = Json::parse(text.begin(), text.end());
    return ParseProfile(doc);
  } catch (const Json::parse_error& e) {
    // e.what() reads "[json.exception.parse_error.101] parse error at line 1, column 3: ...".
    std::string what = e.what();
    const size_t at = what.find("] ");
    return absl::InvalidArgumentError(absl::StrCat(
        "(document): malformed JSON: ", at == std::string::npos ? what : what.substr(at + 2)));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("(document): ", e.what()));
  }
}

std::string ProfileToJson(const Profile& profile, int indent) {
  try {
    Json doc = Json::object();
    doc["format"] = kFormat;
    doc["version"] = kVersion;
    doc["name"] = profile.name;
    Json tensors = Json::array();
    for (const Tensor& t : profile.tensors) {
      Json tensor = {{"id", t.id},
                     {"name", t.name},
                     {"bytes", t.bytes},
                     {"alloc_before", t.alloc_before},
                     {"free_after", t.free_after},
                     {"swap_out_us", t.swap_out_us},
                     {"swap_in_us", t.swap_in_us}};
      if (t.device_bytes != 0) tensor["device_bytes"] = t.device_bytes;  // Note [Mapped bytes]
      tensors.push_back(std::move(tensor));
    }
    doc["tensors"] = std::move(tensors);
    Json ops = Json::array();
    for (const Op& op : profile.ops) {
      ops.push_back({{"name", op.name},
                     {"kind", OpKindName(op.kind)},
                     {"phase", PhaseName(op.phase)},
                     {"duration_us", op.duration_us},
                     {"reads", op.reads},
                     {"writes", op.writes},
                     {"workspace_bytes", op.workspace_bytes},
                     {"replayable", op.replayable}});
      if (!op.overwrites.empty()) ops.back()["overwrites"] = op.overwrites;
      if (op.unprofiled_inputs_until >= 0) {
        ops.back()["unprofiled_inputs_until"] = op.unprofiled_inputs_until;
      }
      if (op.to_host_bytes > 0) ops.back()["to_host_bytes"] = op.to_host_bytes;
      if (op.to_device_bytes > 0) ops.back()["to_device_bytes"] = op.to_device_bytes;
    }
    doc["ops"] = std::move(ops);
    return JsonText(doc, indent);
  } catch (const std::exception& e) {
    return absl::StrCat("{\"error\": \"", e.what(), "\"}");  // not reached: see JsonText
  }
}

std::string PlanToJson(const Plan& plan, const Profile& profile,
                       const std::vector<Candidate>& candidates, int indent) {
  try {
    Json doc = Json::object();
    doc["format"] = "pooch-plan";
    doc["version"] = 2;
    doc["policy"] = plan.policy;
    doc["schedule"] = SwapInScheduleName(plan.schedule);
    Json decisions = Json::array();
    for (CandidateId c = 0; c < static_cast<CandidateId>(candidates.size()); ++c) {
      const Candidate& k = candidates[c];
      const Tensor& t = profile.tensors[k.tensor];
      decisions.push_back({{"candidate", c},
                           {"tensor", t.id},
                           {"name", t.name},
                           {"bytes", t.bytes},
                           {"open", k.open},
                           {"close", k.close},
                           {"wraps", k.wraps},
                           {"tail", k.tail},
                           {"decision", DecisionName(DecisionOf(plan, c))}});
    }
    doc["decisions"] = std::move(decisions);
    Json swap_ins = Json::array();
    for (const Plan::SwapIn& s : plan.swap_ins) {
      const bool known = s.candidate >= 0 && static_cast<size_t>(s.candidate) < candidates.size();
      swap_ins.push_back(
          {{"candidate", s.candidate},
           {"name", known ? profile.tensors[candidates[s.candidate].tensor].name : ""},
           {"issue_at", s.issue_at}});
    }
    doc["swap_ins"] = std::move(swap_ins);
    const DecisionCounts counts = CountDecisions(plan, candidates);
    doc["counts"] = {{"keep", counts.keep}, {"swap", counts.swap}, {"recompute", counts.recompute}};
    return JsonText(doc, indent);
  } catch (const std::exception& e) {
    return absl::StrCat("{\"error\": \"", e.what(), "\"}");
  }
}

}  // namespace pooch
