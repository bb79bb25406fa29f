// SPDX-License-Identifier: MIT
// The machine's noise during a measured window: the CPU time /proc/stat counts for the whole
// machine at the window's edges, and this process's own, so that what the hypervisor stole and
// what other processes used can be told apart from the bench's own work.
#pragma once

#include <cstdint>

#include "bench/bench.hpp"

namespace txpath::bench_detail {

// One reading at a window's edge. ok false when /proc/stat could not be read (the window then
// reports no noise).
struct MachineSample {
  bool ok = false;
  uint64_t total_ticks = 0;  // every CPU's time, all states (USER_HZ ticks)
  uint64_t busy_ticks = 0;   // of it, not idle and not waiting for I/O (steal included)
  uint64_t steal_ticks = 0;
  uint64_t process_cpu_ns = 0;  // this process's CPU time (every thread)
};

MachineSample sample_machine() noexcept;

// Steal and other processes' CPU between two readings, each as % of the machine's CPU time over
// the interval (0..100); other = busy - steal - this process, at least 0. /proc/stat counts in
// ticks (10 ms per CPU at USER_HZ 100), so a window of 0.2 s on 2 CPUs is read to about 2.5%.
BenchNoise noise_between(const MachineSample& start, const MachineSample& end) noexcept;

}  // namespace txpath::bench_detail
