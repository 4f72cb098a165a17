#include "core/plot/gnuplot.h"

#include <stdlib.h>

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ChildEnvironmentTest, DropsWhatWouldInterposeOrConfigureTheChild) {
  const char* env[] = {"PATH=/usr/bin",
                       "LD_PRELOAD=/x/libpooch.so",
                       "LD_LIBRARY_PATH=/x/lib/simgpu",
                       "POOCH_PLOT=/tmp/p.png",
                       "SIMGPU_MEMORY=1GiB",
                       "NVTX_INJECTION64_PATH=/x/libpooch.so",
                       "LD_PRELOADED=kept",
                       "HOME=/root",
                       nullptr};
  EXPECT_THAT(ChildEnvironment(env), ElementsAre("PATH=/usr/bin", "LD_LIBRARY_PATH=/x/lib/simgpu",
                                                 "LD_PRELOADED=kept", "HOME=/root"));
  EXPECT_TRUE(ChildEnvironment(nullptr).empty());
}

TEST(RunGnuplotTest, AMissingProgramSaysWhatToInstall) {
  GnuplotOptions options;
  options.program = "/nonexistent/gnuplot";
  absl::Status s = RunGnuplot("plot x\n", options);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("gnuplot is not installed"));
  EXPECT_THAT(s.message(), HasSubstr("gnuplot-nox"));
}

// sh stands in for gnuplot: it runs the "script" with the child's environment.
TEST(RunGnuplotTest, TheChildRunsWithoutPoochsVariables) {
  setenv("LD_PRELOAD", "/nonexistent/libpooch.so", 1);
  setenv("POOCH_POLICY", "off", 1);
  setenv("SIMGPU_MEMORY", "1GiB", 1);
  GnuplotOptions options;
  options.program = "sh";
  absl::Status s = RunGnuplot(
      "if env | grep -E '^(LD_PRELOAD|POOCH_|SIMGPU_)' >&2; then exit 1; fi\n"
      "[ -n \"$PATH\" ] || exit 2\n",
      options);
  unsetenv("LD_PRELOAD");
  unsetenv("POOCH_POLICY");
  unsetenv("SIMGPU_MEMORY");
  EXPECT_TRUE(s.ok()) << s;
}

TEST(RunGnuplotTest, AFailureCarriesTheFirstLineOnStderr) {
  GnuplotOptions options;
  options.program = "sh";
  absl::Status s =
      RunGnuplot("echo >&2\necho 'line 3: undefined variable: x' >&2\nexit 3\n", options);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_THAT(s.message(), HasSubstr("exited with status 3: line 3: undefined variable: x"));
}

}  // namespace
}  // namespace pooch
