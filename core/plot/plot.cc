// A plan's picture (plot.h).
#include "core/plot/plot.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "core/model/candidates.h"
#include "core/plot/plot_script.h"

namespace pooch {
namespace {

absl::Status Draw(const std::string& path, const std::string& title, const Profile& profile,
                  const MachineModel& machine, const Plan& plan, const SimResult& planned,
                  const GnuplotOptions& gnuplot) {
  SimOptions recorded;
  recorded.record = true;
  recorded.allow_overflow = true;
  const SimResult in_core = Simulate(profile, machine, KeepAllPlan(0), recorded);
  const SimResult* plan_sim = &planned;

  PlotText text;
  text.output_path = path;
  text.title = title;
  text.plan_label = plan.policy.empty() ? "plan" : plan.policy;
  text.capacity_bytes = machine.memory_bytes;
  if (absl::Status s = RunGnuplot(PlotScript(text, profile, in_core, *plan_sim), gnuplot);
      !s.ok()) {
    return s;
  }
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || st.st_size == 0) {
    return absl::InternalError(absl::StrCat("gnuplot wrote nothing to '", path, "'"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WritePlanPlot(const std::string& path, const std::string& title,
                           const Profile& profile, const MachineModel& machine, const Plan& plan,
                           const SimResult& planned, const GnuplotOptions& gnuplot) {
  // gnuplot says little when it cannot open its output (and then draws nowhere): open it here
  // first, for a clear error, and remove it again if it is new and nothing gets drawn.
  struct stat st {};
  const bool existed = stat(path.c_str(), &st) == 0;
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) {
    return absl::InvalidArgumentError(absl::StrCat("cannot write '", path, "': ", strerror(errno)));
  }
  close(fd);
  absl::Status drawn = Draw(path, title, profile, machine, plan, planned, gnuplot);
  if (!drawn.ok() && !existed) unlink(path.c_str());
  return drawn;
}

}  // namespace pooch
