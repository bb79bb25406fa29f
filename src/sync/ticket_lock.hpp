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
//   unlock():   fetch_add(owner, 1) seq_cst (owner has a single writer, so this is owner + 1;
//               an RMW, not a store, so the notify_all() after it cannot lose a parked waiter),
//               then owner.notify_all().
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
// waiting array as in Dice & Kogan's TWA), which is a different lock. When nobody is parked,
// notify_all() costs one load of libstdc++'s waiter count.
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
    spin_then_park(owner_, [me](uint32_t serving) { return serving == me; }, kYieldsBeforePark);
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
    // seq_cst: the release half pairs with the acquire load of owner_ in lock()/try_lock() of
    // the next holder. An RMW (owner_ has one writer, us, so it is just owner + 1) and seq_cst
    // rather than a release store: notify_all() first reads libstdc++'s waiter count with a
    // seq_cst load, and a plain store still in the store buffer could let that load miss a
    // waiter that registered and read the old owner meanwhile (a lost wake-up).
    owner_.fetch_add(1, std::memory_order_seq_cst);
    // Wakes every waiter parked on owner_ (see "thundering herd" above).
    owner_.notify_all();
  }

 private:
  std::atomic<uint32_t> next_{0};   // next ticket to hand out
  std::atomic<uint32_t> owner_{0};  // ticket now being served
};

static_assert(sizeof(TicketLock) == 64 && alignof(TicketLock) == 64);

}  // namespace txpath
