// SPDX-License-Identifier: MIT
// See core/text.hpp.
#include "core/text.hpp"

namespace txpath {

namespace {

// The length of the well-formed UTF-8 sequence at s[i] (RFC 3629, section 4: no overlongs, no
// surrogates, nothing past U+10FFFF), or 0 if the byte there does not start one.
std::size_t utf8_length(std::string_view s, std::size_t i) noexcept {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c == 0xE0) n = 3, lo = 0xA0;
  else if (c >= 0xE1 && c <= 0xEC) n = 3;
  else if (c == 0xED) n = 3, hi = 0x9F;
  else if (c >= 0xEE && c <= 0xEF) n = 3;
  else if (c == 0xF0) n = 4, lo = 0x90;
  else if (c >= 0xF1 && c <= 0xF3) n = 4;
  else if (c == 0xF4) n = 4, hi = 0x8F;
  else return 0;
  if (i + n > s.size()) return 0;
  if (b(1) < lo || b(1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (b(k) < 0x80 || b(k) > 0xBF) return 0;
  return n;
}

void append_hex(std::string& out, unsigned char c) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\x";
  out += kHex[c >> 4];
  out += kHex[c & 15];
}

}  // namespace

std::string escape_user_text(std::string_view s) {
  std::string out;
  std::size_t i = 0;
  while (i < s.size() && i < kMaxQuotedText) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c < 0x20 || c == 0x7f) {
      append_hex(out, c);
      ++i;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else if (const std::size_t n = utf8_length(s, i); n == 0) {
      append_hex(out, c);  // not UTF-8: shown as the byte
      ++i;
    } else if (c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0) {
      append_hex(out, c);  // a C1 control (U+0080..U+009F), e.g. CSI: shown as its two bytes
      append_hex(out, static_cast<unsigned char>(s[i + 1]));
      i += 2;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  if (i < s.size()) out += "...";
  return out;
}

std::string quoted(std::string_view s) {
  std::string out(1, '"');  // appended piecewise: GCC 12 warns (-Wrestrict) on "\"" + ... + "\""
  out += escape_user_text(s);
  out += '"';
  return out;
}

}  // namespace txpath
