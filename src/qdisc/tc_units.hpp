// SPDX-License-Identifier: MIT
// tc's units, parsed and printed as iproute2's tc does (tc_util.c: get_rate64, get_time,
// get_size; sprint_rate, sprint_time, sprint_size), so that `txpath tc` reads the same commands
// and prints the same text as tc. Numbers may be fractional where tc's (strtod) may.
//
// Rates: bits per second with units bit, kbit, mbit, gbit, tbit (1000-based), kibit, mibit,
// gibit, tibit (1024-based), or bytes per second: bps, kbps, mbps, gbps, tbps, kibps, ... A bare
// number is bits per second. Results are in BYTES per second, as the kernel stores them.
// Times: s/sec/secs, ms/msec/msecs, us/usec/usecs (bare = usec); results in nanoseconds.
// Sizes: b, k/kb (1024), m/mb, g/gb, kbit/mbit/gbit (1024-based bits); bare = bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace txpath::tc {

std::optional<uint64_t> parse_rate(std::string_view text);     // bytes per second
std::optional<uint64_t> parse_time_ns(std::string_view text);  // nanoseconds
std::optional<uint64_t> parse_size(std::string_view text);     // bytes

std::string format_rate(uint64_t bytes_per_second);  // e.g. "10Kbit", "1Mbit", "1500bit"
std::string format_time(uint64_t ns);                // e.g. "5ms", "100ms", "1s", "500us"
std::string format_size(uint64_t bytes);             // e.g. "1500b", "10Kb", "32Mb"

}  // namespace txpath::tc
