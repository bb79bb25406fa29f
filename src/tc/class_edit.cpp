// SPDX-License-Identifier: MIT
// `txpath tc class add|change|replace|del`: the edits of a device's configured classes, checked
// in the order the kernel checks a request (net/sched/sch_api.c: tc_ctl_tclass, with tc's netlink
// flags add = EXCL|CREATE, change = none, replace = CREATE), then as htb's class operations
// answer (sch_htb.c: htb_change_class, htb_delete), with the errors tc prints for them:
//   - the qdisc is the parent's major, else the class id's, else the root qdisc; a parent and a
//     class id of two qdiscs, a classless qdisc, a new class without a kind or with class id 0:
//     "RTNETLINK answers: Invalid argument"; no such qdisc, or a class to change or delete that
//     does not exist: "No such file or directory"; a class added that exists: "File exists";
//   - a new class whose parent class does not exist becomes a root class of its qdisc;
//   - a change (or replace) of an existing class ignores the parent named and applies the options;
//   - a class with child classes is not deleted: "Error: HTB class in use.".
// txpath edits the classes of htb only: the implicit classes of tbf, prio and mq exist (adding
// one: "File exists") but answer any other edit "Operation not supported". Written from the kernel's behaviour; no code copied.
#include <cstdlib>
#include <string>

#include "tc/commands.hpp"
#include "tc/internal.hpp"
#include "tc/qdisc_kinds.hpp"
#include "tc/tc_error.hpp"
#include "txpath/error.hpp"
#include "txpath/tc.hpp"

namespace txpath::tc {

namespace {

// Whether class `classid` of a qdisc whose classes are implicit (not htb) exists, as its class
// operations' find() answers: tbf's one class for every id, mq's one per TX queue, prio's one per
// band.
bool implicit_class_exists(const QdiscConfig& owner, uint32_t classid, uint32_t tx_queues) {
  const uint32_t minor = minor_of(classid);
  switch (qdisc_kind(owner.kind).classes) {
    case ClassModel::one_for_any: return classid != 0;
    case ClassModel::per_tx_queue: return minor >= 1 && minor <= tx_queues;
    case ClassModel::per_band: {
      uint32_t bands = 3;
      for (std::size_t i = 0; i + 1 < owner.options.size(); ++i)
        if (owner.options[i] == "bands") bands = static_cast<uint32_t>(std::strtoul(owner.options[i + 1].c_str(), nullptr, 10));
      return minor >= 1 && minor <= bands;
    }
    default: return false;  // fq_codel: no class is found
  }
}

}  // namespace

bool Config::TreeCommand::add_htb_class(uint32_t classid, uint32_t parent) {
  if (t.kind.empty()) refuse_errno("Invalid argument", "a new class needs its kind and options");
  if (minor_of(classid) == 0)
    refuse_errno("Invalid argument", "class id " + format_handle(classid) + ": txpath needs a minor above 0");
  uint32_t under = range_first(classid);  // a root class of its qdisc
  if (parent != kRoot && minor_of(parent) != 0 && d.find_class(parent)) {
    under = parent;
    // A leaf that gets a child becomes an inner class: its qdisc goes (as in the kernel).
    if (const QdiscConfig* q = d.qdisc_at(parent)) d.remove_subtree(q->handle);
  }
  d.add_class(ClassConfig{classid, under, t.kind, t.options});
  cfg.validate(d);
  return true;
}

bool Config::TreeCommand::del_class(uint32_t classid) {
  if (d.child_classes.count(classid)) throw ConfigRejected("HTB class in use.");
  if (const QdiscConfig* q = d.qdisc_at(classid)) d.remove_subtree(q->handle);
  d.remove_class(classid);
  cfg.validate(d);
  return true;
}

bool Config::TreeCommand::edit_class(Verb verb) {
  const uint32_t pid = t.parent.value_or(0);
  uint32_t clid = t.classid.value_or(0);
  uint32_t qid = range_first(clid);  // the class id's major first, then the parent's
  if (pid != kRoot) {
    const uint32_t from_parent = range_first(pid);
    if (from_parent && qid && from_parent != qid)
      refuse_errno("Invalid argument", "parent " + format_handle(pid) + " and class " +
                                           format_handle(clid) + " are of two qdiscs");
    if (from_parent) qid = from_parent;
  }
  if (qid == 0 && d.root()) qid = d.root()->handle;
  const QdiscConfig* owner = qid ? d.qdisc(qid) : nullptr;
  if (!owner) refuse_errno("No such file or directory", "no qdisc " + format_handle(qid));
  if (is_classless(owner->kind)) refuse_errno("Invalid argument", "qdisc " + owner->kind + " has no classes");
  if (clid != 0) clid = qid | minor_of(clid);
  else if (pid == kRoot) clid = qid;  // the kernel's: "root" without a class id names MAJ:0
  const bool htb = qdisc_kind(owner->kind).classes == ClassModel::explicit_;
  ClassConfig* cur = htb && minor_of(clid) != 0 ? d.find_class(clid) : nullptr;
  const bool exists = htb ? cur != nullptr : implicit_class_exists(*owner, clid, d.config.tx_queues);
  if (!exists && (verb == Verb::del || verb == Verb::change)) refuse_errno("No such file or directory");
  if (exists && verb == Verb::add) refuse_errno("File exists");
  if (!htb) refuse_errno("Operation not supported", "txpath edits the classes of htb only");
  if (verb == Verb::del) return del_class(clid);  // the kind, if given, is not looked at
  if (!t.kind.empty() && t.kind != owner->kind)
    refuse_errno("Invalid argument", "qdisc " + format_handle(qid) + " is " + owner->kind);
  if (!cur) return add_htb_class(clid, pid);
  if (t.kind.empty()) refuse_errno("Invalid argument", "a class change needs its kind and options");
  cur->options = t.options;  // the parent named, if any, is ignored, as htb ignores it
  cfg.validate(d);
  return true;
}

}  // namespace txpath::tc
