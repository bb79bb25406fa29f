// SPDX-License-Identifier: MIT
// codel's tc side: its option parser (make_codel) and the text tc prints for it (options,
// xstats). The qdisc itself is src/qdisc/codel.cpp.
//
// Grammar (tc-codel(8)): codel [limit PACKETS] [target TIME] [interval TIME] [ecn | noecn]
//                              [ce_threshold TIME]
// Defaults (the kernel's): limit 1000, target 5ms, interval 100ms, noecn, no ce_threshold.
// Origin: written from Linux sch_codel / iproute2 q_codel.c semantics; no code copied.
#include <memory>
#include <string>
#include <string_view>

#include "qdisc/codel_qdisc.hpp"
#include "tc/qdisc_spec.hpp"
#include "tc/tc_units.hpp"

namespace txpath {

std::string CodelQdisc::options() const {
  std::string s = "limit " + std::to_string(cfg_.limit) + "p target " +
                  codel_time_text(params_.target);
  if (cfg_.has_ce_threshold) s += " ce_threshold " + codel_time_text(params_.ce_threshold);
  s += " interval " + codel_time_text(params_.interval);
  if (cfg_.ecn) s += " ecn";
  return s;
}

std::string CodelQdisc::options_json() const {
  auto us = [](codel::Time t) { return std::to_string(codel::to_us(t)); };
  std::string s = "{\"limit\":" + std::to_string(cfg_.limit) + ",\"target\":" + us(params_.target);
  if (cfg_.has_ce_threshold) s += ",\"ce_threshold\":" + us(params_.ce_threshold);
  s += ",\"interval\":" + us(params_.interval);
  if (cfg_.ecn) s += ",\"ecn\":true";
  return s + "}";
}

std::string CodelQdisc::format_xstats(const Xstats& x) const {
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

}  // namespace txpath
