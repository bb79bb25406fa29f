// SPDX-License-Identifier: MIT
// The fifos' tc side (pfifo, bfifo, pfifo_head_drop, pfifo_fast): their option parser, their
// printers and their rows of the kind table. The queues themselves are src/qdisc/pfifo.cpp,
// bfifo.cpp, pfifo_head_drop.cpp and pfifo_fast.cpp. Origin: written from tc-pfifo(8),
// tc-bfifo(8), tc-pfifo_fast(8) and the kernel's sch_fifo.c / sch_generic.c; no code copied.
//
// Grammar (tokens after the kind):
//   pfifo | pfifo_head_drop  [limit PACKETS]     PACKETS and SIZE: what tc's get_size() takes
//   bfifo                    [limit SIZE]        (tc_units.hpp: "10kb", "1.5", "1e3", "0x10")
//   pfifo_fast               no options (tc has no parser for it)
// A limit given twice: the last one counts, as in tc. Defaults: pfifo/pfifo_head_drop =
// txqueuelen, bfifo = txqueuelen * psched_mtu (clamped to UINT32_MAX); pfifo_fast bands hold
// txqueuelen packets each.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "qdisc/fifo.hpp"
#include "qdisc/pfifo_fast.hpp"
#include "tc/qdisc_kinds.hpp"
#include "tc/qdisc_spec.hpp"
#include "tc/tc_units.hpp"

namespace txpath {

namespace {

constexpr uint64_t kMaxLimit = std::numeric_limits<uint32_t>::max();

// "limit VALUE", the last one given counting (tc's fifo parser, with its messages).
std::optional<uint32_t> parse_fifo_limit(const QdiscOptions& o, std::string_view kind) {
  std::optional<uint32_t> limit;
  for (std::size_t i = 0; i < o.size(); ++i) {
    const std::string_view opt = o[i];
    if (opt == "help") o.fail("Usage: ... <[p|b]fifo | pfifo_head_drop> [ limit NUMBER ]");
    if (opt != "limit") o.fail(std::string(kind) + ": unknown parameter " + quoted(opt));
    const std::string_view value = o.value(i);
    // Packets or bytes, the same number grammar: tc reads both with get_size().
    const auto v = tc::parse_size(value);
    if (!v) o.fail(std::string(kind) + ": Illegal value for \"limit\": " + quoted(value));
    limit = static_cast<uint32_t>(*v);
  }
  return limit;
}

std::unique_ptr<Qdisc> make_pfifo(const QdiscOptions& o, const QdiscEnv& env) {
  return std::make_unique<PfifoQdisc>(parse_fifo_limit(o, "pfifo").value_or(env.txqueuelen));
}

std::unique_ptr<Qdisc> make_pfifo_head_drop(const QdiscOptions& o, const QdiscEnv& env) {
  return std::make_unique<PfifoHeadDropQdisc>(parse_fifo_limit(o, "pfifo_head_drop").value_or(env.txqueuelen));
}

std::unique_ptr<Qdisc> make_bfifo(const QdiscOptions& o, const QdiscEnv& env) {
  const uint64_t dflt = std::min<uint64_t>(uint64_t{env.txqueuelen} * env.psched_mtu(), kMaxLimit);
  const uint32_t limit = parse_fifo_limit(o, "bfifo").value_or(static_cast<uint32_t>(dflt));
  return std::make_unique<BfifoQdisc>(limit, env.psched_mtu());
}

std::unique_ptr<Qdisc> make_pfifo_fast(const QdiscOptions& o, const QdiscEnv& env) {
  // Each band is a ring of txqueuelen slots; the kernel refuses a zero-sized ring.
  if (env.txqueuelen == 0) o.fail("pfifo_fast needs a device txqueuelen of at least 1 (got 0)");
  return std::make_unique<PfifoFastQdisc>(env.txqueuelen);
}

// tc's fifo printer: "limit 1000p" (packets) or "limit 30Kb" (bytes, tc's size printer); -j
// {"limit":N} either way.
std::string packets_text(const DumpAttrs& a, bool) { return "limit " + std::to_string(a.number("limit")) + "p"; }
std::string bytes_text(const DumpAttrs& a, bool) { return "limit " + tc::format_size(a.number("limit")); }
std::string limit_json(const DumpAttrs& a, bool) { return "{\"limit\":" + std::to_string(a.number("limit")) + "}"; }

// The fifos' one option: a change keeps the others' (there are none) and takes the new limit.
const tc::MergeTable kFifoMerge = {{"limit", {"limit", 1}}};

}  // namespace

namespace tc {

using enum ClassModel;

constinit const QdiscKind kPfifoKind = {.name = "pfifo", .make = make_pfifo, .classes = classless,
    .merge = &kFifoMerge, .options_end_with_space = false, .text = packets_text, .json = limit_json};
constinit const QdiscKind kBfifoKind = {.name = "bfifo", .make = make_bfifo, .classes = classless,
    .merge = &kFifoMerge, .options_end_with_space = false, .text = bytes_text, .json = limit_json};
constinit const QdiscKind kPfifoHeadDropKind = {.name = "pfifo_head_drop", .make = make_pfifo_head_drop,
    .classes = classless, .merge = &kFifoMerge, .options_end_with_space = false,
    .text = packets_text, .json = limit_json};
// tc prints pfifo_fast with prio's printer (its dump is a tc_prio_qopt).
constinit const QdiscKind kPfifoFastKind = {.name = "pfifo_fast", .make = make_pfifo_fast,
    .parses_options = false, .classes = classless, .options_end_with_space = false,
    .text = prio_text, .json = prio_json};

}  // namespace tc

}  // namespace txpath
