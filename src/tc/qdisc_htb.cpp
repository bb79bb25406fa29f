// SPDX-License-Identifier: MIT
// htb's tc side: the qdisc's and the classes' option parsers (make_htb, add_class,
// change_class) and the text tc prints for them. The scheduler itself is src/qdisc/htb.cpp.
// Origin: written from Linux sch_htb semantics and tc-htb(8); no kernel or iproute2 code copied.
//
// Qdisc grammar (tokens after "htb", any order, each at most once):
//   default MINOR   hexadecimal u32 (optional 0x prefix)
//   r2q N           decimal u32 (0 is taken as 1)
//   direct_qlen P   decimal u32
//   offload         parsed, then refused (ConfigRejected): no hardware offload here
// Class grammar (tokens after "htb"):
//   rate RATE (required, > 0)  ceil RATE  burst|buffer|maxburst SIZE[/CELL]
//   cburst|cbuffer|cmaxburst SIZE[/CELL]  prio N (0..7, else rejected)  quantum BYTES (decimal)
//   mtu BYTES (decimal)  mpu BYTES (<= 65535)  overhead N (<= 65535)
//   linklayer ethernet|atm|adsl
// Every error is one line, via QdiscOptions::fail() (parse error) or reject() (refused).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "qdisc/htb.hpp"
#include "tc/qdisc_spec.hpp"
#include "tc/tc_units.hpp"
#include "txpath/error.hpp"

namespace txpath {

namespace {

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%x", v);
  return buf;
}

}  // namespace

std::string HtbQdisc::class_options(uint16_t minor) const {
  const Class* c = find(minor);
  if (!c) return {};
  return "prio " + std::to_string(c->cfg.prio) + " rate " + tc::format_rate(c->cfg.rate) +
         " ceil " + tc::format_rate(c->cfg.ceil) + " burst " + tc::format_size(c->cfg.burst) +
         " cburst " + tc::format_size(c->cfg.cburst);
}

std::string HtbQdisc::class_options_json(uint16_t minor) const {
  const Class* c = find(minor);
  if (!c) return "{}";
  return "{\"prio\":" + std::to_string(c->cfg.prio) + ",\"rate\":" + std::to_string(c->cfg.rate) +
         ",\"ceil\":" + std::to_string(c->cfg.ceil) + ",\"burst\":" + std::to_string(c->cfg.burst) +
         ",\"cburst\":" + std::to_string(c->cfg.cburst) + "}";
}

std::string HtbQdisc::format_class_xstats(const Xstats& x) const {
  auto get = [&x](std::string_view name) {
    const int64_t* v = find_xstat(x, name);
    return std::to_string(v ? *v : 0);
  };
  return " lended: " + get("lended") + " borrowed: " + get("borrowed") + " giants: " + get("giants") +
         "\n tokens: " + get("tokens") + " ctokens: " + get("ctokens") + "\n";
}


namespace {

// The class options: every field of HtbClassConfig but the quantum, which needs r2q; the
// explicit quantum (0 = none) is returned in `quantum`.
HtbClassConfig parse_class(const QdiscOptions& o, uint32_t& quantum) {
  constexpr uint64_t kU32 = std::numeric_limits<uint32_t>::max();
  std::optional<uint64_t> rate, ceil, burst, cburst;
  std::optional<uint32_t> prio, mtu, mpu, overhead, q;
  std::optional<bool> atm;
  for (std::size_t i = 0; i < o.size(); ++i) {
    const std::string_view opt = o[i];
    if (opt == "rate" || opt == "ceil") {
      auto& slot = opt == "rate" ? rate : ceil;
      fail_if_seen(o, slot.has_value(), opt);
      const std::string_view v = o.value(i);
      slot = tc::parse_rate(v);
      if (!slot) fail_illegal(o, opt, v);
    } else if (opt == "burst" || opt == "buffer" || opt == "maxburst" || opt == "cburst" ||
               opt == "cbuffer" || opt == "cmaxburst") {
      const bool c = opt[0] == 'c';
      auto& slot = c ? cburst : burst;
      fail_if_seen(o, slot.has_value(), c ? "cburst" : "burst");
      const std::string_view v = o.value(i);
      slot = tc::parse_size_cell(v);
      if (!slot) fail_illegal(o, opt, v);
      if (*slot > kU32) o.fail(quoted(opt) + " " + quoted(v) + " is out of range (max 4294967295 bytes)");
    } else if (opt == "prio" || opt == "mtu" || opt == "quantum") {
      auto& slot = opt == "prio" ? prio : opt == "mtu" ? mtu : q;
      fail_if_seen(o, slot.has_value(), opt);
      const std::string_view v = o.value(i);
      slot = tc::parse_u32(v);
      if (!slot) fail_illegal(o, opt, v);
    } else if (opt == "mpu" || opt == "overhead") {
      auto& slot = opt == "mpu" ? mpu : overhead;
      fail_if_seen(o, slot.has_value(), opt);
      slot = parse_u16_option(o, opt, o.value(i));
    } else if (opt == "linklayer") {
      fail_if_seen(o, atm.has_value(), opt);
      atm = parse_linklayer_atm(o, o.value(i));
    } else {
      o.fail("unknown option " + quoted(opt) +
             " (known: rate, ceil, burst, cburst, prio, quantum, mtu, mpu, overhead, linklayer)");
    }
  }
  if (!rate || *rate == 0) o.fail("\"rate\" is required");
  HtbClassConfig cfg;
  cfg.rate = *rate;
  cfg.ceil = ceil && *ceil ? *ceil : *rate;
  cfg.mtu = mtu.value_or(1600);
  // tc: a burst of 0 (or none) is rate / hz + mtu, with hz = 1e9 on high-resolution kernels.
  cfg.burst = burst && *burst ? *burst : cfg.rate / 1'000'000'000u + cfg.mtu;
  cfg.cburst = cburst && *cburst ? *cburst : cfg.ceil / 1'000'000'000u + cfg.mtu;
  cfg.mpu = mpu.value_or(0);
  cfg.overhead = overhead.value_or(0);
  cfg.atm = atm.value_or(false);
  if (prio && *prio >= static_cast<uint32_t>(HtbQdisc::kPrios))
    o.reject("prio " + std::to_string(*prio) + " is out of range (0..7)");
  cfg.prio = prio.value_or(0);
  quantum = q.value_or(0);
  return cfg;
}

}  // namespace

