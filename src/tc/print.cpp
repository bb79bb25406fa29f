// SPDX-License-Identifier: MIT
// tc's printers over a qdisc's typed dump (txpath/tc.hpp): each kind's row of the kind table
// (qdisc_kinds.hpp) names its printers; a kind without them gets the generic printer below.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include "tc/internal.hpp"
#include "tc/qdisc_kinds.hpp"
#include "txpath/tc.hpp"

namespace txpath::tc {

namespace {

// Every attribute as "name value": a flag as its name when set, an array as its numbers.
std::string generic_text(const DumpAttrs& a, bool) {
  std::string s;
  auto put = [&s](std::string_view word) { s.append(s.empty() ? "" : " ").append(word); };
  for (const DumpAttr& attr : a.all()) {
    std::visit(
        [&](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, bool>) {
            if (v) put(attr.name);
          } else if constexpr (std::is_same_v<V, std::string>) {
            put(attr.name);
            put(v);
          } else if constexpr (std::is_same_v<V, std::vector<uint64_t>>) {
            put(attr.name);
            for (uint64_t n : v) put(std::to_string(n));
          } else {
            put(attr.name);
            put(std::to_string(v));
          }
        },
        attr.value);
  }
  return s;
}

std::string generic_json(const DumpAttrs& a, bool) { return dump_attrs_json(a).dump(); }

const QdiscKind& kind_of(const Qdisc& q) { return qdisc_kind(q.kind()); }

}  // namespace

nlohmann::ordered_json dump_attrs_json(const DumpAttrs& a) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const DumpAttr& attr : a.all()) std::visit([&](const auto& v) { j[attr.name] = v; }, attr.value);
  return j;
}

DumpAttrs dump_attrs_from_json(const nlohmann::ordered_json& j) {
  DumpAttrs a;
  if (!j.is_object()) return a;
  for (const auto& [name, v] : j.items()) {
    if (v.is_boolean()) a.flag(name, v.get<bool>());
    else if (v.is_number_unsigned()) a.number(name, v.get<uint64_t>());
    else if (v.is_number_integer()) a.signed_number(name, v.get<int64_t>());
    else if (v.is_string()) a.word(name, v.get<std::string>());
    else if (v.is_array()) {
      std::vector<uint64_t> numbers;
      for (const auto& e : v)
        if (e.is_number_unsigned()) numbers.push_back(e.get<uint64_t>());
      a.array(name, std::move(numbers));
    }
  }
  return a;
}

std::string options_text(std::string_view kind, const DumpAttrs& options, bool details) {
  const QdiscKind& k = qdisc_kind(kind);
  return (k.text ? k.text : generic_text)(options, details);
}

std::string options_json(std::string_view kind, const DumpAttrs& options, bool details) {
  const QdiscKind& k = qdisc_kind(kind);
  return (k.json ? k.json : generic_json)(options, details);
}

std::string xstats_text(std::string_view kind, const Xstats& x) {
  const QdiscKind& k = qdisc_kind(kind);
  return k.xstats ? k.xstats(x) : std::string();
}

std::string options_text(const Qdisc& q, bool details) { return options_text(q.kind(), q.dump_options(), details); }
std::string options_json(const Qdisc& q, bool details) { return options_json(q.kind(), q.dump_options(), details); }
std::string xstats_text(const Qdisc& q, const Xstats& x) { return xstats_text(q.kind(), x); }

std::string class_options_text(const Qdisc& q, uint16_t minor, bool details) {
  const ClassOps* ops = q.class_ops();
  const QdiscKind& k = kind_of(q);
  return ops && k.class_text ? k.class_text(ops->class_dump(minor), details) : std::string();
}

std::string class_options_json(const Qdisc& q, uint16_t minor) {
  const ClassOps* ops = q.class_ops();
  const QdiscKind& k = kind_of(q);
  return ops && k.class_json ? k.class_json(ops->class_dump(minor), false) : std::string("{}");
}

std::string class_xstats_text(const Qdisc& q, const Xstats& x) {
  const QdiscKind& k = kind_of(q);
  return k.class_xstats ? k.class_xstats(x) : std::string();
}

}  // namespace txpath::tc
