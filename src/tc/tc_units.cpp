// SPDX-License-Identifier: MIT
// tc's units (see tc_units.hpp). Origin: written from the documented behaviour of iproute2's
// tc_util.c (get_rate64 / get_time / get_size and the rate / time / size printers), as summarised
// in tc(8) and docs/architecture.md ("Qdiscs"); no code copied.
//
// Parsing: a number as C's strtod() reads it, as tc reads it (decimal with a fraction and an
// exponent, "0x" hexadecimal, a '+' sign: "1.5", "1e3", "0x10"; the "C" locale, which txpath never
// changes), then an optional unit matched case-insensitively against the whole rest of the token.
// A size is what tc's get_size() accepts: 0 <= value < 2^32 after the unit, fractions truncated
// ("1.5" is 1, "-0" is 0, "4gb" is refused). Negative, infinite and NaN rates and times are
// rejected (tc would silently wrap them: docs/tc-compatibility.md). Fractions are
// truncated toward zero as tc's double -> integer conversion does, except times, which are
// rounded to the nearest nanosecond (tc keeps microseconds; nanoseconds are finer, so "0.3us"
// must not come out as 299 ns through binary floating point).
//
// Printing (not a hot path; uses snprintf):
//   rate: bits per second, divided by 1000 while the value is >= 1000 and either an exact
//         multiple of 1000 or at least 1000*1000 (then the remainder is dropped), with units
//         "", K, M, G, T + "bit": 10000 bit -> "10Kbit", 1500 bit -> "1500bit".
//   time: tc's microsecond printer: >= 1 s "%.3gs", >= 1 ms "%.3gms", else "<us>us" (integer,
//         truncated); 81920 us -> "81.9ms", 5 ms -> "5ms".
//   size: format_size: within 1 KiB of a whole number of MiB (and >= 1 MiB)
//         "<n>Mb"; else within 16 bytes of a whole number of KiB (and >= 1 KiB) "<n>Kb"; else
//         "<n>b". The tolerance is tc's: its sizes come back rounded through psched ticks.
// No state, no threads, no atomics.
#include "tc/tc_units.hpp"


#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <limits>

