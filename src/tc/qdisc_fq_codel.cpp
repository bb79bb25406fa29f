// SPDX-License-Identifier: MIT
// fq_codel's tc side: its option parser (make_fq_codel; grammar in src/qdisc/fq_codel.hpp), its
// printers (options, xstats) and its row of the kind table; the CoDel family's change merge.
// The qdisc itself is src/qdisc/fq_codel.cpp.
// Origin: written from Linux sch_fq_codel / iproute2 q_fq_codel.c semantics; no code copied.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>

#include "qdisc/fq_codel.hpp"
#include "tc/qdisc_kinds.hpp"
#include "tc/qdisc_spec.hpp"
#include "tc/tc_units.hpp"

namespace txpath {

namespace {

// The kernel's limits on the options.
constexpr uint32_t kMaxFlows = 65536;
constexpr uint32_t kMinQuantum = 256;
constexpr uint32_t kMaxQuantum = 1u << 20;
constexpr uint64_t kMaxMemoryLimit = 1ull << 31;

}  // namespace

namespace {

// tc's fq_codel printer: "limit 10240p flows 1024 quantum 1514 target 5ms[ ce_threshold T]
// interval 100ms memory_limit 32Mb[ ecn] drop_batch 64"; -j the dump's numbers (times in usec,
// 5ms -> 4999), "ecn" only when on, as tc prints it.
std::string fq_codel_text(const DumpAttrs& a, bool) {
  auto time = [&a](std::string_view name) { return tc::format_time(a.number(name) * 1000); };
  std::string s = "limit " + std::to_string(a.number("limit")) + "p flows " + std::to_string(a.number("flows")) +
                  " quantum " + std::to_string(a.number("quantum")) + " target " + time("target");
  if (a.has("ce_threshold")) s += " ce_threshold " + time("ce_threshold");
  s += " interval " + time("interval") + " memory_limit " + tc::format_size(a.number("memory_limit"));
  if (a.flag("ecn")) s += " ecn";
  s += " drop_batch " + std::to_string(a.number("drop_batch"));
  return s;
}

std::string fq_codel_json(const DumpAttrs& a, bool) {
  auto num = [&a](std::string_view name) { return std::to_string(a.number(name)); };
  std::string s = "{\"limit\":" + num("limit") + ",\"flows\":" + num("flows") + ",\"quantum\":" + num("quantum") +
                  ",\"target\":" + num("target");
  if (a.has("ce_threshold")) s += ",\"ce_threshold\":" + num("ce_threshold");
  s += ",\"interval\":" + num("interval") + ",\"memory_limit\":" + num("memory_limit");
  if (a.flag("ecn")) s += ",\"ecn\":true";
  return s + ",\"drop_batch\":" + num("drop_batch") + "}";
}

// "  maxpacket M drop_overlimit D new_flow_count N ecn_mark E[ ce_mark C][ memory_used U]
// [ drop_overmemory O]\n  new_flows_len A old_flows_len B\n"; "" for empty xstats.
std::string fq_codel_xstats(const Xstats& x) {
  if (x.empty()) return {};
  auto find = [&x](std::string_view name) { return find_xstat(x, name); };
  // " NAME VALUE"; the mandatory fields print 0 when absent from x.
  std::string s;
  auto field = [&s, &find](std::string_view name, bool optional) {
    const int64_t* v = find(name);
    if (optional && (v == nullptr || *v == 0)) return;
    s.append(" ").append(name).append(" ").append(std::to_string(v ? *v : 0));
  };
  s.append(" ");
  for (std::string_view name : {"maxpacket", "drop_overlimit", "new_flow_count", "ecn_mark"})
    field(name, false);
  for (std::string_view name : {"ce_mark", "memory_used", "drop_overmemory"}) field(name, true);
  s.append("\n ");
  field("new_flows_len", false);
  field("old_flows_len", false);
  s.append("\n");
  return s;
}

}  // namespace

uint32_t parse_codel_u32(const QdiscOptions& o, std::string_view opt, std::string_view v) {
  uint32_t out = 0;
  const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec == std::errc::result_out_of_range)
    o.fail(std::string(opt) + " " + quoted(v) + " is out of range (max 4294967295)");
  if (ec != std::errc() || ptr != v.data() + v.size() || v.empty())
    o.fail("invalid " + std::string(opt) + " " + quoted(v));
  return out;
}

