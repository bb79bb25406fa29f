// SPDX-License-Identifier: MIT
// htb's tc side: the qdisc's and the classes' option parsers (make_htb, add_class,
// change_class) and the text tc prints for them. The scheduler itself is src/qdisc/htb.cpp.
// Origin: written from Linux sch_htb semantics and tc-htb(8); no kernel or iproute2 code copied.
//
// Qdisc grammar (tokens after "htb"; as tc reads them: each option also by a prefix, a later
// value overriding an earlier one, tc's messages):
//   default MINOR   hexadecimal u32 (optional 0x prefix)
//   r2q N           decimal u32 (the kernel's int: below 1, or 2^31 and above, is 1)
//   direct_qlen P   decimal u32 (4294967295: not given, the device's txqueuelen)
//   debug N         ignored
//   offload         parsed, then refused (ConfigRejected): no hardware offload here
// Class grammar (tokens after "htb"):
//   rate RATE (required, > 0)  ceil RATE  burst|buffer|maxburst SIZE[/CELL]
//   cburst|cbuffer|cmaxburst SIZE[/CELL]  prio N (above 7: 7, as the kernel takes it)
//   quantum BYTES (decimal)  mtu BYTES (decimal)  mpu BYTES (<= 65535)  overhead N (<= 65535)
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
#include <unordered_map>
#include <vector>

#include "qdisc/htb.hpp"
#include "tc/psched.hpp"
#include "tc/qdisc_kinds.hpp"
#include "tc/qdisc_spec.hpp"
#include "tc/tc_units.hpp"
#include "txpath/error.hpp"

namespace txpath {

namespace {

// tc's "not given" for direct_qlen: ~0.
constexpr uint32_t kHtbUnset = std::numeric_limits<uint32_t>::max();

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%x", v);
  return buf;
}

}  // namespace

std::string HtbQdisc::class_warning(uint16_t minor) const {
  const Class* c = find(minor);
  if (!c || c->level != 0 || c->quantum_given) return {};
  const uint64_t q = c->cfg.rate / r2q_;
  if (q >= 1000 && q <= 200000) return {};
  char id[16];
  std::snprintf(id, sizeof id, "%X", (uint32_t{handle_major_} << 16) | minor);
  return std::string("Warning: sch_htb: quantum of class ") + id + " is " + (q < 1000 ? "small" : "big") +
         ". Consider r2q change.";
}

// The kernel lists classes by its class hash: buckets of hash(classid) (classid ^= classid >> 8,
// then ^= classid >> 4, masked to the table size), each a list with the newest class first; the
// table starts at 4 buckets and doubles after an insert leaves it more than 3/4 full, rehashing
// bucket by bucket, each moved class again put first. Modelled over the classes in creation
// order; a deleted class's growth of the table is not remembered (the configuration keeps no
// history).
std::vector<QdiscClassInfo> HtbQdisc::listed_classes() const {
  const auto bucket = [this](const Class* c, std::size_t size) {
    uint32_t id = (uint32_t{handle_major_} << 16) | c->minor;
    id ^= id >> 8;
    id ^= id >> 4;
    return id & (size - 1);
  };
  std::vector<std::vector<const Class*>> table(4);  // each bucket newest first
  std::size_t count = 0;
  for (const auto& owned : classes_) {
    auto& b = table[bucket(owned.get(), table.size())];
    b.insert(b.begin(), owned.get());
    if (++count * 4 <= table.size() * 3) continue;
    std::vector<std::vector<const Class*>> grown(table.size() * 2);
    for (const auto& old : table)
      for (const Class* c : old) {
        auto& g = grown[bucket(c, grown.size())];
        g.insert(g.begin(), c);
      }
    table = std::move(grown);
  }
  std::unordered_map<uint16_t, QdiscClassInfo> info;
  for (const QdiscClassInfo& i : classes()) info.emplace(i.minor, i);
  std::vector<QdiscClassInfo> out;
  out.reserve(info.size());
  for (const auto& b : table)
    for (const Class* c : b) out.push_back(info.at(c->minor));
  return out;
}

