// SPDX-License-Identifier: MIT
// The kernel's half of the psched tick model (tc/psched.hpp has tc's half): what a shaper that
// holds its buckets in nanoseconds reports of them, so that a dump says what the kernel's does.
//   tick            64 ns: the kernel's PSCHED_SHIFT of 6 (include/net/pkt_sched.h), advertised
//                   as /proc/net/psched's 2nd field; a constant of every Linux since 2.6.31.
//   kernel_l2t_ns   the kernel's psched_l2t_ns() (net/sched/sch_api.c's
//                   psched_ratecfg_precompute): len * mult >> shift with mult the largest value
//                   below 2^32 of the form (1e9 << shift) / rate: it rounds down.
//   ns_to_ticks     PSCHED_NS2TICKS: ns >> 6 (what the kernel dumps).
// Pure functions; no state, no threads.
#pragma once

#include <cstdint>

namespace txpath {

inline constexpr uint64_t kPschedTickNs = 64;  // 1 << PSCHED_SHIFT

// The kernel's transmit time of `len` bytes at `rate` bytes/s (len already framed), in ns.
uint64_t kernel_l2t_ns(uint64_t rate, uint64_t len);
// What the kernel reports for a time it holds in ns (PSCHED_NS2TICKS), as a 32-bit tick count.
uint32_t ns_to_ticks(uint64_t ns);

}  // namespace txpath
