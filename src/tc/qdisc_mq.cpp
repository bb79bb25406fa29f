// SPDX-License-Identifier: MIT
// mq's and mqprio's tc side: option parsers (make_mq, make_mqprio), their printers and their
// rows of the kind table. The qdisc is src/qdisc/mq.cpp. Written from Linux sch_mq.c / sch_mqprio.c semantics,
// tc-mqprio(8) and iproute2's q_mqprio.c behaviour; no code copied.
//
// mq takes no options (tc has no parser for it: any word is "unparsable", exit 1).
// mqprio, tc's grammar and defaults (num_tc 8, map 0 1 2 3 4 5 6 7 0 1 1 1 3 3 3 3, hw 1):
//   num_tc N            0..255 (tc); the kernel refuses > 16
//   map P0 P1 ...       up to 16 numbers 0..255, the rest of the map becomes 0
//   queues C@O ...      up to 16 count@offset pairs (0..65535 each); no more pairs than num_tc
//   hw N                0: software mode, the only one txpath has; any other value is refused
//                       as the kernel refuses it on a device without offload
//   mode M / shaper S   read only while hw is not 0 (tc's rule); a non-default one becomes an
//                       attribute, which the kernel refuses in software mode
//   fp E|P ...          per-class frame preemption: an attribute as well
// The kernel's checks (exit 2): num_tc <= 16; every map entry < num_tc; in software mode every
// class has queues, inside the device's TX queues, and no two classes' ranges overlap.
#include <memory>
#include <string>
#include <string_view>

#include "qdisc/mq.hpp"
#include "tc/qdisc_kinds.hpp"
#include "tc/qdisc_spec.hpp"
#include "tc/tc_units.hpp"