uint64_t parse_codel_us(const QdiscOptions& o, std::string_view opt, std::string_view v) {
  const auto ns = tc::parse_time_ns(v);
  if (!ns) o.fail("invalid " + std::string(opt) + " " + quoted(v) + " (a time: 5ms, 100ms, 2000us)");
  const uint64_t us = *ns / 1000;  // tc carries usec
  if (us > std::numeric_limits<uint32_t>::max())
    o.fail(std::string(opt) + " " + quoted(v) + " is out of range");
  return us;
}

std::unique_ptr<Qdisc> make_fq_codel(const QdiscOptions& o, const QdiscEnv& env) {
  FqCodelConfig c;
  c.quantum = env.psched_mtu();
  c.mtu = env.psched_mtu();
  c.clock = env.clock;
  for (std::size_t i = 0; i < o.size(); ++i) {
    if (parse_codel_option(o, i, c)) continue;
    const std::string_view opt = o[i];
    if (opt == "limit") {
      c.limit = parse_codel_u32(o, opt, o.value(i));
    } else if (opt == "flows") {
      const std::string_view v = o.value(i);
      const uint32_t n = parse_codel_u32(o, opt, v);
      if (n < 1 || n > kMaxFlows) o.fail("flows " + quoted(v) + " is out of range (1..65536)");
      c.flows = n;
    } else if (opt == "quantum") {
      const std::string_view v = o.value(i);
      const uint32_t q = parse_codel_u32(o, opt, v);
      if (q > kMaxQuantum) o.fail("quantum " + quoted(v) + " is out of range (max 1048576)");
      c.quantum = std::max(q, kMinQuantum);
    } else if (opt == "memory_limit") {
      const std::string_view v = o.value(i);
      const auto bytes = tc::parse_size(v);
      if (!bytes) o.fail("invalid memory_limit " + quoted(v) + " (a size: 32Mb, 100000)");
      if (*bytes > std::numeric_limits<uint32_t>::max())
        o.fail("memory_limit " + quoted(v) + " is out of range");
      c.memory_limit = static_cast<uint32_t>(std::min(*bytes, kMaxMemoryLimit));
    } else if (opt == "drop_batch") {
      c.drop_batch = std::max<uint32_t>(parse_codel_u32(o, opt, o.value(i)), 1);
    } else {
      o.fail("unknown option " + quoted(opt) +
             " (known: limit, flows, quantum, target, interval, ecn, noecn, ce_threshold, "
             "memory_limit, drop_batch)");
    }
  }
  // Whole-qdisc backlog check and quantum use the device MTU; both fixed at creation.
  return std::make_unique<FqCodelQdisc>(c);
}

// The options a `change` merges into the old ones (fq_codel_change() and codel_change() touch
// only the attributes tc sent; codel's options are a subset); others replace them all.
const tc::MergeTable tc::kCodelMerge = {
    {"limit", {"limit", 1}},           {"flows", {"flows", 1}},
    {"quantum", {"quantum", 1}},       {"target", {"target", 1}},
    {"interval", {"interval", 1}},     {"memory_limit", {"memory_limit", 1}},
    {"ce_threshold", {"ce_threshold", 1}}, {"drop_batch", {"drop_batch", 1}},
    {"ecn", {"ecn", 0}},               {"noecn", {"ecn", 0}},
};

namespace tc {

namespace {
// The number of flows is fixed once the qdisc exists (sch_fq_codel.c's change()).
constexpr std::string_view kFqCodelFixed[] = {"flows"};
}  // namespace

constinit const QdiscKind kFqCodelKind = {.name = "fq_codel", .make = make_fq_codel,
    .classes = ClassModel::none_found, .merge = &kCodelMerge, .fixed_on_change = kFqCodelFixed,
    .text = fq_codel_text, .json = fq_codel_json, .xstats = fq_codel_xstats};

}  // namespace tc

}  // namespace txpath
