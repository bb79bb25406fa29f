// SPDX-License-Identifier: MIT
// red's tc side: its option parser (make_red), the parameters tc derives from the options before
// the kernel sees them, and the text tc prints for it (options, xstats). The qdisc itself is
// src/qdisc/red.cpp.
//
// Grammar (tc-red(8)): red limit BYTES [min BYTES] [max BYTES] avpkt BYTES [burst PACKETS]
//                          [adaptive] [probability P] [bandwidth RATE] [ecn] [harddrop] [nodrop]
// limit and avpkt are required; max defaults to 3 * min, or limit / 4 without min; min to max / 3;
// burst to (2 * min + max) / (3 * avpkt); probability to 0.02; bandwidth to 10Mbit.
// Derived as tc derives them (docs/background.md, "RED"):
//   Wlog:      the smallest log2(1/W) in 1..31 for which a burst of `burst` packets of avpkt
//              bytes arriving at an empty queue keeps the average under min:
//              burst + 1 - min/avpkt <= (1 - (1-W)^burst) / W;
//   Plog:      the smallest n with probability / (max - min) * 2^n > 1 (used only without max_P);
//   max_P:     probability * 2^32;
//   Scell_log and Stab: the idle decay table, Stab[i] = (i << Scell_log) * -ln(1-W) / t_avpkt
//              capped at 31, t_avpkt the time avpkt bytes take at the bandwidth in psched ticks
//              (64 ns; as tc computes it, while the kernel indexes the table by idle usec).
// Refused as the kernel refuses them (exit 2): nodrop without ecn; min or max whose value
// shifted left by Wlog does not fit 31 bits. Refused by txpath where tc computes nonsense
// (exit 1): probability outside 0..1 (tc's max_P overflows), "bandwidth N%" (no device speed),
// qevent (no filter blocks).
// Origin: written from Linux sch_red / iproute2 q_red.c and tc_red.c semantics; no code copied.
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "qdisc/red.hpp"
#include "tc/qdisc_kinds.hpp"
#include "tc/qdisc_spec.hpp"
#include "tc/tc_units.hpp"

