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
// Numbers (tc's get_u32 / get_unsigned, strtoul): digits, an optional '+' ('-' only before 0);
// base 0 reads C prefixes (0x hex, 0 octal). Sizes, rates and times read a number as strtod does.
// This is the one parser of tc numbers, sizes, times and rates: every qdisc's options use it.
#pragma once

#include <cstdint>
#include <span>
#include <optional>
#include <string>
#include <string_view>

namespace txpath::tc {

std::optional<uint64_t> parse_rate(std::string_view text);     // bytes per second
std::optional<uint64_t> parse_time_ns(std::string_view text);  // nanoseconds
std::optional<uint64_t> parse_size(std::string_view text);     // bytes, below 2^32 (get_size)
// tc's get_time64: like parse_time_ns, but a bare number (or ns, nsec, nsecs) is nanoseconds.
std::optional<uint64_t> parse_time64_ns(std::string_view text);
// SIZE[/CELL] (tc's burst and mtu): CELL, a power of two up to 2^31, only sized tc's legacy rate
// tables: it is checked and ignored. Returns the size in bytes.
std::optional<uint64_t> parse_size_cell(std::string_view text);
// An unsigned 32-bit number: base 10 or 16 (an optional 0x/0X prefix), or 0 (tc's
// get_unsigned: 0x hex, a leading 0 octal, else decimal). An optional '+' ("-0" is 0, as strtoul
// reads it); no spaces, nothing after it.
std::optional<uint32_t> parse_u32(std::string_view text, int base = 10);
// The bytes one unit of a size stands for ("" and "b": 1, "k": 1024, "kbit": 128, ...;
// case-insensitive), or nullopt for an unknown unit.
std::optional<uint64_t> size_unit_bytes(std::string_view unit);

std::string format_rate(uint64_t bytes_per_second);  // e.g. "10Kbit", "1Mbit", "1500bit"
std::string format_time(uint64_t ns);                // e.g. "5ms", "100ms", "1s", "500us"
std::string format_size(uint64_t bytes);             // e.g. "1500b", "10Kb", "32Mb"
// tc's 64-bit time printer (ns in): "%.3gs", "%.3gms", "%.3gus", else "<n>ns".
std::string format_time64(uint64_t ns);
// A dump's array as the inside of a JSON array, "1,2,2" (the printers' priomaps and weights).
std::string join_numbers(std::span<const uint64_t> values);

}  // namespace txpath::tc
