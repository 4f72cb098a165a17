// IterationModes: the measured choice's mode of the iteration under way, and what the iteration
// that ended at its start is a sample of (Note [Measured choice] in measured_choice.h).
//
//   IterationModes modes;
//   modes.Start(key, choice.ModeFor(key));    // at each iteration start under a plan
//   clock.Mark(stream, modes.ended());        // its timing pair's tag
//   modes.PlanInstalled();                    // new actions: the iteration under way is followed
//
// The first iteration after a change of mode or of plan starts from the other mode's (or plan's)
// residency, so it is not a sample; nor is the iteration under way when a plan is installed.
//
// Thread safety: none; the plan executor's lock serialises.
#ifndef POOCH_CORE_MEASURE_ITERATION_MODES_H_
#define POOCH_CORE_MEASURE_ITERATION_MODES_H_

#include <cstdint>

#include "core/measure/iteration_clock.h"
#include "core/measure/measured_choice.h"

namespace pooch {

class IterationModes {
 public:
  // An iteration of the plan `key` starts, in `mode`: the one that ended becomes ended().
  void Start(uint64_t key, MeasuredChoice::Mode mode);
  // New actions are carried out from the iteration under way, which is followed.
  void PlanInstalled();

  MeasuredChoice::Mode mode() const { return mode_; }
  // The iteration that ended at the last Start: its plan, and its mode when it was a sample.
  const IterationClock::Ended& ended() const { return ended_; }
  // Iterations started with their plan set aside.
  int64_t set_aside_iterations() const { return set_aside_iterations_; }

 private:
  MeasuredChoice::Mode mode_ = MeasuredChoice::Mode::kFollow;
  uint64_t key_ = 0;
  bool changed_ = true;  // the iteration under way is the first in its mode and plan
  IterationClock::Ended ended_;
  int64_t set_aside_iterations_ = 0;
};

}  // namespace pooch

#endif  // POOCH_CORE_MEASURE_ITERATION_MODES_H_
