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
#include "tc/qdisc_spec.hpp"
#include "tc/tc_units.hpp"

namespace txpath {

double TbfQdisc::latency_ns() const noexcept {
  double latency = static_cast<double>(cfg_.limit) * 1e9 / static_cast<double>(cfg_.rate) -
                   static_cast<double>(buffer_);
  if (cfg_.peakrate) {
    const double lat2 = static_cast<double>(cfg_.limit) * 1e9 / static_cast<double>(cfg_.peakrate) -
                        static_cast<double>(mtu_ns_);
    latency = std::max(latency, lat2);
  }
  return latency;
}

std::string TbfQdisc::options() const {
  // As tc prints it: burst/minburst as the bucket depth times the rate, i.e. the wire size the
  // bucket holds (overhead, mpu and ATM cells included); "lat" when the limit leaves a
  // non-negative queueing latency, else the limit itself.
  std::string s = "rate " + tc::format_rate(cfg_.rate) + " burst " + tc::format_size(wire_len(cfg_.burst));
  if (cfg_.peakrate) {
    s += " peakrate " + tc::format_rate(cfg_.peakrate) + " minburst " +
         tc::format_size(wire_len(cfg_.minburst));
  }
  const double latency = latency_ns();
  if (latency >= 0) {
    s += " lat " + tc::format_time(static_cast<uint64_t>(latency));
  } else {
    s += " limit " + tc::format_size(cfg_.limit);
  }
  if (cfg_.overhead) s += " overhead " + std::to_string(cfg_.overhead);
  if (cfg_.atm) s += " linklayer atm";
  return s;
}

std::string TbfQdisc::options_json() const {
  std::string s = "{\"rate\":" + std::to_string(cfg_.rate) +
                  ",\"burst\":" + std::to_string(wire_len(cfg_.burst));
  if (cfg_.peakrate) s += ",\"minburst\":" + std::to_string(wire_len(cfg_.minburst));
  const double latency = latency_ns();
  if (latency >= 0) {
    s += ",\"lat\":" + std::to_string(static_cast<uint64_t>(latency) / 1000);  // usec
  } else {
    s += ",\"limit\":" + std::to_string(cfg_.limit);
  }
  if (cfg_.overhead) s += ",\"overhead\":" + std::to_string(cfg_.overhead);
  if (cfg_.atm) s += ",\"linklayer\":\"atm\"";
  s += "}";
  return s;
}

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
