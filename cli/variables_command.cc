// `pooch variables`: every POOCH_* variable with its default, rendered from core/config's one
// table, so what users read is what the code parses. docs/usage.md embeds the same output, and
// cli/readme_variables_test.sh fails when the two drift apart.
#include <iostream>

#include "cli/subcommand.h"
#include "core/config/config.h"

namespace pooch::cli {
namespace {

int VariablesMain(int argc, char** argv) {
  if (argc > 1) {
    ReportError("variables takes no arguments (usage: pooch variables)");
    return kExitUsage;
  }
  std::cout << ConfigMarkdownTable();
  return kExitOk;
}

}  // namespace

POOCH_SUBCOMMAND(variables, "variables",
                 "print every POOCH_* variable with its default, as a markdown table",
                 VariablesMain);

}  // namespace pooch::cli
