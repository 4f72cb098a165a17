// The pooch command line: one file per subcommand (plan.cc, and later run.cc), each registering
// itself here, so that adding one never touches main.cc:
//
//   namespace { int RunMain(int argc, char** argv) { ... } }
//   POOCH_SUBCOMMAND(run, "run", "run a program under pooch", RunMain);
//
// A subcommand's main gets argv[0] == its name and returns an exit code (below). It prints
// results on stdout and errors as one line on stderr prefixed "pooch: " (ReportError).
//
// Thread safety: registration happens during static initialisation; everything else runs on
// the main thread.
#ifndef POOCH_CLI_SUBCOMMAND_H_
#define POOCH_CLI_SUBCOMMAND_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace pooch::cli {

// Exit codes shared by every subcommand (docs/usage.md, "The pooch command").
inline constexpr int kExitOk = 0;
inline constexpr int kExitNoPlan = 1;    // the request was valid but nothing fits (plan)
inline constexpr int kExitUsage = 2;     // bad input: flags, values, files
inline constexpr int kExitInternal = 3;  // a bug: an exception escaped (main.cc)

struct Subcommand {
  const char* name;
  const char* summary;  // one line for `pooch --help`
  int (*main)(int argc, char** argv);
};

// Registered subcommands, sorted by name.
std::vector<Subcommand> Subcommands();

class SubcommandRegistrar {
 public:
  explicit SubcommandRegistrar(const Subcommand& subcommand);
};

// Prints "pooch: <message>" as one line on stderr (newlines in `message` become spaces).
void ReportError(absl::string_view message);
// The same for a Status: its message only, the code is for programs, not people.
void ReportError(const absl::Status& status);

}  // namespace pooch::cli

#define POOCH_SUBCOMMAND(id, name, summary, main_fn)                        \
  static const ::pooch::cli::SubcommandRegistrar pooch_subcommand_##id##_ { \
    ::pooch::cli::Subcommand { name, summary, main_fn }                     \
  }

#endif  // POOCH_CLI_SUBCOMMAND_H_
