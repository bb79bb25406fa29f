// SPDX-License-Identifier: MIT
// Spin-loop primitives: the CPU's spin hint, and a bounded spin that then yields the CPU.
#pragma once

#include <sched.h>

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

// One waiting loop: spin with cpu_relax() for a bounded number of rounds (a few microseconds,
// about the cost of a context switch), then call sched_yield() on every further round.
//
// Why: with more threads than cores, a FIFO lock (ticket, MCS) whose holder — or whose next
// waiter — is preempted makes every spinner behind it burn its whole time slice; a spinner that
// yields lets the preempted thread run on its CPU (docs/background.md, "Lock-holder preemption
// in user space"). Sleeping on the lock word instead (futex) is src/sync/park.hpp, built on this.
class SpinWait {
 public:
  static constexpr unsigned kSpinRounds = 128;

  void once() noexcept {
    if (rounds_ < kSpinRounds) {
      ++rounds_;
      cpu_relax();
    } else {
      sched_yield();
    }
  }

 private:
  unsigned rounds_ = 0;
};

}  // namespace txpath
