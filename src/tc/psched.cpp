// SPDX-License-Identifier: MIT
// The psched tick model (see psched.hpp). Written from the semantics of iproute2 6.1's
// tc/tc_core.c and the kernel's net/sched/sch_api.c; no code copied.
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

uint64_t kernel_l2t_ns(uint64_t rate, uint64_t len) {
  if (rate == 0) return 0;
  uint64_t factor = 1'000'000'000;
  uint32_t shift = 0;
  uint64_t mult = 0;
  for (;;) {
    mult = factor / rate;
    if ((mult & (uint64_t{1} << 31)) || (factor & (uint64_t{1} << 63))) break;
    factor <<= 1;
    ++shift;
  }
  return static_cast<uint64_t>((static_cast<unsigned __int128>(len) * mult) >> shift);
}

uint32_t ns_to_ticks(uint64_t ns) { return static_cast<uint32_t>(ns / kPschedTickNs); }

}  // namespace txpath::tc
