#include "core/exec/measured_choice.h"

#include "absl/strings/str_format.h"

namespace pooch {

void MeasuredChoice::Diverged(uint64_t key) { trials_.try_emplace(key); }

MeasuredChoice::Mode MeasuredChoice::ModeFor(uint64_t key) const {
  auto it = trials_.find(key);
  if (it == trials_.end()) return Mode::kFollow;
  const Trial& t = it->second;
  if (t.verdict.has_value()) return *t.verdict;
  return t.timed[0] < kSamples ? Mode::kFollow : Mode::kSetAside;
}

std::optional<MeasuredChoice::Mode> MeasuredChoice::Sample(uint64_t key, Mode mode, double ms) {
  auto it = trials_.find(key);
  if (it == trials_.end() || it->second.verdict.has_value()) return std::nullopt;
  Trial& t = it->second;
  const int m = static_cast<int>(mode);
  t.ms_sum[m] += ms;
  ++t.timed[m];
  if (t.timed[0] < kSamples || t.timed[1] < kSamples) return std::nullopt;
  // Means; a tie keeps the plan.
  const double followed = t.ms_sum[0] / t.timed[0];
  const double aside = t.ms_sum[1] / t.timed[1];
  t.verdict = aside < followed ? Mode::kSetAside : Mode::kFollow;
  return t.verdict;
}

std::string MeasuredChoice::SummaryLine(int64_t set_aside_iterations) const {
  int set_aside = 0;
  int followed = 0;
  for (const auto& [key, t] : trials_) {
    if (!t.verdict.has_value()) continue;
    (*t.verdict == Mode::kSetAside ? set_aside : followed) += 1;
  }
  return absl::StrFormat("choice: tried %zu set_aside %d followed %d set_aside_iterations %lld",
                         trials_.size(), set_aside, followed,
                         static_cast<long long>(set_aside_iterations));
}

}  // namespace pooch
