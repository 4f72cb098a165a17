// A small, strict flag parser for subcommands: `--name value` or `--name=value` for value flags,
// `--name` for switches. An unknown flag, a value flag without a value (end of arguments, or
// followed by another `--flag`), a value given to a switch, a repeated flag and a positional
// argument are errors: nothing is guessed.
//
//   FlagSpec spec;
//   spec.values = {"model", "batch"};
//   spec.switches = {"help"};
//   absl::StatusOr<Flags> f = ParseFlags(argc, argv, spec);   // argv[0]: the subcommand
//   absl::StatusOr<int64_t> batch = f->GetInt("batch", 1, 1 << 20);
//
// Thread safety: plain values.
#ifndef POOCH_CLI_FLAGS_H_
#define POOCH_CLI_FLAGS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pooch::cli {

struct FlagSpec {
  std::set<std::string> values;    // flags that take a value
  std::set<std::string> switches;  // flags that take none
};

class Flags {
 public:
  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  // The value of a value flag, or nullopt when it was not given.
  std::optional<std::string> Get(const std::string& name) const;
  // An integer flag in [min, max]; nullopt when not given. Errors name the flag and the text.
  absl::StatusOr<std::optional<int64_t>> GetInt(const std::string& name, int64_t min,
                                                int64_t max) const;
  // A size flag (units.h: "16GiB", "512MB", plain bytes), at least `min` bytes.
  absl::StatusOr<std::optional<int64_t>> GetBytes(const std::string& name, int64_t min) const;

 private:
  friend absl::StatusOr<Flags> ParseFlags(int argc, char** argv, const FlagSpec& spec);
  std::map<std::string, std::string> values_;  // switches map to ""
};

absl::StatusOr<Flags> ParseFlags(int argc, char** argv, const FlagSpec& spec);

}  // namespace pooch::cli

#endif  // POOCH_CLI_FLAGS_H_
