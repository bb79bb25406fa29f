// SPDX-License-Identifier: MIT
// Ticket spinlock: strict FIFO. A locker takes a ticket (next++) and spins until the "now
// serving" counter (owner) reaches it; unlock serves the next ticket (owner++).
//
// Layout choice: next and owner are two 32-bit atomics side by side on the lock's one cache
// line, not one 64-bit word. With one word, unlock would have to increment the owner half without
// carrying into the next half when it wraps (a CAS loop, or a mixed-size access std::atomic cannot
// express). With two fields, owner has a single writer (the holder), so unlock is a plain load +
// release store, and lock is one fetch_add. The price is that try_lock must look at both fields:
// it reads owner, then CASes next from that value to value+1, which succeeds only if no ticket
// is outstanding, i.e. the lock is free and the ticket just taken is the one being served.
// (Both counters wrap modulo 2^32; FIFO order needs fewer than 2^32 simultaneous waiters.)
//
// Memory ordering per operation:
//   lock():     fetch_add(next) relaxed; acquire loads of owner until it equals our ticket.
//   try_lock(): acquire load of owner; CAS on next (acquire on success).
//   unlock():   relaxed load of owner (single writer) + release store of owner + 1.
//
// Cost: every unlock writes the line all waiters spin on, so each handoff invalidates N
// spinners; and, being FIFO, it degrades badly when threads outnumber cores (a preempted waiter
// stalls everyone queued behind it). That is what the benchmark is meant to show.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

#include "sync/cpu_relax.hpp"

namespace txpath {

class alignas(64) TicketLock {
 public:
  static constexpr std::string_view kName = "ticket";

  TicketLock() noexcept = default;
  TicketLock(const TicketLock&) = delete;
  TicketLock& operator=(const TicketLock&) = delete;

  void lock() noexcept {
    // relaxed: taking a ticket publishes and acquires nothing; the acquire is the owner_ load
    // below that sees our turn. (The RMW alone makes tickets unique.)
    const uint32_t me = next_.fetch_add(1, std::memory_order_relaxed);
    // acquire: pairs with the release store of owner_ in unlock() by the previous holder, so
    // its critical section happens-before ours.
    SpinWait wait;  // spin, then yield: a preempted earlier ticket must get to run
    while (owner_.load(std::memory_order_acquire) != me) wait.once();
  }

  bool try_lock() noexcept {
    // acquire: pairs with the release store of owner_ in unlock(); if the CAS below succeeds,
    // this is the unlock that freed the lock, so the previous critical section happens-before
    // ours.
    uint32_t serving = owner_.load(std::memory_order_acquire);
    // acquire on success: pairs with nothing beyond the owner_ load above (kept so that a
    // successful CAS is an acquire by itself); relaxed on failure: we just return false.
    // Succeeds only if next == serving: no outstanding ticket, the lock is free and ours.
    return next_.compare_exchange_strong(serving, serving + 1, std::memory_order_acquire,
                                         std::memory_order_relaxed);
  }

  void unlock() noexcept {
    // relaxed: owner_ is written only by the holder, i.e. by us; we read our own last value.
    const uint32_t cur = owner_.load(std::memory_order_relaxed);
    // release: pairs with the acquire load of owner_ in lock()/try_lock() of the next holder.
    owner_.store(cur + 1, std::memory_order_release);
  }

 private:
  std::atomic<uint32_t> next_{0};   // next ticket to hand out
  std::atomic<uint32_t> owner_{0};  // ticket now being served
};

static_assert(sizeof(TicketLock) == 64 && alignof(TicketLock) == 64);

}  // namespace txpath
