// NVIDIA's command-line tools the kernel analysis runs: nvdisasm (SASS text from a cubin) and
// cuobjdump (cubins out of a fat binary or a library). pooch finds each, in order:
//   1. PATH, 2. $CUDA_HOME/bin and /usr/local/cuda/bin, 3. a pip package's folder
//   nvidia/cu*/bin under lib/python3*/site-packages of $VIRTUAL_ENV, $CONDA_PREFIX, and
//   build/cuda-tools beside the running program's build tree (scripts/setup-cuda-tools.sh
//   installs the pinned wheels there).
#ifndef POOCH_CORE_KERNELS_TOOLS_H_
#define POOCH_CORE_KERNELS_TOOLS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace pooch::kernels {

// The tool's path, or NotFound naming where pooch looked. `prefixes` are more folders to look
// for a pip package in, last (a test passes the source tree's build/cuda-tools, which a build
// tree elsewhere, such as build-asan/, does not have beside it).
absl::StatusOr<std::string> FindTool(const std::string& name,
                                     const std::vector<std::string>& prefixes = {});

// Adds a folder that FindTool looks in for a pip package, after every other place, for the
// whole process (libpooch.so adds build/cuda-tools beside itself: the program it is preloaded
// into may be any, python among them). Call before any FindTool on another thread.
void AddToolPrefix(const std::string& prefix);

// Runs `argv` (argv[0] a path) in folder `cwd` (empty: this process's) and returns its standard
// output; an error with the first line of its standard error when it exits non-zero.
//
// Note [Tools without pooch]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// libpooch.so runs the tools from inside the program it is preloaded into, at a kernel's first
// launch: the child gets the program's environment less LD_PRELOAD (a tool under pooch would
// start a second pooch, and under simgpu a second simulated device), and it is started with
// posix_spawn, not fork, because the program is multithreaded and a forked child of such a
// program may only call async-signal-safe functions before exec.
absl::StatusOr<std::string> RunTool(const std::vector<std::string>& argv,
                                    const std::string& cwd = "");

}  // namespace pooch::kernels

#endif  // POOCH_CORE_KERNELS_TOOLS_H_
