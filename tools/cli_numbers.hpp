// SPDX-License-Identifier: MIT
// The command line's number checks, shared by its options (CLI11 transforms and checks).
//
// CLI11 reads numbers with strtoll/strtoull/strtod: "0x10" is 16, "010" is 8, and a value past
// the type's range is clamped (strtoull: 18446744073709551616 became 2^64-1) or, negative,
// wrapped. So every numeric option goes through these first: decimal digits only, a leading
// '-' refused as negative, and an integer past its type's largest value refused as out of
// range, each in one line that quotes the value ("--seed: "18446744073709551616" is out of
// range (at most 18446744073709551615)").
#pragma once

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "core/text.hpp"

namespace txpath::cli {

// "-5", "-0.5": a minus sign before what would be a number.
inline bool negative_number(const std::string& s) {
  return s.size() > 1 && s[0] == '-' && ((s[1] >= '0' && s[1] <= '9') || s[1] == '.');
}

// Decimal digits whose value is at most `max`; leading zeros are dropped (so that CLI11 does not
// read "010" as octal). Empty on success, else the message.
inline std::string check_unsigned(std::string& s, uint64_t max) {
  if (negative_number(s)) return txpath::quoted(s) + " must be non-negative";
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return txpath::quoted(s) + " is not a decimal integer";
  const std::string shown = s;
  s.erase(0, std::min(s.find_first_not_of('0'), s.size() - 1));
  const std::string top = std::to_string(max);
  if (s.size() > top.size() || (s.size() == top.size() && s > top))
    return txpath::quoted(shown) + " is out of range (at most " + top + ")";
  return {};
}

// The transform of an unsigned integer option stored as T (an int option takes no negative
// value either: every integer option of txpath counts something).
template <class T>
CLI::Validator decimal_integer() {
  static_assert(std::numeric_limits<T>::is_integer);
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<T>::max());
  return CLI::Validator([](std::string& s) { return check_unsigned(s, kMax); }, "");
}

// Digits with an optional fraction and exponent ("0.5", ".5", "2e-1"); no hex, inf or nan, no
// sign. Empty on success, else the message.
inline std::string check_decimal_number(const std::string& s) {
  if (negative_number(s)) return txpath::quoted(s) + " must be non-negative";
  std::size_t i = 0, digits = 0;
  const auto run = [&] {
    std::size_t n = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++n;
    return n;
  };
  digits += run();
  if (i < s.size() && s[i] == '.') {
    ++i;
    digits += run();
  }
  bool ok = digits > 0;
  if (ok && i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    ok = run() > 0;
  }
  return ok && i == s.size() ? std::string() : txpath::quoted(s) + " is not a decimal number";
}

inline CLI::Validator decimal_number() { return CLI::Validator(check_decimal_number, ""); }

}  // namespace txpath::cli