namespace txpath {

namespace {

constexpr uint64_t kDefaultBandwidth = 10'000'000 / 8;  // 10Mbit, in bytes per second
// tc's psched ticks per usec (/proc/net/psched: 1000 ns per usec over 64 ns per tick).
constexpr double kTicksPerUsec = 1000.0 / 64.0;

// What the user said; zero = not given.
struct RedOptions {
  uint32_t limit = 0, min = 0, max = 0, avpkt = 0, burst = 0;
  uint64_t bandwidth = 0;
  double probability = 0.02;
  bool ecn = false, harddrop = false, nodrop = false, adaptive = false;
};

uint32_t parse_bytes(const QdiscOptions& o, std::string_view opt, std::string_view v) {
  const auto n = tc::parse_size(v);
  if (!n || *n > UINT32_MAX) fail_illegal(o, opt, v);
  return static_cast<uint32_t>(*n);
}

double parse_probability(const QdiscOptions& o, std::string_view v) {
  const std::string text(v);
  char* end = nullptr;
  const double p = std::strtod(text.c_str(), &end);
  if (end == text.c_str()) fail_illegal(o, "probability", v);
  if (!(p >= 0 && p <= 1))
    o.fail("probability " + quoted(v) + " is out of range (0 to 1)");
  return p;
}

RedOptions parse_options(const QdiscOptions& o) {
  RedOptions r;
  for (std::size_t i = 0; i < o.size(); ++i) {
    const std::string_view opt = o[i];
    if (opt == "limit" || opt == "min" || opt == "max" || opt == "avpkt") {
      const uint32_t n = parse_bytes(o, opt, o.value(i));
      (opt == "limit" ? r.limit : opt == "min" ? r.min : opt == "max" ? r.max : r.avpkt) = n;
    } else if (opt == "burst") {
      const std::string_view v = o.value(i);
      const auto n = tc::parse_u32(v, 0);
      if (!n) fail_illegal(o, opt, v);
      r.burst = *n;
    } else if (opt == "probability") {
      r.probability = parse_probability(o, o.value(i));
    } else if (opt == "bandwidth") {
      const std::string_view v = o.value(i);
      if (v.find('%') != std::string_view::npos)
        o.fail("bandwidth " + quoted(v) + ": a share of the device speed is not supported (give a rate)");
      const auto rate = tc::parse_rate(v);
      if (!rate || *rate > UINT32_MAX) fail_illegal(o, opt, v);
      r.bandwidth = *rate;
    } else if (opt == "ecn") {
      r.ecn = true;
    } else if (opt == "harddrop") {
      r.harddrop = true;
    } else if (opt == "nodrop") {
      r.nodrop = true;
    } else if (opt == "adaptive" || opt == "adaptative") {
      r.adaptive = true;
    } else {
      o.fail("unknown option " + quoted(opt) +
             " (known: limit, min, max, avpkt, burst, probability, bandwidth, ecn, harddrop, "
             "nodrop, adaptive)");
    }
  }
  return r;
}

// log2(1/W) for the EWMA (see the file comment), or fail.
uint8_t eval_wlog(const QdiscOptions& o, uint32_t min, uint32_t burst, uint32_t avpkt) {
  const double a = double(burst) + 1 - double(min) / avpkt;
  if (a < 1.0)
    o.fail("burst " + std::to_string(burst) + " is too small (try burst " +
           std::to_string(1 + min / avpkt) + ")");
  double w = 0.5;
  for (int wlog = 1; wlog < 32; ++wlog, w /= 2)
    if (a <= (1 - std::pow(1 - w, burst)) / w) return static_cast<uint8_t>(wlog);
  o.fail("failed to calculate the EWMA constant (burst " + std::to_string(burst) + ")");
}

uint8_t eval_plog(const QdiscOptions& o, uint32_t min, uint32_t max, double probability) {
  const auto span = static_cast<int32_t>(max - min);  // as tc computes it: wraps when min > max
  if (span == 0) return 0;
  if (span < 0) o.fail("failed to calculate the probability: min is above max");
  double p = probability / span;
  for (int plog = 0; plog < 32; ++plog, p *= 2)
    if (p > 1.0) return static_cast<uint8_t>(plog);
  o.fail("failed to calculate the probability (too small)");
}

// Scell_log, filling cfg.stab (see the file comment).
uint8_t eval_idle_damping(const QdiscOptions& o, RedConfig& cfg, uint32_t avpkt, uint64_t bandwidth) {
  // tc rounds the usec down, then the ticks.
  const double usec = std::floor(1e6 * double(avpkt) / double(bandwidth));
  const double ticks = std::floor(std::min(usec, double(UINT32_MAX)) * kTicksPerUsec);
  const double lw = -std::log(1.0 - 1.0 / double(1u << cfg.wlog)) / ticks;  // +inf when ticks 0
  const double maxtime = 31 / lw;
  int clog = 0;
  while (clog < 32 && maxtime / std::ldexp(1.0, clog) >= 512) ++clog;
  if (clog >= 32) o.fail("failed to calculate the idle damping table");
  cfg.stab[0] = 0;
  for (int i = 1; i < 255; ++i) {
    const double shift = std::ldexp(double(i), clog) * lw;
    cfg.stab[i] = shift >= 31 ? 31 : static_cast<uint8_t>(shift);
  }
  cfg.stab[255] = 31;
  return static_cast<uint8_t>(clog);
}

}  // namespace

std::unique_ptr<Qdisc> make_red(const QdiscOptions& o, const QdiscEnv& env) {
  const RedOptions r = parse_options(o);
  if (r.limit == 0 || r.avpkt == 0) o.fail("required parameter (limit, avpkt) is missing");
  RedConfig c;
  c.limit = r.limit;
  c.qth_max = r.max ? r.max : (r.min ? r.min * 3 : r.limit / 4);
  c.qth_min = r.min ? r.min : c.qth_max / 3;
  const uint32_t burst = r.burst ? r.burst : (2 * c.qth_min + c.qth_max) / (3 * r.avpkt);
  c.wlog = eval_wlog(o, c.qth_min, burst, r.avpkt);
  c.plog = eval_plog(o, c.qth_min, c.qth_max, r.probability);
  c.scell_log = eval_idle_damping(o, c, r.avpkt, r.bandwidth ? r.bandwidth : kDefaultBandwidth);
  // probability * 2^32 in u32; 1.0 wraps to 0, which the kernel reads as "use Plog".
  c.max_p = static_cast<uint32_t>(static_cast<uint64_t>(r.probability * 4294967296.0));
  c.ecn = r.ecn;
  c.harddrop = r.harddrop;
  c.nodrop = r.nodrop;
  c.adaptive = r.adaptive;
  c.clock = env.clock;
  // The kernel's checks (red_check_params, red_validate_flags).
  if (std::bit_width(c.qth_min) + c.wlog >= 32 || std::bit_width(c.qth_max) + c.wlog >= 32)
    o.reject("min and max shifted by the EWMA constant (Wlog " + std::to_string(c.wlog) +
             ") do not fit 32 bits");
  if (c.qth_max < c.qth_min) o.reject("max is below min");
  if (c.nodrop && !c.ecn) o.reject("nodrop mode is only meaningful with ECN");
  return std::make_unique<RedQdisc>(c);
}

namespace {

// tc's red printer: "limit 1Mb min 100Kb max 300Kb[ ecn][ harddrop][ adaptive][ nodrop]", with
// -d "ewma WLOG probability P Scell_log S" after it (P = max_P as a fraction, %g; "Plog N"
// instead when max_P is 0); -j the numbers and every flag as a boolean.
std::string red_text(const DumpAttrs& a, bool details) {
  std::string s = "limit " + tc::format_size(a.number("limit")) + " min " + tc::format_size(a.number("min")) +
                  " max " + tc::format_size(a.number("max"));
  for (const char* f : {"ecn", "harddrop", "adaptive", "nodrop"})
    if (a.flag(f)) s.append(" ").append(f);
  if (!details) return s;
  s += " ewma " + std::to_string(a.number("ewma")) + " ";
  if (const uint64_t max_p = a.number("max_p")) {
    char p[32];
    std::snprintf(p, sizeof p, "%g", static_cast<double>(max_p) / 4294967296.0);
    s += "probability " + std::string(p) + " ";
  } else {
    s += "Plog " + std::to_string(a.number("plog")) + " ";
  }
  return s + "Scell_log " + std::to_string(a.number("scell_log"));
}

std::string red_json(const DumpAttrs& a, bool) {
  std::string s = "{\"limit\":" + std::to_string(a.number("limit")) + ",\"min\":" + std::to_string(a.number("min")) +
                  ",\"max\":" + std::to_string(a.number("max"));
  for (const char* f : {"ecn", "harddrop", "adaptive", "nodrop"})
    s.append(",\"").append(f).append("\":").append(a.flag(f) ? "true" : "false");
  return s + "}";
}

// "  marked M early E pdrop P other O \n" (tc's trailing space included); "" for no xstats.
std::string red_xstats(const Xstats& x) {
  if (x.empty()) return {};
  std::string s = " ";
  for (std::string_view name : {"marked", "early", "pdrop", "other"}) {
    const int64_t* v = find_xstat(x, name);
    s.append(" ").append(name).append(" ").append(std::to_string(v ? *v : 0));
  }
  return s + " \n";
}

}  // namespace

namespace tc {

constinit const QdiscKind kRedKind = {.name = "red", .make = make_red, .classes = ClassModel::none_found,
    .text = red_text, .json = red_json, .xstats = red_xstats};

}  // namespace tc

}  // namespace txpath
