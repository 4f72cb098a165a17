#include "core/base/units.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace pooch {
namespace {

struct Unit {
  absl::string_view name;
  int64_t factor;
};

constexpr int64_t kKi = int64_t{1} << 10;
constexpr int64_t kMi = int64_t{1} << 20;
constexpr int64_t kGi = int64_t{1} << 30;
constexpr int64_t kTi = int64_t{1} << 40;

// Longest names first is not needed: a unit must match the whole remaining text.
constexpr Unit kUnits[] = {
    {"B", 1},          {"KiB", kKi},        {"MiB", kMi},         {"GiB", kGi},
    {"TiB", kTi},      {"KB", 1000},        {"MB", 1000 * 1000},  {"GB", 1000 * 1000 * 1000},
    {"TB", int64_t{1000} * 1000 * 1000 * 1000},
    {"K", kKi},        {"M", kMi},          {"G", kGi},           {"T", kTi},
};

absl::Status Invalid(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("'", text, "': ", why));
}

}  // namespace

absl::StatusOr<int64_t> ParseBytes(absl::string_view text) {
  absl::string_view s = absl::StripAsciiWhitespace(text);
  if (s.empty()) return Invalid(text, "empty size");
  if (s.front() == '-') return Invalid(text, "a size cannot be negative");

  // Split "<digits>[.<digits>]" from the unit.
  size_t i = 0;
  while (i < s.size() && absl::ascii_isdigit(static_cast<unsigned char>(s[i]))) ++i;
  const size_t int_end = i;
  size_t frac_end = i;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && absl::ascii_isdigit(static_cast<unsigned char>(s[i]))) ++i;
    frac_end = i;
    if (frac_end == int_end + 1) return Invalid(text, "a digit must follow the decimal point");
  }
  if (int_end == 0) return Invalid(text, "expected a number");
  const absl::string_view number = s.substr(0, frac_end);
  const absl::string_view unit_text = absl::StripLeadingAsciiWhitespace(s.substr(frac_end));
  const bool fractional = frac_end > int_end;

  int64_t factor = 1;
  if (!unit_text.empty()) {
    bool found = false;
    for (const Unit& unit : kUnits) {
      if (unit_text == unit.name) {
        factor = unit.factor;
        found = true;
        break;
      }
    }
    if (!found) {
      return Invalid(text, absl::StrCat("unknown unit '", unit_text,
                                        "' (use B, KiB, MiB, GiB, TiB, KB, MB, GB, TB, K, M, G, T)"));
    }
  } else if (fractional) {
    return Invalid(text, "a byte count must be a whole number");
  }

  // Integer part with exact overflow checks.
  int64_t whole = 0;
  for (char c : number.substr(0, int_end)) {
    const int digit = c - '0';
    if (whole > (std::numeric_limits<int64_t>::max() - digit) / 10) {
      return Invalid(text, "too large");
    }
    whole = whole * 10 + digit;
  }
  if (whole > std::numeric_limits<int64_t>::max() / factor) return Invalid(text, "too large");
  int64_t bytes = whole * factor;

  // Fractional part: at most 18 digits matter for an int64 factor; compute exactly with
  // integer arithmetic where possible, rounding down.
  if (fractional) {
    absl::string_view frac = number.substr(int_end + 1);
    if (frac.size() > 18) frac = frac.substr(0, 18);
    int64_t numerator = 0;
    int64_t denominator = 1;
    for (char c : frac) {
      numerator = numerator * 10 + (c - '0');
      denominator *= 10;
    }
    // factor * numerator / denominator without overflow: split factor.
    const __int128 part = static_cast<__int128>(factor) * numerator / denominator;
    if (part > std::numeric_limits<int64_t>::max() - bytes) return Invalid(text, "too large");
    bytes += static_cast<int64_t>(part);
  }
  return bytes;
}

bool IsPercent(absl::string_view text) {
  return absl::EndsWith(absl::StripTrailingAsciiWhitespace(text), "%");
}

absl::StatusOr<double> ParsePercent(absl::string_view text) {
  absl::string_view s = absl::StripAsciiWhitespace(text);
  if (!absl::ConsumeSuffix(&s, "%")) return Invalid(text, "a percentage ends in '%'");
  s = absl::StripTrailingAsciiWhitespace(s);
  if (!s.empty() && s.front() == '-') return Invalid(text, "a percentage cannot be negative");
  // Digits, then at most one decimal point with digits after it: "40", "12.5".
  const size_t point = s.find('.');
  const absl::string_view whole = s.substr(0, point);
  const absl::string_view fraction =
      point == absl::string_view::npos ? absl::string_view() : s.substr(point + 1);
  auto all_digits = [](absl::string_view digits) {
    return std::all_of(digits.begin(), digits.end(),
                       [](char c) { return absl::ascii_isdigit(static_cast<unsigned char>(c)); });
  };
  if (whole.empty() || !all_digits(whole) || !all_digits(fraction) ||
      (point != absl::string_view::npos && fraction.empty())) {
    return Invalid(text, "expected a number before '%'");
  }
  double percent = 0;
  if (!absl::SimpleAtod(s, &percent)) return Invalid(text, "expected a number before '%'");
  if (percent <= 0) return Invalid(text, "a percentage must be greater than 0%");
  if (percent > 100) return Invalid(text, "a percentage must be at most 100%");
  return percent / 100;
}

std::string FormatBytes(int64_t bytes) {
  if (bytes < 0) return absl::StrCat("-", FormatBytes(bytes == INT64_MIN ? INT64_MAX : -bytes));
  if (bytes < kKi) return absl::StrCat(bytes, " B");
  static constexpr const char* kNames[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes) / kKi;
  int unit = 0;
  while (value >= 1024.0 && unit < 5) {
    value /= 1024.0;
    ++unit;
  }
  return absl::StrFormat("%.2f %s", value, kNames[unit]);
}

}  // namespace pooch
