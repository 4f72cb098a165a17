// gnuplot.h: runs a gnuplot script in a child process, for the plan's picture (plot.h).
//
//   absl::Status s = pooch::RunGnuplot(script);   // waits until gnuplot is done
//
// The script is written to a fresh folder under $TMPDIR (else /tmp), gnuplot is started on it
// with posix_spawnp (found on PATH), with stdin from /dev/null, its stdout and stderr into that
// folder and none of the caller's other descriptors, and waited for; the folder is removed. The
// caller may be a program under libpooch.so (POOCH_PLOT): the child's environment is the caller's
// less what would make pooch or simgpu act in gnuplot too (ChildEnvironment).
//
// Thread safety: reentrant (each call has its own folder); it blocks the calling thread while
// gnuplot runs, typically a fraction of a second.
#ifndef POOCH_CORE_PLOT_GNUPLOT_H_
#define POOCH_CORE_PLOT_GNUPLOT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace pooch {

// What to install when gnuplot is missing, as the error messages say it.
inline constexpr const char* kGnuplotPackage = "gnuplot-nox";

struct GnuplotOptions {
  // The program: a name looked up on PATH, or a path. Tests point it elsewhere.
  std::string program = "gnuplot";
};

// `environment` (NAME=value entries, as environ holds them) less LD_PRELOAD (libpooch.so), every
// POOCH_* and SIMGPU_* variable and NVTX_INJECTION*_PATH (which pooch may have set to itself).
// The rest, LD_LIBRARY_PATH included, is kept: gnuplot links no CUDA library, so simgpu's
// folder there changes nothing for it. `environment` may be null (an empty environment).
std::vector<std::string> ChildEnvironment(const char* const* environment);

// Runs gnuplot on `script` and waits for it. FailedPrecondition "gnuplot is not installed ..."
// (naming kGnuplotPackage) when the program cannot be found or run; Internal with the first
// line gnuplot printed on stderr when it exits non-zero or is killed; Internal when the script
// cannot be written or the child not waited for.
absl::Status RunGnuplot(absl::string_view script, const GnuplotOptions& options = {});

}  // namespace pooch

#endif  // POOCH_CORE_PLOT_GNUPLOT_H_
