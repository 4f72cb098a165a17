#include "core/pilot/pilot_models.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace pooch {
namespace {

// One SGD step's size for the logistic loss. The inputs are centred and scaled to about unit
// size (Pilot::Features), so a step of this order moves a score across 1/2 within a few blocks.
constexpr float kLearningRate = 0.5f;

float Sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// A score for prediction only: above 1/2 exactly when the logit is above 0, and in the logit's
// order, as the logistic is, without its exp (the query's cost: Note [Pilot model]).
float Squash(float x) { return 0.5f + 0.5f * x / (1.0f + std::fabs(x)); }

// w . x plus the bias w.back(), in four independent partial sums: one running sum is a chain of
// dependent adds, and the dot products are most of a query's host time.
float Dot(const std::vector<float>& w, const std::vector<float>& x) {
  const size_t n = std::min(w.size() - 1, x.size());
  float s[4] = {w.back(), 0.0f, 0.0f, 0.0f};
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (size_t j = 0; j < 4; ++j) s[j] += w[i + j] * x[i + j];
  }
  for (; i < n; ++i) s[0] += w[i] * x[i];
  return (s[0] + s[1]) + (s[2] + s[3]);
}

}  // namespace

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

std::vector<float> LinearModel::Score(const PilotBoundary& b, absl::Span<const PilotKey> keys) {
  std::vector<float> scores;
  scores.reserve(keys.size());
  for (PilotKey k : keys) {
    auto it = weights_.find({b.bytes_context, k});
    scores.push_back(it == weights_.end() ? 0.5f : Squash(Dot(it->second, b.values)));
  }
  return scores;
}

void LinearModel::Learn(const PilotBoundary& b, absl::Span<const PilotKey> keys,
                        const std::vector<bool>& touched) {
  const size_t n = b.values.size();  // at most 2 x kMaxWords (Pilot::Features)
  for (size_t i = 0; i < keys.size(); ++i) {
    std::vector<float>& w = weights_[{b.bytes_context, keys[i]}];
    if (w.empty()) w.assign(n + 1, 0.0f);
    // d(log loss)/d(logit) = score - label.
    const float g = kLearningRate * (Sigmoid(Dot(w, b.values)) - (touched[i] ? 1.0f : 0.0f));
    const size_t m = std::min(w.size() - 1, b.values.size());
    for (size_t j = 0; j < m; ++j) w[j] -= g * b.values[j];
    w.back() -= g;
  }
}

void LinearModel::Forget(const PilotBoundary& b, PilotKey key) {
  weights_.erase({b.bytes_context, key});
}

}  // namespace pooch
