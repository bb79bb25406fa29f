// SPDX-License-Identifier: MIT
// The device's tx lock: Linux's per-queue _xmit_lock (HARD_TX_LOCK, __netif_tx_lock), a spinlock.
//
// Two parties take it per TX queue: the driver loop's owner around its xmit() calls, and the
// completion side (poll()). Neither sleeps while holding it, and a waiter waits for at most one
// device call or one completion pass, so it spins rather than parks, as the kernel's does:
// lock() is one exchange, unlock() a release store — no read-modify-write and no wake-up call on
// the way out, which is what an uncontended packet pays (docs/architecture.md, "Atomic
// operations per packet"). A waiter that has spun for long (a holder preempted, or inside a
// syscall on a real device) yields the CPU between tries. Test-and-test-and-set: waiters spin
// on a plain load, so they share the line instead of bouncing it.
//
// Memory ordering: the successful exchange in lock()/try_lock() is acquire and pairs with the
// release store in unlock() of the previous holder.
#pragma once

#include <atomic>

namespace txpath {

class TxLock {
 public:
  TxLock() noexcept = default;
  TxLock(const TxLock&) = delete;
  TxLock& operator=(const TxLock&) = delete;

  void lock() noexcept {
    // acquire: pairs with the release store in unlock().
    if (!locked_.exchange(true, std::memory_order_acquire)) [[likely]] return;
    lock_contended();
  }
  bool try_lock() noexcept {
    // relaxed: a hint that saves the exchange when held; acquire: pairs with unlock().
    return !locked_.load(std::memory_order_relaxed) &&
           !locked_.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept {
    // release: pairs with the acquire exchange of the next holder. Nobody parks on the word, so
    // nothing to wake.
    locked_.store(false, std::memory_order_release);
  }

 private:
  void lock_contended() noexcept;  // spin, then yield between tries (src/device/device.cpp)

  std::atomic<bool> locked_{false};
};

}  // namespace txpath
