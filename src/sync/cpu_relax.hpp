// SPDX-License-Identifier: MIT
#pragma once

namespace txpath {

// The spin-loop hint (x86 PAUSE, arm64 YIELD): lets the sibling hyperthread run and avoids a
// memory-order mis-speculation flush when the awaited line changes.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#else
  asm volatile("" ::: "memory");
#endif
}

}  // namespace txpath
