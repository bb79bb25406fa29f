// SPDX-License-Identifier: MIT
// The qdiscs' option parsers: make_qdisc() hands each kind's factory a QdiscOptions
// (txpath/qdisc_options.hpp) over the tokens after the kind, whose fail() throws the one-line
// ConfigError every spec error becomes:
//   qdisc "<spec>": <what is wrong>
// The tc layer (src/tc/) builds QdiscOptions for `tc class add|change` the same way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/text.hpp"  // escape_user_text, quoted: every error quotes user text through them
#include "txpath/qdisc.hpp"
#include "txpath/qdisc_options.hpp"

namespace txpath {

// ---- messages and values shared by the qdiscs' option parsers (tc's wording) ----

// `illegal "NAME" value "VALUE"`.
[[noreturn]] inline void fail_illegal(const QdiscOptions& o, std::string_view name,
                                      std::string_view value) {
  o.fail("illegal " + quoted(name) + " value " + quoted(value));
}
// `duplicate "NAME" specification` when the option was `seen` before.
inline void fail_if_seen(const QdiscOptions& o, bool seen, std::string_view name) {
  if (seen) o.fail("duplicate " + quoted(name) + " specification");
}
// linklayer ethernet|atm|adsl: whether the link is ATM (48-byte payload per 53-byte cell).
bool parse_linklayer_atm(const QdiscOptions& o, std::string_view value);
// tc's get_linklayer(): a non-empty prefix of ethernet, atm or adsl; whether it is ATM, or
// nullopt for anything else.
inline std::optional<bool> linklayer_is_atm(std::string_view v) noexcept {
  auto prefix_of = [v](std::string_view word) { return !v.empty() && word.substr(0, v.size()) == v; };
  if (prefix_of("ethernet")) return false;
  if (prefix_of("atm") || prefix_of("adsl")) return true;
  return std::nullopt;
}
// A decimal number in 0..65535 (overhead, htb's mpu), else `illegal "OPT" value`.
uint32_t parse_u16_option(const QdiscOptions& o, std::string_view opt, std::string_view value);

// The CoDel qdiscs' numbers (src/tc/qdisc_fq_codel.cpp): a decimal u32 option, and a tc time
// option in usec (what tc sends the kernel); both fail() with a one-line message.
uint32_t parse_codel_u32(const QdiscOptions& o, std::string_view opt, std::string_view v);
uint64_t parse_codel_us(const QdiscOptions& o, std::string_view opt, std::string_view v);
// The options codel and fq_codel share (tc-codel(8), tc-fq_codel(8)): ecn, noecn, target,
// interval, ce_threshold, into a config with those fields (CodelConfig, FqCodelConfig). tc sends
// no target or interval of 0: the value stays. Returns false for any other option.
template <class Config>
bool parse_codel_option(const QdiscOptions& o, std::size_t& i, Config& c) {
  const std::string_view opt = o[i];
  if (opt == "ecn" || opt == "noecn") {
    c.ecn = opt == "ecn";
  } else if (opt == "target" || opt == "interval") {
    const uint64_t us = parse_codel_us(o, opt, o.value(i));
    if (us) (opt == "target" ? c.target_us : c.interval_us) = us;
  } else if (opt == "ce_threshold") {
    c.ce_threshold_us = parse_codel_us(o, opt, o.value(i));
    c.has_ce_threshold = true;
  } else {
    return false;
  }
  return true;
}

// The value named `name` in xstats `x`, or nullptr (the qdiscs' xstats printers).
inline const int64_t* find_xstat(const Xstats& x, std::string_view name) noexcept {
  for (const auto& [k, v] : x)
    if (k == name) return &v;
  return nullptr;
}

// One factory per qdisc kind, each defined in src/tc/qdisc_KIND.cpp with its printers and its row of
// the kind table (qdisc_kinds.hpp).
std::unique_ptr<Qdisc> make_tbf(const QdiscOptions& options, const QdiscEnv& env);
std::unique_ptr<Qdisc> make_fq_codel(const QdiscOptions& options, const QdiscEnv& env);
std::unique_ptr<Qdisc> make_codel(const QdiscOptions& options, const QdiscEnv& env);
std::unique_ptr<Qdisc> make_red(const QdiscOptions& options, const QdiscEnv& env);
std::unique_ptr<Qdisc> make_prio(const QdiscOptions& options, const QdiscEnv& env);
std::unique_ptr<Qdisc> make_htb(const QdiscOptions& options, const QdiscEnv& env);
std::unique_ptr<Qdisc> make_fq(const QdiscOptions& options, const QdiscEnv& env);
// mq and mqprio (src/tc/qdisc_mq.cpp): one child per TX queue of env.tx_queues.
std::unique_ptr<Qdisc> make_mq(const QdiscOptions& options, const QdiscEnv& env);
std::unique_ptr<Qdisc> make_mqprio(const QdiscOptions& options, const QdiscEnv& env);

}  // namespace txpath
