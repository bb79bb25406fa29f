// SPDX-License-Identifier: MIT
// What tc's configuration model knows of each qdisc kind, written once (qdisc_kinds.cpp's
// table): how its classes are found, whether it has a change operation and which options a
// change merges, which options a change may not touch, whether it is a multi-queue root, and how
// tc prints its options. The commands (qdisc_edit.cpp, class_edit.cpp), the model (config.cpp)
// and the printer (show.cpp) ask this table; none of them names a kind. A kind not in the table
// (one tc knows and txpath does not) gets kUnknownKind's answers. Private to src/tc/.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string_view>

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

struct QdiscKind {
  std::string_view name;
  ClassModel classes = ClassModel::none_found;
  bool change_op = true;                 // false: tc always sends options and a change is refused
  const MergeTable* merge = nullptr;     // a change merges these options; nullptr: replaces them
  std::span<const std::string_view> fixed_on_change{};  // options a change may not give
  bool multiqueue_root = false;          // root only, on a device of several TX queues
  bool options_end_with_space = true;    // iproute2 6.1's printer ends the options with ' '
};

// The entry for `kind`, or kUnknownKind's answers (with an empty name) for one not in the table.
const QdiscKind& qdisc_kind(std::string_view kind) noexcept;

// The options a change of the fq and fq_codel/codel families merges (qdisc_fq.cpp,
// qdisc_fq_codel.cpp: beside their parsers).
extern const MergeTable kFqMerge;
extern const MergeTable kFqCodelMerge;

}  // namespace txpath::tc
