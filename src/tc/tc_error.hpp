// SPDX-License-Identifier: MIT
// Errors of `txpath tc` whose text is the line tc itself prints, so that scripts that grep tc's
// errors keep working (not public API).
//
// `txpath tc` prints an error as "Error: " + what(), as tc prints the kernel's extended ack
// ("Error: Specified qdisc kind is unknown."). Where tc prints a line of its own without that
// prefix (its option parsers: `pfifo: Illegal value for "limit": "abc"`, `Command line is not
// complete. Try option "help"`, a kernel refusal without an extended ack: `RTNETLINK answers:
// Invalid argument`), the error is one of the classes below, whose what() is printed as it is.
// They keep the exit status of the class they derive from (exit_status(), txpath/tc.hpp).
#pragma once

#include <string>
#include <string_view>

#include "txpath/error.hpp"
#include "txpath/qdisc_options.hpp"
#include "txpath/tc.hpp"

namespace txpath::tc {

// Marks an error whose what() is the whole line tc prints.
struct TcLine {
  virtual ~TcLine() = default;
};

// tc's own parse error (exit status 1).
class TcParseLine : public ConfigError, public TcLine {
 public:
  explicit TcParseLine(const std::string& what) : ConfigError(what) {}
};
// tc's own argument error (exit status 255).
class TcArgLine : public TcArgError, public TcLine {
 public:
  explicit TcArgLine(const std::string& what) : TcArgError(what) {}
};
// A kernel refusal tc reports as "RTNETLINK answers: STRERROR" (exit status 2).
class TcRejectLine : public ConfigRejected, public TcLine {
 public:
  explicit TcRejectLine(const std::string& what) : ConfigRejected(what) {}
};

// The kernel refusals without an extended ack, as tc prints them (strerror of the errno); `detail`
// (optional) follows in parentheses on the same line.
[[noreturn]] inline void refuse_errno(std::string_view strerror_text, const std::string& detail = {}) {
  std::string line = "RTNETLINK answers: " + std::string(strerror_text);
  if (!detail.empty()) line += " (" + detail + ")";
  throw TcRejectLine(line);
}

// A qdisc's or class's option error (QdiscOptions' fail callback) as `txpath tc` reports it:
// tc's own line alone. A missing value (QdiscOptions::kIncomplete) is tc's argument error (255),
// a refusal that starts "RTNETLINK answers: " is printed as it is, another refusal is the
// kernel's extended ack ("Error: " + what), anything else tc's parse error (1).
[[noreturn]] inline void throw_tc_line(const std::string& what, bool rejected) {
  if (what == QdiscOptions::kIncomplete) throw TcArgLine(what);
  if (!rejected) throw TcParseLine(what);
  if (what.rfind("RTNETLINK answers: ", 0) == 0) throw TcRejectLine(what);
  throw ConfigRejected(what);
}

// True if tc, meeting error e, exits at once (its incomplete_command, invarg and duparg: exit
// status 255, even in the middle of a -batch file and with -force) rather than failing the
// command (a -batch file's line then fails with status 1).
inline bool tc_exits(const ConfigError& e) {
  if (!dynamic_cast<const TcArgError*>(&e)) return false;
  return !dynamic_cast<const TcLine*>(&e) || e.what() == QdiscOptions::kIncomplete;
}

// The line `txpath tc` prints for error e: what() as it is for a TcLine, else "Error: " + what().
inline std::string error_line(const ConfigError& e) {
  if (dynamic_cast<const TcLine*>(&e)) return e.what();
  return std::string("Error: ") + e.what();
}

}  // namespace txpath::tc
