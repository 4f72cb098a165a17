// `pooch kernels [--arch sm_NN] [--json] FILE...`: what pooch's kernel analysis concludes about
// every kernel in the files (Note [Kernel write sets] in core/kernels/analysis.h): the parameter
// words whose targets it may write and read, and whether a replay gives its outputs bit for bit.
// FILE is a cubin, a fat binary, or an ELF library or program holding fat binaries.
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli/subcommand.h"
#include "core/kernels/cubin_analysis.h"
#include "nlohmann/json.hpp"

namespace pooch::cli {
namespace {

constexpr const char* kUsage = "usage: pooch kernels [--arch sm_NN] [--json] FILE...";

int KernelsMain(int argc, char** argv) {
  std::string arch;
  bool json = false;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json") {
      json = true;
    } else if (a == "--arch" && i + 1 < argc) {
      arch = argv[++i];
    } else if (absl::StartsWith(a, "--arch=")) {
      arch = a.substr(7);
    } else if (a == "--help" || a == "-h") {
      std::cout << kUsage << "\n";
      return kExitOk;
    } else if (absl::StartsWith(a, "-")) {
      ReportError(absl::StrCat("unknown flag ", a, " (", kUsage, ")"));
      return kExitUsage;
    } else {
      files.push_back(a);
    }
  }
  if (files.empty()) {
    ReportError(absl::StrCat("no file (", kUsage, ")"));
    return kExitUsage;
  }
  if (!arch.empty() && !absl::StartsWith(arch, "sm_")) {
    ReportError(absl::StrCat("--arch takes sm_NN, not ", arch));
    return kExitUsage;
  }
  std::vector<kernels::KernelVerdict> all;
  for (const std::string& file : files) {
    absl::StatusOr<std::vector<kernels::KernelVerdict>> verdicts = kernels::AnalyzeFile(file, arch);
    if (!verdicts.ok()) {
      ReportError(verdicts.status());
      return kExitUsage;
    }
    all.insert(all.end(), verdicts->begin(), verdicts->end());
  }
  if (json) {
    nlohmann::ordered_json out;
    out["kernels"] = nlohmann::ordered_json::array();
    for (const kernels::KernelVerdict& v : all) out["kernels"].push_back(kernels::ToJson(v));
    std::cout << out.dump(1) << "\n";
    std::cerr << "pooch: " << kernels::Summarize(all) << "\n";
  } else {
    for (const kernels::KernelVerdict& v : all) {
      std::cout << v.name << " " << v.arch << ": " << v.Why() << "\n";
    }
    std::cout << kernels::Summarize(all) << "\n";
  }
  return kExitOk;
}

}  // namespace

POOCH_SUBCOMMAND(kernels, "kernels",
                 "what each kernel in a cubin, fat binary or library writes and reads, from its "
                 "SASS",
                 KernelsMain);

}  // namespace pooch::cli
