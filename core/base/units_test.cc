#include "core/base/units.h"

#include <cstdint>
#include <limits>

#include "gtest/gtest.h"

namespace pooch {
namespace {

TEST(ParseBytes, PlainCountsAndEveryUnit) {
  EXPECT_EQ(*ParseBytes("0"), 0);
  EXPECT_EQ(*ParseBytes("1048576"), 1048576);
  EXPECT_EQ(*ParseBytes("  12 "), 12);
  EXPECT_EQ(*ParseBytes("7B"), 7);
  EXPECT_EQ(*ParseBytes("2KiB"), 2048);
  EXPECT_EQ(*ParseBytes("3MiB"), 3 * 1048576);
  EXPECT_EQ(*ParseBytes("16GiB"), int64_t{16} << 30);
  EXPECT_EQ(*ParseBytes("1TiB"), int64_t{1} << 40);
  EXPECT_EQ(*ParseBytes("2KB"), 2000);
  EXPECT_EQ(*ParseBytes("5MB"), 5000000);
  EXPECT_EQ(*ParseBytes("16GB"), int64_t{16} * 1000 * 1000 * 1000);
  EXPECT_EQ(*ParseBytes("1TB"), int64_t{1000} * 1000 * 1000 * 1000);
  EXPECT_EQ(*ParseBytes("4K"), 4096);
  EXPECT_EQ(*ParseBytes("1M"), 1048576);
  EXPECT_EQ(*ParseBytes("12G"), int64_t{12} << 30);
  EXPECT_EQ(*ParseBytes("2T"), int64_t{2} << 40);
  EXPECT_EQ(*ParseBytes("12 GiB"), int64_t{12} << 30);
}

TEST(ParseBytes, FractionsRoundDown) {
  EXPECT_EQ(*ParseBytes("1.5GiB"), int64_t{3} << 29);
  EXPECT_EQ(*ParseBytes("0.5KiB"), 512);
  EXPECT_EQ(*ParseBytes("1.0001KiB"), 1024);  // 1024.1024 rounds down
  EXPECT_EQ(*ParseBytes("2.5KB"), 2500);
}

TEST(ParseBytes, LargestValuesAndOverflow) {
  EXPECT_EQ(*ParseBytes("9223372036854775807"), std::numeric_limits<int64_t>::max());
  EXPECT_FALSE(ParseBytes("9223372036854775808").ok());
  EXPECT_EQ(*ParseBytes("8388607TiB"), int64_t{8388607} << 40);
  EXPECT_FALSE(ParseBytes("8388608TiB").ok());
  EXPECT_EQ(*ParseBytes("8388607.5TiB"), (int64_t{8388607} << 40) + (int64_t{1} << 39));
  EXPECT_FALSE(ParseBytes("8388608.5TiB").ok());
  EXPECT_FALSE(ParseBytes("99999999999999999999999GiB").ok());
}

TEST(ParseBytes, RejectsWhatItCannotReadExactly) {
  for (const char* bad : {"", "  ", "-1", "-1GiB", "GiB", "12QB", "12GiBx", "1.5", "1.GiB",
                          ".5GiB", "12 3", "0x10", "1e9", "12gib", "12 GiB extra", "+5"}) {
    absl::StatusOr<int64_t> parsed = ParseBytes(bad);
    EXPECT_FALSE(parsed.ok()) << "'" << bad << "' parsed as " << *parsed;
    if (!parsed.ok()) {
      EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_NE(parsed.status().message().find('\''), absl::string_view::npos);
    }
  }
}

TEST(FormatBytes, ReadableBinaryUnits) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1536), "1.50 KiB");
  EXPECT_EQ(FormatBytes(int64_t{16} << 30), "16.00 GiB");
  EXPECT_EQ(FormatBytes(-2048), "-2.00 KiB");
}

TEST(RoundUp, ToAMultipleOfTheUnit) {
  EXPECT_EQ(RoundUp(0, 2 << 20), 0);
  EXPECT_EQ(RoundUp(1, 2 << 20), 2 << 20);
  EXPECT_EQ(RoundUp(2 << 20, 2 << 20), 2 << 20);
  EXPECT_EQ(RoundUp((2 << 20) + 1, 2 << 20), 4 << 20);
  EXPECT_EQ(RoundUp(7, 1), 7);
}

TEST(ParsePercent, FractionsOfOne) {
  EXPECT_TRUE(IsPercent("40%"));
  EXPECT_TRUE(IsPercent(" 40 % "));
  EXPECT_FALSE(IsPercent("40"));
  EXPECT_FALSE(IsPercent("4%0"));
  EXPECT_DOUBLE_EQ(*ParsePercent("40%"), 0.4);
  EXPECT_DOUBLE_EQ(*ParsePercent("12.5 %"), 0.125);
  EXPECT_DOUBLE_EQ(*ParsePercent("100%"), 1.0);
  EXPECT_DOUBLE_EQ(*ParsePercent("0.01%"), 0.0001);
}

TEST(ParsePercent, Errors) {
  EXPECT_EQ(ParsePercent("0%").status().message(), "'0%': a percentage must be greater than 0%");
  EXPECT_EQ(ParsePercent("150%").status().message(), "'150%': a percentage must be at most 100%");
  EXPECT_EQ(ParsePercent("-5%").status().message(), "'-5%': a percentage cannot be negative");
  EXPECT_EQ(ParsePercent("40").status().message(), "'40': a percentage ends in '%'");
  for (const char* bad : {"abc%", "40%%", "%", "4.%", "1e2%", "nan%", "inf%"}) {
    EXPECT_FALSE(ParsePercent(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace pooch