namespace txpath::tc {

namespace {

// The leading number of `text` and the unit text after it, or nullopt when there is no number
// or it is negative / not finite.
struct Number {
  double value;
  std::string_view unit;
};

// strtod() of `text` (a terminated copy: a token is short); nullopt when no number starts it.
std::optional<Number> strtod_prefix(std::string_view text) {
  if (text.empty() || text.size() > 1024) return std::nullopt;
  const std::string copy(text);
  char* end = nullptr;
  const double v = std::strtod(copy.c_str(), &end);
  if (end == copy.c_str()) return std::nullopt;
  return Number{v, text.substr(static_cast<std::size_t>(end - copy.c_str()))};
}

std::optional<Number> split_number(std::string_view text) {
  const auto n = strtod_prefix(text);
  // -0 passes (it is not below 0), as it passes tc's checks.
  if (!n || !std::isfinite(n->value) || n->value < 0) return std::nullopt;
  return n;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// 2^64 as a double: every double strictly below it converts to uint64_t without overflow.
constexpr double kTwo64 = 18446744073709551616.0;

std::optional<uint64_t> to_u64_trunc(double v) {
  if (!(v < kTwo64)) return std::nullopt;
  return static_cast<uint64_t>(v);
}

// Bits per second one unit of a rate stands for: "" and "bit" 1, "bps" 8 (bytes), each with a
// prefix k, m, g, t (powers of 1000) or ki, mi, gi, ti (powers of 1024); case-insensitive.
std::optional<double> rate_unit_bits(std::string_view unit) {
  if (unit.empty()) return 1.0;
  if (unit.size() < 3) return std::nullopt;
  const std::string_view base = unit.substr(unit.size() - 3);
  const double per = iequals(base, "bit") ? 1.0 : iequals(base, "bps") ? 8.0 : 0.0;
  if (per == 0) return std::nullopt;
  const std::string_view prefix = unit.substr(0, unit.size() - 3);
  if (prefix.empty()) return per;
  const bool binary = prefix.size() == 2 && (prefix[1] == 'i' || prefix[1] == 'I');
  if (prefix.size() != (binary ? 2u : 1u)) return std::nullopt;
  constexpr std::string_view kPrefixes = "kmgt";
  const char p = static_cast<char>(prefix[0] >= 'A' && prefix[0] <= 'Z' ? prefix[0] - 'A' + 'a' : prefix[0]);
  const std::size_t power = kPrefixes.find(p);
  if (power == std::string_view::npos) return std::nullopt;
  double scale = per;
  for (std::size_t i = 0; i <= power; ++i) scale *= binary ? 1024.0 : 1000.0;
  return scale;
}

}  // namespace

std::optional<uint64_t> parse_rate(std::string_view text) {
  const auto n = split_number(text);
  if (!n) return std::nullopt;
  const auto bits_per_unit = rate_unit_bits(n->unit);
  if (!bits_per_unit) return std::nullopt;
  return to_u64_trunc(n->value * *bits_per_unit / 8);
}

std::optional<uint64_t> parse_time_ns(std::string_view text) {
  const auto n = split_number(text);
  if (!n) return std::nullopt;
  double ns = n->value;
  const std::string_view u = n->unit;
  if (u.empty() || iequals(u, "us") || iequals(u, "usec") || iequals(u, "usecs")) {
    ns *= 1e3;
  } else if (iequals(u, "ms") || iequals(u, "msec") || iequals(u, "msecs")) {
    ns *= 1e6;
  } else if (iequals(u, "s") || iequals(u, "sec") || iequals(u, "secs")) {
    ns *= 1e9;
  } else {
    return std::nullopt;
  }
  return to_u64_trunc(std::nearbyint(ns));
}

std::optional<uint64_t> size_unit_bytes(std::string_view unit) {
  static constexpr struct {
    std::string_view name;
    uint64_t bytes;
  } kUnits[] = {
      {"", 1},
      {"b", 1},
      {"k", 1024},
      {"kb", 1024},
      {"m", 1024 * 1024},
      {"mb", 1024 * 1024},
      {"g", 1024 * 1024 * 1024},
      {"gb", 1024 * 1024 * 1024},
      {"kbit", 1024 / 8},
      {"mbit", 1024 * 1024 / 8},
      {"gbit", 1024 * 1024 * 1024 / 8},
  };
  for (const auto& u : kUnits)
    if (iequals(unit, u.name)) return u.bytes;
  return std::nullopt;
}

std::optional<uint64_t> parse_size(std::string_view text) {
  const auto n = split_number(text);
  if (!n) return std::nullopt;
  const auto scale = size_unit_bytes(n->unit);
  if (!scale) return std::nullopt;
  const double bytes = n->value * static_cast<double>(*scale);
  if (!(bytes < 4294967296.0)) return std::nullopt;  // tc's get_size() is 32 bits
  return static_cast<uint64_t>(bytes);
}

std::optional<uint64_t> parse_time64_ns(std::string_view text) {
  const auto n = split_number(text);
  if (!n) return std::nullopt;
  const std::string_view u = n->unit;
  if (u.empty() || iequals(u, "ns") || iequals(u, "nsec") || iequals(u, "nsecs"))
    return to_u64_trunc(n->value);
  return parse_time_ns(text);
}

std::optional<uint64_t> parse_size_cell(std::string_view text) {
  std::string_view size = text;
  if (const auto slash = text.find('/'); slash != std::string_view::npos) {
    size = text.substr(0, slash);
    const auto cell = parse_u32(text.substr(slash + 1), 0);  // get_integer(..., 0)
    if (!cell || *cell == 0 || (*cell & (*cell - 1)) != 0) return std::nullopt;  // <= 2^31
  }
  return parse_size(size);
}

std::optional<uint32_t> parse_u32(std::string_view text, int base) {
  // strtoul()'s sign: '+' is ignored; '-' negates, which leaves a 32-bit value only for 0.
  const bool negative = !text.empty() && text[0] == '-';
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) text.remove_prefix(1);
  auto hex_prefix = [&text] {
    return text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
  };
  if (base == 16 && hex_prefix()) {
    text.remove_prefix(2);
  } else if (base == 0) {
    base = 10;
    if (hex_prefix()) {
      base = 16;
      text.remove_prefix(2);
    } else if (text.size() > 1 && text[0] == '0') {
      base = 8;
      text.remove_prefix(1);
    }
  }
  // from_chars reads no sign for an unsigned type; "0x-5" must not become a number either.
  if (text.empty() || text[0] == '+' || text[0] == '-') return std::nullopt;
  uint32_t v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v, base);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  if (negative && v != 0) return std::nullopt;
  return v;
}

