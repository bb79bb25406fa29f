// SPDX-License-Identifier: MIT
// tbf's tc side: its option parser (make_tbf) and the text tc prints for it. The shaper itself is
// src/qdisc/tbf.cpp. Origin: written from Linux sch_tbf semantics and tc-tbf(8); no code copied.
//
// Grammar (tokens after "tbf"; option names exact, "lat" also accepted for latency as tc's
// prefix matching does):
//   rate RATE  burst|buffer|maxburst BYTES[/CELL]  ( latency|lat TIME | limit BYTES )
//   [mpu BYTES] [peakrate RATE  mtu|minburst BYTES[/CELL]] [overhead N] [linklayer ethernet|atm|adsl]
// rate, burst and one of latency/limit are mandatory; peakrate needs mtu and must exceed rate.
// latency becomes limit = min(rate * latency + burst, peakrate * latency + mtu), as tc computes
// it. CELL (a power of two) only sized tc's legacy rate tables: it is checked and ignored. mtu
// without peakrate is accepted and ignored (tc uses it for the rate table only).
// Every error is one line, via QdiscOptions::fail().
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "qdisc/tbf.hpp"
#include "tc/psched.hpp"
#include "tc/qdisc_spec.hpp"
#include "tc/tc_units.hpp"

namespace txpath {

namespace {

// What the kernel reports for a tbf (tbf_dump) and tc derives from it (tc's q_tbf.c), in the
// psched tick model (tc/psched.hpp): the buckets as ticks of the kernel's nanoseconds (the
// kernel takes the burst in bytes, TCA_TBF_BURST, and times it at the rate with the framing),
// turned back into sizes by tc; the latency from the limit and the ticks, in whole us.
struct TbfDump {
  uint32_t burst = 0;     // bytes, as tc prints them
  uint32_t minburst = 0;  // bytes (peak bucket; with a peak rate)
  bool has_minburst = false;  // tc prints it when the peak bucket has ticks, or mpu is set
  bool has_latency = false;
  uint64_t latency_us = 0;
};

TbfDump tbf_dump(const TbfQdisc& q) {
  const TbfConfig& cfg = q.config();
  TbfDump d;
  const uint32_t ticks = tc::ns_to_ticks(tc::kernel_l2t_ns(cfg.rate, q.wire_len(cfg.burst)));
  d.burst = tc::tc_xmitsize(cfg.rate, ticks);
  double latency = 1e6 * (static_cast<double>(cfg.limit) / static_cast<double>(cfg.rate)) -
                   static_cast<double>(tc::tc_ticks_to_usec(ticks));
  if (cfg.peakrate) {
    const uint32_t mtu = tc::ns_to_ticks(tc::kernel_l2t_ns(cfg.peakrate, q.wire_len(cfg.minburst)));
    d.minburst = tc::tc_xmitsize(cfg.peakrate, mtu);
    d.has_minburst = mtu != 0 || cfg.mpu != 0;
    const double lat2 = 1e6 * (static_cast<double>(cfg.limit) / static_cast<double>(cfg.peakrate)) -
                        static_cast<double>(tc::tc_ticks_to_usec(mtu));
    latency = std::max(latency, lat2);
  }
  d.has_latency = latency >= 0;
  if (d.has_latency) d.latency_us = static_cast<uint64_t>(latency);
  return d;
}

// tc's text for a tbf; `details` (-d) adds the cell sizes (always 1: the kernel reports none),
// mpu and the link layer.
std::string tbf_text(const TbfQdisc& q, bool details) {
  const TbfConfig& cfg = q.config();
  const TbfDump d = tbf_dump(q);
  std::string s = "rate " + tc::format_rate(cfg.rate) + " burst " + tc::format_size(d.burst);
  if (details) s += "/1 mpu " + tc::format_size(cfg.mpu);
  if (cfg.peakrate) {
    s += " peakrate " + tc::format_rate(cfg.peakrate);
    if (d.has_minburst)
      s += details ? " mtu " + tc::format_size(d.minburst) + "/1 mpu " + tc::format_size(cfg.mpu)
                 : " minburst " + tc::format_size(d.minburst);
  }
  if (d.has_latency) s += " lat " + tc::format_time(static_cast<uint32_t>(d.latency_us) * uint64_t{1000});
  else s += " limit " + tc::format_size(cfg.limit);
  if (cfg.overhead) s += " overhead " + std::to_string(cfg.overhead);
  if (cfg.atm || details) s += cfg.atm ? " linklayer atm" : " linklayer ethernet";
  return s;
}

// tc -j: the same keys as the text, but "peakrate" (tc prints it in text only); with -d "burst"
// and "mtu" are the text's "SIZE/1" strings.
std::string tbf_json(const TbfQdisc& q, bool details) {
  const TbfConfig& cfg = q.config();
  const TbfDump d = tbf_dump(q);
  std::string s = "{\"rate\":" + std::to_string(cfg.rate);
  if (details) s += ",\"burst\":\"" + tc::format_size(d.burst) + "/1\",\"mpu\":" + std::to_string(cfg.mpu);
  else s += ",\"burst\":" + std::to_string(d.burst);
  if (d.has_minburst) {
    if (details)
      s += ",\"mtu\":\"" + tc::format_size(d.minburst) + "/1\",\"mpu\":" + std::to_string(cfg.mpu);
    else
      s += ",\"minburst\":" + std::to_string(d.minburst);
  }
  if (d.has_latency) s += ",\"lat\":" + std::to_string(d.latency_us);
  else s += ",\"limit\":" + std::to_string(cfg.limit);
  if (cfg.overhead) s += ",\"overhead\":" + std::to_string(cfg.overhead);
  if (cfg.atm || details) s += cfg.atm ? ",\"linklayer\":\"atm\"" : ",\"linklayer\":\"ethernet\"";
  return s + "}";
}

}  // namespace

std::string TbfQdisc::options() const { return tbf_text(*this, false); }
std::string TbfQdisc::details_options() const { return tbf_text(*this, true); }
std::string TbfQdisc::options_json() const { return tbf_json(*this, false); }
std::string TbfQdisc::details_options_json() const { return tbf_json(*this, true); }

// ---------------------------------------------------------------------------------------------
// Option parsing

namespace {

constexpr uint64_t kU32 = std::numeric_limits<uint32_t>::max();

// The options as given (none has a default before all are read).
struct TbfArgs {
  std::optional<uint64_t> rate, peakrate, burst, mtu, limit, latency_ns;
  std::optional<uint32_t> mpu, overhead;
  std::optional<bool> atm;
};

// SIZE[/CELL] of "burst" or "mtu" (`name`; `opt` is the spelling given), at most 4 GiB.
uint64_t parse_bucket(const QdiscOptions& o, std::string_view opt, std::string_view name,
                      std::string_view v) {
  const auto sc = tc::parse_size_cell(v);
  if (!sc) fail_illegal(o, opt, v);
  if (name == "burst" && *sc == 0) o.fail("\"burst\" must be greater than 0");
  if (*sc > kU32) o.fail(quoted(name) + " " + quoted(v) + " is out of range (max 4294967295 bytes)");
  return *sc;
}

// The limit or the latency (they exclude each other).
void parse_queue_bound(const QdiscOptions& o, std::string_view opt, std::string_view v, TbfArgs& a) {
  if (opt == "limit") {
    a.limit = tc::parse_size(v);
    if (!a.limit) fail_illegal(o, opt, v);
    if (*a.limit > kU32) o.fail("\"limit\" " + quoted(v) + " is out of range (max 4294967295 bytes)");
  } else {
    a.latency_ns = tc::parse_time_ns(v);
    if (!a.latency_ns) fail_illegal(o, "latency", v);
  }
}

// Option o[i] and its value (i advances past it).
void parse_tbf_option(const QdiscOptions& o, std::size_t& i, TbfArgs& a) {
  const std::string_view opt = o[i];
  if (opt == "rate" || opt == "peakrate") {
    auto& slot = opt == "rate" ? a.rate : a.peakrate;
    fail_if_seen(o, slot.has_value(), opt);
    const std::string_view v = o.value(i);
    slot = tc::parse_rate(v);
    if (!slot) fail_illegal(o, opt, v);
    if (*slot == 0) o.fail(quoted(opt) + " must be greater than 0");
  } else if (opt == "burst" || opt == "buffer" || opt == "maxburst" || opt == "mtu" || opt == "minburst") {
    const bool is_burst = opt[0] == 'b' || opt == "maxburst";
    auto& slot = is_burst ? a.burst : a.mtu;
    fail_if_seen(o, slot.has_value(), is_burst ? "burst" : "mtu");
    slot = parse_bucket(o, opt, is_burst ? "burst" : "mtu", o.value(i));
  } else if (opt == "limit" || opt == "latency" || opt == "lat") {
    fail_if_seen(o, opt == "limit" ? a.limit.has_value() : a.latency_ns.has_value(),
                 opt == "limit" ? "limit" : "latency");
    if (opt == "limit" ? a.latency_ns.has_value() : a.limit.has_value())
      o.fail("specifying both \"latency\" and \"limit\" is not allowed");
    parse_queue_bound(o, opt, o.value(i), a);
  } else if (opt == "mpu") {
    fail_if_seen(o, a.mpu.has_value(), "mpu");
    const std::string_view v = o.value(i);
    const auto b = tc::parse_size(v);
    if (!b) fail_illegal(o, opt, v);
    if (*b > 65535) o.fail("\"mpu\" " + quoted(v) + " is out of range (max 65535 bytes)");
    a.mpu = static_cast<uint32_t>(*b);
  } else if (opt == "overhead") {
    fail_if_seen(o, a.overhead.has_value(), "overhead");
    a.overhead = parse_u16_option(o, opt, o.value(i));
  } else if (opt == "linklayer") {
    fail_if_seen(o, a.atm.has_value(), "linklayer");
    a.atm = parse_linklayer_atm(o, o.value(i));
  } else {
    o.fail("unknown option " + quoted(opt) +
           " (known: rate, burst, buffer, maxburst, latency, limit, mpu, peakrate, mtu, minburst, "
           "overhead, linklayer)");
  }
}

// The mandatory options and how they fit together.
void check_tbf_args(const QdiscOptions& o, const TbfArgs& a) {
  if (!a.rate) o.fail("\"rate\" is required");
  if (!a.burst) o.fail("\"burst\" is required");
  if (!a.limit && !a.latency_ns) o.fail("either \"limit\" or \"latency\" is required");
  if (a.peakrate) {
    if (!a.mtu || *a.mtu == 0) o.fail("\"mtu\" is required, if \"peakrate\" is requested");
    if (*a.peakrate <= *a.rate)
      o.fail("peakrate " + tc::format_rate(*a.peakrate) + " must be greater than rate " +
             tc::format_rate(*a.rate));
  }
}

// The configuration of checked arguments; a latency becomes the limit tc computes for it.
TbfConfig tbf_config(const QdiscOptions& o, const TbfArgs& a) {
  const auto& [rate, peakrate, burst, mtu, limit, latency_ns, mpu, overhead, atm] = a;
  TbfConfig cfg;
  cfg.rate = *rate;
  cfg.burst = *burst;
  cfg.peakrate = peakrate.value_or(0);
  cfg.minburst = peakrate ? *mtu : 0;
  cfg.mpu = mpu.value_or(0);
  cfg.overhead = overhead.value_or(0);
  cfg.atm = atm.value_or(false);
  if (limit) {
    if (*limit == 0) o.fail("\"limit\" must be greater than 0");
    cfg.limit = static_cast<uint32_t>(*limit);
  } else {
    // tc: limit = rate * latency + burst, or the peak bucket's equivalent if smaller.
    const double secs = static_cast<double>(*latency_ns) / 1e9;
    double lim = static_cast<double>(cfg.rate) * secs + static_cast<double>(cfg.burst);
    if (cfg.peakrate)
      lim = std::min(lim, static_cast<double>(cfg.peakrate) * secs + static_cast<double>(cfg.minburst));
    if (!(lim < 4294967296.0))
      o.fail("latency " + tc::format_time(*latency_ns) + " gives a limit above 4294967295 bytes");
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

}  // namespace txpath
