// plot.h: a picture of a plan, as a PNG drawn by gnuplot: device memory over one iteration
// in-core and under the plan, with the capacity line, and the compute, recompute, swap-out and
// swap-in activity beneath it (plot_script.h describes the picture). `pooch plan --plot FILE`
// and POOCH_PLOT (core/exec/plan_life.cc, at each plan the run makes) draw it.
//
//   absl::StatusOr<PlanResult> r = MakePlan(profile, machine, policy);
//   absl::Status s = WritePlanPlot("plan.png", "resnet50 batch 640 on v100-pcie3", profile,
//                                  machine, r->plan, r->sim);
//
// Thread safety: reentrant; blocks while gnuplot runs (gnuplot.h).
#ifndef POOCH_CORE_PLOT_PLOT_H_
#define POOCH_CORE_PLOT_PLOT_H_

#include <string>

#include "absl/status/status.h"
#include "core/model/model.h"
#include "core/plot/gnuplot.h"
#include "core/sim/sim.h"

namespace pooch {

// Draws `plan` on `machine` into the PNG at `path` (replacing it): `planned` is the plan's
// simulation with its timeline recorded (PlanResult::sim is); the in-core curve is
// simulated here (everything kept, SimOptions::allow_overflow, so it is drawn even where it does
// not fit). `title` is the picture's first title line (what was planned, where); the second gives
// plan.policy's figures against in-core's.
// REQUIRES: profile.Validate().ok().
// Errors: InvalidArgument "cannot write 'PATH': ..." when the file cannot be opened for writing;
// FailedPrecondition when gnuplot is not installed (the message says what to install); Internal
// when gnuplot fails or leaves no file.
absl::Status WritePlanPlot(const std::string& path, const std::string& title,
                           const Profile& profile, const MachineModel& machine, const Plan& plan,
                           const SimResult& planned, const GnuplotOptions& gnuplot = {});

}  // namespace pooch

#endif  // POOCH_CORE_PLOT_PLOT_H_
