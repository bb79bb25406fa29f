// SPDX-License-Identifier: MIT
// The qdisc and class commands' shared pieces (not public API): what a command names before the
// kind, its verb, and the qdisc edits (qdisc_edit.cpp), which follow the kernel's order of checks
// (net/sched/sch_api.c: tc_modify_qdisc, tc_get_qdisc) so that a command is refused with the
// kernel's own message, as tc prints it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tc/config_model.hpp"
#include "txpath/tc.hpp"

namespace txpath::tc {

// What `qdisc ...` and `class ...` commands say before the kind.
struct Target {
  std::string dev;
  std::optional<uint32_t> handle;   // qdisc: "handle"
  std::optional<uint32_t> parent;   // "root" or "parent ID"
  std::optional<uint32_t> classid;  // class: "classid"
  std::string kind;
  std::vector<std::string> options;
};

// The verb of a qdisc or class command.
enum class Verb { show, add, change, replace, del, help };

// The options a change of a `kind` qdisc leaves in force: the old ones with the given ones
// overriding them where the kernel's change() merges (config.cpp).
std::vector<std::string> merge_options(std::string_view kind, const std::vector<std::string>& old,
                                       const std::vector<std::string>& given);
// Kinds whose qdisc has no classes at all (the kernel's cl_ops is NULL) (qdisc_edit.cpp).
bool is_classless(std::string_view kind);

// One qdisc or class edit of device `d` as target `t` names it; it throws on a refusal, and
// qdisc_command / class_command then restore the device.
struct Config::TreeCommand {
  Config& cfg;
  DeviceTree& d;
  const Target& t;

  // add, change and replace: the kernel's tc_modify_qdisc with tc's flags for the verb.
  bool modify(Verb verb);
  bool del();
  // A class command (class_edit.cpp): the kernel's tc_ctl_tclass, then htb's class operations.
  bool edit_class(Verb verb);

 private:
  // The class a qdisc given parent `parent` is attached to (tbf's one class for any minor).
  uint32_t class_of_parent(uint32_t parent) const;
  // The qdisc configured at parent `parent` (nullptr for the default root), after the checks
  // the kernel makes of the parent.
  QdiscConfig* at_parent(uint32_t parent);
  // A new qdisc at the target's parent, in place of `old` (if any); `create`: NLM_F_CREATE.
  bool create_n_graft(QdiscConfig* old, bool create);
  // The change of an existing qdisc q's options (no kind given: nothing to change).
  bool change(QdiscConfig& q);
  // A new htb class `classid` below `parent` (a class that does not exist: the root).
  bool add_htb_class(uint32_t classid, uint32_t parent);
  bool del_class(uint32_t classid);
  // Like the kernel's counter: the search goes on from the last handle given out.
  uint32_t auto_handle();
};

}  // namespace txpath::tc
