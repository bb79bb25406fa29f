// SPDX-License-Identifier: MIT
// Clocks and busy-wait costs.
//
// now_ns() is on every packet's path (send() time stamps, the modelled NIC's wire clock), and a
// vDSO clock_gettime() costs 20-100 ns (more in VMs with kvm-clock). Where the CPU has an
// invariant TSC (x86 constant_tsc + nonstop_tsc, checked with CPUID), now_ns() reads the TSC
// and scales it with a factor calibrated once against CLOCK_MONOTONIC; elsewhere it is
// steady_clock. Either way it is monotonic and in the steady_clock time base (the TSC clock is
// anchored to steady_clock at calibration; drift is the TSC's ppm error).
#pragma once

#include <chrono>
#include <cstdint>

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

#include "sync/cpu_relax.hpp"

namespace txpath {

inline uint64_t steady_now_ns() noexcept {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

namespace clock_detail {

struct TscClock {
  bool usable = false;
  uint64_t base_tsc = 0;
  uint64_t base_ns = 0;
  double ns_per_tick = 0;
};

inline TscClock calibrate() noexcept {
  TscClock c;
#if defined(__x86_64__)
  unsigned a = 0, b = 0, cx = 0, d = 0;
  if (__get_cpuid(0x80000000, &a, &b, &cx, &d) == 0 || a < 0x80000007) return c;
  __get_cpuid(0x80000007, &a, &b, &cx, &d);
  if ((d & (1u << 8)) == 0) return c;  // no invariant TSC
  const uint64_t ns0 = steady_now_ns();
  const uint64_t t0 = __rdtsc();
  uint64_t ns1 = ns0;
  while (ns1 - ns0 < 2'000'000) ns1 = steady_now_ns();  // 2 ms
  const uint64_t t1 = __rdtsc();
  if (t1 <= t0) return c;
  c.ns_per_tick = static_cast<double>(ns1 - ns0) / static_cast<double>(t1 - t0);
  c.base_tsc = t1;
  c.base_ns = ns1;
  c.usable = true;
#endif
  return c;
}

inline const TscClock& tsc() noexcept {
  static const TscClock c = calibrate();
  return c;
}

}  // namespace clock_detail

// Monotonic time in nanoseconds, in the steady_clock (CLOCK_MONOTONIC) time base.
inline uint64_t now_ns() noexcept {
#if defined(__x86_64__)
  const auto& c = clock_detail::tsc();
  if (c.usable) {
    const uint64_t t = __rdtsc();
    return c.base_ns + static_cast<uint64_t>(static_cast<double>(t - c.base_tsc) * c.ns_per_tick);
  }
#endif
  return steady_now_ns();
}

// Spends `ns` nanoseconds of CPU time spinning: how the modelled NIC charges the CPU for
// descriptor writes and doorbells.
inline void busy_wait_ns(uint64_t ns) noexcept {
  if (ns == 0) return;
  const uint64_t end = now_ns() + ns;
  while (now_ns() < end) cpu_relax();
}

}  // namespace txpath
