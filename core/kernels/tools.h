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

// Runs `argv` (argv[0] a path) in folder `cwd` (empty: this process's) and returns its standard
// output; an error with the first line of its standard error when it exits non-zero.
absl::StatusOr<std::string> RunTool(const std::vector<std::string>& argv,
                                    const std::string& cwd = "");

}  // namespace pooch::kernels

#endif  // POOCH_CORE_KERNELS_TOOLS_H_