std::string format_rate(uint64_t bytes_per_second) {
  static constexpr const char* kPrefix[] = {"", "K", "M", "G", "T"};
  constexpr unsigned __int128 kKilo = 1000;
  unsigned __int128 bits = static_cast<unsigned __int128>(bytes_per_second) * 8;
  std::size_t i = 0;
  for (; i + 1 < std::size(kPrefix); ++i) {
    if (bits < kKilo) break;
    if (bits % kKilo != 0 && bits < kKilo * kKilo) break;
    bits /= kKilo;
  }
  // bits < 2^67 / 1000^i; at i == 0 it is below 1000, so it always fits in 64 bits here
  // unless the loop ran out of prefixes, where bits <= 2^67 / 10^12 anyway.
  return std::to_string(static_cast<uint64_t>(bits)) + kPrefix[i] + "bit";
}

std::string format_time(uint64_t ns) {
  const uint64_t us = ns / 1000;
  char buf[64];
  if (us >= 1000000) {
    std::snprintf(buf, sizeof buf, "%.3gs", static_cast<double>(us) / 1e6);
  } else if (us >= 1000) {
    std::snprintf(buf, sizeof buf, "%.3gms", static_cast<double>(us) / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%lluus", static_cast<unsigned long long>(us));
  }
  return buf;
}

// tc's size printer (iproute2 lib/json_print_math.c, sprint_size): tc's sizes come back from
// the kernel rounded through psched ticks, so a size within 1 KiB of a whole number of MiB
// (and >= 1 MiB) prints as "<n>Mb", else one within 16 bytes of a whole number of KiB (and
// >= 1 KiB) as "<n>Kb", else "<n>b": 65535 -> "64Kb", 4294967295 -> "4096Mb", 1040 -> "1040b".
std::string format_size(uint64_t bytes) {
  constexpr uint64_t kKiB = 1024;
  constexpr uint64_t kMiB = kKiB * kKiB;
  const auto nearest = [bytes](uint64_t unit) { return (bytes + unit / 2) / unit; };  // rint
  const auto within = [bytes](uint64_t whole, uint64_t tolerance) {
    return (whole > bytes ? whole - bytes : bytes - whole) < tolerance;
  };
  if (bytes >= kMiB && within(nearest(kMiB) * kMiB, kKiB)) return std::to_string(nearest(kMiB)) + "Mb";
  if (bytes >= kKiB && within(nearest(kKiB) * kKiB, 16)) return std::to_string(nearest(kKiB)) + "Kb";
  return std::to_string(bytes) + "b";
}

std::string join_numbers(std::span<const uint64_t> values) {
  std::string s;
  for (std::size_t i = 0; i < values.size(); ++i) s.append(i ? "," : "").append(std::to_string(values[i]));
  return s;
}

std::string format_time64(uint64_t ns) {
  char buf[64];
  const double v = static_cast<double>(ns);
  if (ns >= 1'000'000'000) {
    std::snprintf(buf, sizeof buf, "%.3gs", v / 1e9);
  } else if (ns >= 1000000) {
    std::snprintf(buf, sizeof buf, "%.3gms", v / 1e6);
  } else if (ns >= 1000) {
    std::snprintf(buf, sizeof buf, "%.3gus", v / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%lluns", static_cast<unsigned long long>(ns));
  }
  return buf;
}

}  // namespace txpath::tc
