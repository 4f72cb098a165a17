// measured_choice.h: whether a plan whose iterations diverge is worth following, measured
// against the same iterations with the plan set aside.
//
// Note [Measured choice]
// ~~~~~~~~~~~~~~~~~~~~~~
// A followed iteration that touches other weights than its reference stops the plan's actions
// there (Note [Diverged iterations] in plan_actions.h). What the plan did before that point may
// have cost more than it saved: a mixture of experts planned on one choice of experts swaps the
// reference's experts out and back in every iteration, whichever experts run, while another
// network's plan gains before its divergence. No model of the plan says which: the executor
// measures it. A plan whose iterations diverged is tried: its
// next kSamples timed iterations are followed, then kSamples are run with the plan set aside (its
// actions off from the iteration's start, as after a divergence) under demand swapping that keeps
// room free (Note [Free reserve] in core/residency/residency_evict.cc), then, with a pilot model,
// kSamples with the pilot acting at each read-back instead of the reserve; the mode with the
// lowest mean time is kept for that plan from then on (a tie keeps the earlier mode). Whether the
// pilot's prefetches pay is measured too, as they need not. The first iteration after a change
// of mode (or of plan) starts from the other mode's residency and is not a sample. A plan that
// never diverges is never tried: its iterations are what it was made from.
//
// kSamples is 3 because an iteration's time depends on which experts it picks: two lucky
// iterations can set a plan aside for good; with 3 every moe case of scripts/bench_dynamic.sh
// keeps the faster mode.
//
// Thread safety: none; the plan executor's lock serialises.
#ifndef POOCH_CORE_MEASURE_MEASURED_CHOICE_H_
#define POOCH_CORE_MEASURE_MEASURED_CHOICE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"

namespace pooch {

class MeasuredChoice {
 public:
  // Timed iterations of each mode before the verdict.
  static constexpr int kSamples = 3;
  enum class Mode { kFollow = 0, kSetAside = 1, kSetAsidePilot = 2 };

  // `pilot`: a pilot model can act in set-aside iterations, and is tried as a third mode.
  explicit MeasuredChoice(bool pilot) : modes_(pilot ? 3 : 2) {}

  // An iteration of the plan `key` diverged: the plan is tried, unless it is already.
  void Diverged(uint64_t key);
  // The mode of an iteration of the plan `key` that starts now.
  Mode ModeFor(uint64_t key) const;
  // A timed iteration of `key` run in `mode` took `ms`. Returns the verdict when this sample
  // made it.
  std::optional<Mode> Sample(uint64_t key, Mode mode, double ms);

  // "choice: tried T followed F set_aside S set_aside_pilot P set_aside_iterations N" (N counted
  // by the caller).
  std::string SummaryLine(int64_t set_aside_iterations) const;

 private:
  struct Trial {
    double ms_sum[3] = {0, 0, 0};  // by Mode
    int timed[3] = {0, 0, 0};
    std::optional<Mode> verdict;
  };
  const int modes_;
  absl::flat_hash_map<uint64_t, Trial> trials_;
};

}  // namespace pooch

#endif  // POOCH_CORE_MEASURE_MEASURED_CHOICE_H_
