// SPDX-License-Identifier: MIT
// What make_qdisc() hands a qdisc's own option parser: the option tokens after the kind, and a
// fail() that throws the one-line ConfigError every spec error becomes:
//   qdisc "<spec>": <what is wrong>
// fail() is a parse error (tc refuses the command itself: exit 1); reject() is a request that
// parsed but that the kernel would refuse (ConfigRejected: exit 2), e.g. prio bands 1. The tc
// layer (src/tc/) builds QdiscOptions for `tc class add|change` the same way.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "txpath/qdisc.hpp"
#include "txpath/text.hpp"  // escape_user_text, quoted: every error quotes user text through them

namespace txpath {

class QdiscOptions {
 public:
  // fail(what, rejected) must throw: ConfigRejected if `rejected`, else ConfigError.
  QdiscOptions(std::span<const std::string_view> tokens,
               std::function<void(const std::string&, bool rejected)> fail)
      : tokens_(tokens), fail_(std::move(fail)) {}

  std::span<const std::string_view> tokens() const noexcept { return tokens_; }
  std::size_t size() const noexcept { return tokens_.size(); }
  std::string_view operator[](std::size_t i) const noexcept { return tokens_[i]; }

  // Throws ConfigError `qdisc "<spec>": what`; never returns.
  [[noreturn]] void fail(const std::string& what) const {
    fail_(what, false);
    std::abort();  // fail_ always throws
  }
  // Throws ConfigRejected `qdisc "<spec>": what`; never returns.
  [[noreturn]] void reject(const std::string& what) const {
    fail_(what, true);
    std::abort();  // fail_ always throws
  }
  // The value after option tokens_[i] (advancing i), or fail("\"OPT\" needs a value").
  std::string_view value(std::size_t& i) const {
    if (i + 1 >= tokens_.size()) fail("\"" + std::string(tokens_[i]) + "\" needs a value");
    return tokens_[++i];
  }

 private:
  std::span<const std::string_view> tokens_;
  std::function<void(const std::string&, bool)> fail_;
};

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
// A decimal number in 0..65535 (overhead, htb's mpu), else `illegal "OPT" value`.
uint32_t parse_u16_option(const QdiscOptions& o, std::string_view opt, std::string_view value);

// One factory per qdisc kind, each defined in that qdisc's own file.
std::unique_ptr<Qdisc> make_tbf(const QdiscOptions& options, const QdiscEnv& env);
std::unique_ptr<Qdisc> make_fq_codel(const QdiscOptions& options, const QdiscEnv& env);
std::unique_ptr<Qdisc> make_prio(const QdiscOptions& options, const QdiscEnv& env);
std::unique_ptr<Qdisc> make_htb(const QdiscOptions& options, const QdiscEnv& env);
std::unique_ptr<Qdisc> make_fq(const QdiscOptions& options, const QdiscEnv& env);

}  // namespace txpath
