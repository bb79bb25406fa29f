// SPDX-License-Identifier: MIT
// The inside of tc::Config (include/txpath/tc.hpp keeps it behind a pointer): each device's
// configured qdiscs and classes, indexed by handle, parent and class id, and the list of
// devices. `seq` numbers record the creation order, in which parents come before their children.
// Private to src/tc/.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <string>
#include <vector>

#include "txpath/tc.hpp"

namespace txpath::tc {

struct Config::DeviceTree {
  struct QdiscEntry {
    QdiscConfig config;
    uint64_t seq = 0;
  };
  struct ClassEntry {
    ClassConfig config;
    uint64_t seq = 0;
  };
  DeviceConfig config;
  std::map<uint32_t, QdiscEntry> qdiscs;       // by handle (major:0)
  std::map<uint32_t, uint32_t> qdisc_parents;  // parent (kRoot or a class id) -> handle
  std::map<uint32_t, ClassEntry> classes;      // by class id: a qdisc's classes are one range
  std::map<uint32_t, uint32_t> child_classes;  // class id -> how many classes it is parent of
  uint64_t next_seq = 0;
  uint32_t next_auto_major = 0x8001;  // where the search for an automatic handle starts
  // Qdiscs and classes removed so far (remove_class, remove_subtree): how -batch tells an add that
  // took a leaf's qdisc away (batch.cpp).
  uint64_t removals = 0;

  QdiscConfig* qdisc(uint32_t handle) noexcept;
  const QdiscConfig* qdisc(uint32_t handle) const noexcept;
  QdiscConfig* qdisc_at(uint32_t parent) noexcept;  // the qdisc attached to `parent`
  ClassConfig* find_class(uint32_t classid) noexcept;
  void add_qdisc(QdiscConfig q);
  void add_class(ClassConfig c);
  void remove_class(uint32_t classid);
  // Removes qdisc `handle` and everything below it (its classes, the qdiscs on them).
  void remove_subtree(uint32_t handle);
  // How many qdiscs a qdisc attached to `parent` would sit below.
  int qdiscs_above(uint32_t parent) const noexcept;
  // In creation order: every qdisc (the root first), a qdisc's classes, the qdiscs attached to
  // a qdisc's classes.
  std::vector<const QdiscConfig*> all_qdiscs() const;
  std::vector<const ClassConfig*> classes_of(uint32_t handle) const;
  std::vector<const QdiscConfig*> qdiscs_below(uint32_t handle) const;
  const QdiscConfig* root() const noexcept;
};

struct Config::State {
  std::list<DeviceTree> devs;  // in creation order
  std::map<std::string, std::list<DeviceTree>::iterator, std::less<>> by_name;
  // While a file is read, trees are built once at the end rather than after every line, and a
  // failed command does not restore the state (the whole configuration is dropped).
  bool defer_validation = false;
  // While a -batch line runs (batch.cpp), its device's tree is not built and a failed command does
  // not restore the state (the batch builds the trees once and restores from its own copy); the
  // line's own checks (tc's parse of its options, the edit's) run as always.
  bool defer_build = false;
};

}  // namespace txpath::tc
