// The summary in words and as JSON (Note [Summary in words]).
#include "interpose/process/summary_words.h"

#include <cmath>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/base/trace.h"
#include "core/base/units.h"

namespace pooch::interpose {
namespace {

// "1 swap-in", "3 swap-ins".
std::string Count(int64_t n, absl::string_view one, absl::string_view many) {
  return absl::StrCat(n, " ", n == 1 ? one : many);
}

std::string LimitLine(const SummaryFacts& f) {
  std::string limit = FormatBytes(f.limit_bytes);
  if (f.limit_fraction.has_value()) {
    absl::StrAppendFormat(&limit, " (%g%% of the device's %s)", *f.limit_fraction * 100,
                          FormatBytes(f.device_total_bytes));
  }
  return absl::StrFormat("limit %s, policy %s: peak %s on the device, %s in host memory", limit,
                         f.policy, FormatBytes(f.memory.peak_device_bytes),
                         FormatBytes(f.memory.peak_host_bytes));
}

std::string MovedLine(const SummaryFacts& f) {
  const ResidencyStats& m = f.memory;
  std::vector<std::string> parts;
  if (m.swap_outs > 0 || m.swap_ins > 0) {
    parts.push_back(absl::StrFormat(
        "moved %s to host memory and %s back (%s, %s)", FormatBytes(m.bytes_swapped_out),
        FormatBytes(m.bytes_swapped_in), Count(m.swap_outs, "swap-out", "swap-outs"),
        Count(m.swap_ins, "swap-in", "swap-ins")));
  }
  if (f.recompute.has_value() && (f.recompute->drops > 0 || f.recompute->replays > 0)) {
    parts.push_back(absl::StrFormat("dropped %s and recomputed %s",
                                    Count(f.recompute->drops, "map", "maps"),
                                    Count(f.recompute->replays, "map", "maps")));
  }
  if (parts.empty()) return "moved nothing: everything stayed on the device";
  return absl::StrJoin(parts, "; ");
}

// The plan and its predicted against measured iteration, or why there is none.
std::string PlanLine(const PlanExecutor::Outcome& o) {
  if (!o.plan.has_value()) {
    absl::string_view why = o.plan_line;
    absl::ConsumePrefix(&why, "plan: ");
    absl::ConsumePrefix(&why, "none: ");
    absl::ConsumePrefix(&why, "none yet: ");
    if (why.empty()) why = "no iteration was found to profile";
    return absl::StrCat("no plan: ", why);
  }
  const PlanCounts& p = *o.plan;
  std::string measured = o.measured_iteration_ms > 0
                             ? absl::StrFormat("measured %.3f ms", o.measured_iteration_ms)
                             : std::string("no whole iteration measured under it");
  return absl::StrFormat(
      "plan of policy %s: keep %d, swap %d, recompute %d intervals%s; iteration predicted %.3f "
      "ms, %s%s",
      p.policy, p.keep, p.swap, p.recompute, p.feasible ? "" : " (infeasible)",
      p.predicted_iteration_ms, measured, o.carried_out ? "" : " (not carried out)");
}

// What went wrong: the safety net's swap-ins, re-plans, re-profiles, diverged iterations,
// refusals, failed replays. A departed iteration alone is not (the program's last one usually
// is, when it ends mid-iteration); the re-profile it leads to is.
std::string WrongLine(const SummaryFacts& f) {
  std::vector<std::string> wrong;
  if (f.plan.has_value()) {
    const PlanExecutor::Outcome& o = *f.plan;
    if (o.safety_net_swap_ins > 0) {
      wrong.push_back(Count(o.safety_net_swap_ins, "safety-net swap-in", "safety-net swap-ins"));
    }
    if (o.replans > 0) wrong.push_back(Count(o.replans, "re-plan", "re-plans"));
    if (o.reprofiles > 0) wrong.push_back(Count(o.reprofiles, "re-profile", "re-profiles"));
    if (o.diverged_iterations > 0) {
      wrong.push_back(Count(o.diverged_iterations, "diverged iteration", "diverged iterations"));
    }
  }
  if (f.memory.out_of_memory > 0) {
    wrong.push_back(Count(f.memory.out_of_memory, "allocation or op refused for want of memory",
                          "allocations or ops refused for want of memory"));
  }
  if (f.opaque_refused > 0) {
    wrong.push_back(Count(static_cast<int64_t>(f.opaque_refused), "opaque call refused",
                          "opaque calls refused"));
  }
  if (f.recompute.has_value() && f.recompute->failures > 0) {
    wrong.push_back(Count(f.recompute->failures, "failed replay", "failed replays"));
  }
  if (wrong.empty()) return "nothing went wrong";
  return absl::StrCat("went wrong: ", absl::StrJoin(wrong, ", "));
}

// ---- JSON ----------------------------------------------------------------------------------

// A value as JSON: a finite number as written, anything else as a string.
void AppendValue(absl::string_view text, std::string& out) {
  double number = 0;
  if (!text.empty() &&
      (absl::ascii_isdigit(static_cast<unsigned char>(text[0])) || text[0] == '-') &&
      absl::SimpleAtod(text, &number) && std::isfinite(number)) {
    absl::StrAppend(&out, text);
  } else {
    AppendJsonString(text, out);
  }
}

bool IsKey(absl::string_view token) {
  if (token.empty()) return false;
  for (char c : token) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

// A detailed line's "key value" pairs, as far as they go: "(N bytes)" after a pair is the
// pair's bytes (key_bytes), another parenthesis is a comment, and a value ending in ';' ends
// the pairs, as does a token that is no key.
std::vector<std::pair<std::string, std::string>> Pairs(absl::string_view rest) {
  const std::vector<absl::string_view> tokens = absl::StrSplit(rest, ' ', absl::SkipEmpty());
  std::vector<std::pair<std::string, std::string>> pairs;
  size_t i = 0;
  while (i < tokens.size()) {
    absl::string_view token = tokens[i];
    if (absl::StartsWith(token, "(")) {
      absl::string_view number = token.substr(1);
      double ignored = 0;
      if (!pairs.empty() && i + 1 < tokens.size() && absl::SimpleAtod(number, &ignored)) {
        absl::string_view unit = tokens[i + 1];
        absl::ConsumeSuffix(&unit, ")");
        pairs.emplace_back(absl::StrCat(pairs.back().first, "_", unit), std::string(number));
      }
      while (i < tokens.size() && !absl::EndsWith(tokens[i], ")")) ++i;
      ++i;
      continue;
    }
    if (!IsKey(token) || i + 1 >= tokens.size()) break;
    absl::string_view value = tokens[i + 1];
    const bool last = absl::ConsumeSuffix(&value, ";");
    pairs.emplace_back(std::string(token), std::string(value));
    i += 2;
    if (last) break;
  }
  return pairs;
}

void AppendObject(const std::vector<std::pair<std::string, std::string>>& pairs,
                  absl::string_view text, std::string& out) {
  out += "{\"text\": ";
  AppendJsonString(text, out);
  for (const auto& [key, value] : pairs) {
    if (key == "text") continue;
    out += ", ";
    AppendJsonString(key, out);
    out += ": ";
    AppendValue(value, out);
  }
  out += "}";
}

// "detail": each topic's object; the calls: lines (one per function) under "calls" by name.
std::string DetailJson(const std::vector<std::string>& lines) {
  std::map<std::string, std::string> calls;  // by function: {"top": N, "nested": M}
  std::string out = "{";
  bool first = true;
  for (absl::string_view line : lines) {
    const size_t colon = line.find(": ");
    if (colon == absl::string_view::npos) continue;
    const std::string topic(line.substr(0, colon));
    const absl::string_view rest = line.substr(colon + 2);
    if (topic == "calls") {  // "calls: NAME TOP (+NESTED nested)"
      const std::vector<absl::string_view> t = absl::StrSplit(rest, ' ', absl::SkipEmpty());
      if (t.size() < 3) continue;
      absl::string_view nested = t[2];
      absl::ConsumePrefix(&nested, "(+");
      calls[std::string(t[0])] = absl::StrCat("{\"top\": ", t[1], ", \"nested\": ", nested, "}");
      continue;
    }
    absl::StrAppend(&out, first ? "" : ", ");
    first = false;
    AppendJsonString(topic, out);
    out += ": ";
    AppendObject(Pairs(rest), rest, out);
  }
  absl::StrAppend(&out, first ? "" : ", ", "\"calls\": {");
  bool first_call = true;
  for (const auto& [name, object] : calls) {
    absl::StrAppend(&out, first_call ? "" : ", ");
    first_call = false;
    AppendJsonString(name, out);
    absl::StrAppend(&out, ": ", object);
  }
  out += "}}";
  return out;
}

void Field(absl::string_view key, int64_t value, std::string& out) {
  absl::StrAppend(&out, ", ");
  AppendJsonString(key, out);
  absl::StrAppend(&out, ": ", value);
}

void FieldMs(absl::string_view key, double value, std::string& out) {
  absl::StrAppend(&out, ", ");
  AppendJsonString(key, out);
  absl::StrAppendFormat(&out, ": %.3f", value);
}

std::string PlanJson(const PlanExecutor::Outcome& o) {
  std::string out = "{\"plan\": ";
  if (o.plan.has_value()) {
    out += "{\"policy\": ";
    AppendJsonString(o.plan->policy, out);
    absl::StrAppendFormat(&out,
                          ", \"keep\": %d, \"swap\": %d, \"recompute\": %d, "
                          "\"predicted_iteration_ms\": %.3f, \"feasible\": %s}",
                          o.plan->keep, o.plan->swap, o.plan->recompute,
                          o.plan->predicted_iteration_ms, o.plan->feasible ? "true" : "false");
  } else {
    out += "null";
  }
  out += ", \"plan_line\": ";
  AppendJsonString(o.plan_line, out);
  absl::StrAppend(&out, ", \"carried_out\": ", o.carried_out ? "true" : "false");
  FieldMs("measured_iteration_ms", o.measured_iteration_ms, out);
  Field("profiles", o.profiles, out);
  Field("reprofiles", o.reprofiles, out);
  Field("departures", static_cast<int64_t>(o.departures), out);
  Field("safety_net_swap_ins", o.safety_net_swap_ins, out);
  Field("replans", o.replans, out);
  Field("diverged_iterations", o.diverged_iterations, out);
  out += "}";
  return out;
}

}  // namespace

std::vector<std::string> PlainLines(const SummaryFacts& facts) {
  if (!facts.managed) {
    return {absl::StrFormat("policy %s: no device memory managed%s", facts.policy,
                            facts.policy == "off" ? " (every call passed through)" : "")};
  }
  std::vector<std::string> lines = {LimitLine(facts), MovedLine(facts)};
  if (facts.plan.has_value()) lines.push_back(PlanLine(*facts.plan));
  lines.push_back(WrongLine(facts));
  return lines;
}

std::string SummaryJson(const SummaryFacts& facts, const std::vector<std::string>& detail_lines) {
  std::string out = "{\"policy\": ";
  AppendJsonString(facts.policy, out);
  if (facts.rank.has_value()) absl::StrAppend(&out, ", \"rank\": ", *facts.rank);
  absl::StrAppend(&out, ", \"managed\": ", facts.managed ? "true" : "false");
  if (facts.managed) {
    const ResidencyStats& m = facts.memory;
    Field("limit_bytes", facts.limit_bytes, out);
    if (facts.limit_fraction.has_value()) {
      absl::StrAppendFormat(&out, ", \"limit_percent\": %g", *facts.limit_fraction * 100);
    }
    Field("device_total_bytes", facts.device_total_bytes, out);
    Field("peak_device_bytes", m.peak_device_bytes, out);
    Field("peak_host_bytes", m.peak_host_bytes, out);
    Field("swap_outs", m.swap_outs, out);
    Field("bytes_swapped_out", m.bytes_swapped_out, out);
    Field("swap_ins", m.swap_ins, out);
    Field("bytes_swapped_in", m.bytes_swapped_in, out);
    Field("demand_swap_ins", m.demand_swap_ins, out);
    Field("out_of_memory", m.out_of_memory, out);
  }
  if (facts.recompute.has_value()) {
    Field("drops", facts.recompute->drops, out);
    Field("recomputed", facts.recompute->replays, out);
    Field("replay_failures", facts.recompute->failures, out);
  }
  Field("opaque_refused", static_cast<int64_t>(facts.opaque_refused), out);
  if (facts.plan.has_value()) {
    absl::StrAppend(&out, ", \"profiling\": ", PlanJson(*facts.plan));
  }
  out += ", \"lines\": [";
  const std::vector<std::string> plain = PlainLines(facts);
  for (size_t i = 0; i < plain.size(); ++i) {
    if (i > 0) out += ", ";
    AppendJsonString(plain[i], out);
  }
  absl::StrAppend(&out, "], \"detail\": ", DetailJson(detail_lines), "}\n");
  return out;
}

}  // namespace pooch::interpose
