// SPDX-License-Identifier: MIT
// tbf's tc side: its option parser (make_tbf), its printers and its row of the kind table.
// The shaper itself is src/qdisc/tbf.cpp. Origin: written from Linux sch_tbf semantics and tc-tbf(8); no code copied.
//
// Grammar (tokens after "tbf"; limit, latency, burst, peakrate, overhead and linklayer also by a
// prefix, as tc matches them):
//   rate RATE  burst|buffer|maxburst BYTES[/CELL]  ( latency|lat TIME | limit BYTES )
//   [mpu BYTES] [peakrate RATE  mtu|minburst BYTES[/CELL]] [overhead N] [linklayer ethernet|atm|adsl]
// rate, burst and one of latency/limit are mandatory; peakrate needs mtu and must exceed rate
// (else the kernel's refusal, tc's "RTNETLINK answers: Invalid argument").
// latency becomes limit = min(rate * latency + burst, peakrate * latency + mtu), as tc computes
// it. CELL (a power of two) only sized tc's legacy rate tables: it is checked and ignored. mtu
// without peakrate is accepted and ignored (tc uses it for the rate table only).
// Every error is one line, tc's, via QdiscOptions::fail() or reject().
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "qdisc/tbf.hpp"
#include "tc/psched.hpp"
#include "tc/qdisc_kinds.hpp"
#include "tc/qdisc_spec.hpp"
#include "tc/tc_units.hpp"

