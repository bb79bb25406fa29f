// SPDX-License-Identifier: MIT
// codel's tc side: its option parser (make_codel), its printers (options, xstats) and its row of
// the kind table. The qdisc itself is src/qdisc/codel.cpp.
//
// Grammar (tc-codel(8)): codel [limit PACKETS] [target TIME] [interval TIME] [ecn | noecn]
//                              [ce_threshold TIME]
// Defaults (the kernel's): limit 1000, target 5ms, interval 100ms, noecn, no ce_threshold.
// Origin: written from Linux sch_codel / iproute2 q_codel.c semantics; no code copied.
#include <memory>
#include <string>
#include <string_view>

#include "qdisc/codel_qdisc.hpp"
#include "tc/qdisc_kinds.hpp"
#include "tc/qdisc_spec.hpp"
#include "tc/tc_units.hpp"

namespace txpath {

namespace {

// tc's codel printer: "limit 1000p target 5ms[ ce_threshold 20ms] interval 100ms[ ecn]"; -j
// the dump's usec: {"limit":1000,"target":4999,["ce_threshold":US,]"interval":99999[,"ecn":true]}.
std::string codel_text(const DumpAttrs& a, bool) {
  std::string s = "limit " + std::to_string(a.number("limit")) + "p target " + tc::format_time(a.number("target") * 1000);
  if (a.has("ce_threshold")) s += " ce_threshold " + tc::format_time(a.number("ce_threshold") * 1000);
  s += " interval " + tc::format_time(a.number("interval") * 1000);
  if (a.flag("ecn")) s += " ecn";
  return s;
}

std::string codel_json(const DumpAttrs& a, bool) {
  auto num = [&a](std::string_view name) { return std::to_string(a.number(name)); };
  std::string s = "{\"limit\":" + num("limit") + ",\"target\":" + num("target");
  if (a.has("ce_threshold")) s += ",\"ce_threshold\":" + num("ce_threshold");
  s += ",\"interval\":" + num("interval");
  if (a.flag("ecn")) s += ",\"ecn\":true";
  return s + "}";
}

// "  count C lastcount L ldelay T[ dropping] drop_next [-]T\n"
// "  maxpacket M ecn_mark E drop_overlimit O[ ce_mark C]\n"; "" for empty xstats.
std::string codel_xstats(const Xstats& x) {
  if (x.empty()) return {};
  auto value = [&x](std::string_view name) {
    const int64_t* v = find_xstat(x, name);
    return v ? *v : 0;
  };
  auto usec = [](int64_t us) { return tc::format_time(static_cast<uint64_t>(us) * 1000); };
  std::string s = "  count " + std::to_string(value("count")) + " lastcount " +
                  std::to_string(value("lastcount")) + " ldelay " + usec(value("ldelay"));
  if (value("dropping")) s += " dropping";
  const int64_t next = value("drop_next");
  s += " drop_next " + (next < 0 ? "-" + usec(-next) : usec(next));
  s += "\n  maxpacket " + std::to_string(value("maxpacket")) + " ecn_mark " +
       std::to_string(value("ecn_mark")) + " drop_overlimit " +
       std::to_string(value("drop_overlimit"));
  if (value("ce_mark")) s += " ce_mark " + std::to_string(value("ce_mark"));
  return s + "\n";
}

}  // namespace

std::unique_ptr<Qdisc> make_codel(const QdiscOptions& o, const QdiscEnv& env) {
  CodelConfig c;
  c.mtu = env.psched_mtu();
  c.clock = env.clock;
  for (std::size_t i = 0; i < o.size(); ++i) {
    if (parse_codel_option(o, i, c)) continue;
    const std::string_view opt = o[i];
    if (opt == "limit") {
      // tc's number (0x hex, 0 octal, else decimal); tc sends no limit of 0: the default stays.
      const std::string_view v = o.value(i);
      const auto n = tc::parse_u32(v, 0);
      if (!n) o.fail("invalid limit " + quoted(v) + " (a number of packets up to 4294967295)");
      if (*n) c.limit = *n;
    } else {
      o.fail("unknown option " + quoted(opt) +
             " (known: limit, target, interval, ecn, noecn, ce_threshold)");
    }
  }
  return std::make_unique<CodelQdisc>(c);
}

namespace tc {

// codel changes merge the CoDel family's options (kCodelMerge, qdisc_fq_codel.cpp: codel's are
// a subset of fq_codel's).
constinit const QdiscKind kCodelKind = {.name = "codel", .make = make_codel, .classes = ClassModel::none_found,
    .merge = &kCodelMerge, .text = codel_text, .json = codel_json, .xstats = codel_xstats};

}  // namespace tc

}  // namespace txpath
