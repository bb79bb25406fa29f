// SPDX-License-Identifier: MIT
// What a qdisc reports of itself, typed: the userspace form of the kernel's Qdisc_ops.dump and
// Qdisc_class_ops.dump, which fill netlink attributes (TCA_OPTIONS, TCA_STATS_APP) and leave the
// text to iproute2's q_KIND.c printers. txpath's printers are in src/tc (txpath/tc.hpp's
// options_text(), options_json(), xstats_text()); the live-statistics document carries the same
// typed attributes, so a `txpath tc -s` in another process prints from the running tree.
//
// An attribute is a name (tc's own, as tc -j prints it) and one value: a number (bytes, bytes/s,
// packets, psched ticks, microseconds: each attribute's unit is its kind's, written beside its
// dump), a signed number, a flag, a word, or an array of numbers (a priomap, queue ranges). The
// attributes come in the order tc prints them. Reading an absent attribute, or one of another
// type, gives the type's zero, as a printer reading an absent netlink attribute does.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace txpath {

using DumpValue = std::variant<uint64_t, int64_t, bool, std::string, std::vector<uint64_t>>;

struct DumpAttr {
  std::string name;
  DumpValue value;
  friend bool operator==(const DumpAttr&, const DumpAttr&) = default;
};

class DumpAttrs {
 public:
  // Appends one attribute (a name given twice keeps both; readers see the first).
  DumpAttrs& number(std::string name, uint64_t v) { return add(std::move(name), DumpValue(std::in_place_index<0>, v)); }
  DumpAttrs& signed_number(std::string name, int64_t v) { return add(std::move(name), DumpValue(std::in_place_index<1>, v)); }
  DumpAttrs& flag(std::string name, bool v) { return add(std::move(name), DumpValue(std::in_place_index<2>, v)); }
  DumpAttrs& word(std::string name, std::string v) { return add(std::move(name), DumpValue(std::in_place_index<3>, std::move(v))); }
  DumpAttrs& array(std::string name, std::vector<uint64_t> v) { return add(std::move(name), DumpValue(std::in_place_index<4>, std::move(v))); }
  DumpAttrs& add(std::string name, DumpValue v) {
    attrs_.push_back({std::move(name), std::move(v)});
    return *this;
  }

  bool has(std::string_view name) const noexcept { return find(name) != nullptr; }
  const DumpValue* find(std::string_view name) const noexcept;
  // The value of `name`, or the type's zero. A number reads a non-negative signed number too, and
  // a signed number a number up to INT64_MAX (a document read back cannot tell them apart).
  uint64_t number(std::string_view name) const noexcept;
  int64_t signed_number(std::string_view name) const noexcept;
  bool flag(std::string_view name) const noexcept;
  std::string_view word(std::string_view name) const noexcept;
  std::span<const uint64_t> array(std::string_view name) const noexcept;

  std::span<const DumpAttr> all() const noexcept { return attrs_; }
  bool empty() const noexcept { return attrs_.empty(); }
  std::size_t size() const noexcept { return attrs_.size(); }
  friend bool operator==(const DumpAttrs&, const DumpAttrs&) = default;

 private:
  std::vector<DumpAttr> attrs_;
};

// tc's extended statistics (TCA_STATS_APP / xstats) as named values, in tc's print order, e.g.
// fq_codel {"maxpacket", 1514}, {"drop_overlimit", 0}, ...; JSON (tc -s -j) uses the same names.
using Xstats = std::vector<std::pair<std::string, int64_t>>;

// A qdisc's whole dump: its kind, its options, its xstats (Qdisc::dump()).
struct QdiscDump {
  std::string kind;
  DumpAttrs options;
  Xstats xstats;
};

}  // namespace txpath
