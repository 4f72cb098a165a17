#include "cli/flags.h"

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/base/units.h"

namespace pooch::cli {

absl::StatusOr<Flags> ParseFlags(int argc, char** argv, const FlagSpec& spec) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (!absl::StartsWith(arg, "--") || arg.size() == 2) {
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", arg, "'"));
    }
    arg.remove_prefix(2);
    std::string name(arg.substr(0, arg.find('=')));
    std::optional<std::string> inline_value;
    if (size_t eq = arg.find('='); eq != absl::string_view::npos) {
      inline_value = std::string(arg.substr(eq + 1));
    }
    if (flags.values_.count(name) > 0) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, " given twice"));
    }
    if (spec.switches.count(name) > 0) {
      if (inline_value) {
        return absl::InvalidArgumentError(absl::StrCat("--", name, " takes no value"));
      }
      flags.values_[name] = "";
      continue;
    }
    if (spec.values.count(name) == 0) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name));
    }
    if (inline_value) {
      flags.values_[name] = *inline_value;
      continue;
    }
    if (i + 1 >= argc || absl::StartsWith(argv[i + 1], "--")) {
      return absl::InvalidArgumentError(absl::StrCat("missing value for --", name));
    }
    flags.values_[name] = argv[++i];
  }
  return flags;
}

std::optional<std::string> Flags::Get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

absl::StatusOr<std::optional<int64_t>> Flags::GetInt(const std::string& name, int64_t min,
                                                     int64_t max) const {
  std::optional<std::string> text = Get(name);
  if (!text) return std::optional<int64_t>();
  int64_t v = 0;
  if (!absl::SimpleAtoi(*text, &v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, " '", *text, "': not an integer (or out of range)"));
  }
  if (v < min || v > max) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, " ", v, ": must be between ", min, " and ", max));
  }
  return std::optional<int64_t>(v);
}

absl::StatusOr<std::optional<int64_t>> Flags::GetBytes(const std::string& name, int64_t min) const {
  std::optional<std::string> text = Get(name);
  if (!text) return std::optional<int64_t>();
  absl::StatusOr<int64_t> v = ParseBytes(*text);
  if (!v.ok())
    return absl::InvalidArgumentError(absl::StrCat("--", name, " ", v.status().message()));
  if (*v < min) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, " '", *text, "': must be at least ", min, " bytes"));
  }
  return std::optional<int64_t>(*v);
}

}  // namespace pooch::cli
