#include "core/measure/measured_choice.h"

#include "absl/strings/str_format.h"

namespace pooch {

void MeasuredChoice::Diverged(uint64_t key) { trials_.try_emplace(key); }

MeasuredChoice::Mode MeasuredChoice::ModeFor(uint64_t key) const {
  auto it = trials_.find(key);
  if (it == trials_.end()) return Mode::kFollow;
  const Trial& t = it->second;
  if (t.verdict.has_value()) return *t.verdict;
  for (int m = 0; m < modes_; ++m) {
    if (t.timed[m] < kSamples) return static_cast<Mode>(m);
  }
  return Mode::kFollow;  // every mode sampled: the verdict comes with the pair under way
}

std::optional<MeasuredChoice::Mode> MeasuredChoice::Sample(uint64_t key, Mode mode, double ms) {
  auto it = trials_.find(key);
  if (it == trials_.end() || it->second.verdict.has_value()) return std::nullopt;
  Trial& t = it->second;
  const int sampled = static_cast<int>(mode);
  if (sampled >= modes_) return std::nullopt;
  t.ms_sum[sampled] += ms;
  ++t.timed[sampled];
  int best = 0;
  for (int m = 0; m < modes_; ++m) {
    if (t.timed[m] < kSamples) return std::nullopt;
    if (t.ms_sum[m] / t.timed[m] < t.ms_sum[best] / t.timed[best]) best = m;
  }
  t.verdict = static_cast<Mode>(best);
  return t.verdict;
}

std::string MeasuredChoice::SummaryLine(int64_t set_aside_iterations) const {
  int kept[3] = {0, 0, 0};
  for (const auto& [key, t] : trials_) {
    if (t.verdict.has_value()) ++kept[static_cast<int>(*t.verdict)];
  }
  return absl::StrFormat(
      "choice: tried %zu followed %d set_aside %d set_aside_pilot %d set_aside_iterations %lld",
      trials_.size(), kept[0], kept[1], kept[2], static_cast<long long>(set_aside_iterations));
}

}  // namespace pooch
