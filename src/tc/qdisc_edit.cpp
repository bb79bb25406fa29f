// SPDX-License-Identifier: MIT
// `txpath tc qdisc add|change|replace|del`: the edits of a device's configured qdiscs, checked
// in the order the kernel checks a request (net/sched/sch_api.c: tc_modify_qdisc for add, change
// and replace, with tc's netlink flags add = EXCL|CREATE, change = none, replace =
// CREATE|REPLACE; tc_get_qdisc for del), with the kernel's extended-ack messages, so that each
// command fails, or succeeds, as it does on Linux (tests/cli/tc_kernel_cmds.sh compares them).
// Written from the kernel's documented behaviour and observed answers; no code copied.
#include <algorithm>
#include <string>

#include "tc/commands.hpp"
#include "tc/internal.hpp"
#include "tc/qdisc_kinds.hpp"
#include "tc/tc_error.hpp"
#include "txpath/error.hpp"
#include "txpath/tc.hpp"

namespace txpath::tc {

namespace {

[[noreturn]] void rejected(const std::string& what) { throw ConfigRejected(what); }

bool explicit_classes(const QdiscConfig& q) { return qdisc_kind(q.kind).classes == ClassModel::explicit_; }


}  // namespace

bool is_classless(std::string_view kind) { return qdisc_kind(kind).classes == ClassModel::classless; }

uint32_t Config::TreeCommand::class_of_parent(uint32_t parent) const {
  if (parent == kRoot) return parent;
  const QdiscConfig* owner = d.qdisc(range_first(parent));
  // tbf's one class answers to every class id of its qdisc (sch_tbf's find()).
  return owner && qdisc_kind(owner->kind).classes == ClassModel::one_for_any ? owner->handle | 1u : parent;
}

QdiscConfig* Config::TreeCommand::at_parent(uint32_t parent) {
  if (parent == kRoot) return d.qdisc_at(kRoot);
  const QdiscConfig* owner = d.qdisc(range_first(parent));
  if (major_of(parent) == 0 || !owner) rejected("Failed to find specified qdisc.");
  if (is_classless(owner->kind)) rejected("Parent qdisc is not classful.");
  parent = class_of_parent(parent);
  if (minor_of(parent) == 0) rejected("Specified class not found.");
  if (explicit_classes(*owner) && !d.find_class(parent)) rejected("Specified class not found.");
  if (is_multiqueue_kind(owner->kind) && minor_of(parent) > d.config.tx_queues)
    rejected("Specified class not found.");
  return d.qdisc_at(parent);
}

uint32_t Config::TreeCommand::auto_handle() {
  for (uint32_t tries = 0; tries < 0x7FFF; ++tries) {
    const uint32_t major = d.next_auto_major;
    d.next_auto_major = major == 0xFFFF ? 0x8001 : major + 1;
    if (!d.qdisc(major << 16)) return major << 16;
  }
  rejected("no free qdisc handle");
}

bool Config::TreeCommand::create_n_graft(QdiscConfig* old, bool create) {
  if (!create) rejected("Qdisc not found. To create specify NLM_F_CREATE flag.");
  if (t.kind.empty()) rejected("Specified qdisc kind is unknown.");
  const uint32_t parent = class_of_parent(*t.parent);
  if (parent != kRoot) {
    if (d.child_classes.count(parent))  // htb grafts onto a leaf class only
      refuse_errno("Invalid argument", "class " + format_handle(parent) + " has child classes");
    if (d.qdiscs_above(parent) >= kMaxNestedQdiscs)
      rejected("a qdisc at parent " + format_handle(parent) + " would be nested too deep (at most " +
               std::to_string(kMaxNestedQdiscs) + " nested qdiscs)");
  }
  if (old) d.remove_subtree(old->handle);
  QdiscConfig q{t.handle.value_or(0), parent, t.kind, t.options};
  if (q.handle == 0) q.handle = auto_handle();
  d.add_qdisc(std::move(q));
  cfg.validate(d);
  return true;
}

bool Config::TreeCommand::change(QdiscConfig& q) {
  if (t.kind.empty()) return false;  // tc sends no options without a kind: nothing changes
  // Kinds without the kernel's change operation, for which tc always sends options: a change is
  // refused. (mq and pfifo_fast have none either, but tc sends them no options: nothing to do.)
  const QdiscKind& kind = qdisc_kind(q.kind);
  if (!kind.change_op) rejected("Change operation not supported by specified qdisc.");
  for (const auto& o : t.options)
    if (std::find(kind.fixed_on_change.begin(), kind.fixed_on_change.end(), o) != kind.fixed_on_change.end())
      rejected(q.kind + ": the number of " + o + " cannot be changed");
  q.options = merge_options(q.kind, q.options, t.options);
  cfg.validate(d);
  return true;
}

bool Config::TreeCommand::modify(Verb verb) {
  const bool replace = verb == Verb::replace, excl = verb == Verb::add;
  const bool create = verb != Verb::change;
  const bool have_handle = t.handle && *t.handle != 0;  // "handle 0:" is no handle
  QdiscConfig* q = nullptr;
  if (t.parent) {
    q = at_parent(*t.parent);
    if (!q || !have_handle || q->handle != *t.handle) {
      if (have_handle) {
        if (q && !replace) rejected("NLM_F_REPLACE needed to override.");
        const QdiscConfig* other = d.qdisc(*t.handle);
        if (!other) return create_n_graft(q, create);
        if (other->parent != class_of_parent(*t.parent))
          rejected("Cannot move an existing qdisc to a different parent.");
        if (excl) rejected("Exclusivity flag on, cannot override.");
        if (!t.kind.empty() && t.kind != other->kind) rejected("Invalid qdisc name: must match existing qdisc.");
        q = d.qdisc(*t.handle);  // the one at this parent: changed below
      }
      if (!q) return create_n_graft(nullptr, create);
      // Another kind than the one at the parent, without a handle: Linux 6.18 grafts a new qdisc
      // there for add, change and replace alike (observed; older kernels refused add and change).
      if (!t.kind.empty() && t.kind != q->kind) return create_n_graft(q, true);
    }
  } else {
    if (!have_handle) rejected("Handle cannot be zero.");
    q = d.qdisc(*t.handle);
  }
  if (!q) rejected("Specified qdisc not found.");
  if (excl) rejected("Exclusivity flag on, cannot modify.");
  if (!t.kind.empty() && t.kind != q->kind) rejected("Invalid qdisc name: must match existing qdisc.");
  return change(*q);
}

bool Config::TreeCommand::del() {
  const QdiscConfig* q = nullptr;
  std::string kind;  // q's kind, or the default qdisc's there
  if (t.parent) {
    const uint32_t parent = class_of_parent(*t.parent);
    if (parent == kRoot) {
      q = d.root();
      kind = q ? q->kind : d.config.tx_queues > 1 ? "mq" : "pfifo_fast";
    } else {
      if (major_of(parent) == 0xFFFF)  // the ingress side, which txpath has not
        rejected("Cannot find specified qdisc on specified device.");
      const QdiscConfig* owner = d.qdisc(range_first(parent));
      if (major_of(parent) == 0 || !owner) rejected("Failed to find qdisc with specified classid.");
      if (is_classless(owner->kind)) rejected("Parent qdisc is not classful.");
      q = d.qdisc_at(parent);
      if (!q && (minor_of(parent) == 0 || (explicit_classes(*owner) && !d.find_class(parent)) ||
                 (is_multiqueue_kind(owner->kind) && minor_of(parent) > d.config.tx_queues)))
        rejected("Specified class not found.");
      if (!q && d.child_classes.count(parent))  // an inner htb class has no qdisc at all
        rejected("Cannot find specified qdisc on specified device.");
      kind = q ? q->kind : "pfifo_fast";  // a class's default qdisc (handle 0)
    }
    if (t.handle && *t.handle != 0 && (!q || q->handle != *t.handle)) rejected("Invalid handle.");
  } else {
    q = t.handle && *t.handle != 0 ? d.qdisc(*t.handle) : nullptr;
    if (!q) rejected("Failed to find qdisc with specified handle.");
    kind = q->kind;
  }
  if (!t.kind.empty() && t.kind != kind) rejected("Invalid qdisc name: must match existing qdisc.");
  if (!t.parent) rejected("Classid cannot be zero.");
  if (!q) rejected("Cannot delete qdisc with handle of zero.");
  d.remove_subtree(q->handle);
  cfg.validate(d);
  return true;
}

}  // namespace txpath::tc
