#include "core/kernels/verdict.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace pooch::kernels {
namespace {

std::string Words(const std::set<int>& words) {
  if (words.empty()) return "none";
  return absl::StrJoin(words, " ", [](std::string* out, int w) {
    absl::StrAppend(out, absl::StrFormat("0x%x", w));
  });
}

std::vector<int> Overlap(const std::set<int>& a, const std::set<int>& b) {
  std::vector<int> both;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
  return both;
}

}  // namespace

void KernelVerdict::AddUnknown(bool in_writes, std::string reason) {
  (in_writes ? writes_known : reads_known) = false;
  std::vector<std::string>& reasons = in_writes ? write_reasons : read_reasons;
  if (std::find(reasons.begin(), reasons.end(), reason) == reasons.end()) {
    reasons.push_back(std::move(reason));
  }
}

bool KernelVerdict::Replayable() const {
  return Exact() && !uses_atomics && !reads_clock && Overlap(reads, writes).empty();
}

std::string KernelVerdict::Why() const {
  if (writes_known && !escapes.empty()) {
    // Note [Conditional escapes]: decided at each launch.
    return absl::StrCat(WhyAlone(), "; escapes ", Words(escapes), ": exact unless a pointer");
  }
  return WhyAlone();
}

std::string KernelVerdict::WhyAlone() const {
  if (!writes_known) return absl::StrCat("writes unknown: ", write_reasons.front());
  std::string sets =
      absl::StrCat("writes ", Words(writes), "; reads ", reads_known ? Words(reads) : "unknown");
  if (!reads_known) return absl::StrCat(sets, ": ", read_reasons.front());
  if (uses_atomics) {
    return absl::StrCat(sets, "; not replayable: atomics",
                        atomic_writes.empty() ? "" : " into " + Words(atomic_writes));
  }
  if (reads_clock) return absl::StrCat(sets, "; not replayable: reads a clock");
  std::vector<int> both = Overlap(reads, writes);
  if (!both.empty()) {
    return absl::StrCat(sets, "; not replayable on its own: reads what it writes (",
                        Words({both.begin(), both.end()}), ")");
  }
  return sets;
}

std::string KernelVerdict::ReasonClass() const {
  if (!Exact()) {
    const std::string& r = writes_known ? read_reasons.front() : write_reasons.front();
    return absl::StrCat(writes_known ? "reads unknown: " : "", r.substr(0, r.find(" at ")));
  }
  if (uses_atomics) return "atomics";
  if (reads_clock) return "reads a clock";
  if (!Overlap(reads, writes).empty()) return "reads what it writes";
  return "replayable";
}

KernelVerdict MergeVerdicts(const std::vector<const KernelVerdict*>& verdicts) {
  KernelVerdict out;
  if (verdicts.empty()) return out;
  out.name = verdicts.front()->name;
  out.arch = verdicts.front()->arch;
  for (const KernelVerdict* v : verdicts) {
    out.writes.insert(v->writes.begin(), v->writes.end());
    out.reads.insert(v->reads.begin(), v->reads.end());
    out.atomic_writes.insert(v->atomic_writes.begin(), v->atomic_writes.end());
    out.uses_atomics |= v->uses_atomics;
    out.reads_clock |= v->reads_clock;
    out.escapes.insert(v->escapes.begin(), v->escapes.end());
    for (const std::string& r : v->write_reasons) out.AddUnknown(true, r);
    for (const std::string& r : v->read_reasons) out.AddUnknown(false, r);
    if (!v->writes_known && v->write_reasons.empty()) out.AddUnknown(true, "unknown");
    if (!v->reads_known && v->read_reasons.empty()) out.AddUnknown(false, "unknown");
  }
  return out;
}

std::string Summarize(const std::vector<KernelVerdict>& verdicts) {
  int exact = 0, conditional = 0, writes_unknown = 0, replayable = 0;
  std::map<std::string, int> reasons;
  for (const KernelVerdict& v : verdicts) {
    exact += v.Exact();
    conditional += v.Exact() && !v.escapes.empty();
    writes_unknown += !v.writes_known;
    replayable += v.Replayable();
    if (!v.Replayable()) ++reasons[v.ReasonClass()];
  }
  std::vector<std::pair<std::string, int>> sorted(reasons.begin(), reasons.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string line = absl::StrFormat(
      "%d kernels: %d exact (writes and reads known), %d exact unless an escaping word holds a "
      "pointer, %d writes unknown, %d replayable",
      verdicts.size(), exact, conditional, writes_unknown, replayable);
  if (!sorted.empty()) {
    absl::StrAppend(&line, "; not replayable: ",
                    absl::StrJoin(sorted, ", ", [](std::string* out, const auto& r) {
                      absl::StrAppend(out, r.first, " ", r.second);
                    }));
  }
  return line;
}

nlohmann::ordered_json ToJson(const KernelVerdict& v) {
  nlohmann::ordered_json j;
  j["name"] = v.name;
  j["arch"] = v.arch;
  j["writes"] =
      v.writes_known ? nlohmann::ordered_json(v.writes) : nlohmann::ordered_json("unknown");
  j["reads"] = v.reads_known ? nlohmann::ordered_json(v.reads) : nlohmann::ordered_json("unknown");
  j["replayable"] = v.Replayable();
  j["why"] = v.Why();
  return j;
}

}  // namespace pooch::kernels