namespace txpath {

namespace {

// What tc derives from a tbf's dump (tc's q_tbf.c over tbf_dump), in the psched tick model
// (tc/psched.hpp): the buckets' ticks turned back into sizes at their rates; the latency from
// the limit and the ticks, in whole us.
struct TbfShown {
  uint64_t rate = 0, peakrate = 0, limit = 0, mpu = 0, overhead = 0;
  bool atm = false;
  uint32_t burst = 0;     // bytes, as tc prints them
  uint32_t minburst = 0;  // bytes (peak bucket; with a peak rate)
  bool has_minburst = false;  // tc prints it when the peak bucket has ticks, or mpu is set
  bool has_latency = false;
  uint64_t latency_us = 0;
};

TbfShown tbf_shown(const DumpAttrs& a) {
  TbfShown d;
  d.rate = a.number("rate");
  d.peakrate = a.number("peakrate");
  d.limit = a.number("limit");
  d.mpu = a.number("mpu");
  d.overhead = a.number("overhead");
  d.atm = a.word("linklayer") == "atm";
  if (d.rate == 0) return d;  // not a tbf's dump
  const auto ticks = static_cast<uint32_t>(a.number("buffer"));
  d.burst = tc::tc_xmitsize(d.rate, ticks);
  double latency = 1e6 * (static_cast<double>(d.limit) / static_cast<double>(d.rate)) -
                   static_cast<double>(tc::tc_ticks_to_usec(ticks));
  if (d.peakrate) {
    const auto mtu = static_cast<uint32_t>(a.number("mtu"));
    d.minburst = tc::tc_xmitsize(d.peakrate, mtu);
    d.has_minburst = mtu != 0 || d.mpu != 0;
    const double lat2 = 1e6 * (static_cast<double>(d.limit) / static_cast<double>(d.peakrate)) -
                        static_cast<double>(tc::tc_ticks_to_usec(mtu));
    latency = std::max(latency, lat2);
  }
  d.has_latency = latency >= 0;
  if (d.has_latency) d.latency_us = static_cast<uint64_t>(latency);
  return d;
}

// tc's text for a tbf; `details` (-d) adds the cell sizes (always 1: the kernel reports none),
// mpu and the link layer.
std::string tbf_text(const DumpAttrs& a, bool details) {
  const TbfShown d = tbf_shown(a);
  std::string s = "rate " + tc::format_rate(d.rate) + " burst " + tc::format_size(d.burst);
  if (details) s += "/1 mpu " + tc::format_size(d.mpu);
  if (d.peakrate) {
    s += " peakrate " + tc::format_rate(d.peakrate);
    if (d.has_minburst)
      s += details ? " mtu " + tc::format_size(d.minburst) + "/1 mpu " + tc::format_size(d.mpu)
                 : " minburst " + tc::format_size(d.minburst);
  }
  if (d.has_latency) s += " lat " + tc::format_time(static_cast<uint32_t>(d.latency_us) * uint64_t{1000});
  else s += " limit " + tc::format_size(d.limit);
  if (d.overhead) s += " overhead " + std::to_string(d.overhead);
  if (d.atm || details) s += d.atm ? " linklayer atm" : " linklayer ethernet";
  return s;
}

// tc -j: the same keys as the text, but "peakrate" (tc prints it in text only); with -d "burst"
// and "mtu" are the text's "SIZE/1" strings.
std::string tbf_json(const DumpAttrs& a, bool details) {
  const TbfShown d = tbf_shown(a);
  std::string s = "{\"rate\":" + std::to_string(d.rate);
  if (details) s += ",\"burst\":\"" + tc::format_size(d.burst) + "/1\",\"mpu\":" + std::to_string(d.mpu);
  else s += ",\"burst\":" + std::to_string(d.burst);
  if (d.has_minburst) {
    if (details)
      s += ",\"mtu\":\"" + tc::format_size(d.minburst) + "/1\",\"mpu\":" + std::to_string(d.mpu);
    else
      s += ",\"minburst\":" + std::to_string(d.minburst);
  }
  if (d.has_latency) s += ",\"lat\":" + std::to_string(d.latency_us);
  else s += ",\"limit\":" + std::to_string(d.limit);
  if (d.overhead) s += ",\"overhead\":" + std::to_string(d.overhead);
  if (d.atm || details) s += d.atm ? ",\"linklayer\":\"atm\"" : ",\"linklayer\":\"ethernet\"";
  return s + "}";
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Option parsing: tc's tbf parser, its option names and its messages (the first line tc prints).
// As in tc, 0 means "not given": a value may be given again after a 0, "latency 0ms" is no
// latency, and rate 0 or burst 0 is a missing mandatory option.

namespace {

constexpr uint64_t kU32 = std::numeric_limits<uint32_t>::max();
constexpr std::string_view kTbfUsage =
    "Usage: ... tbf limit BYTES burst BYTES[/BYTES] rate KBPS [ mtu BYTES[/BYTES] ]";

// The options as given, 0 where not given (tc's own convention).
struct TbfArgs {
  uint64_t rate = 0, peakrate = 0, burst = 0, mtu = 0, limit = 0, latency_us = 0, mpu = 0;
  uint32_t overhead = 0;
  bool atm = false;
  // The first value tc would take and wrap (a negative rate or latency, mpu above 65535): txpath
  // refuses it, once the options parsed as tc parses them (tc's own errors come first).
  std::string wrapped;
};

// tc's matches(): `opt` is a non-empty prefix of `word`.
bool matches(std::string_view opt, std::string_view word) {
  return !opt.empty() && word.substr(0, opt.size()) == opt;
}

[[noreturn]] void fail_value(const QdiscOptions& o, std::string_view name, std::string_view v) {
  o.fail("tbf: illegal value for " + quoted(name) + ": " + quoted(v));
}

void fail_if_given(const QdiscOptions& o, uint64_t slot, std::string_view names) {
  if (slot) o.fail("tbf: duplicate " + quoted(names) + " specification");
}

// A size tc reads with get_size() (`cell`: SIZE[/CELL] with get_size_and_cell()).
uint64_t size_value(const QdiscOptions& o, std::string_view name, std::string_view v, bool cell) {
  const auto n = cell ? tc::parse_size_cell(v) : tc::parse_size(v);
  if (!n || *n > kU32) fail_value(o, name, v);
  return *n;
}

// The magnitude of a negative value v that `parse` reads without its '-' (tc takes it: 0 if the
// magnitude truncates to 0, else a wrapped value), or nullopt.
template <class Parse>
std::optional<uint64_t> negative_magnitude(std::string_view v, Parse&& parse) {
  if (v.size() < 2 || v[0] != '-') return std::nullopt;
  return parse(v.substr(1));
}

// Remembers the first wrapped value (TbfArgs::wrapped); returns a stand-in for it, non-zero as
// tc's wrapped value is.
uint64_t wrapped_value(TbfArgs& a, std::string_view name, std::string_view v) {
  if (a.wrapped.empty())
    a.wrapped = "tbf: illegal value for " + quoted(name) + ": " + quoted(v) + " (tc would wrap it)";
  return 1;
}

uint64_t rate_value(const QdiscOptions& o, std::string_view name, std::string_view v, TbfArgs& a) {
  const auto r = tc::parse_rate(v);
  if (const auto neg = r ? std::nullopt : negative_magnitude(v, tc::parse_rate))
    return *neg == 0 ? 0 : wrapped_value(a, name, v);
  if (!r) fail_value(o, name, v);
  return *r;
}

// The limit or the latency, which exclude each other.
void parse_queue_bound(const QdiscOptions& o, bool is_limit, std::size_t& i, TbfArgs& a) {
  const std::string_view v = o.value(i);
  if (is_limit) {
    fail_if_given(o, a.limit, "limit");
    if (a.latency_us) o.fail("tbf: specifying both \"latency\" and \"limit\" is not allowed");
    a.limit = size_value(o, "limit", v, false);
    return;
  }
  fail_if_given(o, a.latency_us, "latency");
  if (a.limit) o.fail("tbf: specifying both \"limit\" and \"/latency\" is not allowed");
  const auto ns = tc::parse_time_ns(v);
  if (const auto neg = ns ? std::nullopt : negative_magnitude(v, tc::parse_time_ns)) {
    a.latency_us = *neg / 1000 == 0 ? 0 : wrapped_value(a, "latency", v);
    return;
  }
  if (!ns) fail_value(o, "latency", v);
  a.latency_us = *ns / 1000;  // tc keeps whole microseconds, in 32 bits: see check_tbf_args
}

// Option o[i] and its value (i advances past it), in tc's order of matching.
void parse_tbf_option(const QdiscOptions& o, std::size_t& i, TbfArgs& a) {
  const std::string_view opt = o[i];
  if (matches(opt, "limit") || matches(opt, "latency")) {
    parse_queue_bound(o, matches(opt, "limit"), i, a);
  } else if (matches(opt, "burst") || opt == "buffer" || opt == "maxburst") {
    const std::string_view v = o.value(i);
    fail_if_given(o, a.burst, "buffer/burst/maxburst");
    a.burst = size_value(o, opt, v, true);
  } else if (opt == "mtu" || opt == "minburst") {
    const std::string_view v = o.value(i);
    fail_if_given(o, a.mtu, "mtu/minburst");
    a.mtu = size_value(o, opt, v, true);
  } else if (opt == "mpu") {
    const std::string_view v = o.value(i);
    fail_if_given(o, a.mpu, "mpu");
    a.mpu = size_value(o, "mpu", v, false);
    if (a.mpu > 65535) a.mpu = wrapped_value(a, "mpu", v);  // the kernel's field is 16 bits
  } else if (opt == "rate" || matches(opt, "peakrate")) {
    const bool peak = opt != "rate";
    const std::string_view v = o.value(i);
    fail_if_given(o, peak ? a.peakrate : a.rate, peak ? "peakrate" : "rate");
    (peak ? a.peakrate : a.rate) = rate_value(o, peak ? "peakrate" : "rate", v, a);
  } else if (matches(opt, "overhead")) {
    const std::string_view v = o.value(i);
    fail_if_given(o, a.overhead, "overhead");
    const auto n = tc::parse_u32(v);
    if (!n || *n > 65535) fail_value(o, "overhead", v);
    a.overhead = *n;
  } else if (matches(opt, "linklayer")) {
    const std::string_view v = o.value(i);
    const auto atm = linklayer_is_atm(v);
    if (!atm) fail_value(o, "linklayer", v);
    a.atm = *atm;
  } else if (opt == "help") {
    o.fail(std::string(kTbfUsage));
  } else {
    o.fail("tbf: unknown parameter " + quoted(opt));
  }
}

// The mandatory options, in tc's order (its first complaint is its first line); then what the
// kernel refuses.
void check_tbf_args(const QdiscOptions& o, const TbfArgs& a) {
  if (!a.rate) o.fail("tbf: the \"rate\" parameter is mandatory.");
  if (!a.burst) o.fail("tbf: the \"burst\" parameter is mandatory.");
  if (a.peakrate && !a.mtu) o.fail("tbf: when \"peakrate\" is specified, \"mtu\" must also be specified.");
  if (!a.limit && !a.latency_us) o.fail("tbf: either \"limit\" or \"latency\" is required.");
  if (!a.wrapped.empty()) o.fail(a.wrapped);  // docs/tc-compatibility.md
  if (a.latency_us > kU32)  // tc wraps it to 32 bits: refused (docs/tc-compatibility.md)
    o.fail("tbf: illegal value for \"latency\": " + tc::format_time(a.latency_us * 1000) +
           " is 2^32 us or more, which tc would wrap");
  if (a.peakrate && a.peakrate <= a.rate)  // sch_tbf refuses it without an extended ack
    o.reject("RTNETLINK answers: Invalid argument (peakrate " + tc::format_rate(a.peakrate) +
             " is not above rate " + tc::format_rate(a.rate) + ")");
}

// The configuration of checked arguments; a latency becomes the limit tc computes for it.
TbfConfig tbf_config(const QdiscOptions& o, const TbfArgs& a) {
  TbfConfig cfg;
  cfg.rate = a.rate;
  cfg.burst = a.burst;
  cfg.peakrate = a.peakrate;
  cfg.minburst = a.peakrate ? a.mtu : 0;
  cfg.mpu = static_cast<uint32_t>(a.mpu);
  cfg.overhead = a.overhead;
  cfg.atm = a.atm;
  if (a.limit) {
    cfg.limit = static_cast<uint32_t>(a.limit);
  } else {
    // tc: limit = rate * latency + burst, or the peak bucket's equivalent if smaller.
    const double secs = static_cast<double>(a.latency_us) / 1e6;
    double lim = static_cast<double>(cfg.rate) * secs + static_cast<double>(cfg.burst);
    if (cfg.peakrate)
      lim = std::min(lim, static_cast<double>(cfg.peakrate) * secs + static_cast<double>(cfg.minburst));
    // tc wraps such a limit to 32 bits: refused here (docs/tc-compatibility.md).
    if (!(lim < 4294967296.0))
      o.fail("tbf: latency " + tc::format_time(a.latency_us * 1000) +
             " gives a limit above 4294967295 bytes, which tc would wrap");
    cfg.limit = static_cast<uint32_t>(lim);
  }
  return cfg;
}

}  // namespace

std::unique_ptr<Qdisc> make_tbf(const QdiscOptions& o, const QdiscEnv& env) {
  TbfArgs args;
  for (std::size_t i = 0; i < o.size(); ++i) parse_tbf_option(o, i, args);
  check_tbf_args(o, args);
  return std::make_unique<TbfQdisc>(tbf_config(o, args), env.clock, env.psched_mtu());
}

namespace tc {

constinit const QdiscKind kTbfKind = {.name = "tbf", .make = make_tbf,
    .classes = ClassModel::one_for_any, .text = tbf_text, .json = tbf_json};

}  // namespace tc

}  // namespace txpath
