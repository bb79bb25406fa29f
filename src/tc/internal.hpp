// SPDX-License-Identifier: MIT
// Pieces of the tc layer shared between its files (not public API).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "txpath/qdisc.hpp"
#include "txpath/tc.hpp"

namespace txpath::tc {

// The [first, last] keys of a qdisc's classes (and of the parents of the qdiscs on them) in the
// maps keyed by class id: major:0 .. major:ffff, less kRoot (ffff:ffff), which is no class.
constexpr uint32_t range_first(uint32_t handle) noexcept { return handle & 0xFFFF0000u; }
constexpr uint32_t range_last(uint32_t handle) noexcept {
  return (handle | 0xFFFFu) == kRoot ? kRoot - 1 : (handle | 0xFFFFu);
}

// A batch or configuration line split as tc's makeargs does: whitespace-separated words, double
// quotes group a word, '#' starts a comment (config.cpp).
std::vector<std::string> batch_words(std::string_view line);
// mq or mqprio: a root with one child per TX queue (config.cpp).
bool is_multiqueue_kind(std::string_view kind) noexcept;
// The key of a qdisc in a live document: its handle, and for a handle-0 qdisc below the root
// (mq's default children) its parent too (show.cpp).
std::string qdisc_key(uint32_t handle, uint32_t parent);
// The counters tc shows for qdisc q: mq's and mqprio's are the sum of their children's.
QdiscStats shown_stats(const Qdisc& q);
// Appends qdisc q's entry (with `stats` as its generic counters) as `handle` below `parent`, then
// its classes' entries (show.cpp).
void append_counters(const Qdisc& q, uint32_t handle, uint32_t parent, const QdiscStats& stats,
                     TreeCounters& out);
// Tells show.warn the kernel's warning about class `classid` of `tree`, if any (show.cpp).
void warn_about_class(const Tree& tree, uint32_t classid, const Config::ShowOptions& show);
// make_qdisc() for the `txpath tc` commands: its errors are tc's own lines alone, with tc's exit
// statuses (tc_error.hpp), not `qdisc "<spec>": ...` (qdisc_registry.cpp).
std::unique_ptr<Qdisc> make_tc_qdisc(std::string_view spec, const QdiscEnv& env);
// The same over words as given (an empty word stays a word, as in tc's argv).
std::unique_ptr<Qdisc> make_tc_qdisc(std::span<const std::string> words, const QdiscEnv& env);
// A dump's attributes as a JSON object (numbers, booleans, strings, arrays of numbers), and back:
// the live document's typed options (print.cpp).
nlohmann::ordered_json dump_attrs_json(const DumpAttrs& a);
DumpAttrs dump_attrs_from_json(const nlohmann::ordered_json& j);
// True if a command (the words after tc's options) only reads: a show, a help, an unknown verb.
bool is_read_only_command(std::span<const std::string> words);
// True if words[0] is a tc object (qdisc, class or link, or a prefix tc accepts for one).
bool is_tc_command(std::span<const std::string> words);

}  // namespace txpath::tc
