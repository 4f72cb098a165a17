#include "core/pilot/pilot_models.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace pooch {

std::vector<float> FrequencyModel::Score(const PilotBoundary& b, absl::Span<const PilotKey> keys) {
  std::vector<float> scores;
  scores.reserve(keys.size());
  for (PilotKey k : keys) {
    auto it = counts_.find({b.history_context, k});
    scores.push_back(it == counts_.end() || it->second.seen == 0
                         ? 0.0f
                         : static_cast<float>(it->second.touched) /
                               static_cast<float>(it->second.seen));
  }
  return scores;
}

void FrequencyModel::Learn(const PilotBoundary& b, absl::Span<const PilotKey> keys,
                           const std::vector<bool>& touched) {
  for (size_t i = 0; i < keys.size(); ++i) {
    Count& c = counts_[{b.history_context, keys[i]}];
    ++c.seen;
    if (touched[i]) ++c.touched;
  }
}

void FrequencyModel::Forget(const PilotBoundary& b, PilotKey key) {
  counts_.erase({b.history_context, key});
}

std::vector<float> StumpModel::Score(const PilotBoundary& b, absl::Span<const PilotKey> keys) {
  std::vector<float> scores;
  scores.reserve(keys.size());
  for (PilotKey k : keys) {
    auto it = stumps_.find({b.bytes_context, k});
    if (it == stumps_.end()) {
      scores.push_back(0.0f);
      continue;
    }
    const Stumps& s = it->second;
    // One class seen: a key touched after every boundary (twice at least) is likely, one never
    // touched is not.
    if (s.touched == 0 || s.touched == s.seen) {
      scores.push_back(s.touched > 0 && s.seen >= 2 ? 1.0f : 0.0f);
      continue;
    }
    // Each consistent stump votes, its threshold halfway between the classes. Until the blocks
    // rule out the rules that fit by chance, they outvote the right one: a key is predicted only
    // when most of what the data allows says so.
    int votes = 0;
    int voters = 0;
    const size_t n = b.values.size();
    for (const Rule& r : s.consistent) {
      if (r.feature >= n) continue;
      const float x = b.values[r.feature];
      votes += r.above ? x > r.threshold : x < r.threshold;
      ++voters;
    }
    scores.push_back(voters == 0 ? 0.0f : static_cast<float>(votes) / static_cast<float>(voters));
  }
  return scores;
}

void StumpModel::Learn(const PilotBoundary& b, absl::Span<const PilotKey> keys,
                       const std::vector<bool>& touched) {
  for (size_t i = 0; i < keys.size(); ++i) {
    Stumps& s = stumps_[{b.bytes_context, keys[i]}];
    Add(s, b.values, touched[i]);
    // No rule is left: what came before (a first iteration whose values all tied, a phase of
    // the program that chose otherwise) is forgotten, and the key is learnt again from here.
    if (s.consistent.empty() && s.touched > 0 && s.touched < s.seen) {
      s = Stumps{};
      Add(s, b.values, touched[i]);
    }
  }
}

void StumpModel::Add(Stumps& s, const std::vector<float>& values, bool touched) {
  const size_t n = values.size();
  if (s.touched_min.size() != n) {  // new, or the features changed shape: start again
    s = Stumps{};
    s.touched_min.assign(n, std::numeric_limits<float>::infinity());
    s.untouched_min.assign(n, std::numeric_limits<float>::infinity());
    s.touched_max.assign(n, -std::numeric_limits<float>::infinity());
    s.untouched_max.assign(n, -std::numeric_limits<float>::infinity());
  }
  ++s.seen;
  std::vector<float>& lo = touched ? s.touched_min : s.untouched_min;
  std::vector<float>& hi = touched ? s.touched_max : s.untouched_max;
  if (touched) ++s.touched;
  for (size_t f = 0; f < n; ++f) {
    lo[f] = std::min(lo[f], values[f]);
    hi[f] = std::max(hi[f], values[f]);
  }
  s.consistent.clear();
  if (s.touched == 0 || s.touched == s.seen) return;
  for (size_t f = 0; f < n; ++f) {
    const auto feature = static_cast<uint32_t>(f);
    if (s.touched_min[f] > s.untouched_max[f]) {
      s.consistent.push_back({feature, true, 0.5f * (s.touched_min[f] + s.untouched_max[f])});
    }
    if (s.touched_max[f] < s.untouched_min[f]) {
      s.consistent.push_back({feature, false, 0.5f * (s.touched_max[f] + s.untouched_min[f])});
    }
  }
}

void StumpModel::Forget(const PilotBoundary& b, PilotKey key) {
  stumps_.erase({b.bytes_context, key});
}

}  // namespace pooch
