// SPDX-License-Identifier: MIT
// The psched tick model (see psched.hpp). Written from the semantics of iproute2 6.1's
// tc/tc_core.c; no code copied.
#include "tc/psched.hpp"

#include <cmath>

namespace txpath::tc {

namespace {

// C's conversion of a double to a 32-bit unsigned as tc's x86-64 build does it: truncation
// toward zero, the low 32 bits of the result (tc has no range check). Negative, NaN and values
// past 2^63 do not occur for the non-negative finite inputs used here; they give 0.
uint32_t to_u32(double v) {
  if (!(v >= 0) || v >= 9223372036854775808.0) return 0;
  return static_cast<uint32_t>(static_cast<uint64_t>(v));
}

}  // namespace

uint32_t tc_xmittime_ticks(uint64_t rate, uint64_t size) {
  if (rate == 0) return 0;
  const uint32_t usec = to_u32(1e6 * (static_cast<double>(size) / static_cast<double>(rate)));
  return to_u32(static_cast<double>(usec) * kTcTicksPerUsec);
}

uint32_t tc_ticks_to_usec(uint32_t ticks) { return to_u32(static_cast<double>(ticks) / kTcTicksPerUsec); }

uint32_t tc_xmitsize(uint64_t rate, uint32_t ticks) {
  return to_u32(static_cast<double>(rate) * static_cast<double>(tc_ticks_to_usec(ticks)) / 1e6);
}

}  // namespace txpath::tc
