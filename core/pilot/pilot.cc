#include "core/pilot/pilot.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <numeric>

#include "absl/hash/hash.h"
#include "absl/strings/str_format.h"

namespace pooch {
namespace {

// Boundaries past this ordinal share one context: a program that reads back thousands of times
// per iteration (or never marks one) would otherwise grow the tables without bound.
constexpr int kMaxOrdinal = 1024;
// How fast the centring follows the read-back values: about the last four boundaries count.
constexpr float kCentringRate = 0.25f;
constexpr float kMaxFeature = 2.0f;
// Boundaries kept per context to learn a new candidate's past from (Pilot::CloseBlock).
constexpr size_t kPastBoundaries = 32;
// The running means whose deviations are ranked, besides the words themselves.
constexpr std::array<float, 3> kRankRates = {0.5f, 0.25f, 0.125f};

double MicrosecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

double Pilot::ModelStats::Accuracy() const {
  const int64_t all = hits + misses + wasted;
  return all == 0 ? 0.0 : static_cast<double>(hits) / static_cast<double>(all);
}

const char* Pilot::ModelName(int model) { return model == 0 ? "ngram" : "stump"; }

Pilot::Pilot(PilotMode mode) : mode_(mode) {
  models_[0] = std::make_unique<FrequencyModel>();
  models_[1] = std::make_unique<StumpModel>();
}

void Pilot::Allocated(PilotKey key) { born_[key] = boundaries_; }

void Pilot::Freed(PilotKey key) {
  born_.erase(key);
  touched_.erase(key);
  auto it = learnt_in_.find(key);
  if (it == learnt_in_.end()) return;
  for (const auto& [history, bytes] : it->second) {
    PilotBoundary b;
    b.history_context = history;
    b.bytes_context = bytes;
    for (auto& m : models_) m->Forget(b, key);
    if (auto c = candidates_.find(bytes); c != candidates_.end()) c->second.erase(key);
  }
  learnt_in_.erase(it);
  // The open boundary's candidates stay: the key is scored as not touched, which it was not.
}

void Pilot::Op(uint64_t signature, absl::Span<const PilotKey> touched) {
  signature_ = absl::HashOf(signature_, signature);
  ++ops_;
  for (PilotKey k : touched) touched_.insert(k);
}

void Pilot::IterationStart() {
  ordinal_ = 0;
  iterations_known_ = true;
}

std::vector<float> Pilot::Features(uint64_t context, absl::Span<const uint8_t> bytes) {
  std::vector<float> x;
  if (bytes.size() % sizeof(float) == 0) {
    for (size_t i = 0; i < bytes.size() && x.size() < StumpModel::kMaxWords; i += sizeof(float)) {
      float f;
      std::memcpy(&f, bytes.data() + i, sizeof f);
      x.push_back(std::isfinite(f) ? f : 0.0f);
    }
  } else {
    for (size_t i = 0; i < bytes.size() && x.size() < StumpModel::kMaxWords; ++i) {
      x.push_back(static_cast<float>(bytes[i]));
    }
  }
  // Centred and scaled per position by running statistics of this context, so that a decision
  // the program takes against its own running mean (a centred score) is a sign here.
  const size_t n = x.size();
  Centring& c = centring_[context];
  if (!c.seen || c.mean.size() != n) {
    c.mean = x;
    c.spread.assign(n, 0.0f);
    c.fast.assign(kRankRates.size() * n, 0.0f);
    for (size_t r = 0; r < kRankRates.size(); ++r) {
      std::copy(x.begin(), x.end(), c.fast.begin() + static_cast<std::ptrdiff_t>(r * n));
    }
    c.seen = true;
  }
  std::vector<float> z((3 + kRankRates.size()) * n);
  for (size_t i = 0; i < n; ++i) {
    const float d = x[i] - c.mean[i];
    z[i] = c.spread[i] > 0 ? std::clamp(d / c.spread[i], -kMaxFeature, kMaxFeature) : 0.0f;
    c.mean[i] += kCentringRate * d;
    c.spread[i] += kCentringRate * (std::fabs(d) - c.spread[i]);
  }
  // Then the words themselves (a gate's "score > 0" is a threshold on one), and each word's rank
  // among the read-back's words, in [-1, 1], of the words themselves and of their deviations
  // from running means at a few rates: a choice of the k largest (a top-k routing), of the words
  // or of the words against the program's own running means, is a threshold on one of them.
  std::vector<float> v(n);
  for (size_t view = 0; view <= kRankRates.size(); ++view) {
    if (view == 0) {
      v = x;
      std::copy(x.begin(), x.end(), z.begin() + static_cast<std::ptrdiff_t>(n));
    } else {
      for (size_t i = 0; i < n; ++i) {
        float& m = c.fast[(view - 1) * n + i];
        v[i] = x[i] - m;
        m += kRankRates[view - 1] * v[i];
      }
    }
    if (n < 2) continue;
    float* ranks = z.data() + (2 + view) * n;
    for (size_t i = 0; i < n; ++i) {
      const auto below = std::count_if(v.begin(), v.end(), [&](float u) { return u < v[i]; });
      ranks[i] = 2.0f * static_cast<float>(below) / static_cast<float>(n - 1) - 1.0f;
    }
  }
  return z;
}

int Pilot::ActingModel(uint64_t context) const {
  if (mode_ == PilotMode::kNgram) return 0;
  if (mode_ == PilotMode::kStump) return 1;
  auto it = by_context_.find(context);
  if (it == by_context_.end()) return 0;
  auto margin = [](const ModelStats& s) { return s.hits - s.misses - s.wasted; };
  return margin(it->second[1]) > margin(it->second[0]) ? 1 : 0;
}

void Pilot::CloseBlock() {
  ++stats_.blocks;
  last_ = Block{};
  last_.signature = signature_;
  last_.ops = ops_;
  if (open_.valid) {
    last_.ordinal = open_.ordinal;
    last_.acting = open_.acting;
    // Scored and learnt over the candidates and whatever else alive at the boundary was touched.
    std::vector<PilotKey> keys = open_.candidates;
    std::vector<bool> touched;
    touched.reserve(keys.size());
    for (PilotKey k : keys) touched.push_back(touched_.contains(k));
    const size_t predicted_count = keys.size();
    for (PilotKey k : touched_) {
      auto b = born_.find(k);
      if (b == born_.end() || b->second >= open_.index) continue;  // born in the block
      if (std::binary_search(open_.candidates.begin(), open_.candidates.end(), k)) continue;
      keys.push_back(k);
      touched.push_back(true);
    }
    std::array<ModelStats, kModels>& ctx = by_context_[open_.boundary.bytes_context];
    for (int m = 0; m < kModels; ++m) {
      ModelStats s;
      for (size_t i = 0; i < keys.size(); ++i) {
        const bool p = i < predicted_count && open_.predicted[m][i];
        if (p && touched[i]) ++s.hits;
        if (!p && touched[i]) ++s.misses;
        if (p && !touched[i]) ++s.wasted;
      }
      last_.scored[m] = s;
      for (ModelStats* t : {&stats_.models[m], &ctx[m]}) {
        t->hits += s.hits;
        t->misses += s.misses;
        t->wasted += s.wasted;
      }
    }
    // A candidate freed since the boundary was forgotten (Freed): it is not learnt again.
    std::vector<PilotKey> alive;
    std::vector<bool> alive_touched;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (!born_.contains(keys[i])) continue;
      alive.push_back(keys[i]);
      alive_touched.push_back(touched[i]);
    }
    // A key that becomes a candidate now was alive, and not touched, at the earlier boundaries
    // of this context since its birth: those are learnt first, from the kept boundaries, so that
    // one touch does not make it likely everywhere.
    std::deque<Past>& past = past_[open_.boundary.bytes_context];
    for (size_t i = predicted_count; i < keys.size(); ++i) {
      auto b = born_.find(keys[i]);
      if (b == born_.end()) continue;
      const PilotKey key[1] = {keys[i]};
      const std::vector<bool> untouched(1, false);
      std::vector<std::pair<uint64_t, uint64_t>>& in = learnt_in_[keys[i]];
      for (const Past& p : past) {
        if (p.index <= b->second) continue;
        for (auto& model : models_) model->Learn(p.boundary, key, untouched);
        // Forgotten with the rest when the key is freed.
        const std::pair<uint64_t, uint64_t> where{p.boundary.history_context,
                                                  p.boundary.bytes_context};
        if (std::find(in.begin(), in.end(), where) == in.end()) in.push_back(where);
      }
    }
    past.push_back(Past{open_.index, open_.boundary});
    if (past.size() > kPastBoundaries) past.pop_front();
    for (auto& model : models_) model->Learn(open_.boundary, alive, alive_touched);
    absl::btree_set<PilotKey>& candidates = candidates_[open_.boundary.bytes_context];
    const std::pair<uint64_t, uint64_t> where{open_.boundary.history_context,
                                              open_.boundary.bytes_context};
    for (size_t i = predicted_count; i < keys.size(); ++i) candidates.insert(keys[i]);
    for (PilotKey k : alive) {
      std::vector<std::pair<uint64_t, uint64_t>>& in = learnt_in_[k];
      if (std::find(in.begin(), in.end(), where) == in.end()) in.push_back(where);
    }
  }
  history_ = {signature_, history_[0]};
  signature_ = 0;
  ops_ = 0;
  touched_.clear();
}

Pilot::Prediction Pilot::ReadBack(absl::Span<const uint8_t> bytes) {
  const auto start = std::chrono::steady_clock::now();
  Prediction out = Predict(bytes);
  stats_.boundary_us += MicrosecondsSince(start);
  ++stats_.boundaries;
  return out;
}

Pilot::Prediction Pilot::Predict(absl::Span<const uint8_t> bytes) {
  CloseBlock();
  ++boundaries_;
  const int ordinal = iterations_known_ ? std::min(ordinal_, kMaxOrdinal) : 0;
  ordinal_ = std::min(ordinal_ + 1, kMaxOrdinal);
  open_ = Open{};
  open_.valid = true;
  open_.index = boundaries_;
  open_.ordinal = ordinal;
  open_.boundary.history_context = absl::HashOf(ordinal, history_[0], history_[1]);
  open_.boundary.bytes_context = absl::HashOf(ordinal, bytes.size());
  open_.boundary.values = Features(open_.boundary.bytes_context, bytes);
  if (auto c = candidates_.find(open_.boundary.bytes_context); c != candidates_.end()) {
    open_.candidates.assign(c->second.begin(), c->second.end());  // sorted
  }
  Prediction out;
  if (open_.candidates.empty()) {
    ++stats_.empty_queries;
    return out;
  }
  std::array<std::vector<float>, kModels> scores;
  for (int m = 0; m < kModels; ++m) {
    const auto start = std::chrono::steady_clock::now();
    scores[m] = models_[m]->Score(open_.boundary, open_.candidates);
    stats_.models[m].query_us += MicrosecondsSince(start);
    ++stats_.models[m].queries;
    open_.predicted[m].resize(scores[m].size());
    for (size_t i = 0; i < scores[m].size(); ++i) open_.predicted[m][i] = scores[m][i] > 0.5f;
  }
  open_.acting = ActingModel(open_.boundary.bytes_context);
  ++stats_.acted[open_.acting];
  out.model = open_.acting;
  const std::vector<float>& s = scores[open_.acting];
  std::vector<size_t> order(s.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s[a] > s[b]; });
  for (size_t i : order) {
    if (open_.predicted[open_.acting][i]) out.likely.push_back(open_.candidates[i]);
  }
  for (auto i = order.rbegin(); i != order.rend(); ++i) {
    if (!open_.predicted[open_.acting][*i]) out.unlikely.push_back(open_.candidates[*i]);
  }
  return out;
}

std::string Pilot::SummaryLine() const {
  std::string line = absl::StrFormat(
      "pilot: mode %s blocks %lld empty_queries %lld",
      mode_ == PilotMode::kOn ? "on" : ModelName(mode_ == PilotMode::kStump ? 1 : 0),
      static_cast<long long>(stats_.blocks), static_cast<long long>(stats_.empty_queries));
  for (int m = 0; m < kModels; ++m) {
    const ModelStats& s = stats_.models[m];
    absl::StrAppendFormat(
        &line, " %s acted %lld hits %lld misses %lld wasted %lld accuracy %.3f query_us %.2f",
        ModelName(m), static_cast<long long>(stats_.acted[m]), static_cast<long long>(s.hits),
        static_cast<long long>(s.misses), static_cast<long long>(s.wasted), s.Accuracy(),
        s.queries == 0 ? 0.0 : s.query_us / static_cast<double>(s.queries));
  }
  absl::StrAppendFormat(
      &line, " boundary_us %.2f",
      stats_.boundaries == 0 ? 0.0 : stats_.boundary_us / static_cast<double>(stats_.boundaries));
  return line;
}

}  // namespace pooch
