// SPDX-License-Identifier: MIT
// Pieces of the tc layer shared between its files (not public API).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <iosfwd>
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
// Runs every line of a -batch file `text` (`name` in its errors) on cfg as tc's batch mode does:
// the first failure stops it (with -force it goes on), the changes of the lines that succeeded
// are kept. Returns 1 if a line failed, else 0; an error at which tc exits at once (tc_exits)
// stops it with that status (batch.cpp). `changed`: a line changed the configuration.
int run_batch(Config& cfg, std::string_view text, std::string_view name, bool force,
              const Config::ShowOptions& show, std::ostream& out, std::ostream& err, bool& changed);
// How many device trees Config::build() has built in this process: what a command costs, for
// the tests that check that a batch does not build a tree per line.
uint64_t tree_builds() noexcept;

}  // namespace txpath::tc
