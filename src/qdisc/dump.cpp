// SPDX-License-Identifier: MIT
// DumpAttrs' readers (txpath/qdisc_dump.hpp): the first attribute of a name, its type's zero when
// it is absent or of another type.
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "txpath/qdisc_dump.hpp"

namespace txpath {

const DumpValue* DumpAttrs::find(std::string_view name) const noexcept {
  for (const DumpAttr& a : attrs_)
    if (a.name == name) return &a.value;
  return nullptr;
}

uint64_t DumpAttrs::number(std::string_view name) const noexcept {
  const DumpValue* v = find(name);
  if (!v) return 0;
  if (const auto* u = std::get_if<uint64_t>(v)) return *u;
  if (const auto* i = std::get_if<int64_t>(v)) return *i >= 0 ? static_cast<uint64_t>(*i) : 0;
  return 0;
}

int64_t DumpAttrs::signed_number(std::string_view name) const noexcept {
  const DumpValue* v = find(name);
  if (!v) return 0;
  if (const auto* i = std::get_if<int64_t>(v)) return *i;
  if (const auto* u = std::get_if<uint64_t>(v))
    return *u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? static_cast<int64_t>(*u) : 0;
  return 0;
}

bool DumpAttrs::flag(std::string_view name) const noexcept {
  const DumpValue* v = find(name);
  const bool* b = v ? std::get_if<bool>(v) : nullptr;
  return b && *b;
}

std::string_view DumpAttrs::word(std::string_view name) const noexcept {
  const DumpValue* v = find(name);
  const std::string* s = v ? std::get_if<std::string>(v) : nullptr;
  return s ? std::string_view(*s) : std::string_view();
}

std::span<const uint64_t> DumpAttrs::array(std::string_view name) const noexcept {
  const DumpValue* v = find(name);
  const std::vector<uint64_t>* a = v ? std::get_if<std::vector<uint64_t>>(v) : nullptr;
  return a ? std::span<const uint64_t>(*a) : std::span<const uint64_t>();
}

}  // namespace txpath
