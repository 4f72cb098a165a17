// measured_choice.h: whether a plan whose iterations diverge is worth following, measured
// against the same iterations with the plan set aside.
//
// Note [Measured choice]
// ~~~~~~~~~~~~~~~~~~~~~~
// A followed iteration that touches other weights than its reference stops the plan's actions
// there (Note [Diverged iterations] in plan_actions.h). What the plan did before that point may
// have cost more than it saved: a mixture of experts planned on one choice of experts swaps the
// reference's experts out and back in every iteration, whichever experts run (cnn_train moe
// top-2 of 16 on simgpu v100-pcie3 at 40 % of its peak: 1.766 ms followed, 1.518 ms with every
// iteration left to demand swapping), while another network's plan gains before its divergence
// (top-8 of 16: 6.797 ms followed, 7.065 ms set aside). No model of the plan says which: the
// profiler measures it. A plan whose iterations diverged is tried: its next kSamples timed
// iterations are followed, then kSamples are run with the plan set aside (its actions off from
// the iteration's start, as after a divergence; demand swapping and the pilot model run them),
// and the mode with the lower mean time is kept for that plan from then on. The first iteration
// after a change of mode (or of plan) starts from the other mode's residency and is not a
// sample. A plan that never diverges is never tried: its iterations are what it was made from.
//
// Thread safety: none; the profiler's lock serialises.
#ifndef POOCH_CORE_EXEC_MEASURED_CHOICE_H_
#define POOCH_CORE_EXEC_MEASURED_CHOICE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"

namespace pooch {

class MeasuredChoice {
 public:
  // Timed iterations of each mode before the verdict.
  static constexpr int kSamples = 2;
  enum class Mode { kFollow = 0, kSetAside = 1 };

  // An iteration of the plan `key` diverged: the plan is tried, unless it is already.
  void Diverged(uint64_t key);
  // The mode of an iteration of the plan `key` that starts now.
  Mode ModeFor(uint64_t key) const;
  // A timed iteration of `key` run in `mode` took `ms`. Returns the verdict when this sample
  // made it.
  std::optional<Mode> Sample(uint64_t key, Mode mode, double ms);

  // "choice: tried T set_aside S followed F set_aside_iterations N" (N counted by the caller).
  std::string SummaryLine(int64_t set_aside_iterations) const;

 private:
  struct Trial {
    double ms_sum[2] = {0, 0};  // by Mode
    int timed[2] = {0, 0};
    std::optional<Mode> verdict;
  };
  absl::flat_hash_map<uint64_t, Trial> trials_;
};

}  // namespace pooch

#endif  // POOCH_CORE_EXEC_MEASURED_CHOICE_H_
