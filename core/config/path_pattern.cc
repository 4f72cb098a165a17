#include "core/config/path_pattern.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace pooch {
namespace {

std::optional<int> NonNegativeInt(const char* text) {
  int value = 0;
  if (text == nullptr || !absl::SimpleAtoi(text, &value) || value < 0) return std::nullopt;
  return value;
}

}  // namespace

std::optional<int> ProcessRank(const std::function<const char*(const char*)>& getenv) {
  if (std::optional<int> rank = NonNegativeInt(getenv("RANK"))) return rank;
  return NonNegativeInt(getenv("LOCAL_RANK"));
}

absl::Status CheckPathPattern(absl::string_view variable, absl::string_view pattern) {
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%') continue;
    const char next = i + 1 < pattern.size() ? pattern[i + 1] : '\0';
    if (next == 'r' || next == 'p' || next == '%') {
      ++i;
      continue;
    }
    return absl::InvalidArgumentError(
        absl::StrCat(variable, "='", pattern, "': unknown pattern '", pattern.substr(i, 2),
                     "' in the path (use %r for the rank, %p for the process id, %% for %)"));
  }
  return absl::OkStatus();
}

std::string ExpandPathPattern(absl::string_view pattern, const ProcessIdentity& identity) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char next = i + 1 < pattern.size() ? pattern[i + 1] : '\0';
    if (pattern[i] != '%' || (next != 'r' && next != 'p' && next != '%')) {
      out.push_back(pattern[i]);
      continue;
    }
    ++i;
    if (next == 'r') absl::StrAppend(&out, identity.rank.value_or(0));
    if (next == 'p') absl::StrAppend(&out, identity.pid);
    if (next == '%') out.push_back('%');
  }
  return out;
}

}  // namespace pooch
