// SPDX-License-Identifier: MIT
// The psched tick model: how a burst becomes a time the kernel holds, and what tc prints back.
//
// A shaper's bucket is a time, not a size. tc (iproute2) hands the kernel a transmit time in
// psched ticks; the kernel keeps nanoseconds and reports ticks again; tc turns them back into a
// size at the rate and prints that. Both conversions truncate, so tc prints e.g. "burst 1599b"
// for a class given 1600 bytes, and "lat 999us" where the exact latency is 1 ms.
//
// The model (docs/background.md, "psched ticks"):
//   tick                 64 ns (the kernel's half, qdisc/psched.hpp: kPschedTickNs,
//                        kernel_l2t_ns, ns_to_ticks).
//   tc's ticks per us    1000 / 64 = 15.625 (iproute2 tc_core.c, tc_core_init()).
//   xmittime(rate, size) tc_calc_xmittime of iproute2 6.1 (the machine's tc): the time
//                        1e6 * size / rate us truncated to a whole 32-bit number of us, times
//                        15.625, truncated again to 32-bit ticks.
//   xmitsize(rate, tick) tc_calc_xmitsize: the ticks truncated to whole us (tc_core_tick2time),
//                        then rate * us / 1e6 truncated to a 32-bit byte count.
// iproute2 6.15 and later compute in floating point and round xmittime up (its commit "tc: Fix
// rounding in tc_calc_xmittime and tc_calc_xmitsize"); we follow 6.1, the reference here.
// Pure functions; no state, no threads.
#pragma once

#include <cstdint>

#include "qdisc/psched.hpp"

namespace txpath::tc {

using txpath::kPschedTickNs;  // the kernel's half (qdisc/psched.hpp)
using txpath::kernel_l2t_ns;
using txpath::ns_to_ticks;

inline constexpr double kTcTicksPerUsec = 15.625;  // 1000 / kPschedTickNs

// tc's tc_calc_xmittime: ticks to send `size` bytes at `rate` bytes/s (rate > 0).
uint32_t tc_xmittime_ticks(uint64_t rate, uint64_t size);
// tc's tc_calc_xmitsize: the bytes `ticks` stand for at `rate` bytes/s.
uint32_t tc_xmitsize(uint64_t rate, uint32_t ticks);
// tc's tc_core_tick2time: whole microseconds of `ticks`.
uint32_t tc_ticks_to_usec(uint32_t ticks);

}  // namespace txpath::tc
