// build/bin/pooch: dispatches `pooch <command> ...` to the subcommands registered in
// subcommand.h (plan.cc, ...).
#include <cstring>
#include <exception>
#include <iostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/subcommand.h"

namespace pooch::cli {
namespace {

void PrintUsage(std::ostream& out) {
  out << "pooch: train networks whose feature maps do not fit in GPU memory (the PoocH method)\n"
         "\n"
         "usage: pooch <command> [flags]\n"
         "       pooch <command> --help\n"
         "\n"
         "commands:\n";
  size_t width = 0;  // the longest name, so that the summaries line up
  for (const Subcommand& s : Subcommands()) width = std::max(width, std::string(s.name).size());
  for (const Subcommand& s : Subcommands()) {
    std::string name = s.name;
    name.resize(width + 2, ' ');
    out << "  " << name << s.summary << "\n";
  }
  out << "\n"
         "exit codes: 0 ok, 1 no plan fits, 2 bad input, 3 internal error\n";
}

int Main(int argc, char** argv) {
  if (argc < 2) {
    ReportError("missing command (see pooch --help)");
    return kExitUsage;
  }
  const std::string command = argv[1];
  if (command == "--help" || command == "-h" || command == "help") {
    PrintUsage(std::cout);
    return kExitOk;
  }
  for (const Subcommand& s : Subcommands()) {
    if (command == s.name) return s.main(argc - 1, argv + 1);
  }
  std::vector<std::string> names;
  for (const Subcommand& s : Subcommands()) names.push_back(s.name);
  ReportError(absl::StrCat("unknown command '", command, "' (known: ", absl::StrJoin(names, ", "),
                           "; see pooch --help)"));
  return kExitUsage;
}

}  // namespace
}  // namespace pooch::cli

int main(int argc, char** argv) {
  // Nothing in pooch throws on purpose; this turns a bug (or std::bad_alloc on an absurd input)
  // into one line and an exit code instead of an abort.
  try {
    return pooch::cli::Main(argc, argv);
  } catch (const std::exception& e) {
    pooch::cli::ReportError(absl::StrCat("internal error: ", e.what()));
  } catch (...) {
    pooch::cli::ReportError("internal error: unknown exception");
  }
  return pooch::cli::kExitInternal;
}
