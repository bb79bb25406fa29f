// SPDX-License-Identifier: MIT
// fq's tc side: its option parser (make_fq; grammar and defaults in src/qdisc/fq.hpp), the
// options a change merges, its printers (options, xstats) and its row of the kind table. The
// qdisc itself is src/qdisc/fq.cpp. Origin: written from Linux sch_fq / iproute2 q_fq.c semantics
// (docs/architecture.md, "Qdiscs"); no code copied.
#include <charconv>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "qdisc/fq.hpp"
#include "tc/qdisc_kinds.hpp"
#include "tc/qdisc_spec.hpp"
#include "tc/tc_units.hpp"

namespace txpath {

namespace {

constexpr uint32_t kMaxQuantum = 1u << 20;  // the kernel's limit on quantum
constexpr uint32_t kMaxBucketsLog = 18;     // and on log2(buckets)
constexpr int32_t kMinWeight = 16384;       // and the smallest band weight

}  // namespace

namespace {

// tc's fq printer (q_fq.c): every option, maxrate, low_rate_threshold and ce_threshold only when
// set; -j the dump's numbers, "pacing":false only when off, and the two arrays named with a
// trailing space as tc names them (docs/background.md, "tc's JSON").
std::string fq_text(const DumpAttrs& a, bool) {
  auto num = [&a](std::string_view name) { return std::to_string(a.number(name)); };
  std::string s = "limit " + num("limit") + "p flow_limit " + num("flow_limit") + "p buckets " + num("buckets") +
                  " orphan_mask " + num("orphan_mask");
  if (!a.flag("pacing")) s += " nopacing";
  s += " bands " + num("bands") + " priomap";
  for (uint64_t b : a.array("priomap")) s.append(" ").append(std::to_string(b));
  s += " weights";
  for (uint64_t w : a.array("weights")) s.append(" ").append(std::to_string(w));
  s += " quantum " + tc::format_size(a.number("quantum")) + " initial_quantum " +
       tc::format_size(a.number("initial_quantum"));
  if (a.number("maxrate") != FqConfig::kUnlimited) s += " maxrate " + tc::format_rate(a.number("maxrate"));
  if (a.number("low_rate_threshold") != 0)
    s += " low_rate_threshold " + tc::format_rate(a.number("low_rate_threshold"));
  s += " refill_delay " + tc::format_time(a.number("refill_delay") * 1000);
  if (a.number("ce_threshold") != FqConfig::kUnlimited)
    s += " ce_threshold " + tc::format_time(a.number("ce_threshold") * 1000);
  s += " timer_slack " + tc::format_time64(a.number("timer_slack"));
  s += " horizon " + tc::format_time(a.number("horizon") * 1000);
  s += a.flag("horizon_drop") ? " horizon_drop" : " horizon_cap";
  return s;
}

std::string fq_json(const DumpAttrs& a, bool) {
  auto num = [&a](std::string_view name) { return std::to_string(a.number(name)); };
  std::string s = "{\"limit\":" + num("limit") + ",\"flow_limit\":" + num("flow_limit") +
                  ",\"buckets\":" + num("buckets") + ",\"orphan_mask\":" + num("orphan_mask");
  if (!a.flag("pacing")) s += ",\"pacing\":false";
  s += ",\"bands\":" + num("bands") + ",\"priomap \":[" + tc::join_numbers(a.array("priomap")) + "],\"weights \":[" +
       tc::join_numbers(a.array("weights")) + "],\"quantum\":" + num("quantum") + ",\"initial_quantum\":" + num("initial_quantum");
  if (a.number("maxrate") != FqConfig::kUnlimited) s += ",\"maxrate\":" + num("maxrate");
  if (a.number("low_rate_threshold") != 0) s += ",\"low_rate_threshold\":" + num("low_rate_threshold");
  s += ",\"refill_delay\":" + num("refill_delay");
  if (a.number("ce_threshold") != FqConfig::kUnlimited) s += ",\"ce_threshold\":" + num("ce_threshold");
  s += ",\"timer_slack\":" + num("timer_slack") + ",\"horizon\":" + num("horizon");
  s += a.flag("horizon_drop") ? ",\"horizon_drop\":null}" : ",\"horizon_cap\":null}";
  return s;
}

std::string fq_xstats(const Xstats& x) {
  if (x.empty()) return {};
  auto find = [&x](std::string_view name) { return find_xstat(x, name); };
  auto value = [&find](std::string_view name) {
    const int64_t* v = find(name);
    return std::to_string(v ? *v : 0);
  };
  auto nonzero = [&find](std::string_view name) {
    const int64_t* v = find(name);
    return v != nullptr && *v != 0;
  };
  std::string s = "  flows " + value("flows") + " (inactive " + value("inactive") +
                  " throttled " + value("throttled") + ")";
  for (const char* b : {"band0_pkts", "band1_pkts", "band2_pkts"})
    s += " " + std::string(b) + " " + value(b);
  if (nonzero("next_packet_delay"))
    s += " next_packet_delay " + tc::format_time64(static_cast<uint64_t>(*find("next_packet_delay")));
  s += "\n  gc " + value("gc") + " highprio " + value("highprio") + " throttled " +
       value("throttled_events");
  for (const char* opt : {"ce_mark", "flows_plimit"})
    if (nonzero(opt)) s += " " + std::string(opt) + " " + value(opt);
  s += "\n";
  // tc's third line: one leading space, and two before horizon_caps (its format strings).
  static constexpr std::pair<const char*, const char*> kThird[] = {
      {"pkts_too_long", " pkts_too_long "}, {"alloc_errors", " alloc_errors "},
      {"horizon_drops", " horizon_drops "}, {"horizon_caps", "  horizon_caps "},
      {"band0_drops", " band0_drops "},     {"band1_drops", " band1_drops "},
      {"band2_drops", " band2_drops "}};
  std::string third;
  for (const auto& [name, text] : kThird)
    if (nonzero(name)) third += text + value(name);
  if (!third.empty()) s += third + "\n";
  return s;
}

}  // namespace

// ---- option parsing --------------------------------------------------------------------------

namespace {

constexpr uint32_t kU32 = std::numeric_limits<uint32_t>::max();

std::optional<int32_t> parse_int(std::string_view v) {
  if (!v.empty() && v[0] == '+') return std::nullopt;
  int32_t out = 0;
  const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || ptr != v.data() + v.size() || v.empty()) return std::nullopt;
  return out;
}

uint32_t number(const QdiscOptions& o, std::string_view opt, std::string_view v) {
  const auto n = tc::parse_u32(v, 0);
  if (!n) o.fail("invalid " + std::string(opt) + " " + quoted(v) + " (a number up to 4294967295)");
  return *n;
}

uint32_t rate(const QdiscOptions& o, std::string_view opt, std::string_view v) {
  const auto r = tc::parse_rate(v);
  if (!r) o.fail("invalid " + std::string(opt) + " " + quoted(v) + " (a rate: 100Kbit, 1gbit)");
  if (*r > kU32) o.fail(std::string(opt) + " " + quoted(v) + " is out of range (max 34Gbit)");
  return static_cast<uint32_t>(*r);
}

uint32_t usec(const QdiscOptions& o, std::string_view opt, std::string_view v) {
  const auto ns = tc::parse_time_ns(v);
  if (!ns) o.fail("invalid " + std::string(opt) + " " + quoted(v) + " (a time: 40ms, 100us)");
  const uint64_t us = *ns / 1000;  // tc carries usec
  if (us > kU32) o.fail(std::string(opt) + " " + quoted(v) + " is out of range");
  return static_cast<uint32_t>(us);
}

// What the loop keeps besides the configuration: options that may appear once, and buckets,
// checked once every option is read.
struct FqArgs {
  uint32_t buckets = 0;  // 0: not given (tc sends nothing)
  std::string_view buckets_text;
  bool have_bands = false, have_weights = false;
};

// "bands 3 priomap P0 .. P15" at o[i] == "bands" (i advances past the last element).
void parse_bands(const QdiscOptions& o, std::size_t& i, FqConfig& c) {
  const std::string_view v = o.value(i);
  const auto n = parse_int(v);
  if (!n) o.fail("invalid bands " + quoted(v));
  if (*n != FqQdisc::kBands) o.fail("\"bands\" must be 3");
  if (i + 1 >= o.size() || o[i + 1] != "priomap") o.fail("\"priomap\" expected after \"bands 3\"");
  ++i;
  for (std::size_t k = 0; k < c.priomap.size(); ++k) {
    if (i + 1 >= o.size()) o.fail("not enough elements in priomap (16 needed)");
    const std::string_view e = o[++i];
    const auto band = tc::parse_u32(e, 10);
    if (!band) o.fail("invalid priomap element " + quoted(e) + " (a number in 0..2)");
    if (*band >= FqQdisc::kBands) o.fail("priomap element " + quoted(e) + " is too big (max 2)");
    c.priomap[k] = static_cast<uint8_t>(*band);
  }
}

// "weights W0 W1 W2" at o[i] == "weights".
void parse_weights(const QdiscOptions& o, std::size_t& i, FqConfig& c) {
  for (int32_t& w : c.weights) {
    if (i + 1 >= o.size()) o.fail("not enough elements in weights (3 needed)");
    const std::string_view e = o[++i];
    const auto n = parse_int(e);
    if (!n) o.fail("invalid weights element " + quoted(e) + " (a positive number)");
    if (*n < kMinWeight) o.fail("weights element " + quoted(e) + " is too small (min 16384)");
    w = *n;
  }
}

// The options whose value is one token of a kind shared with others (true if o[i] was one).
bool parse_fq_value(const QdiscOptions& o, std::size_t& i, FqConfig& c, FqArgs& a) {
  const std::string_view opt = o[i];
  if (opt == "limit") c.limit = number(o, opt, o.value(i));
  else if (opt == "flow_limit") c.flow_limit = number(o, opt, o.value(i));
  else if (opt == "orphan_mask") c.orphan_mask = number(o, opt, o.value(i));
  else if (opt == "maxrate") c.maxrate = rate(o, opt, o.value(i));
  else if (opt == "low_rate_threshold") c.low_rate_threshold = rate(o, opt, o.value(i));
  else if (opt == "refill_delay") c.refill_delay_us = usec(o, opt, o.value(i));
  else if (opt == "ce_threshold") c.ce_threshold_us = usec(o, opt, o.value(i));
  else if (opt == "horizon") c.horizon_us = usec(o, opt, o.value(i));
  else if (opt == "buckets") a.buckets = number(o, opt, a.buckets_text = o.value(i));
  else return false;
  return true;
}

// Option o[i] and its value(s) (i advances past them).
void parse_fq_option(const QdiscOptions& o, std::size_t& i, FqConfig& c, FqArgs& a) {
  const std::string_view opt = o[i];
  if (parse_fq_value(o, i, c, a)) return;
  if (opt == "quantum") {
    const std::string_view v = o.value(i);
    c.quantum = number(o, opt, v);
    if (c.quantum == 0 || c.quantum > kMaxQuantum)
      o.reject("invalid quantum " + quoted(v) + " (the kernel takes 1..1048576)");
  } else if (opt == "initial_quantum") {
    const std::string_view v = o.value(i);
    c.initial_quantum = number(o, opt, v);
    if (c.initial_quantum > static_cast<uint32_t>(std::numeric_limits<int32_t>::max()))
      o.reject("invalid initial_quantum " + quoted(v) + " (the kernel takes at most 2147483647)");
  } else if (opt == "pacing" || opt == "nopacing") {
    c.pacing = opt == "pacing";
  } else if (opt == "horizon_drop" || opt == "horizon_cap") {
    c.horizon_drop = opt == "horizon_drop";
  } else if (opt == "timer_slack") {
    const std::string_view v = o.value(i);
    const auto ns = tc::parse_time64_ns(v);
    if (!ns) o.fail("invalid timer_slack " + quoted(v) + " (a time: 10us, 100 = 100ns)");
    if (*ns > kU32) o.fail("timer_slack " + quoted(v) + " is out of range");
    c.timer_slack_ns = static_cast<uint32_t>(*ns);
  } else if (opt == "bands" || opt == "weights") {
    bool& seen = opt == "bands" ? a.have_bands : a.have_weights;
    if (seen) o.fail("duplicate " + quoted(opt));
    seen = true;
    if (opt == "bands") parse_bands(o, i, c);
    else parse_weights(o, i, c);
  } else {
    o.fail("unknown option " + quoted(opt) +
           " (known: limit, flow_limit, quantum, initial_quantum, maxrate, buckets, pacing, "
           "nopacing, refill_delay, bands, weights, low_rate_threshold, orphan_mask, "
           "timer_slack, ce_threshold, horizon, horizon_drop, horizon_cap)");
  }
}

}  // namespace

