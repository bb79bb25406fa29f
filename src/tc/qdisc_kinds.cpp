// SPDX-License-Identifier: MIT
// The table of qdisc_kinds.hpp: one row per kind txpath implements. Sources: each kind's class
// operations in the kernel's net/sched/sch_KIND.c (find(), change()), and iproute2's
// tc/q_KIND.c printers for the trailing space (docs/tc-compatibility.md).
#include "tc/qdisc_kinds.hpp"

#include <algorithm>
#include <array>

namespace txpath::tc {

namespace {

// The fifos' one option: a change keeps the others' (there are none) and takes the new limit.
const MergeTable kFifoMerge = {{"limit", {"limit", 1}}};

// fq_codel: the number of flows is fixed once the qdisc exists (sch_fq_codel.c's change()).
constexpr std::array<std::string_view, 1> kFqCodelFixed = {"flows"};

using enum ClassModel;

const std::array<QdiscKind, 14> kKinds = {{
    {.name = "pfifo", .classes = classless, .merge = &kFifoMerge, .options_end_with_space = false},
    {.name = "bfifo", .classes = classless, .merge = &kFifoMerge, .options_end_with_space = false},
    {.name = "pfifo_head_drop", .classes = classless, .merge = &kFifoMerge,
     .options_end_with_space = false},
    {.name = "pfifo_fast", .classes = classless, .options_end_with_space = false},
    {.name = "fq", .classes = classless, .merge = &kFqMerge},
    {.name = "fq_codel", .classes = none_found, .merge = &kFqCodelMerge,
     .fixed_on_change = kFqCodelFixed},
    {.name = "codel", .classes = none_found, .merge = &kFqCodelMerge},  // its options: a subset
    {.name = "red", .classes = none_found},
    {.name = "tbf", .classes = one_for_any},
    {.name = "prio", .classes = per_band, .options_end_with_space = false},
    {.name = "htb", .classes = explicit_, .change_op = false, .options_end_with_space = false},
    {.name = "mq", .classes = per_tx_queue, .multiqueue_root = true},
    {.name = "mqprio", .classes = per_tx_queue, .change_op = false, .multiqueue_root = true,
     .options_end_with_space = false},
    // A kind tc knows and txpath does not: classful as far as tc can tell, changes replace.
    {.name = "", .classes = none_found},
}};

}  // namespace

const QdiscKind& qdisc_kind(std::string_view kind) noexcept {
  const auto it = std::find_if(kKinds.begin(), kKinds.end() - 1,
                               [&](const QdiscKind& k) { return k.name == kind; });
  return *it;  // the last row when none matched
}

}  // namespace txpath::tc
