// SPDX-License-Identifier: MIT
// make_qdisc(): builds a qdisc from a tc-style spec "KIND [OPTIONS...]".
//
// Tokens are separated by any run of whitespace; the first is the kind, found in the kind
// table (qdisc_kinds.hpp), whose row's parser reads the rest: each kind's grammar and defaults
// are in its file, src/tc/qdisc_KIND.cpp (the fifos: qdisc_fifo.cpp). Size units: tc's
// (tc_units.hpp, size_unit_bytes): none or "b" = bytes, "k"/"kb" = KiB, "m"/"mb" = MiB,
// "g"/"gb" = GiB, "kbit"/"mbit"/"gbit" = 1/8 of Kib/Mib/Gib (kbit = 128 bytes).
//
// Every error is a ConfigError whose message is one line:  qdisc "<spec>": <what is wrong>
// where <spec> is the tokens re-joined by single spaces, with control characters escaped, and
// <what is wrong> tc's own line where tc has one (`pfifo: Illegal value for "limit": "abc"`).
// make_tc_qdisc() (the `txpath tc` commands) throws tc's line alone, with tc's exit status
// (src/tc/tc_error.hpp): a value missing after an option is tc's "Command line is not complete"
// (255), an unknown kind the kernel's "Specified qdisc kind is unknown." (2).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tc/internal.hpp"
#include "tc/qdisc_kinds.hpp"
#include "tc/qdisc_spec.hpp"
#include "tc/tc_error.hpp"
#include "tc/tc_units.hpp"
#include "txpath/error.hpp"
#include "txpath/qdisc.hpp"

namespace txpath {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::vector<std::string_view> tokenize(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_space(s[i])) ++i;
    const std::size_t start = i;
    while (i < s.size() && !is_space(s[i])) ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

// The qdisc kinds tc 6.1 has an option parser for (its q_*.c), besides txpath's own: with
// options, a kind tc does not know is tc's parse error, one it knows the kernel's refusal.
constexpr std::string_view kTcKnownKinds[] = {
    "sfq",  "red",   "skbprio", "cbq",   "rr",    "multiq", "netem", "choke", "sfb",
    "dsmark", "gred", "ingress", "hfsc", "drr",  "qfq",    "codel", "pie",   "fq_pie",
    "cake", "hhf",   "clsact",  "cbs",   "etf",   "taprio", "plug",  "ets"};

class SpecParser {
 public:
  // tc_lines: errors are tc's lines alone (make_tc_qdisc), else `qdisc "<spec>": what`.
  SpecParser(std::string_view spec, bool tc_lines) : SpecParser(tokenize(spec), tc_lines) {}
  SpecParser(std::vector<std::string_view> tokens, bool tc_lines)
      : tokens_(std::move(tokens)), tc_lines_(tc_lines) {
    for (std::size_t i = 0; i < tokens_.size(); ++i) {
      if (i) shown_ += ' ';
      shown_ += escape_user_text(tokens_[i]);
    }
  }

  [[noreturn]] void fail(const std::string& what, bool rejected = false) const {
    if (tc_lines_) tc::throw_tc_line(what, rejected);
    const std::string msg = "qdisc \"" + shown_ + "\": " + what;
    if (rejected) throw ConfigRejected(msg);
    throw ConfigError(msg);
  }
  // tc's argument error (exit status 255 in `txpath tc`).
  [[noreturn]] void fail_args(const std::string& what) const {
    if (tc_lines_) throw tc::TcArgLine(what);
    fail(what);
  }


  // The option tokens after the kind, for a qdisc's own parser (qdisc_spec.hpp).
  QdiscOptions options() const {
    return QdiscOptions(std::span<const std::string_view>(tokens_).subspan(1),
                        [this](const std::string& what, bool rejected) { fail(what, rejected); });
  }

  std::unique_ptr<Qdisc> build(const QdiscEnv& env) {
    if (tokens_.empty()) fail(std::string("empty spec (known kinds: ").append(tc::known_kinds()) + ")");
    const tc::QdiscKind& kind = tc::qdisc_kind(tokens_[0]);
    if (!kind.make) fail_unknown_kind(tokens_[0]);
    if (!kind.parses_options && tokens_.size() > 1)
      fail_args("qdisc '" + std::string(kind.name) + "' does not support option parsing");
    return kind.make(options(), env);
  }

 private:
  // A kind txpath does not have (make_tc_qdisc): tc's refusal of its options if tc has no
  // parser for it, else the kernel's (as a kernel without that qdisc answers).
  [[noreturn]] void fail_unknown_kind(std::string_view kind) const {
    if (!tc_lines_) fail("unknown qdisc kind " + quoted(kind) + " (known: " + tc::known_kinds() + ")");
    const bool tc_parses = std::find(std::begin(kTcKnownKinds), std::end(kTcKnownKinds), kind) !=
                           std::end(kTcKnownKinds);
    if (tokens_.size() > 1 && !tc_parses)
      fail("Unknown qdisc " + quoted(kind) + ", hence option " + quoted(tokens_[1]) + " is unparsable");
    fail("Specified qdisc kind is unknown. (txpath knows " + tc::known_kinds() + ")",
         /*rejected=*/true);
  }

  std::vector<std::string_view> tokens_;
  std::string shown_;
  bool tc_lines_;
};

}  // namespace

bool parse_linklayer_atm(const QdiscOptions& o, std::string_view value) {
  if (const auto atm = linklayer_is_atm(value)) return *atm;
  o.fail("illegal \"linklayer\" value " + quoted(value) + " (known: ethernet, atm, adsl)");
}

uint32_t parse_u16_option(const QdiscOptions& o, std::string_view opt, std::string_view value) {
  const auto n = tc::parse_u32(value);
  if (!n || *n > 65535) fail_illegal(o, opt, value);
  return *n;
}

std::unique_ptr<Qdisc> make_qdisc(std::string_view spec, const QdiscEnv& env) {
  check_qdisc_env(env);  // before any default is sized from it (quantum, mq's children)
  return SpecParser(spec, /*tc_lines=*/false).build(env);
}

std::unique_ptr<Qdisc> tc::make_tc_qdisc(std::string_view spec, const QdiscEnv& env) {
  check_qdisc_env(env);
  return SpecParser(spec, /*tc_lines=*/true).build(env);
}

std::unique_ptr<Qdisc> tc::make_tc_qdisc(std::span<const std::string> words, const QdiscEnv& env) {
  check_qdisc_env(env);
  return SpecParser(std::vector<std::string_view>(words.begin(), words.end()), /*tc_lines=*/true).build(env);
}

}  // namespace txpath
