// SPDX-License-Identifier: MIT
// Clocks and busy-wait costs.
#pragma once

#include <chrono>
#include <cstdint>

#include "sync/cpu_relax.hpp"

namespace txpath {

// Monotonic time in nanoseconds (steady_clock; CLOCK_MONOTONIC on Linux).
inline uint64_t now_ns() noexcept {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// Spends `ns` nanoseconds of CPU time spinning: how the modelled NIC charges the CPU for
// descriptor writes and doorbells.
inline void busy_wait_ns(uint64_t ns) noexcept {
  if (ns == 0) return;
  const uint64_t end = now_ns() + ns;
  while (now_ns() < end) cpu_relax();
}

}  // namespace txpath
