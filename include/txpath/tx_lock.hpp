// SPDX-License-Identifier: MIT
// The device's tx lock: Linux's per-queue _xmit_lock (HARD_TX_LOCK, __netif_tx_lock), a spinlock.
//
// Two parties take it per TX queue: the driver loop's owner around its xmit() calls, and the
// completion side (poll()). The uncontended path is the kernel spinlock's: lock() is one
// exchange, unlock() a release store — no read-modify-write and no wake-up call on the way out,
// which is what an uncontended packet pays (docs/architecture.md, "Atomic operations per
// packet"). A waiter spins a little, then parks (futex): a modelled device holds the lock across
// its busy-waited doorbell, a real one across a syscall, and with more threads than cores a
// spinning poller would take the CPU the holder needs. unlock() looks at the parked count after
// its store and wakes only when it is non-zero; a waiter counts itself (a seq_cst RMW) before it
// re-reads the word and sleeps with a 1 ms timeout, which bounds the one wake-up no fence orders
// (sync/park.hpp, park_timed).
//
// Memory ordering: the successful exchange in lock()/try_lock() is acquire and pairs with the
// release store in unlock() of the previous holder.
#pragma once

#include <atomic>
#include <cstdint>

namespace txpath {

class TxLock {
 public:
  TxLock() noexcept = default;
  TxLock(const TxLock&) = delete;
  TxLock& operator=(const TxLock&) = delete;

  void lock() noexcept {
    // acquire: pairs with the release store in unlock().
    if (locked_.exchange(1, std::memory_order_acquire) == 0) [[likely]] return;
    lock_contended();
  }
  bool try_lock() noexcept {
    // relaxed: a hint that saves the exchange when held; acquire: pairs with unlock().
    return locked_.load(std::memory_order_relaxed) == 0 &&
           locked_.exchange(1, std::memory_order_acquire) == 0;
  }
  void unlock() noexcept {
    // release: pairs with the acquire exchange of the next holder.
    locked_.store(0, std::memory_order_release);
    // relaxed: a waiter counts itself before it sleeps; see the header comment.
    if (parked_.load(std::memory_order_relaxed) != 0) [[unlikely]] wake_waiters();
  }

 private:
  void lock_contended() noexcept;     // spin, then park (src/device/device.cpp)
  void wake_waiters() noexcept;       // wake_parked(): fence, then a futex wake (device.cpp)

  std::atomic<uint32_t> locked_{0};  // 1: held; the futex word parked waiters sleep on
  std::atomic<uint32_t> parked_{0};  // waiters inside their futex wait
};

}  // namespace txpath
