// IterationModes (iteration_modes.h).
#include "core/measure/iteration_modes.h"

namespace pooch {

void IterationModes::Start(uint64_t key, MeasuredChoice::Mode mode) {
  ended_.plan_key = key_;
  ended_.sample = changed_ ? std::nullopt : std::optional(mode_);
  changed_ = mode != mode_ || key != key_;
  mode_ = mode;
  key_ = key;
  if (mode != MeasuredChoice::Mode::kFollow) ++set_aside_iterations_;
}

void IterationModes::PlanInstalled() {
  mode_ = MeasuredChoice::Mode::kFollow;
  changed_ = true;
}

}  // namespace pooch