namespace txpath {

namespace {

constexpr TrafficClasses kDefaultMapping = {
    .num_tc = 8, .prio_tc = {0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 1, 1, 3, 3, 3, 3}, .tc_queues = {}};

// get_u8 / get_u16: a decimal number of at most `max`.
std::optional<uint32_t> number_upto(std::string_view s, uint32_t max) {
  const auto n = tc::parse_u32(s);
  if (!n || *n > max) return std::nullopt;
  return n;
}

// "C@O" with both parts numbers of 0..65535.
std::optional<TrafficClasses::Range> count_at_offset(std::string_view s) {
  const std::size_t at = s.find('@');
  if (at == std::string_view::npos) return std::nullopt;
  const auto count = number_upto(s.substr(0, at), 0xFFFF);
  const auto offset = number_upto(s.substr(at + 1), 0xFFFF);
  if (!count || !offset) return std::nullopt;
  return TrafficClasses::Range{*offset, *count};
}

// What tc parsed, before the kernel's checks.
struct MqprioRequest {
  TrafficClasses map = kDefaultMapping;
  uint32_t num_tc = 8;  // as given (0..255): the kernel checks it against 16
  uint32_t hw = 1;
  std::size_t pairs = 0;
  bool attributes = false;  // mode/shaper/rates/fp: netlink attributes besides the options
};

// The numbers after `opt` (at i) into `out` while they parse, at most 16; returns how many.
template <class Parse>
std::size_t read_list(const QdiscOptions& o, std::size_t& i, Parse&& parse) {
  std::size_t n = 0;
  while (n < 16 && i + 1 < o.size() && parse(n, o[i + 1])) {
    ++i;
    ++n;
  }
  return n;
}

MqprioRequest parse_mqprio(const QdiscOptions& o) {
  MqprioRequest r;
  bool bw_rlimit = false;
  for (std::size_t i = 0; i < o.size(); ++i) {
    const std::string_view opt = o[i];
    if (opt == "num_tc") {
      const auto n = number_upto(o.value(i), 0xFF);
      if (!n) o.fail("Illegal \"num_tc\"");
      r.num_tc = *n;
    } else if (opt == "map") {
      const std::size_t n = read_list(o, i, [&](std::size_t k, std::string_view v) {
        const auto p = number_upto(v, 0xFF);
        if (p) r.map.prio_tc[k] = static_cast<uint8_t>(*p);
        return p.has_value();
      });
      for (std::size_t k = n; k < r.map.prio_tc.size(); ++k) r.map.prio_tc[k] = 0;
    } else if (opt == "queues") {
      r.pairs += read_list(o, i, [&](std::size_t k, std::string_view v) {
        const auto range = count_at_offset(v);
        if (range) r.map.tc_queues[k] = *range;
        return range.has_value();
      });
    } else if (opt == "fp") {
      read_list(o, i, [](std::size_t, std::string_view v) { return v == "E" || v == "P"; });
      r.attributes = true;
    } else if (opt == "hw") {
      const auto n = number_upto(o.value(i), 0xFF);
      if (!n) o.fail("Illegal \"hw\"");
      r.hw = *n;
    } else if (r.hw && opt == "mode") {
      const std::string_view v = o.value(i);
      const bool dcb = !v.empty() && std::string_view("dcb").starts_with(v);
      if (!dcb && !(!v.empty() && std::string_view("channel").starts_with(v)))
        o.fail("Illegal mode (" + escape_user_text(v) + ")");
      r.attributes = r.attributes || !dcb;
    } else if (r.hw && opt == "shaper") {
      const std::string_view v = o.value(i);
      bw_rlimit = !v.empty() && std::string_view("bw_rlimit").starts_with(v);
      if (!bw_rlimit && !(!v.empty() && std::string_view("dcb").starts_with(v)))
        o.fail("Illegal shaper (" + escape_user_text(v) + ")");
      r.attributes = r.attributes || bw_rlimit;
    } else if (bw_rlimit && (opt == "min_rate" || opt == "max_rate")) {
      read_list(o, i, [](std::size_t, std::string_view v) { return tc::parse_rate(v).has_value(); });
      r.attributes = true;
    } else {
      o.fail("unknown argument " + quoted(opt) + " (known: num_tc, map, queues, hw, mode, shaper, fp)");
    }
  }
  if (r.pairs > r.num_tc)
    o.fail("queues count/offset pair count " + std::to_string(r.pairs) +
           " can not be higher than given num_tc " + std::to_string(r.num_tc));
  return r;
}

void require_multiqueue(const QdiscOptions& o, const QdiscEnv& env, std::string_view kind) {
  if (env.tx_queues <= 1)
    o.reject("Operation not supported: " + std::string(kind) +
             " needs a device with more than one TX queue (link add ... numtxqueues N)");
}

// The kernel's checks of a software-mode mapping (sch_mqprio.c, mqprio_validate_qopt).
void check_software_mapping(const QdiscOptions& o, const TrafficClasses& m, uint32_t queues) {
  for (uint32_t t = 0; t < m.num_tc; ++t) {
    const TrafficClasses::Range& r = m.tc_queues[t];
    const std::string tc_name = std::to_string(t);
    if (r.count == 0) o.reject("No queues for TC " + tc_name);
    if (r.offset >= queues || r.offset + r.count > queues)
      o.reject("Queues " + std::to_string(r.count) + ":" + std::to_string(r.offset) + " for TC " +
               tc_name + " exceed the " + std::to_string(queues) + " TX queues available");
    for (uint32_t u = t + 1; u < m.num_tc; ++u) {
      const TrafficClasses::Range& s = m.tc_queues[u];
      if (r.offset < s.offset + s.count && s.offset < r.offset + r.count)
        o.reject("TC " + tc_name + " queues " + std::to_string(r.count) + "@" +
                 std::to_string(r.offset) + " overlap with TC " + std::to_string(u) + " queues " +
                 std::to_string(s.count) + "@" + std::to_string(s.offset));
    }
  }
}

}  // namespace

std::unique_ptr<Qdisc> make_mq(const QdiscOptions& options, const QdiscEnv& env) {
  if (options.size() > 0)
    options.fail("Unknown qdisc \"mq\", hence option " + quoted(options[0]) + " is unparsable");
  require_multiqueue(options, env, "mq");
  return std::make_unique<MqQdisc>(env.tx_queues, TrafficClasses{}, env);
}

std::unique_ptr<Qdisc> make_mqprio(const QdiscOptions& options, const QdiscEnv& env) {
  MqprioRequest r = parse_mqprio(options);
  require_multiqueue(options, env, "mqprio");
  if (r.num_tc > MqQdisc::kMaxTrafficClasses)
    options.reject("Number of traffic classes is outside valid range");
  for (uint8_t p : r.map.prio_tc)
    if (p >= r.num_tc) options.reject("Invalid traffic class in priority to traffic class mapping");
  if (r.hw != 0)
    options.reject("Device does not support hardware offload (txpath has no hardware: give \"hw 0\")");
  r.map.num_tc = r.num_tc;
  check_software_mapping(options, r.map, env.tx_queues);
  if (r.attributes)
    options.reject("mqprio TCA_OPTIONS can only contain netlink attributes in hardware mode");
  for (uint32_t t = r.map.num_tc; t < r.map.tc_queues.size(); ++t) r.map.tc_queues[t] = {};
  return std::make_unique<MqQdisc>(env.tx_queues, r.map, env);
}

namespace {

// mq prints no options; mqprio as tc does against a kernel that dumps its per-class entries
// (mode and shaper lines follow the queue ranges).
std::string mq_text(const DumpAttrs& a, bool) {
  if (a.number("num_tc") == 0) return {};
  std::string s = "tc " + std::to_string(a.number("num_tc")) + " map ";
  for (uint64_t p : a.array("map")) s.append(std::to_string(p)).append(" ");
  s += "\n             queues:";
  const auto first = a.array("queue_first"), last = a.array("queue_last");
  for (std::size_t t = 0; t < first.size() && t < last.size(); ++t)
    s.append("(").append(std::to_string(first[t])).append(":").append(std::to_string(last[t])).append(") ");
  s += "\n             mode:dcb\n             shaper:dcb";
  return s;
}

std::string mq_json(const DumpAttrs& a, bool) {
  if (a.number("num_tc") == 0) return "{}";
  std::string s = "{\"tc\":" + std::to_string(a.number("num_tc")) + ",\"map\":[";
  s += tc::join_numbers(a.array("map")) + "],\"queues\":[";
  const auto first = a.array("queue_first"), last = a.array("queue_last");
  for (std::size_t t = 0; t < first.size() && t < last.size(); ++t)
    s.append(t ? ",[" : "[").append(std::to_string(first[t])).append(",").append(std::to_string(last[t])).append("]");
  s += "],\"mode\":\"dcb\",\"shaper\":\"dcb\"}";
  return s;
}

}  // namespace

namespace tc {

constinit const QdiscKind kMqKind = {.name = "mq", .make = make_mq, .classes = ClassModel::per_tx_queue,
    .multiqueue_root = true, .text = mq_text, .json = mq_json};
constinit const QdiscKind kMqprioKind = {.name = "mqprio", .make = make_mqprio,
    .classes = ClassModel::per_tx_queue, .change_op = false, .multiqueue_root = true,
    .options_end_with_space = false, .text = mq_text, .json = mq_json};

}  // namespace tc

}  // namespace txpath
