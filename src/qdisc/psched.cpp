// SPDX-License-Identifier: MIT
// The kernel's half of the psched tick model (psched.hpp), written from the semantics of the
// kernel's net/sched/sch_api.c; no code copied.
#include "qdisc/psched.hpp"

namespace txpath {

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

}  // namespace txpath
