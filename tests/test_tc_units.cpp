// SPDX-License-Identifier: MIT
// Unit tests for tc's units (src/tc/tc_units.hpp): parsing as tc's get_rate64 / get_time /
// get_size do, and printing in tc's text formats.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>

#include "tc/tc_units.hpp"

namespace txpath::tc {
namespace {

TEST(TcUnits, ParseRateBitsAndBytes) {
  EXPECT_EQ(parse_rate("10000"), 1250u);  // bare = bits per second
  EXPECT_EQ(parse_rate("8bit"), 1u);
  EXPECT_EQ(parse_rate("10kbit"), 1250u);
  EXPECT_EQ(parse_rate("10Kbit"), 1250u);
  EXPECT_EQ(parse_rate("1mbit"), 125000u);
  EXPECT_EQ(parse_rate("1MBIT"), 125000u);
  EXPECT_EQ(parse_rate("1.5mbit"), 187500u);
  EXPECT_EQ(parse_rate("1gbit"), 125000000u);
  EXPECT_EQ(parse_rate("1tbit"), 125000000000u);
  EXPECT_EQ(parse_rate("1kibit"), 128u);
  EXPECT_EQ(parse_rate("1mibit"), 131072u);
  EXPECT_EQ(parse_rate("1gibit"), 134217728u);
  EXPECT_EQ(parse_rate("1tibit"), 137438953472u);
  EXPECT_EQ(parse_rate("100bps"), 100u);  // bps = bytes per second
  EXPECT_EQ(parse_rate("1kbps"), 1000u);
  EXPECT_EQ(parse_rate("1KiBps"), 1024u);
  EXPECT_EQ(parse_rate("2mbps"), 2000000u);
  EXPECT_EQ(parse_rate("1mibps"), 1048576u);
  EXPECT_EQ(parse_rate("1gbps"), 1000000000u);
  EXPECT_EQ(parse_rate("1gibps"), 1073741824u);
  EXPECT_EQ(parse_rate("1tbps"), 1000000000000u);
  EXPECT_EQ(parse_rate("1tibps"), 1099511627776u);
  EXPECT_EQ(parse_rate("1e3kbit"), 125000u);  // strtod-style exponent
  EXPECT_EQ(parse_rate("12"), 1u);            // 12 bit/s truncates to 1 B/s, as tc does
}

TEST(TcUnits, ParseRateRejects) {
  for (const char* bad : {"", "kbit", "10xbit", "10 kbit", "-1mbit", "inf", "nan", "1e30tbit",
                          "10kbitt", "1mbit/s", "0x", "1e"}) {
    EXPECT_EQ(parse_rate(bad), std::nullopt) << bad;
  }
}

TEST(TcUnits, ParseTime) {
  EXPECT_EQ(parse_time_ns("100"), 100000u);  // bare = usec
  EXPECT_EQ(parse_time_ns("500us"), 500000u);
  EXPECT_EQ(parse_time_ns("500usec"), 500000u);
  EXPECT_EQ(parse_time_ns("500usecs"), 500000u);
  EXPECT_EQ(parse_time_ns("5ms"), 5000000u);
  EXPECT_EQ(parse_time_ns("5MS"), 5000000u);
  EXPECT_EQ(parse_time_ns("5msec"), 5000000u);
  EXPECT_EQ(parse_time_ns("5msecs"), 5000000u);
  EXPECT_EQ(parse_time_ns("2.5ms"), 2500000u);
  EXPECT_EQ(parse_time_ns("1s"), 1000000000u);
  EXPECT_EQ(parse_time_ns("1sec"), 1000000000u);
  EXPECT_EQ(parse_time_ns("3secs"), 3000000000u);
  EXPECT_EQ(parse_time_ns("0.3us"), 300u);
  EXPECT_EQ(parse_time_ns("0"), 0u);
  for (const char* bad : {"", "ms", "5m", "5min", "5 ms", "-1ms", "inf", "nan", "1e30s"}) {
    EXPECT_EQ(parse_time_ns(bad), std::nullopt) << bad;
  }
}

TEST(TcUnits, ParseSize) {
  EXPECT_EQ(parse_size("1500"), 1500u);
  EXPECT_EQ(parse_size("1500b"), 1500u);
  EXPECT_EQ(parse_size("1500B"), 1500u);
  EXPECT_EQ(parse_size("10k"), 10240u);
  EXPECT_EQ(parse_size("10kb"), 10240u);
  EXPECT_EQ(parse_size("10KB"), 10240u);
  EXPECT_EQ(parse_size("1.5k"), 1536u);
  EXPECT_EQ(parse_size("32m"), 32u * 1024 * 1024);
  EXPECT_EQ(parse_size("32mb"), 32u * 1024 * 1024);
  EXPECT_EQ(parse_size("2g"), 2ull * 1024 * 1024 * 1024);
  EXPECT_EQ(parse_size("2gb"), 2ull * 1024 * 1024 * 1024);
  EXPECT_EQ(parse_size("1kbit"), 128u);
  EXPECT_EQ(parse_size("1mbit"), 131072u);
  EXPECT_EQ(parse_size("1gbit"), 134217728u);
  for (const char* bad : {"", "b", "10x", "10 k", "10kib", "-5", "nan", "1e30g"}) {
    EXPECT_EQ(parse_size(bad), std::nullopt) << bad;
  }
}

TEST(TcUnits, FormatRateExactMultipleRule) {
  EXPECT_EQ(format_rate(0), "0bit");
  EXPECT_EQ(format_rate(1), "8bit");
  EXPECT_EQ(format_rate(1250), "10Kbit");
  EXPECT_EQ(format_rate(2500), "20Kbit");
  EXPECT_EQ(format_rate(3750), "30Kbit");
  EXPECT_EQ(format_rate(125000), "1Mbit");
  EXPECT_EQ(format_rate(187500), "1500Kbit");
  EXPECT_EQ(format_rate(187), "1496bit");        // not a multiple of 1000 and < 10^6: as is
  EXPECT_EQ(format_rate(1234567), "9876Kbit");   // >= 10^6 bit: divided, remainder dropped
  EXPECT_EQ(format_rate(125000000), "1Gbit");
  EXPECT_EQ(format_rate(125000000000), "1Tbit");
  EXPECT_EQ(format_rate(125000000000000), "1000Tbit");  // T is the largest unit
}

TEST(TcUnits, FormatTime) {
  EXPECT_EQ(format_time(0), "0us");
  EXPECT_EQ(format_time(500000), "500us");
  EXPECT_EQ(format_time(999999), "999us");  // truncated to whole microseconds
  EXPECT_EQ(format_time(5000000), "5ms");
  EXPECT_EQ(format_time(4999000), "5ms");   // %.3g
  EXPECT_EQ(format_time(100000000), "100ms");
  EXPECT_EQ(format_time(81920000), "81.9ms");
  EXPECT_EQ(format_time(2080000), "2.08ms");
  EXPECT_EQ(format_time(1000000000), "1s");
  EXPECT_EQ(format_time(1500000000), "1.5s");
  EXPECT_EQ(format_time(12345678900), "12.3s");
}

TEST(TcUnits, FormatSize) {
  EXPECT_EQ(format_size(0), "0b");
  EXPECT_EQ(format_size(1000), "1000b");
  EXPECT_EQ(format_size(1500), "1500b");
  EXPECT_EQ(format_size(1696), "1696b");
  EXPECT_EQ(format_size(1024), "1Kb");
  EXPECT_EQ(format_size(10240), "10Kb");
  EXPECT_EQ(format_size(10240 + 15), "10Kb");   // within tc's 16-byte tolerance
  EXPECT_EQ(format_size(10240 + 16), "10256b");
  EXPECT_EQ(format_size(1536), "1536b");
  EXPECT_EQ(format_size(32u * 1024 * 1024), "32Mb");
  EXPECT_EQ(format_size(2048ull * 1024 * 1024), "2048Mb");
  EXPECT_EQ(format_size(1024 * 1024 + 1024), "1025Kb");
}

TEST(TcUnits, RoundTrips) {
  for (const char* r : {"10Kbit", "1Mbit", "20Kbit", "1496bit", "1Gbit", "40Gbit", "1Tbit"}) {
    const auto v = parse_rate(r);
    ASSERT_TRUE(v) << r;
    EXPECT_EQ(format_rate(*v), r);
  }
  for (const char* t : {"5ms", "100ms", "1s", "500us", "81.9ms", "2.5s"}) {
    const auto v = parse_time_ns(t);
    ASSERT_TRUE(v) << t;
    EXPECT_EQ(format_time(*v), t);
  }
  for (const char* s : {"1500b", "10Kb", "32Mb", "1b", "1023b", "4Kb"}) {
    const auto v = parse_size(s);
    ASSERT_TRUE(v) << s;
    EXPECT_EQ(format_size(*v), s);
  }
  // Every whole number of KiB below 1 MiB prints as Kb and reads back exactly.
  for (uint64_t k = 1; k < 1024; ++k) {
    const std::string text = format_size(k * 1024);
    EXPECT_EQ(text, std::to_string(k) + "Kb");
    EXPECT_EQ(parse_size(text), k * 1024);
  }
}

// The shared number, cell and 64-bit time parsers every qdisc's options use (fq, htb, tbf, the
// fifos): tc's get_unsigned, SIZE[/CELL] and get_time64.
TEST(TcUnits, ParseU32AsTcGetUnsigned) {
  EXPECT_EQ(parse_u32("4294967295"), 4294967295u);
  EXPECT_EQ(parse_u32("4294967296"), std::nullopt);
  EXPECT_EQ(parse_u32("010"), 10u);         // base 10: a leading 0 is decimal
  EXPECT_EQ(parse_u32("010", 0), 8u);       // base 0: octal
  EXPECT_EQ(parse_u32("0x1f", 0), 31u);     // base 0: hex
  EXPECT_EQ(parse_u32("0X1F", 16), 31u);    // base 16: optional prefix
  EXPECT_EQ(parse_u32("1f", 16), 31u);
  EXPECT_EQ(parse_u32("0", 0), 0u);
  EXPECT_EQ(parse_u32("+1", 0), 1u);  // strtoul's sign
  EXPECT_EQ(parse_u32("-0", 0), 0u);
  for (const char* bad : {"", "-1", "+-1", " 1", "1 ", "1k", "0x", "0x-5", "1.0"})
    EXPECT_EQ(parse_u32(bad, 0), std::nullopt) << bad;
  EXPECT_EQ(parse_u32("08", 0), std::nullopt);  // not octal
}

TEST(TcUnits, ParseSizeCellAndUnits) {
  EXPECT_EQ(parse_size_cell("1500"), 1500u);
  EXPECT_EQ(parse_size_cell("10kb/8"), 10240u);
  EXPECT_EQ(parse_size_cell("1k/2147483648"), 1024u);  // CELL up to 2^31
  for (const char* bad : {"1k/0", "1k/3", "1k/4294967296", "1k/", "/8", "1x/8", "1k/8/8"})
    EXPECT_EQ(parse_size_cell(bad), std::nullopt) << bad;
  EXPECT_EQ(size_unit_bytes(""), 1u);
  EXPECT_EQ(size_unit_bytes("KB"), 1024u);
  EXPECT_EQ(size_unit_bytes("kbit"), 128u);
  EXPECT_EQ(size_unit_bytes("Gb"), 1073741824u);
  EXPECT_EQ(size_unit_bytes("kib"), std::nullopt);
}

TEST(TcUnits, ParseTime64BareIsNanoseconds) {
  EXPECT_EQ(parse_time64_ns("100"), 100u);
  EXPECT_EQ(parse_time64_ns("100ns"), 100u);
  EXPECT_EQ(parse_time64_ns("10us"), 10000u);
  EXPECT_EQ(parse_time64_ns("1.5ms"), 1500000u);
  EXPECT_EQ(parse_time64_ns("-1"), std::nullopt);
  EXPECT_EQ(parse_time64_ns("1h"), std::nullopt);
  EXPECT_EQ(format_time64(999), "999ns");
  EXPECT_EQ(format_time64(10000), "10us");
  EXPECT_EQ(format_time64(2500000), "2.5ms");
  EXPECT_EQ(format_time64(3000000000), "3s");
}

TEST(TcUnits, RateUnitSpellings) {
  for (const char* bad : {"1ibit", "1kkbit", "1kibitt", "1kib", "1bi", "1kbi", "1xibit", "1Kiibit"})
    EXPECT_EQ(parse_rate(bad), std::nullopt) << bad;
  EXPECT_EQ(parse_rate("1BIT"), 0u);
  EXPECT_EQ(parse_rate("8Bps"), 8u);
  EXPECT_EQ(parse_rate("1TiBit"), 137438953472u);
}

}  // namespace
}  // namespace txpath::tc
