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

// Note [Stump tables]
// ~~~~~~~~~~~~~~~~~~~
// Everything the pilot does at a read-back runs on the program's thread while it waits to launch
// what it decided: the last block's learning as much as the next block's query. A rule that a
// block contradicts never holds again (ranges only widen), so a key's rules are made from every
// feature once, when it has seen both classes, and each later block rechecks only the rules left
// (Add) rather than rebuilding them from all n features (n = 96 for a 16-word routing). The
// tables are flat per context: per key (found by one hash of the key) its counts, its features'
// ranges and its rules' slots at a fixed stride, so that a rule set is rewritten in place and a
// new key is appended. A vote is branch-free (Rule). build/bin/core_pilot_bench measures the
// host time per boundary (docs/measurements.md, "Pilot").
std::vector<float> StumpModel::Score(const PilotBoundary& b, absl::Span<const PilotKey> keys) {
  std::vector<float> scores(keys.size(), 0.0f);
  auto it = tables_.find(b.bytes_context);
  if (it == tables_.end()) return scores;
  const Table& t = it->second;
  const size_t n = std::min(b.values.size(), t.n);
  for (size_t k = 0; k < keys.size(); ++k) {
    auto at = t.index.find(keys[k]);
    if (at == t.index.end()) continue;
    const size_t i = at->second;
    const Counts& c = t.counts[i];
    // One class seen: a key touched after every boundary (twice at least) is likely, one never
    // touched is not.
    if (c.touched == 0 || c.touched == c.seen) {
      scores[k] = c.touched > 0 && c.seen >= 2 ? 1.0f : 0.0f;
      continue;
    }
    // Each consistent stump votes, its threshold halfway between the classes. Until the blocks
    // rule out the rules that fit by chance, they outvote the right one: a key is predicted only
    // when most of what the data allows says so.
    const Rule* rules = t.rules.data() + 2 * t.n * i;
    int votes = 0;
    int voters = 0;
    for (uint32_t r = 0; r < c.rules; ++r) {
      if (rules[r].feature >= n) continue;  // another read-back shape: the rule abstains
      votes += rules[r].sign * b.values[rules[r].feature] > rules[r].bound;
      ++voters;
    }
    scores[k] = voters == 0 ? 0.0f : static_cast<float>(votes) / static_cast<float>(voters);
  }
  return scores;
}

void StumpModel::Learn(const PilotBoundary& b, absl::Span<const PilotKey> keys,
                       const std::vector<bool>& touched) {
  Table& t = tables_[b.bytes_context];
  if (t.n != b.values.size()) {  // new, or another shape: start again
    t = Table{};
    t.n = b.values.size();
  }
  for (size_t k = 0; k < keys.size(); ++k) {
    const size_t i = Slot(t, keys[k]);
    Add(t, i, b.values, touched[k]);
    // No rule is left: what came before (a first iteration whose values all tied, a phase of
    // the program that chose otherwise) is forgotten, and the key is learnt again from here.
    const Counts& c = t.counts[i];
    if (c.rules == 0 && c.touched > 0 && c.touched < c.seen) {
      Reset(t, i);
      Add(t, i, b.values, touched[k]);
    }
  }
}

size_t StumpModel::Slot(Table& t, PilotKey key) {
  auto [at, inserted] = t.index.try_emplace(key, static_cast<uint32_t>(t.keys.size()));
  if (!inserted) return at->second;
  t.keys.push_back(key);
  t.counts.emplace_back();
  t.ranges.resize(t.ranges.size() + 4 * t.n);
  t.rules.resize(t.rules.size() + 2 * t.n);
  Reset(t, at->second);
  return at->second;
}

void StumpModel::Reset(Table& t, size_t i) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  t.counts[i] = Counts{};
  float* r = t.ranges.data() + 4 * t.n * i;
  std::fill(r, r + t.n, kInf);                 // touched min
  std::fill(r + t.n, r + 2 * t.n, -kInf);      // touched max
  std::fill(r + 2 * t.n, r + 3 * t.n, kInf);   // untouched min
  std::fill(r + 3 * t.n, r + 4 * t.n, -kInf);  // untouched max
}

