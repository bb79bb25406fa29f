// SPDX-License-Identifier: MIT
// Test-and-test-and-set spinlock with bounded exponential backoff.
//
// A locker spins on a plain (relaxed) load while the lock is held, so waiters share the line in
// the Shared state instead of bouncing it with RMWs; when it looks free it tries one exchange.
// Every time it finds the lock busy (on the load or because another thread won the exchange) it
// waits `backoff` pause iterations and doubles backoff, from 1 up to kMaxBackoff. Unfair (the
// last holder, whose cache still has the line, tends to win again) and starvation is possible,
// but there is no convoy behind a preempted waiter, which makes it degrade far less than FIFO
// locks when threads outnumber cores.
//
// Memory ordering per operation:
//   lock()/try_lock(): relaxed load (a hint only), then exchange(1) with acquire.
//   unlock():          store(0) with release.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

#include "sync/cpu_relax.hpp"

namespace txpath {

class alignas(64) TtasLock {
 public:
  static constexpr std::string_view kName = "ttas";
  static constexpr uint32_t kMaxBackoff = 1024;  // pause iterations

  TtasLock() noexcept = default;
  TtasLock(const TtasLock&) = delete;
  TtasLock& operator=(const TtasLock&) = delete;

  void lock() noexcept {
    uint32_t backoff = 1;
    unsigned rounds = 0;
    for (;;) {
      // relaxed: pairs with nothing; only decides whether an exchange is worth trying. The
      // exchange below is what acquires.
      if (locked_.load(std::memory_order_relaxed) == 0) {
        // acquire: pairs with the release store in unlock() of the previous holder.
        if (locked_.exchange(1, std::memory_order_acquire) == 0) return;
      }
      if (backoff < kMaxBackoff) {
        for (uint32_t i = 0; i < backoff; ++i) cpu_relax();
        backoff *= 2;
      } else if (++rounds < 16) {
        for (uint32_t i = 0; i < backoff; ++i) cpu_relax();
      } else {
        sched_yield();  // the holder is likely preempted (more threads than cores): let it run
      }
    }
  }

  bool try_lock() noexcept {
    // relaxed: pairs with nothing; avoids taking the line exclusive when it is visibly held.
    if (locked_.load(std::memory_order_relaxed) != 0) return false;
    // acquire: pairs with the release store in unlock() of the previous holder.
    return locked_.exchange(1, std::memory_order_acquire) == 0;
  }

  void unlock() noexcept {
    // release: pairs with the acquire exchange in lock()/try_lock() of the next holder.
    locked_.store(0, std::memory_order_release);
  }

 private:
  std::atomic<uint32_t> locked_{0};
};

static_assert(sizeof(TtasLock) == 64 && alignof(TtasLock) == 64);

}  // namespace txpath
