// The gnuplot script of a plan's picture (plot_script.h).
#include "core/plot/plot_script.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/base/units.h"

namespace pooch {
namespace {

constexpr double kUsPerMs = 1000.0;

// The picture's size in pixels, and where its parts sit (fractions of the height, from the
// bottom): the title above the memory panel, the lanes below it, their legend at the bottom.
constexpr int kWidth = 1600;
constexpr int kHeight = 1000;
constexpr double kLeft = 0.14;
constexpr double kRight = 0.975;
constexpr double kMemoryTop = 0.9;
constexpr double kMemoryBottom = 0.425;
constexpr double kLanesTop = 0.385;
constexpr double kLanesBottom = 0.135;
constexpr double kLanesKeyY = 0.035;
// The memory axis reaches this much above the highest of the peaks and the capacity, so that
// the legend in its top corner stays clear of the curves.
constexpr double kHeadroom = 1.18;

// The lanes' heights on the lower panel's y axis, and a bar's half height.
constexpr double kComputeLane = 3;
constexpr double kSwapOutLane = 2;
constexpr double kSwapInLane = 1;
constexpr double kBarHalf = 0.36;

// Colours (the matplotlib palette users of memory_viz know, greys for plain compute).
constexpr const char* kInCoreColor = "#7f7f7f";
constexpr const char* kPlanColor = "#1f77b4";
constexpr const char* kCapacityColor = "#d62728";
constexpr const char* kForwardColor = "#c6dbef";
constexpr const char* kBackwardColor = "#bdbdbd";
constexpr const char* kRecomputeColor = "#ff7f0e";
constexpr const char* kSwapOutColors[2] = {"#6a3d9a", "#b294d4"};
constexpr const char* kSwapInColors[2] = {"#238b45", "#74c476"};

// Milliseconds to the tenth, or to the microsecond below 10 ms.
std::string FormatMs(double us) {
  if (us >= 10 * kUsPerMs) return absl::StrFormat("%.1f ms", us / kUsPerMs);
  return absl::StrFormat("%.3f ms", us / kUsPerMs);
}

void AppendPoints(std::string* out, const char* name, const std::vector<PlotPoint>& points) {
  absl::StrAppend(out, "$", name, " << EOD\n");
  for (const PlotPoint& p : points) absl::StrAppendFormat(out, "%.4f %.6f\n", p.ms, p.y);
  absl::StrAppend(out, "EOD\n");
}

// Bars as "start_ms end_ms" rows; `parity` 0 or 1 keeps every other bar (the two shades of a
// copy lane), -1 keeps all.
void AppendBars(std::string* out, const char* name, const std::vector<LaneBar>& bars,
                int parity = -1) {
  absl::StrAppend(out, "$", name, " << EOD\n");
  for (size_t i = 0; i < bars.size(); ++i) {
    if (parity >= 0 && static_cast<int>(i % 2) != parity) continue;
    absl::StrAppendFormat(out, "%.4f %.4f\n", bars[i].start_us / kUsPerMs,
                          bars[i].end_us / kUsPerMs);
  }
  absl::StrAppend(out, "EOD\n");
}

// One element of the lanes' plot command: the datablock's bars at height `lane`.
std::string BarsElement(const char* name, double lane, const char* color,
                        const std::string& title) {
  return absl::StrFormat(
      "$%s using (($1+$2)/2):(%g):1:2:(%g):(%g) with boxxyerror "
      "fillstyle solid 1.0 border lc rgb '%s' lc rgb '%s' %s",
      name, lane, lane - kBarHalf, lane + kBarHalf, color, color,
      title.empty() ? "notitle" : absl::StrCat("title ", GnuplotDoubleQuoted(title)));
}

int64_t PeakOf(const SimResult& sim) {
  int64_t peak = sim.peak_bytes;
  for (const MemorySample& s : sim.memory) peak = std::max(peak, s.bytes);
  return peak;
}

double EndOf(const SimResult& sim) {
  double end = sim.iteration_us;
  for (const SimEvent& e : sim.events) end = std::max(end, e.end_us);
  for (const MemorySample& s : sim.memory) end = std::max(end, s.t_us);
  return end;
}

// A double-quoted gnuplot string of two lines.
std::string TwoLines(absl::string_view first, absl::string_view second) {
  std::string a = GnuplotDoubleQuoted(first);
  a.pop_back();
  return absl::StrCat(a, "\\n", GnuplotDoubleQuoted(second).substr(1));
}

std::string Plural(size_t n, const char* one, const char* many) {
  return absl::StrCat(n, " ", n == 1 ? one : many);
}

}  // namespace

std::vector<PlotPoint> MemorySteps(const std::vector<MemorySample>& samples, double end_us,
                                   double unit_bytes) {
  std::vector<PlotPoint> points;
  if (samples.empty()) return points;
  points.reserve(2 * samples.size() + 1);
  for (size_t i = 0; i < samples.size(); ++i) {
    const double ms = samples[i].t_us / kUsPerMs;
    // Hold the previous level until this sample, then step to this one.
    if (i > 0) points.push_back({ms, points.back().y});
    points.push_back({ms, static_cast<double>(samples[i].bytes) / unit_bytes});
  }
  const double end_ms = std::max(end_us, samples.back().t_us) / kUsPerMs;
  points.push_back({end_ms, points.back().y});
  return points;
}

ActivityLanes SortLanes(const Profile& profile, const std::vector<SimEvent>& events) {
  ActivityLanes lanes;
  auto bytes_of = [&](TensorId t) -> int64_t {
    return t >= 0 && t < static_cast<TensorId>(profile.tensors.size()) ? profile.tensors[t].bytes
                                                                       : 0;
  };
  for (const SimEvent& e : events) {
    const LaneBar bar{e.start_us, e.end_us};
    switch (e.kind) {
      case SimEvent::Kind::kCompute: {
        const bool forward = e.op >= 0 && e.op < static_cast<OpIndex>(profile.ops.size()) &&
                             profile.ops[e.op].phase == Phase::kForward;
        (forward ? lanes.forward : lanes.backward).push_back(bar);
        break;
      }
      case SimEvent::Kind::kRecompute:
        lanes.recompute.push_back(bar);
        lanes.recompute_us += e.end_us - e.start_us;
        break;
      case SimEvent::Kind::kSwapOut:
        lanes.swap_out.push_back(bar);
        lanes.swap_out_bytes += bytes_of(e.tensor);
        break;
      case SimEvent::Kind::kSwapIn:
        lanes.swap_in.push_back(bar);
        lanes.swap_in_bytes += bytes_of(e.tensor);
        break;
    }
  }
  for (std::vector<LaneBar>* lane :
       {&lanes.forward, &lanes.backward, &lanes.recompute, &lanes.swap_out, &lanes.swap_in}) {
    std::stable_sort(lane->begin(), lane->end(),
                     [](const LaneBar& a, const LaneBar& b) { return a.start_us < b.start_us; });
  }
  return lanes;
}

std::string GnuplotDoubleQuoted(absl::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n' || c == '\r') {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

std::string GnuplotSingleQuoted(absl::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out.push_back('\'');  // '' is a quote inside single quotes
    out.push_back(c == '\n' || c == '\r' ? ' ' : c);
  }
  out.push_back('\'');
  return out;
}

namespace {

// Where the picture's axes end and which memory unit it draws in.
struct PlotScale {
  double x_max = 0;  // ms
  double unit = 0;   // bytes per y unit
  bool gib = false;  // the unit is GiB (else MiB)
  double y_max = 0;  // in `unit`s
};

PlotScale ScaleOf(const PlotText& text, const SimResult& in_core, const SimResult& plan) {
  const double end_us = std::max(EndOf(in_core), EndOf(plan));
  const double highest =
      std::max({static_cast<double>(PeakOf(in_core)), static_cast<double>(PeakOf(plan)),
                static_cast<double>(text.capacity_bytes), 1.0});
  PlotScale scale;
  scale.x_max = std::max(end_us / kUsPerMs, 1e-3);
  scale.gib = highest >= kPlotGiB;
  scale.unit = scale.gib ? kPlotGiB : kPlotMiB;
  scale.y_max = kHeadroom * highest / scale.unit;
  return scale;
}

// The terminal and the output file.
void AppendOutput(std::string* s, const PlotText& text) {
  absl::StrAppend(s, "# pooch: device memory over one iteration and the plan's activity.\n");
  absl::StrAppendFormat(s,
                        "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
                        "  set terminal pngcairo size %d,%d noenhanced font 'Sans,11'\n"
                        "} else {\n"
                        "  set terminal png size %d,%d noenhanced\n"
                        "}\n",
                        kWidth, kHeight, kWidth, kHeight);
  absl::StrAppend(s, "set output ", GnuplotSingleQuoted(text.output_path), "\n");
}

// Every datablock the two plot commands read.
void AppendDataBlocks(std::string* s, const std::vector<PlotPoint>& in_core_steps,
                      const std::vector<PlotPoint>& plan_steps, const ActivityLanes& lanes) {
  AppendPoints(s, "incore", in_core_steps);
  AppendPoints(s, "plan", plan_steps);
  AppendBars(s, "forward", lanes.forward);
  AppendBars(s, "backward", lanes.backward);
  AppendBars(s, "recompute", lanes.recompute);
  AppendBars(s, "swapout0", lanes.swap_out, 0);
  AppendBars(s, "swapout1", lanes.swap_out, 1);
  AppendBars(s, "swapin0", lanes.swap_in, 0);
  AppendBars(s, "swapin1", lanes.swap_in, 1);
}

// The title (what was planned, then the plan's figures against in-core's) and the x axis both
// panels share.
void AppendTitle(std::string* s, const PlotText& text, const SimResult& in_core,
                 const SimResult& plan, const PlotScale& scale) {
  std::string figures = absl::StrFormat("%s: %s per iteration, peak %s of %s", text.plan_label,
                                        FormatMs(plan.iteration_us), FormatBytes(PeakOf(plan)),
                                        FormatBytes(text.capacity_bytes));
  if (in_core.iteration_us > 0) {
    absl::StrAppendFormat(&figures, " (%+.1f %% time vs in-core)",
                          100.0 * (plan.iteration_us / in_core.iteration_us - 1.0));
  }
  absl::StrAppend(s, "set multiplot title ", TwoLines(text.title, figures), " font ',14'\n");
  absl::StrAppendFormat(s, "set lmargin at screen %g\nset rmargin at screen %g\n", kLeft, kRight);
  absl::StrAppendFormat(s, "set xrange [0:%.4f]\n", scale.x_max);
}

// The memory panel's axes, and the turn from forward to backward under the plan across both
// panels.
void AppendMemoryAxes(std::string* s, const SimResult& plan, const PlotScale& scale) {
  absl::StrAppendFormat(s, "set tmargin at screen %g\nset bmargin at screen %g\n", kMemoryTop,
                        kMemoryBottom);
  absl::StrAppendFormat(s, "set yrange [0:%.6f]\n", scale.y_max);
  absl::StrAppend(s,
                  "set format x ''\n"
                  "unset xlabel\n"
                  "set ylabel 'device memory (",
                  scale.gib ? "GiB" : "MiB",
                  ")'\n"
                  "set ytics auto\n"
                  "set grid xtics ytics lc rgb '#dddddd'\n"
                  "set key top right reverse Left samplen 3 opaque box\n");
  if (plan.forward_end_us > 0) {
    const double turn_ms = plan.forward_end_us / kUsPerMs;
    absl::StrAppendFormat(s,
                          "set arrow 1 from %.4f, graph 0 to %.4f, graph 1 nohead dt 3 "
                          "lc rgb '#555555' back\n"
                          "set label 1 'forward | backward' at %.4f, graph 0.04 center front\n",
                          turn_ms, turn_ms, turn_ms);
  }
}

// The memory panel's plot command: the two curves (when they have samples) and the capacity.
void AppendMemoryPlot(std::string* s, const PlotText& text, const SimResult& in_core,
                      const SimResult& plan, const PlotScale& scale, bool in_core_drawn,
                      bool plan_drawn) {
  std::vector<std::string> memory;
  if (in_core_drawn) {
    const std::string title =
        absl::StrFormat("in-core: %s, peak %s%s", FormatMs(in_core.iteration_us),
                        FormatBytes(PeakOf(in_core)), in_core.feasible ? "" : " (does not fit)");
    memory.push_back(absl::StrFormat("$incore using 1:2 with lines lw 2 lc rgb '%s' title %s",
                                     kInCoreColor, GnuplotDoubleQuoted(title)));
  }
  if (plan_drawn) {
    const std::string title =
        absl::StrFormat("%s plan: %s, peak %s", text.plan_label, FormatMs(plan.iteration_us),
                        FormatBytes(PeakOf(plan)));
    memory.push_back(absl::StrFormat("$plan using 1:2 with lines lw 2.5 lc rgb '%s' title %s",
                                     kPlanColor, GnuplotDoubleQuoted(title)));
  }
  memory.push_back(absl::StrFormat(
      "%.6f with lines dt 2 lw 2 lc rgb '%s' title %s",
      static_cast<double>(text.capacity_bytes) / scale.unit, kCapacityColor,
      GnuplotDoubleQuoted(absl::StrCat("capacity ", FormatBytes(text.capacity_bytes)))));
  absl::StrAppend(s, "plot ", absl::StrJoin(memory, ", \\\n     "), "\n");
}

// A copy lane's label: its name, then its copies and bytes.
std::string CopyLaneLabel(absl::string_view name, const std::vector<LaneBar>& bars, int64_t bytes) {
  return TwoLines(name, bars.empty()
                            ? "none"
                            : absl::StrFormat("%s, %s", Plural(bars.size(), "copy", "copies"),
                                              FormatBytes(bytes)));
}

// The lanes panel's axes. Each lane's label says what it carried; the legend only names the
// colours.
void AppendLanesAxes(std::string* s, const ActivityLanes& lanes) {
  absl::StrAppend(s, "unset label 1\n");
  absl::StrAppendFormat(s, "set tmargin at screen %g\nset bmargin at screen %g\n", kLanesTop,
                        kLanesBottom);
  absl::StrAppendFormat(s, "set yrange [%g:%g]\n", kSwapInLane - 0.6, kComputeLane + 0.6);
  const std::string compute_label =
      TwoLines("compute", lanes.recompute.empty()
                              ? "no recomputation"
                              : absl::StrFormat("%d recomputed, %s", lanes.recompute.size(),
                                                FormatMs(lanes.recompute_us)));
  const std::string out_label =
      CopyLaneLabel("swap-out (D2H)", lanes.swap_out, lanes.swap_out_bytes);
  const std::string in_label = CopyLaneLabel("swap-in (H2D)", lanes.swap_in, lanes.swap_in_bytes);
  absl::StrAppendFormat(s,
                        "set format x '%%g'\n"
                        "set xlabel 'time (ms)'\n"
                        "unset ylabel\n"
                        "set ytics (%s %g, %s %g, %s %g)\n"
                        "set grid xtics noytics lc rgb '#dddddd'\n"
                        "set key horizontal maxrows 1 reverse Left samplen 2 noopaque nobox "
                        "center bottom at screen 0.5, screen %g\n",
                        compute_label, kComputeLane, out_label, kSwapOutLane, in_label, kSwapInLane,
                        kLanesKeyY);
}

// The lanes panel's plot command. Empty lanes are left out (gnuplot warns about empty data):
// their labels say "none".
void AppendLanesPlot(std::string* s, const ActivityLanes& lanes) {
  std::vector<std::string> bars;
  if (!lanes.forward.empty()) {
    bars.push_back(BarsElement("forward", kComputeLane, kForwardColor, "forward"));
  }
  if (!lanes.backward.empty()) {
    bars.push_back(BarsElement("backward", kComputeLane, kBackwardColor, "backward, update"));
  }
  if (!lanes.recompute.empty()) {
    bars.push_back(BarsElement("recompute", kComputeLane, kRecomputeColor, "recompute"));
  }
  if (!lanes.swap_out.empty()) {
    bars.push_back(BarsElement("swapout0", kSwapOutLane, kSwapOutColors[0], "swap-out"));
  }
  if (lanes.swap_out.size() > 1) {
    bars.push_back(BarsElement("swapout1", kSwapOutLane, kSwapOutColors[1], ""));
  }
  if (!lanes.swap_in.empty()) {
    bars.push_back(BarsElement("swapin0", kSwapInLane, kSwapInColors[0], "swap-in"));
  }
  if (lanes.swap_in.size() > 1) {
    bars.push_back(BarsElement("swapin1", kSwapInLane, kSwapInColors[1], ""));
  }
  if (bars.empty()) bars.push_back("NaN notitle");  // no timeline recorded: empty lanes
  absl::StrAppend(s, "plot ", absl::StrJoin(bars, ", \\\n     "), "\n");
}

}  // namespace

std::string PlotScript(const PlotText& text, const Profile& profile, const SimResult& in_core,
                       const SimResult& plan) {
  const PlotScale scale = ScaleOf(text, in_core, plan);
  const std::vector<PlotPoint> in_core_steps =
      MemorySteps(in_core.memory, in_core.iteration_us, scale.unit);
  const std::vector<PlotPoint> plan_steps = MemorySteps(plan.memory, plan.iteration_us, scale.unit);
  const ActivityLanes lanes = SortLanes(profile, plan.events);

  std::string s;
  AppendOutput(&s, text);
  AppendDataBlocks(&s, in_core_steps, plan_steps, lanes);
  AppendTitle(&s, text, in_core, plan, scale);
  AppendMemoryAxes(&s, plan, scale);
  AppendMemoryPlot(&s, text, in_core, plan, scale, !in_core_steps.empty(), !plan_steps.empty());
  AppendLanesAxes(&s, lanes);
  AppendLanesPlot(&s, lanes);
  absl::StrAppend(&s, "unset multiplot\nset output\n");
  return s;
}

}  // namespace pooch