// Ranges only widen, so a rule that a block contradicted never holds again: once both classes
// were seen and the rules made from every feature, each later block only rechecks the rules left
// and moves their thresholds, and only their features' ranges are kept up to date (no other
// feature's range is read again until Reset). The result is the rules a full rebuild would make,
// at the cost of the rules left instead of all n features.
void StumpModel::Add(Table& t, size_t i, const std::vector<float>& values, bool touched) {
  const size_t n = t.n;
  Counts& c = t.counts[i];
  float* touched_min = t.ranges.data() + 4 * n * i;
  float* touched_max = touched_min + n;
  float* untouched_min = touched_min + 2 * n;
  float* untouched_max = touched_min + 3 * n;
  float* lo = touched ? touched_min : untouched_min;
  float* hi = touched ? touched_max : untouched_max;
  const bool had_both = c.touched > 0 && c.touched < c.seen;
  ++c.seen;
  if (touched) ++c.touched;
  Rule* rules = t.rules.data() + 2 * n * i;
  auto holds = [&](const Rule& r) {
    const size_t f = r.feature;
    return r.sign > 0 ? touched_min[f] > untouched_max[f] : touched_max[f] < untouched_min[f];
  };
  auto bound = [&](const Rule& r) {
    const size_t f = r.feature;
    return r.sign > 0 ? 0.5f * (touched_min[f] + untouched_max[f])
                      : -(0.5f * (touched_max[f] + untouched_min[f]));
  };
  if (had_both) {
    uint32_t kept = 0;
    for (uint32_t r = 0; r < c.rules; ++r) {
      const size_t f = rules[r].feature;
      lo[f] = std::min(lo[f], values[f]);
      hi[f] = std::max(hi[f], values[f]);
    }
    for (uint32_t r = 0; r < c.rules; ++r) {
      if (!holds(rules[r])) continue;
      rules[kept] = rules[r];
      rules[kept].bound = bound(rules[kept]);
      ++kept;
    }
    c.rules = kept;
    return;
  }
  for (size_t f = 0; f < n; ++f) {
    lo[f] = std::min(lo[f], values[f]);
    hi[f] = std::max(hi[f], values[f]);
  }
  c.rules = 0;
  if (c.touched == 0 || c.touched == c.seen) return;
  for (size_t f = 0; f < n; ++f) {
    for (float sign : {1.0f, -1.0f}) {
      const Rule r{static_cast<uint32_t>(f), sign, 0.0f};
      if (!holds(r)) continue;
      rules[c.rules] = r;
      rules[c.rules].bound = bound(r);
      ++c.rules;
    }
  }
}

void StumpModel::Forget(const PilotBoundary& b, PilotKey key) {
  auto it = tables_.find(b.bytes_context);
  if (it == tables_.end()) return;
  Table& t = it->second;
  auto at = t.index.find(key);
  if (at == t.index.end()) return;
  // The last key moves into the hole.
  const size_t i = at->second;
  const size_t last = t.keys.size() - 1;
  t.index.erase(at);
  if (i != last) {
    t.keys[i] = t.keys[last];
    t.index[t.keys[i]] = static_cast<uint32_t>(i);
    t.counts[i] = t.counts[last];
    std::copy_n(t.ranges.begin() + static_cast<std::ptrdiff_t>(4 * t.n * last), 4 * t.n,
                t.ranges.begin() + static_cast<std::ptrdiff_t>(4 * t.n * i));
    std::copy_n(t.rules.begin() + static_cast<std::ptrdiff_t>(2 * t.n * last), 2 * t.n,
                t.rules.begin() + static_cast<std::ptrdiff_t>(2 * t.n * i));
  }
  t.keys.pop_back();
  t.counts.pop_back();
  t.ranges.resize(4 * t.n * last);
  t.rules.resize(2 * t.n * last);
}

}  // namespace pooch