// tc class add / change: the options parsed here, the class tree changed by htb.cpp, whose
// refusals (ConfigRejected) get the options' context ("class \"1:10 htb ...\": ").
void HtbQdisc::add_class(uint16_t minor, uint16_t parent_minor, const QdiscOptions& options,
                         const QdiscEnv& env) {
  uint32_t quantum = 0;
  HtbClassConfig cfg = parse_class(options, quantum);
  cfg.quantum = quantum;
  try {
    add_configured_class(minor, parent_minor, cfg, env.txqueuelen);
  } catch (const ConfigRejected& e) {
    options.reject(e.what());
  }
}

void HtbQdisc::change_class(uint16_t minor, const QdiscOptions& options, const QdiscEnv& env) {
  (void)env;
  uint32_t quantum = 0;
  HtbClassConfig cfg = parse_class(options, quantum);
  cfg.quantum = quantum;
  try {
    change_configured_class(minor, cfg);
  } catch (const ConfigRejected& e) {
    options.reject(e.what());
  }
}

std::string HtbQdisc::options() const {
  return "r2q " + std::to_string(r2q_) + " default " + (defcls_ ? "0x" + hex(defcls_) : std::string("0")) +
         " direct_packets_stat " + std::to_string(direct_pkts_) + " direct_qlen " +
         std::to_string(direct_qlen_);
}

std::string HtbQdisc::options_json() const {
  return "{\"r2q\":" + std::to_string(r2q_) + ",\"default\":\"" +
         (defcls_ ? "0x" + hex(defcls_) : std::string("0")) +
         "\",\"direct_packets_stat\":" + std::to_string(direct_pkts_) +
         ",\"direct_qlen\":" + std::to_string(direct_qlen_) + "}";
}

std::unique_ptr<Qdisc> make_htb(const QdiscOptions& o, const QdiscEnv& env) {
  std::optional<uint32_t> defcls, r2q, direct_qlen;
  bool offload = false;
  for (std::size_t i = 0; i < o.size(); ++i) {
    const std::string_view opt = o[i];
    if (opt == "default" || opt == "r2q" || opt == "direct_qlen") {
      auto& slot = opt == "default" ? defcls : opt == "r2q" ? r2q : direct_qlen;
      fail_if_seen(o, slot.has_value(), opt);
      const std::string_view v = o.value(i);
      slot = tc::parse_u32(v, opt == "default" ? 16 : 10);
      if (!slot) fail_illegal(o, opt, v);
    } else if (opt == "offload") {
      offload = true;
    } else {
      o.fail("unknown option " + quoted(opt) + " (known: default, r2q, direct_qlen, offload)");
    }
  }
  if (offload) o.reject("htb offload needs a device with hardware tc offload (none here)");
  // The kernel's default direct queue is the device's txqueuelen, at least 2.
  const uint32_t dq = direct_qlen ? *direct_qlen : std::max<uint32_t>(env.txqueuelen, 2);
  return std::make_unique<HtbQdisc>(defcls.value_or(0), r2q.value_or(10), dq, env);
}

}  // namespace txpath
