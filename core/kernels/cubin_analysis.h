// The kernel analysis over files: a cubin, or a fat binary or ELF library holding cubins
// (extracted by cuobjdump), each cubin disassembled by nvdisasm and every kernel analysed
// (Note [Kernel write sets]). What `pooch kernels` runs.
#ifndef POOCH_CORE_KERNELS_CUBIN_ANALYSIS_H_
#define POOCH_CORE_KERNELS_CUBIN_ANALYSIS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/kernels/cubin_info.h"
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

// Kernel `name` of the cubin file at `path` (whose `info` is given), disassembled alone with
// the functions it calls (Note [One kernel at a time]). NotFound when the cubin has no such
// kernel.
//
// Note [One kernel at a time]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// At launch only the launched kernel is analysed: nvdisasm disassembling a whole libtorch cubin
// (hundreds of kernels) costs seconds that a run launching a few of them should not pay.
// `nvdisasm -fun I,J,...` prints only the sections of the function symbols I, J; a CALL to a
// function outside them names a label the text lacks, so the callee's symbol is added and the
// kernel disassembled again, until every callee that has a symbol is in (at most
// kMaxCalleeRounds times; past that the whole cubin is disassembled). A callee without a symbol
// stays unfollowed, and BuildCfg makes the kernel unknown, as in the whole cubin's text. The
// verdict is the whole cubin's: the same instructions under the same labels.
absl::StatusOr<KernelVerdict> AnalyzeCubinKernel(const std::string& path, const CubinInfo& info,
                                                 const std::string& name);

// Extracts the cubins for `arch` of a module image into folder `dir` (which must exist) and
// returns their paths; empty when it holds none. FailedPrecondition when the tools do not know
// `arch`.
absl::StatusOr<std::vector<std::string>> ExtractModuleCubins(const ModuleImage& image,
                                                             const std::string& arch,
                                                             const std::string& dir);

}  // namespace pooch::kernels

#endif  // POOCH_CORE_KERNELS_CUBIN_ANALYSIS_H_
