// SPDX-License-Identifier: MIT
// prio's tc side: its option parser (make_prio) and the text tc prints for it. The qdisc itself
// is src/qdisc/prio.cpp. Written from sch_prio semantics and tc-prio(8); no code copied.
//
// Option parser (make_prio): tokens after "prio", in any order:
//   bands N             N a decimal integer in [2, 16]; at most once
//   priomap P0 [P1 ...] 1 to 16 decimal integers, each < bands (checked once all options are
//                       read, so "priomap ... bands N" works too); entries not given keep their
//                       default (tc fills prio2band from the default map the same way); at
//                       most once. The priomap ends at the first token that is not a number.
// Every error is one-line ConfigError via QdiscOptions::fail().
#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "qdisc/prio.hpp"
#include "tc/qdisc_kinds.hpp"
#include "tc/qdisc_spec.hpp"
#include "tc/tc_units.hpp"

namespace txpath {

namespace {

bool is_number(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A decimal number saturated at 1000 (every valid value here is <= 16).
unsigned small_number(std::string_view s) {
  unsigned v = 0;
  for (char c : s) v = std::min(1000u, v * 10 + static_cast<unsigned>(c - '0'));
  return v;
}

}  // namespace

std::unique_ptr<Qdisc> make_prio(const QdiscOptions& options, const QdiscEnv& env) {
  std::optional<std::size_t> bands;
  std::array<unsigned, 16> map{};  // as given (saturated at 1000), for the range check
  std::copy(PrioQdisc::kDefaultPriomap.begin(), PrioQdisc::kDefaultPriomap.end(), map.begin());
  bool have_priomap = false;
  std::size_t given = 0;
  std::string_view bands_text;  // priomap entries given (tc checks those; the kernel checks all 16)
  for (std::size_t i = 0; i < options.size(); ++i) {
    const std::string_view opt = options[i];
    if (opt == "bands") {
      if (bands) options.fail("duplicated option \"bands\"");
      const std::string_view v = options.value(i);
      if (!is_number(v)) options.fail("invalid bands " + quoted(v));
      bands = small_number(v);  // range-checked after the priomap, as tc and the kernel do
      bands_text = v;
    } else if (opt == "priomap") {
      if (have_priomap) options.fail("duplicated option \"priomap\"");
      have_priomap = true;
      std::size_t n = 0;
      while (i + 1 < options.size() && is_number(options[i + 1])) {
        if (n == map.size()) options.fail("priomap has more than 16 entries");
        map[n++] = small_number(options[++i]);
      }
      if (n == 0) options.fail("\"priomap\" needs at least one band number");
      given = n;
    } else {
      options.fail("unknown option " + quoted(opt) + " (known: bands, priomap)");
    }
  }
  // tc checks the priomap against the bands it was given (a parse error, exit 1); the kernel then
  // refuses a band count outside 2..16 (a rejection, exit 2).
  const std::size_t nbands = bands.value_or(3);
  PrioQdisc::Priomap priomap{};
  for (std::size_t k = 0; k < map.size(); ++k) {
    if (map[k] >= nbands && k < given)
      options.fail("priomap entry " + std::to_string(k) + " is band " + std::to_string(map[k]) +
                   ", not below bands " + std::to_string(nbands));
    priomap[k] = static_cast<uint8_t>(map[k]);
  }
  if (nbands < PrioQdisc::kMinBands || nbands > PrioQdisc::kMaxBands)
    options.reject("bands " + std::string(bands_text) + " is out of range (2..16)");  // digits
  for (std::size_t k = given; k < map.size(); ++k) {
    if (map[k] >= nbands)
      options.reject("default priomap entry " + std::to_string(k) + " is band " +
                     std::to_string(map[k]) + ", not below bands " + std::to_string(nbands));
  }
  return std::make_unique<PrioQdisc>(nbands, priomap, env.txqueuelen, env.handle_major);
}

namespace tc {

// tc's prio printer (q_prio.c), for prio and pfifo_fast: "bands N priomap P0 ... P15"; -j
// {"bands":N,"priomap":[P0,...],"multiqueue":false}.
std::string prio_text(const DumpAttrs& a, bool) {
  std::string s = "bands " + std::to_string(a.number("bands")) + " priomap";
  for (uint64_t b : a.array("priomap")) s.append(" ").append(std::to_string(b));
  return s;
}

std::string prio_json(const DumpAttrs& a, bool) {
  return "{\"bands\":" + std::to_string(a.number("bands")) + ",\"priomap\":[" + tc::join_numbers(a.array("priomap")) +
         "],\"multiqueue\":" + (a.flag("multiqueue") ? "true" : "false") + "}";
}

constinit const QdiscKind kPrioKind = {.name = "prio", .make = make_prio, .classes = ClassModel::per_band,
    .options_end_with_space = false, .text = prio_text, .json = prio_json};

}  // namespace tc

}  // namespace txpath
