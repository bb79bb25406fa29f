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
// Once backoff has reached kMaxBackoff the locker waits for the word to read free with
// spin_then_park (park on the word, or spin-then-yield with set_spin_park(false), where the old
// schedule of 16 more rounds at kMaxBackoff comes first, as before), then tries again. unlock()
// wakes one parked waiter (notify_one): all waiters wait for the same thing, any one of them
// can take the lock, and one that loses the exchange to a barging locker parks again behind a
// holder whose unlock() will wake the next one, so one wake-up per unlock keeps every parked
// waiter live without a thundering herd.
//
// Memory ordering per operation:
//   lock()/try_lock(): relaxed load (a hint only), then exchange(1) with acquire; the parked
//                      wait's loads are acquire (spin_then_park) but only decide when to retry.
//   unlock():          exchange(0) with seq_cst (release is what pairs; see unlock()), then
//                      notify_one().
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

#include "base/cpu_relax.hpp"
#include "sync/park.hpp"

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
      } else if (!spin_park() && ++rounds < 16) {  // spin-then-yield: the old schedule
        for (uint32_t i = 0; i < backoff; ++i) cpu_relax();
      } else {
        // The holder is likely preempted (more threads than cores) or the critical section is
        // long: park until unlock() notifies (or, park off, yield until the word reads free).
        // acquire loads inside; they pair with unlock()'s exchange but only decide when to
        // retry: the exchange above is what acquires.
        spin_then_park(locked_, [](uint32_t v) { return v == 0; });
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
    // seq_cst: the release half pairs with the acquire exchange in lock()/try_lock() of the next
    // holder. An RMW and seq_cst rather than a release store: notify_one() first reads
    // libstdc++'s waiter count with a seq_cst load, and a plain store still in the store buffer
    // could let that load miss a waiter that registered and read 1 meanwhile (a lost wake-up).
    locked_.exchange(0, std::memory_order_seq_cst);
    locked_.notify_one();  // see the header comment: one wake-up per unlock suffices
  }

 private:
  std::atomic<uint32_t> locked_{0};
};

static_assert(sizeof(TtasLock) == 64 && alignof(TtasLock) == 64);

}  // namespace txpath
