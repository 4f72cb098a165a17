// The kernel analysis over files: a cubin, or a fat binary or ELF library holding cubins
// (extracted by cuobjdump), each cubin disassembled by nvdisasm and every kernel analysed
// (Note [Kernel write sets]). What `pooch kernels` runs.
#ifndef POOCH_CORE_KERNELS_CUBIN_ANALYSIS_H_
#define POOCH_CORE_KERNELS_CUBIN_ANALYSIS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/kernels/module_image.h"
#include "core/kernels/verdict.h"

namespace pooch::kernels {

// Every kernel of one cubin file.
absl::StatusOr<std::vector<KernelVerdict>> AnalyzeCubinFile(const std::string& path);

// Every kernel of `path` (a cubin, a fat binary, or an ELF file holding fat binaries) whose
// architecture is `arch` ("sm_90"; empty: all). Cubins are extracted into a temporary folder,
// removed afterwards. FailedPrecondition when the tools do not know `arch`.
absl::StatusOr<std::vector<KernelVerdict>> AnalyzeFile(const std::string& path,
                                                       const std::string& arch);

// Every kernel for `arch` of a module image in memory (a fat binary or a cubin), written to a
// temporary file for the tools. An empty list when it holds no cubin for `arch`.
absl::StatusOr<std::vector<KernelVerdict>> AnalyzeModuleImage(const ModuleImage& image,
                                                              const std::string& arch);

}  // namespace pooch::kernels

#endif  // POOCH_CORE_KERNELS_CUBIN_ANALYSIS_H_
