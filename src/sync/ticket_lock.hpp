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
//   lock():     fetch_add(next) relaxed; acquire loads of owner until it equals our ticket
//               (spin_then_park: spin, then park on owner or yield, per set_spin_park()).
//   try_lock(): acquire load of owner; CAS on next (acquire on success).
//   unlock():   release store of owner + 1 (owner has a single writer): no RMW. Then a relaxed
//               load of next: only when a later ticket exists may a waiter be parked, and only
//               then a seq_cst fence, a load of the parked count and a futex wake (the waiter
//               counts itself with a seq_cst RMW before re-reading owner: a Dekker pair). A
//               waiter that took its ticket after that load of next parks with a 1 ms timeout
//               (park_timed), which bounds the one wake-up no fence orders; in practice it sees
//               the new owner during its spin, long before it would park.
//
// Cost: every unlock writes the line all waiters spin on, so each handoff invalidates N
// spinners; and, being FIFO, it degrades badly when threads outnumber cores (a preempted waiter
// stalls everyone queued behind it). That is what the benchmark is meant to show.
//
// Parking and the thundering herd: every waiter parks on the same word (owner), so an unlock
// wakes ALL parked waiters and all but one go back to sleep: O(N) futex wake-ups and context
// switches per hand-off once N waiters have parked. Accepted, not mitigated, because (a) waiters
// park only after kSpinBeforePark spins, i.e. when the hand-off is already slow (oversubscribed,
// or a long critical section); (b) the alternative it replaces, spin-then-yield, already cycles
// every waiter through the scheduler on each time slice, preempted or not; (c) a woken waiter
// that is not next re-parks after one load (spin_then_park does not restart its spin phase);
// (d) this lock is the FIFO baseline whose collapse the benchmark exists to show. Waking only
// the next ticket needs one wait word per waiter (an Anderson array lock, or a ticket lock with a
// waiting array as in Dice & Kogan's TWA), which is a different lock. (Only the next in line
// parks, see lock(), so an unlock wakes one thread at most.) An unlock with no later ticket out
// costs a store and a load.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>


#include "sync/park.hpp"

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
    // acquire (inside spin_then_park): pairs with the seq_cst (release) fetch_add of owner_ in
    // unlock() by the previous holder, so its critical section happens-before ours. Spin, then
    // park or yield: a preempted earlier ticket must get to run.
    //
    // Only the next-in-line waiter parks: if every waiter parked on owner_, each unlock's
    // notify_all would wake them all and all but one would go back to sleep (measured: 0.27 vs
    // 3.2 Mpps for busylock at 16 threads on 2 cores). Waiters further back spin, then yield,
    // until they are next; then they yield a while more and park (park.hpp: busylock at 16
    // threads went from 2.3 to 7.6 Mpps with the yield phase), and an unlock wakes at most that
    // one.
    SpinWait far;
    for (;;) {
      // acquire: as below (this load may be the one that sees our turn).
      const uint32_t serving = owner_.load(std::memory_order_acquire);
      if (serving == me) return;
      if (me - serving == 1) break;  // next in line (modulo 2^32)
      far.once();
    }
    // Spin, then yield, then park until owner_ serves us (the next-in-line waiter only).
    spin_then_park_timed(owner_, parked_, [me](uint32_t serving) { return serving == me; },
                         kYieldsBeforePark);
  }

  bool try_lock() noexcept {
    // acquire: pairs with the fetch_add of owner_ in unlock(); if the CAS below succeeds,
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
    // relaxed: owner_ has one writer, the holder (us).
    const uint32_t serve = owner_.load(std::memory_order_relaxed) + 1;
    // release: pairs with the acquire load of owner_ in lock()/try_lock() of the next holder.
    // A plain store, as a kernel spinlock's unlock: no RMW on the uncontended path.
    owner_.store(serve, std::memory_order_release);
    // relaxed: if no ticket beyond the one now served was handed out, no waiter can be parked
    // (only the next in line parks, and it parks for a turn already taken). Otherwise wake it.
    if (next_.load(std::memory_order_relaxed) != serve) [[unlikely]] wake_parked(owner_, parked_);
  }

 private:
  std::atomic<uint32_t> next_{0};    // next ticket to hand out
  std::atomic<uint32_t> owner_{0};   // ticket now being served
  std::atomic<uint32_t> parked_{0};  // waiters inside park_timed() (the next in line, at most)
};

static_assert(sizeof(TicketLock) == 64 && alignof(TicketLock) == 64);

}  // namespace txpath
