// SPDX-License-Identifier: MIT
// make_qdisc(): builds a qdisc from a tc-style spec "KIND [OPTIONS...]".
//
// Grammar (tokens separated by any run of whitespace):
//   pfifo_fast                                   no options
//   pfifo | pfifo_head_drop  [limit PACKETS]     PACKETS: decimal integer in [0, UINT32_MAX]
//   bfifo                    [limit SIZE]        SIZE: decimal integer + optional tc size unit
//   prio, tbf, fq_codel      their own grammars, in prio.cpp, tbf.cpp, fq_codel.cpp (tc's)
//   codel, red               theirs in src/tc/qdisc_codel.cpp, qdisc_red.cpp (tc's)
//   mq, mqprio               root only, on a device of several TX queues (qdisc_mq.cpp)
// Size units: tc's (tc_units.hpp, size_unit_bytes): none or "b" = bytes, "k"/"kb" = KiB,
// "m"/"mb" = MiB, "g"/"gb" = GiB, "kbit"/"mbit"/"gbit" = 1/8 of Kib/Mib/Gib (kbit = 128 bytes).
// Unlike tc (strtod) the number must be a plain decimal integer: no sign, fraction or exponent.
// Defaults when no limit is given: pfifo/pfifo_head_drop = txqueuelen, bfifo = txqueuelen *
// psched_mtu (clamped to UINT32_MAX); pfifo_fast bands hold txqueuelen packets each.
//
// Every error is a ConfigError whose message is one line:  qdisc "<spec>": <what is wrong>
// where <spec> is the tokens re-joined by single spaces, with control characters escaped.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qdisc/fifo.hpp"
#include "qdisc/pfifo_fast.hpp"
#include "tc/qdisc_spec.hpp"
#include "tc/tc_units.hpp"
#include "txpath/error.hpp"
#include "txpath/qdisc.hpp"

namespace txpath {

namespace {

constexpr std::string_view kKnownKinds =
    "pfifo_fast, pfifo, bfifo, pfifo_head_drop, prio, tbf, fq_codel, codel, red, htb, fq, mq, mqprio";
constexpr uint64_t kMaxLimit = std::numeric_limits<uint32_t>::max();

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

class SpecParser {
 public:
  explicit SpecParser(std::string_view spec) : tokens_(tokenize(spec)) {
    for (std::size_t i = 0; i < tokens_.size(); ++i) {
      if (i) shown_ += ' ';
      shown_ += escape_user_text(tokens_[i]);
    }
  }

  [[noreturn]] void fail(const std::string& what, bool rejected = false) const {
    const std::string msg = "qdisc \"" + shown_ + "\": " + what;
    if (rejected) throw ConfigRejected(msg);
    throw ConfigError(msg);
  }


  // The option tokens after the kind, for a qdisc's own parser (qdisc_spec.hpp).
  QdiscOptions options() const {
    return QdiscOptions(std::span<const std::string_view>(tokens_).subspan(1),
                        [this](const std::string& what, bool rejected) { fail(what, rejected); });
  }

  std::unique_ptr<Qdisc> build(const QdiscEnv& env) {
    if (tokens_.empty()) fail(std::string("empty spec (known kinds: ").append(kKnownKinds) + ")");
    const std::string_view kind = tokens_[0];
    if (kind == "pfifo_fast") return build_pfifo_fast(env);
    if (kind == "pfifo") {
      const auto limit = parse_fifo_options(/*bytes=*/false).value_or(env.txqueuelen);
      return std::make_unique<PfifoQdisc>(limit);
    }
    if (kind == "pfifo_head_drop") {
      const auto limit = parse_fifo_options(/*bytes=*/false).value_or(env.txqueuelen);
      return std::make_unique<PfifoHeadDropQdisc>(limit);
    }
    if (kind == "bfifo") {
      const uint64_t dflt = std::min<uint64_t>(uint64_t{env.txqueuelen} * env.psched_mtu(), kMaxLimit);
      const auto limit = parse_fifo_options(/*bytes=*/true).value_or(static_cast<uint32_t>(dflt));
      return std::make_unique<BfifoQdisc>(limit, env.psched_mtu());
    }
    if (kind == "prio") return make_prio(options(), env);
    if (kind == "tbf") return make_tbf(options(), env);
    if (kind == "fq_codel") return make_fq_codel(options(), env);
    if (kind == "codel") return make_codel(options(), env);
    if (kind == "red") return make_red(options(), env);
    if (kind == "htb") return make_htb(options(), env);
    if (kind == "fq") return make_fq(options(), env);
    if (kind == "mq") return make_mq(options(), env);
    if (kind == "mqprio") return make_mqprio(options(), env);
    fail("unknown qdisc kind " + quoted(kind) + " (known: " + std::string(kKnownKinds) + ")");
  }

