// SPDX-License-Identifier: MIT
// User text in one-line error messages. Every error txpath prints is one line: whatever the user
// (or a file, or the wire) supplied goes through escape_user_text() first, so a newline, an ESC
// or a byte that is not UTF-8 can neither split the line nor reach the terminal, and a huge
// argument is not echoed whole.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace txpath {

// The longest user text an error quotes, in input bytes; longer text is cut and ends in "...".
inline constexpr std::size_t kMaxQuotedText = 200;

// `s` for a one-line error message: '"' and '\' backslash-escaped; control characters (C0, DEL,
// and the C1 range U+0080..U+009F) and every byte that is not part of well-formed UTF-8 as
// \xNN; cut after kMaxQuotedText input bytes (at a character boundary) with "..." appended.
std::string escape_user_text(std::string_view s);

// escape_user_text(s) in double quotes.
std::string quoted(std::string_view s);

}  // namespace txpath
