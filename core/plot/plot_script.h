// plot_script.h: the gnuplot script that draws a plan (`pooch plan --plot`, POOCH_PLOT), as pure
// functions of the simulations: no file, no process (gnuplot.h runs the script; plot.h ties the
// two together).
//
// The picture, as PyTorch's memory_viz users expect one: the top panel is device memory (GiB, or
// MiB when everything stays below 1 GiB) over one iteration (ms) in-core and under the plan, with
// the capacity the plan was made for as a dashed line; beneath it, on the same time axis, the
// activity lanes: the compute engine (forward and backward ops, recomputations in their own
// colour), the device-to-host engine (swap-outs) and the host-to-device engine (swap-ins), each
// interval a bar, each lane labelled with what it carried (copies and bytes, recomputations and
// their time). Consecutive bars of a copy lane alternate between two shades so that back-to-back
// copies stay distinguishable; a dotted line marks the plan's turn from forward to backward. The
// data travel inside the script as gnuplot datablocks ("$incore << EOD" ... "EOD"), so the
// script is the only file.
//
//   PlotText text{.output_path = "plan.png", .title = "...", .plan_label = "pooch",
//                 .capacity_bytes = machine.memory_bytes};
//   std::string script = PlotScript(text, profile, in_core_sim, plan_sim);
//
// Thread safety: pure functions.
#ifndef POOCH_CORE_PLOT_PLOT_SCRIPT_H_
#define POOCH_CORE_PLOT_PLOT_SCRIPT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/model/model.h"
#include "core/sim/sim.h"

namespace pooch {

// One corner of a polyline: x in milliseconds, y in the plot's memory unit.
struct PlotPoint {
  double ms = 0;
  double y = 0;

  friend bool operator==(const PlotPoint&, const PlotPoint&) = default;
};

inline constexpr double kPlotGiB = 1024.0 * 1024.0 * 1024.0;
inline constexpr double kPlotMiB = 1024.0 * 1024.0;

// Memory samples (each level held from its time until the next sample's) as the corners of a
// step line that ends at `end_us` (or at the last sample, if later): a horizontal then a
// vertical segment per change, y in units of `unit_bytes`. Empty when there are no samples.
std::vector<PlotPoint> MemorySteps(const std::vector<MemorySample>& samples, double end_us,
                                   double unit_bytes = kPlotGiB);

// One interval of one lane, in microseconds.
struct LaneBar {
  double start_us = 0;
  double end_us = 0;

  friend bool operator==(const LaneBar&, const LaneBar&) = default;
};

// A recorded simulation's events sorted onto lanes, each lane in start order.
struct ActivityLanes {
  std::vector<LaneBar> forward;    // compute of forward-phase ops
  std::vector<LaneBar> backward;   // compute of the other ops (backward, update)
  std::vector<LaneBar> recompute;  // replays, on the compute engine
  std::vector<LaneBar> swap_out;   // device to host
  std::vector<LaneBar> swap_in;    // host to device
  int64_t swap_out_bytes = 0;
  int64_t swap_in_bytes = 0;
  double recompute_us = 0;
};

// Events whose op or tensor lies outside `profile` (a simulator bug) are counted as backward
// compute and as copies of 0 bytes rather than dropped.
ActivityLanes SortLanes(const Profile& profile, const std::vector<SimEvent>& events);

// What the picture says besides the data.
struct PlotText {
  std::string output_path;     // the PNG gnuplot writes (relative to gnuplot's working folder)
  std::string title;           // the first title line, e.g. "resnet50 batch 640 on v100-pcie3"
  std::string plan_label;      // the plan's curve, e.g. the policy's name
  int64_t capacity_bytes = 0;  // the capacity line: the memory the plan may use
};

// The whole gnuplot script. `in_core` and `plan` are recorded simulations (SimOptions::record)
// of `profile`; `in_core` may have overflowed (SimOptions::allow_overflow): its curve is drawn
// all the same and its legend says it does not fit.
std::string PlotScript(const PlotText& text, const Profile& profile, const SimResult& in_core,
                       const SimResult& plan);

// `text` as a gnuplot string literal in double quotes (backslash escapes; a newline becomes a
// space), and as one in single quotes (no escapes: for paths).
std::string GnuplotDoubleQuoted(absl::string_view text);
std::string GnuplotSingleQuoted(absl::string_view text);

}  // namespace pooch

#endif  // POOCH_CORE_PLOT_PLOT_SCRIPT_H_
