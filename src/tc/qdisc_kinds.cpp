// SPDX-License-Identifier: MIT
// qdisc_kind(): the rows of qdisc_kinds.hpp, each defined in its kind's own file, found by name.
#include "tc/qdisc_kinds.hpp"

#include <algorithm>
#include <array>

namespace txpath::tc {

namespace {

// A kind tc knows and txpath does not: classful as far as tc can tell, changes replace, printed
// by the generic printer.
constexpr QdiscKind kUnknownKind = {.name = "", .classes = ClassModel::none_found};

// In the order the refusal of an unknown kind lists them (known_kinds()).
constexpr std::array<const QdiscKind*, 13> kKinds = {
    &kPfifoFastKind, &kPfifoKind, &kBfifoKind, &kPfifoHeadDropKind, &kPrioKind, &kTbfKind,
    &kFqCodelKind, &kCodelKind, &kRedKind, &kHtbKind, &kFqKind, &kMqKind, &kMqprioKind};

}  // namespace

const QdiscKind& qdisc_kind(std::string_view kind) noexcept {
  const auto it = std::find_if(kKinds.begin(), kKinds.end(),
                               [&](const QdiscKind* k) { return k->name == kind; });
  return it == kKinds.end() ? kUnknownKind : **it;
}

std::string known_kinds() {
  std::string s;
  for (const QdiscKind* k : kKinds) s.append(s.empty() ? "" : ", ").append(k->name);
  return s;
}

}  // namespace txpath::tc
