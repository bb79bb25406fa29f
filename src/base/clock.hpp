// SPDX-License-Identifier: MIT
// Clocks and busy-wait costs.
//
// now_ns() is on every packet's path (send() time stamps, the modelled NIC's wire clock), and a
// vDSO clock_gettime() costs 20-100 ns (more in VMs with kvm-clock). Where the CPU has an
// invariant TSC (x86 constant_tsc + nonstop_tsc, checked with CPUID), now_ns() reads the TSC
// and scales it with a factor calibrated once against CLOCK_MONOTONIC; elsewhere it is
// steady_clock. Either way it is monotonic and in the steady_clock time base (the TSC clock is
// anchored to steady_clock at calibration; drift is the scale's ppm error, so code that sleeps
// on steady_clock waits for relative durations computed with now_ns(), never absolute times).
#pragma once

#include <chrono>
#include <cstdint>

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

#include "base/cpu_relax.hpp"

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
  uint64_t read_cost_ns = 0;  // cost of one now_ns() call, for busy_wait_ns()
};

inline TscClock calibrate() noexcept {
  TscClock c;
#if defined(__x86_64__)
  unsigned a = 0, b = 0, cx = 0, d = 0;
  if (__get_cpuid(0x80000000, &a, &b, &cx, &d) == 0 || a < 0x80000007) return c;
  __get_cpuid(0x80000007, &a, &b, &cx, &d);
  if ((d & (1u << 8)) == 0) return c;  // no invariant TSC
  // Each reference point brackets one clock_gettime() between two TSC reads and keeps the
  // narrowest bracket of a few tries, so a slow (cold, or preempted) call does not skew the
  // scale; the two points are 10 ms apart, for a scale error of a few ppm.
  auto sample = [](uint64_t& tsc_at, uint64_t& ns_at) {
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 16; ++i) {
      const uint64_t a = __rdtsc();
      const uint64_t ns = steady_now_ns();
      const uint64_t b = __rdtsc();
      if (b > a && b - a < best) {
        best = b - a;
        tsc_at = a + (b - a) / 2;
        ns_at = ns;
      }
    }
  };
  uint64_t t0 = 0, ns0 = 0, t1 = 0, ns1 = 0;
  sample(t0, ns0);
  while (steady_now_ns() - ns0 < 10'000'000) cpu_relax();
  sample(t1, ns1);
  if (t1 <= t0 || ns1 <= ns0) return c;
  c.ns_per_tick = static_cast<double>(ns1 - ns0) / static_cast<double>(t1 - t0);
  c.base_tsc = t1;
  c.base_ns = ns1;
  constexpr int kReads = 1000;  // what one TSC-based now_ns() costs (rdtsc + scale)
  const uint64_t r0 = __rdtsc();
  for (int i = 0; i < kReads; ++i) asm volatile("" ::"r"(__rdtsc()));
  c.read_cost_ns = static_cast<uint64_t>(static_cast<double>(__rdtsc() - r0) * c.ns_per_tick / kReads);
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
    // Signed: a thread on a core whose TSC is a hair behind the calibrating core's must not wrap.
    const auto ticks = static_cast<int64_t>(__rdtsc() - c.base_tsc);
    const auto ns = static_cast<int64_t>(c.base_ns) +
                    static_cast<int64_t>(static_cast<double>(ticks) * c.ns_per_tick);
    return ns > 0 ? static_cast<uint64_t>(ns) : 0;
  }
#endif
  return steady_now_ns();
}

// Spends `ns` nanoseconds of CPU time spinning: how the modelled NIC charges the CPU for
// descriptor writes and doorbells. A tight loop on the clock, without PAUSE (which can take
// ~40 ns on recent cores and would overshoot short waits by that much): it models work.
// The wait is shortened by one clock read: the loop's last read overshoots `end` by about that.
inline void busy_wait_ns(uint64_t ns) noexcept {
  if (ns == 0) return;
  const uint64_t read_cost = clock_detail::tsc().read_cost_ns;
  const uint64_t end = now_ns() + (ns > read_cost ? ns - read_cost : 0);
  while (now_ns() < end) {
  }
}

}  // namespace txpath