 private:
  std::unique_ptr<Qdisc> build_pfifo_fast(const QdiscEnv& env) {
    if (tokens_.size() > 1)
      fail("unknown option " + quoted(tokens_[1]) + " (pfifo_fast takes no options)");
    // Each band is a ring of txqueuelen slots; the kernel refuses a zero-sized ring.
    if (env.txqueuelen == 0) fail("pfifo_fast needs a device txqueuelen of at least 1 (got 0)");
    return std::make_unique<PfifoFastQdisc>(env.txqueuelen);
  }

  // Options of the three FIFOs: at most one "limit VALUE". Returns the limit if given.
  std::optional<uint32_t> parse_fifo_options(bool bytes) {
    std::optional<uint32_t> limit;
    for (std::size_t i = 1; i < tokens_.size(); ++i) {
      const std::string_view opt = tokens_[i];
      if (opt != "limit") fail("unknown option " + quoted(opt) + " (known: limit)");
      if (limit) fail("duplicated option \"limit\"");
      if (i + 1 >= tokens_.size()) fail("\"limit\" needs a value");
      const std::string_view value = tokens_[++i];
      limit = bytes ? parse_size(value) : parse_count(value);
    }
    return limit;
  }

  // Leading decimal digits of `s` as a value saturated just above kMaxLimit; sets `used`.
  static uint64_t leading_digits(std::string_view s, std::size_t& used) {
    uint64_t v = 0;
    used = 0;
    while (used < s.size() && s[used] >= '0' && s[used] <= '9') {
      v = v * 10 + static_cast<uint64_t>(s[used] - '0');
      if (v > kMaxLimit) v = kMaxLimit + 1;  // saturate: stays "out of range", never wraps
      ++used;
    }
    return v;
  }

  uint32_t parse_count(std::string_view value) const {
    std::size_t used = 0;
    const uint64_t v = leading_digits(value, used);
    if (used == 0 || used != value.size()) fail("invalid limit " + quoted(value));
    if (v > kMaxLimit) fail("limit " + quoted(value) + " is out of range (max 4294967295)");
    return static_cast<uint32_t>(v);
  }

  uint32_t parse_size(std::string_view value) const {
    std::size_t used = 0;
    const uint64_t v = leading_digits(value, used);
    if (used == 0) fail("invalid limit " + quoted(value));
    const auto mult = tc::size_unit_bytes(value.substr(used));
    if (!mult) fail("invalid limit " + quoted(value) + " (units: b, k, kb, m, mb, g, gb, kbit, mbit, gbit)");
    // v <= 2^32 and mult <= 2^30: the product fits in 64 bits.
    if (v * *mult > kMaxLimit) fail("limit " + quoted(value) + " is out of range (max 4294967295 bytes)");
    return static_cast<uint32_t>(v * *mult);
  }

  std::vector<std::string_view> tokens_;
  std::string shown_;
};

}  // namespace

bool parse_linklayer_atm(const QdiscOptions& o, std::string_view value) {
  if (value == "ethernet") return false;
  if (value == "atm" || value == "adsl") return true;
  o.fail("illegal \"linklayer\" value " + quoted(value) + " (known: ethernet, atm, adsl)");
}

uint32_t parse_u16_option(const QdiscOptions& o, std::string_view opt, std::string_view value) {
  const auto n = tc::parse_u32(value);
  if (!n || *n > 65535) fail_illegal(o, opt, value);
  return *n;
}

std::unique_ptr<Qdisc> make_qdisc(std::string_view spec, const QdiscEnv& env) {
  return SpecParser(spec).build(env);
}

}  // namespace txpath