std::unique_ptr<Qdisc> make_fq(const QdiscOptions& o, const QdiscEnv& env) {
  FqConfig c;
  c.quantum = 2 * env.psched_mtu();
  c.initial_quantum = 10 * env.psched_mtu();
  c.clock = env.clock;
  FqArgs args;
  for (std::size_t i = 0; i < o.size(); ++i) parse_fq_option(o, i, c, args);
  if (args.buckets != 0) {
    // tc sends ceil(log2(buckets)); the kernel takes 1..18.
    uint32_t log = 0;
    for (uint32_t v = args.buckets - 1; v != 0; v >>= 1) ++log;
    if (log < 1 || log > kMaxBucketsLog)
      o.reject("invalid buckets " + quoted(args.buckets_text) + " (the kernel takes 2..262144)");
    c.buckets_log = log;
  }
  return std::make_unique<FqQdisc>(c);
}

namespace {

// The options a `change` merges into the old ones (the kernel's fq_change() touches only the
// attributes tc sent); a change with any other option replaces them all (qdisc_kinds.hpp).
const tc::MergeTable kFqMerge = {
    {"limit", {"limit", 1}},
    {"flow_limit", {"flow_limit", 1}},
    {"quantum", {"quantum", 1}},
    {"initial_quantum", {"initial_quantum", 1}},
    {"maxrate", {"maxrate", 1}},
    {"buckets", {"buckets", 1}},
    {"refill_delay", {"refill_delay", 1}},
    {"low_rate_threshold", {"low_rate_threshold", 1}},
    {"orphan_mask", {"orphan_mask", 1}},
    {"timer_slack", {"timer_slack", 1}},
    {"ce_threshold", {"ce_threshold", 1}},
    {"horizon", {"horizon", 1}},
    {"pacing", {"pacing", 0}},
    {"nopacing", {"pacing", 0}},
    {"horizon_drop", {"horizon_mode", 0}},
    {"horizon_cap", {"horizon_mode", 0}},
};

}  // namespace

namespace tc {

constinit const QdiscKind kFqKind = {.name = "fq", .make = make_fq, .classes = ClassModel::classless,
    .merge = &kFqMerge, .text = fq_text, .json = fq_json, .xstats = fq_xstats};

}  // namespace tc

}  // namespace txpath