namespace {

constexpr std::string_view kHtbUsage = "Usage: ... qdisc add ... htb [default N] [r2q N]";

// tc's matches(): `opt` is a non-empty prefix of `word`.
bool matches(std::string_view opt, std::string_view word) {
  return !opt.empty() && word.substr(0, opt.size()) == opt;
}

// tc's htb message for a bad value of option `name` (as given, for the bursts).
[[noreturn]] void fail_htb_value(const QdiscOptions& o, std::string_view name) {
  o.fail("Illegal " + quoted(name));
}

// A u32 (base 10) or, with `u16`, a u16 value of option `name`, as tc's get_u32 / get_u16 read it.
uint32_t htb_number(const QdiscOptions& o, std::string_view name, std::string_view v, bool u16 = false) {
  const auto n = tc::parse_u32(v);
  if (!n || (u16 && *n > 65535)) fail_htb_value(o, name);
  return *n;
}

// The class options as tc reads them (its option names, prefixes and messages; a later value
// overrides an earlier one but for rate and ceil); 0 where not given.
struct HtbClassArgs {
  uint64_t rate = 0, ceil = 0, burst = 0, cburst = 0;
  uint32_t prio = 0, mtu = 1600, mpu = 0, overhead = 0, quantum = 0;
  bool atm = false;
  // A negative rate or ceil, which tc takes and wraps: refused once the options parsed as tc
  // parses them (tc's own errors come first).
  std::string wrapped;
};

void parse_class_option(const QdiscOptions& o, std::size_t& i, HtbClassArgs& a) {
  constexpr uint64_t kU32 = std::numeric_limits<uint32_t>::max();
  const std::string_view opt = o[i];
  if (matches(opt, "prio") || matches(opt, "mtu") || matches(opt, "quantum")) {
    const std::string_view name = matches(opt, "prio") ? "prio" : matches(opt, "mtu") ? "mtu" : "quantum";
    (name == "prio" ? a.prio : name == "mtu" ? a.mtu : a.quantum) = htb_number(o, name, o.value(i));
  } else if (matches(opt, "mpu") || matches(opt, "overhead")) {
    const std::string_view name = matches(opt, "mpu") ? "mpu" : "overhead";
    (name == "mpu" ? a.mpu : a.overhead) = htb_number(o, name, o.value(i), /*u16=*/true);
  } else if (matches(opt, "linklayer")) {
    const auto atm = linklayer_is_atm(o.value(i));
    if (!atm) fail_htb_value(o, "linklayer");
    a.atm = *atm;
  } else if (matches(opt, "burst") || opt == "buffer" || opt == "maxburst" || matches(opt, "cburst") ||
             opt == "cbuffer" || opt == "cmaxburst") {
    const std::string_view v = o.value(i);
    const auto n = tc::parse_size_cell(v);
    if (!n || *n > kU32) fail_htb_value(o, opt);
    (opt[0] == 'c' ? a.cburst : a.burst) = *n;
  } else if (opt == "rate" || opt == "ceil") {
    const std::string_view v = o.value(i);
    uint64_t& slot = opt == "rate" ? a.rate : a.ceil;
    if (slot) o.fail("Double " + quoted(opt) + " spec");
    auto r = tc::parse_rate(v);
    const auto magnitude = !r && v.size() > 1 && v[0] == '-' ? tc::parse_rate(v.substr(1)) : std::nullopt;
    if (magnitude && *magnitude == 0) r = 0;  // tc's double -> integer: 0 as well
    if (magnitude && *magnitude != 0) {
      if (a.wrapped.empty()) a.wrapped = "Illegal " + quoted(opt) + ": " + quoted(v) + " (tc would wrap it)";
      r = 1;  // non-zero, as tc's wrapped value
    }
    if (!r) fail_htb_value(o, opt);
    slot = *r;
  } else if (opt == "help") {
    o.fail(std::string(kHtbUsage));
  } else {
    o.fail("What is " + quoted(opt) + "?");
  }
}

// The class options: every field of HtbClassConfig but the quantum, which needs r2q; the
// explicit quantum (0 = none) is returned in `quantum`.
HtbClassConfig parse_class(const QdiscOptions& o, uint32_t& quantum) {
  HtbClassArgs a;
  for (std::size_t i = 0; i < o.size(); ++i) parse_class_option(o, i, a);
  if (!a.rate) o.fail("\"rate\" is required.");
  if (!a.wrapped.empty()) o.fail(a.wrapped);  // docs/tc-compatibility.md
  HtbClassConfig cfg;
  cfg.rate = a.rate;
  cfg.ceil = a.ceil ? a.ceil : a.rate;
  cfg.mtu = a.mtu;
  // tc: a burst of 0 (or none) is rate / hz + mtu, with hz = 1e9 on high-resolution kernels.
  cfg.burst = a.burst ? a.burst : cfg.rate / 1'000'000'000u + cfg.mtu;
  cfg.cburst = a.cburst ? a.cburst : cfg.ceil / 1'000'000'000u + cfg.mtu;
  // What the kernel holds: tc's transmit times of the bursts, in whole psched ticks.
  cfg.buffer_ns = uint64_t{tc::tc_xmittime_ticks(cfg.rate, cfg.burst)} * tc::kPschedTickNs;
  cfg.cbuffer_ns = uint64_t{tc::tc_xmittime_ticks(cfg.ceil, cfg.cburst)} * tc::kPschedTickNs;
  cfg.mpu = a.mpu;
  cfg.overhead = a.overhead;
  cfg.atm = a.atm;
  // The kernel takes a priority above the last one as the last one (sch_htb: TC_HTB_NUMPRIO - 1).
  cfg.prio = std::min<uint32_t>(a.prio, HtbQdisc::kPrios - 1);
  quantum = a.quantum;
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

std::unique_ptr<Qdisc> make_htb(const QdiscOptions& o, const QdiscEnv& env) {
  // tc's parser: options by a prefix, a later value overriding an earlier one.
  uint32_t defcls = 0, r2q = 10, direct_qlen = kHtbUnset;
  bool offload = false;
  for (std::size_t i = 0; i < o.size(); ++i) {
    const std::string_view opt = o[i];
    if (matches(opt, "r2q") || matches(opt, "default") || matches(opt, "direct_qlen")) {
      const std::string_view name = matches(opt, "r2q") ? "r2q" : matches(opt, "default") ? "default" : "direct_qlen";
      const auto n = tc::parse_u32(o.value(i), name == "default" ? 16 : 10);
      if (!n) fail_htb_value(o, name);
      (name == "r2q" ? r2q : name == "default" ? defcls : direct_qlen) = *n;
    } else if (matches(opt, "debug")) {
      (void)o.value(i);  // the kernel ignores it
    } else if (matches(opt, "offload")) {
      offload = true;
    } else {
      o.fail("What is " + quoted(opt) + "?");
    }
  }
  if (offload) o.reject("hw-tc-offload ethtool feature flag must be on. (no device here offloads tc)");
  // The kernel keeps r2q in an int and takes one below 1 as 1 (4294967295 is -1: 1).
  if (r2q == 0 || r2q > static_cast<uint32_t>(std::numeric_limits<int32_t>::max())) r2q = 1;
  // tc does not send direct_qlen 4294967295 (its "unset"): the kernel's default is the device's
  // txqueuelen.
  const uint32_t dq = direct_qlen != kHtbUnset ? direct_qlen : env.txqueuelen;
  return std::make_unique<HtbQdisc>(defcls, r2q, dq, env);
}

namespace {

std::string htb_default(const DumpAttrs& a) {
  const uint64_t d = a.number("default");
  return d ? "0x" + hex(static_cast<uint32_t>(d)) : std::string("0");
}

// tc's text of the qdisc: with -d the version of the kernel's htb interface before direct_qlen.
std::string htb_text(const DumpAttrs& a, bool details) {
  return "r2q " + std::to_string(a.number("r2q")) + " default " + htb_default(a) +
         " direct_packets_stat " + std::to_string(a.number("direct_packets_stat")) +
         (details ? " ver " + std::string(a.word("ver")) : "") + " direct_qlen " +
         std::to_string(a.number("direct_qlen"));
}

std::string htb_json(const DumpAttrs& a, bool details) {
  return "{\"r2q\":" + std::to_string(a.number("r2q")) + ",\"default\":\"" + htb_default(a) +
         "\",\"direct_packets_stat\":" + std::to_string(a.number("direct_packets_stat")) +
         (details ? ",\"ver\":\"" + std::string(a.word("ver")) + "\"" : "") +
         ",\"direct_qlen\":" + std::to_string(a.number("direct_qlen")) + "}";
}

// A class's burst or cburst as tc derives it from the ticks the kernel holds (tc/psched.hpp).
uint32_t bucket_bytes(const DumpAttrs& a, std::string_view rate, std::string_view ticks) {
  return tc::tc_xmitsize(a.number(rate), static_cast<uint32_t>(a.number(ticks)));
}

// What tc prints of a class (tc's q_htb.c over htb_dump_class): prio (and with -d quantum) for
// a leaf only; the rate, its overhead, the ceil, the link layer (always with -d), the bucket
// sizes, with -d their cell sizes (the kernel reports none: "/1"), mpu and the level.
std::string htb_class_text(const DumpAttrs& a, bool details) {
  if (a.empty()) return {};
  const bool leaf = a.number("level") == 0;
  const bool atm = a.word("linklayer") == "atm";
  std::string s;
  if (leaf) {
    s += "prio " + std::to_string(a.number("prio")) + " ";
    if (details) s += "quantum " + std::to_string(a.number("quantum")) + " ";
  }
  s += "rate " + tc::format_rate(a.number("rate")) + " ";
  if (a.number("overhead")) s += "overhead " + std::to_string(a.number("overhead")) + " ";
  s += "ceil " + tc::format_rate(a.number("ceil")) + " ";
  if (atm || details) s += atm ? "linklayer atm " : "linklayer ethernet ";
  const std::string burst = tc::format_size(bucket_bytes(a, "rate", "buffer"));
  const std::string cburst = tc::format_size(bucket_bytes(a, "ceil", "cbuffer"));
  const std::string mpu = tc::format_size(a.number("mpu"));
  if (details)
    s += "burst " + burst + "/1 mpu " + mpu + " cburst " + cburst + "/1 mpu " + mpu + " level " +
         std::to_string(a.number("level"));
  else
    s += "burst " + burst + " cburst " + cburst;
  return s;
}

// tc 6.1 prints class options as text even with -j; ours are the text's values as numbers.
std::string htb_class_json(const DumpAttrs& a, bool) {
  if (a.empty()) return "{}";
  std::string s = "{";
  if (a.number("level") == 0) s += "\"prio\":" + std::to_string(a.number("prio")) + ",";
  s += "\"rate\":" + std::to_string(a.number("rate"));
  if (a.number("overhead")) s += ",\"overhead\":" + std::to_string(a.number("overhead"));
  s += ",\"ceil\":" + std::to_string(a.number("ceil"));
  if (a.word("linklayer") == "atm") s += ",\"linklayer\":\"atm\"";
  s += ",\"burst\":" + std::to_string(bucket_bytes(a, "rate", "buffer"));
  s += ",\"cburst\":" + std::to_string(bucket_bytes(a, "ceil", "cbuffer"));
  return s + "}";
}

std::string htb_class_xstats(const Xstats& x) {
  auto get = [&x](std::string_view name) {
    const int64_t* v = find_xstat(x, name);
    return std::to_string(v ? *v : 0);
  };
  return " lended: " + get("lended") + " borrowed: " + get("borrowed") + " giants: " + get("giants") +
         "\n tokens: " + get("tokens") + " ctokens: " + get("ctokens") + "\n\n";  // tc: an empty line after
}

}  // namespace

namespace tc {

constinit const QdiscKind kHtbKind = {.name = "htb", .make = make_htb, .classes = ClassModel::explicit_,
    .change_op = false, .options_end_with_space = false, .text = htb_text, .json = htb_json,
    .class_text = htb_class_text, .class_json = htb_class_json, .class_xstats = htb_class_xstats};

}  // namespace tc

}  // namespace txpath
