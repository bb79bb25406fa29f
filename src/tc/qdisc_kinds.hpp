// SPDX-License-Identifier: MIT
// Everything tc/ knows of a qdisc kind, in one row that the kind's own file defines
// (src/tc/qdisc_KIND.cpp, the userspace form of iproute2's q_KIND.c): its option parser, how its
// classes are found, whether it has a change operation and which options a change merges, which
// options a change may not touch, whether it is a multi-queue root, and its printers, which
// render the qdisc's typed dump (txpath/qdisc_dump.hpp) as tc's text and JSON. make_qdisc()
// (qdisc_registry.cpp), the commands (qdisc_edit.cpp, class_edit.cpp), the model (config*.cpp)
// and the printer (show.cpp, print.cpp) ask qdisc_kind(); none of them names a kind. A kind not
// in the table (one tc knows and txpath does not, or a library user's own) gets the unknown
// row's answers: no parser, the generic printer. Private to src/tc/.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "txpath/qdisc.hpp"
#include "txpath/qdisc_options.hpp"

namespace txpath::tc {

// For `change`: an option keyword, the group whose later value overrides an earlier one (ecn /
// noecn are one group), and how many value tokens follow the keyword.
struct OptionShape {
  std::string_view group;
  int values;
};
using MergeTable = std::map<std::string_view, OptionShape>;

// How a qdisc's classes are found (its class operations' find()).
enum class ClassModel {
  classless,     // no classes at all: a child or class under it is refused
  explicit_,     // classes exist once added (htb)
  one_for_any,   // one class answers to every class id of the qdisc (tbf)
  per_band,      // one per band, 1..bands (prio; "bands N", default 3)
  per_tx_queue,  // one per TX queue of the device (mq, mqprio)
  none_found,    // classful, but no class id is found (fq_codel's flows, codel, red)
};

// A printer of options (tc's print_qopt / print_copt): the text tc prints after the kind, or the
// JSON object of tc -j; `details` is tc -d.
using OptionsPrinter = std::string (*)(const DumpAttrs& options, bool details);
// A printer of xstats (tc's print_xstats): tc -s's lines, each with tc's leading spaces and '\n'.
using XstatsPrinter = std::string (*)(const Xstats& xstats);

struct QdiscKind {
  std::string_view name;
  // The parser (tc's parse_qopt, then the kernel's init): the qdisc from the option tokens after
  // the kind. nullptr: a kind txpath does not have.
  std::unique_ptr<Qdisc> (*make)(const QdiscOptions& options, const QdiscEnv& env) = nullptr;
  bool parses_options = true;  // false: tc has no option parser ("does not support option parsing")
  ClassModel classes = ClassModel::none_found;
  bool change_op = true;                 // false: tc always sends options and a change is refused
  const MergeTable* merge = nullptr;     // a change merges these options; nullptr: replaces them
  std::span<const std::string_view> fixed_on_change{};  // options a change may not give
  bool multiqueue_root = false;          // root only, on a device of several TX queues
  bool options_end_with_space = true;    // iproute2 6.1's printer ends the options with ' '
  // The printers; nullptr: the generic one (every attribute as "name value"; JSON: an object of
  // them), no xstats lines, no class options.
  OptionsPrinter text = nullptr;
  OptionsPrinter json = nullptr;
  XstatsPrinter xstats = nullptr;
  OptionsPrinter class_text = nullptr;
  OptionsPrinter class_json = nullptr;  // `details` unused: tc -j -d prints the same
  XstatsPrinter class_xstats = nullptr;
};

// The entry for `kind`, or kUnknownKind's answers (with an empty name) for one not in the table.
const QdiscKind& qdisc_kind(std::string_view kind) noexcept;
// The kinds txpath has, "pfifo_fast, pfifo, ..., mqprio" (for a refusal).
std::string known_kinds();

// The rows, each defined in its kind's file: qdisc_fifo.cpp (pfifo, bfifo, pfifo_head_drop,
// pfifo_fast), qdisc_prio.cpp, qdisc_tbf.cpp, qdisc_htb.cpp, qdisc_fq.cpp, qdisc_fq_codel.cpp
// (fq_codel), qdisc_codel.cpp, qdisc_red.cpp, qdisc_mq.cpp (mq, mqprio).
extern const QdiscKind kPfifoKind, kBfifoKind, kPfifoHeadDropKind, kPfifoFastKind, kPrioKind,
    kTbfKind, kHtbKind, kFqKind, kFqCodelKind, kCodelKind, kRedKind, kMqKind, kMqprioKind;

// Shared between rows: the options a change of the CoDel family merges (qdisc_fq_codel.cpp),
// and prio's printers, which tc uses for pfifo_fast too (qdisc_prio.cpp).
extern const MergeTable kCodelMerge;
std::string prio_text(const DumpAttrs& options, bool details);
std::string prio_json(const DumpAttrs& options, bool details);

}  // namespace txpath::tc
