// Sizes as users write them in POOCH_* variables and command-line flags.
//
// A size is a plain byte count ("1048576") or a number with a unit suffix:
//   KiB MiB GiB TiB  binary (1024^k)
//   KB  MB  GB  TB   decimal (1000^k)
//   K   M   G   T    binary, as PyTorch and mimalloc read them
// The number may have a fractional part when a unit follows ("1.5GiB"); the result is rounded
// down to whole bytes. Whitespace around the text is ignored, a space between number and unit
// is allowed. Negative numbers, overflow past INT64_MAX, a missing number, an unknown unit and
// trailing garbage are errors: a size is never guessed (DESIGN.md, Conventions).
//
// A percentage ("40%", "12.5 %") is a number in (0, 100] followed by one '%'; ParsePercent
// returns it as a fraction of 1. Whatever reads one says of what (POOCH_MEMORY_LIMIT: of the
// device's memory).
//
//   absl::StatusOr<int64_t> bytes = pooch::ParseBytes("16GiB");   // 17179869184
//   pooch::FormatBytes(17179869184);                               // "16.00 GiB"
//   pooch::ParsePercent("40%");                                    // 0.4
//
// Thread safety: pure functions.
#ifndef POOCH_CORE_BASE_UNITS_H_
#define POOCH_CORE_BASE_UNITS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pooch {

// Returns the byte count, or InvalidArgument whose message quotes the text and says what is
// wrong ("'12QB': unknown unit 'QB'").
absl::StatusOr<int64_t> ParseBytes(absl::string_view text);

// True when `text` is meant as a percentage: it ends in '%' (whitespace aside).
bool IsPercent(absl::string_view text);

// The fraction of 1 that a percentage in (0, 100] stands for, or InvalidArgument whose message
// quotes the text ("'150%': a percentage must be at most 100%").
absl::StatusOr<double> ParsePercent(absl::string_view text);

// Human-readable binary size with two decimals: "512 B", "1.50 KiB", "16.00 GiB".
std::string FormatBytes(int64_t bytes);

// `bytes` rounded up to a multiple of `unit` (a mapping granularity, a block size).
// REQUIRES: unit > 0, bytes >= 0, and bytes + unit - 1 fits in int64.
inline int64_t RoundUp(int64_t bytes, int64_t unit) { return (bytes + unit - 1) / unit * unit; }

}  // namespace pooch

#endif  // POOCH_CORE_BASE_UNITS_H_
