// SPDX-License-Identifier: MIT
// tc's handle and class id syntax (iproute2 get_qdisc_handle / get_tc_classid / print_tc_classid
// behaviour): hexadecimal "MAJ:" for a qdisc (anything after the ':' ignored, as tc ignores it),
// "MAJ:MIN" for a class, "root" for the device root.
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "txpath/tc.hpp"

namespace txpath::tc {

namespace {

// Leading hex digits of s as a value saturated above 0xFFFF; `used` = digits consumed.
uint32_t hex_prefix(std::string_view s, std::size_t& used) {
  uint32_t v = 0;
  used = 0;
  while (used < s.size()) {
    const char c = s[used];
    int d = -1;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    if (d < 0) break;
    v = v > 0xFFFFF ? v : v * 16 + static_cast<uint32_t>(d);  // saturate: stays out of range
    ++used;
  }
  return v;
}

}  // namespace

// tc reads a qdisc handle's major as strtoul(..., 16) does: an optional sign ('-' wraps any
// non-zero value out of range) and "0x" prefix before the hex digits.
std::optional<uint32_t> parse_qdisc_handle(std::string_view text) {
  if (text == "none") return 0u;
  const bool negative = !text.empty() && text[0] == '-';
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) text.remove_prefix(1);
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    std::size_t used = 0;
    (void)hex_prefix(text.substr(2), used);
    if (used > 0) text.remove_prefix(2);  // else "0x" is the digit 0 and an 'x'
  }
  std::size_t used = 0;
  const uint32_t major = hex_prefix(text, used);
  if (used == 0 || major > 0xFFFF || (negative && major != 0)) return std::nullopt;
  // What follows a ':' is ignored, as tc ignores it ("1:1" is handle 1:).
  const std::string_view rest = text.substr(used);
  if (!rest.empty() && rest[0] != ':') return std::nullopt;
  return major << 16;
}

std::optional<uint32_t> parse_classid(std::string_view text) {
  if (text == "root") return kRoot;
  if (text == "none") return 0u;
  std::size_t used = 0;
  uint32_t major = hex_prefix(text, used);
  if (used == 0) {
    if (text.empty() || text[0] != ':') return std::nullopt;
    major = 0;
  }
  std::string_view rest = text.substr(used);
  if (rest.empty()) return major > 0xFFFF ? std::nullopt : std::optional<uint32_t>(major);
  if (rest[0] != ':' || major > 0xFFFF) return std::nullopt;
  rest.remove_prefix(1);
  uint32_t minor = 0;
  if (!rest.empty()) {
    minor = hex_prefix(rest, used);
    if (used != rest.size() || minor > 0xFFFF) return std::nullopt;
  }
  return (major << 16) | minor;
}

std::string format_handle(uint32_t h) {
  if (h == kRoot) return "root";
  char buf[16];
  if (minor_of(h) == 0) std::snprintf(buf, sizeof buf, "%x:", major_of(h));
  else if (major_of(h) == 0) std::snprintf(buf, sizeof buf, ":%x", minor_of(h));  // tc's form
  else std::snprintf(buf, sizeof buf, "%x:%x", major_of(h), minor_of(h));
  return buf;
}

int exit_status(const ConfigError& e) noexcept {
  if (dynamic_cast<const TcArgError*>(&e)) return 255;
  if (dynamic_cast<const ConfigRejected*>(&e)) return 2;
  return 1;
}

}  // namespace txpath::tc
