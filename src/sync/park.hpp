// SPDX-License-Identifier: MIT
// Spin-then-park: the one waiting primitive for every waiter that has a notifier.
//
// spin_then_park(word, done) returns once done(word) holds. It first spins (cpu_relax, about
// the cost of a context switch), then, depending on the process-wide policy (spin_park()):
//   park on  (default): sleeps in the kernel (futex, through std::atomic::wait) until the word
//                       changes, re-checking after every wake-up;
//   park off:           sched_yield()s on every further round (the old behaviour).
// Why: with more threads than cores, a spinner whose lock holder (or whose turn's predecessor)
// is preempted burns its whole time slice; a parked waiter gives the CPU back until it is
// actually its turn (docs/background.md, "Lock-holder preemption in user space").
//
// The contract that makes parking safe: EVERY store that can make done() true is followed by
// word.notify_all() (or notify_one() when exactly one waiter can be on that word). A waiter
// whose writer never notifies must use SpinWait (cpu_relax.hpp), which only yields.
// That store must be seq_cst (a seq_cst store or RMW): libstdc++'s notify first reads a waiter
// count with a seq_cst load and skips the futex wake if it is 0; after a merely release store
// that load may be satisfied before the store is visible (store->load reordering), while a
// waiter registers, re-reads the old value and sleeps — a lost wake-up.
// libstdc++'s notify checks a waiter count first, so a notify nobody waits for costs one load.
//
// Memory ordering: every load of `word` here is acquire; it pairs with the writer's release
// store (or RMW) that made done() true.
//
// Observing parks (tests): while set_count_parks(true) is on, every spin_then_park() wait that
// parks (calls std::atomic::wait) adds one to parks_counted(). The switch shares the policy word
// that spin_then_park() already reads once per round past the spin, so counting off costs
// nothing more than a bit test on the way into the kernel.
#pragma once

#include <sched.h>

#include <atomic>
#include <cstdint>

#include "base/cpu_relax.hpp"
#include "txpath/spin.hpp"  // set_spin_park()/spin_park(): the process-wide policy

namespace txpath {

inline constexpr unsigned kSpinBeforePark = 128;
// The yield phase used by waits that are usually short under load (see spin_then_park).
inline constexpr unsigned kYieldsBeforePark = 256;

// The process-wide policy as spin_then_park() reads it: one relaxed load (park.cpp).
struct ParkPolicy {
  bool park;          // spin_park()
  bool count_parks;   // set_count_parks()
};
ParkPolicy park_policy() noexcept;

// Test hook: counts the waits that park (see the header comment). Off by default.
void set_count_parks(bool on) noexcept;
uint64_t parks_counted() noexcept;
void count_park() noexcept;  // called by spin_then_park() when counting is on

// Timed parking, for waiters whose notifier wants a plain store on its fast path (TicketLock,
// TxLock unlock with a release store). The waiter (park_timed) counts itself in `parked` with a
// seq_cst RMW, re-reads the 32-bit `word` and sleeps on it (futex) while it still reads `seen`,
// for kParkTimeoutNs at most. The notifier stores the word and, when a waiter may be parked (its
// own cheap test: a later ticket out, a non-zero count), calls wake_parked(word, parked): a
// seq_cst fence, then a futex wake if `parked` is non-zero — the other half of the Dekker pair.
// The timeout bounds the one wake-up no fence orders: a notifier whose cheap test ran before the
// waiter existed.
inline constexpr uint64_t kParkTimeoutNs = 1'000'000;
void park_timed(const std::atomic<uint32_t>& word, uint32_t seen,
                std::atomic<uint32_t>& parked) noexcept;
void wake_parked(const std::atomic<uint32_t>& word, const std::atomic<uint32_t>& parked) noexcept;

// A timed sleep on `word` while it reads `seen`, `ns` at most (a raw futex wait: no waiter
// count, so its waker must use futex_wake_all, not std::atomic::notify_*). It returns early on a
// wake-up, a changed word or a signal; the caller re-checks whatever it waits for.
void futex_wait_for(const std::atomic<uint32_t>& word, uint32_t seen, uint64_t ns) noexcept;
void futex_wake_all(const std::atomic<uint32_t>& word) noexcept;

// spin_then_park() with park_timed() as its park: returns once done(word) holds.
template <class Done>
uint32_t spin_then_park_timed(const std::atomic<uint32_t>& word, std::atomic<uint32_t>& parked,
                              Done&& done, unsigned yields_before_park = 0) noexcept {
  for (unsigned round = 0;; ++round) {
    // acquire: pairs with the notifier's release store that makes done() true.
    const uint32_t seen = word.load(std::memory_order_acquire);
    if (done(seen)) return seen;
    if (round < kSpinBeforePark) {
      cpu_relax();
    } else if (park_policy().park && round >= kSpinBeforePark + yields_before_park) {
      park_timed(word, seen, parked);  // woken by wake_parked(), or after kParkTimeoutNs
    } else {
      sched_yield();
    }
  }
}

// `yields_before_park`: rounds of sched_yield() between the spin and the park. 0 (default) parks
// as soon as the spin is spent. Waits that end within a scheduling quantum under load, and whose
// notifier would otherwise pay a futex wake for nearly every waiter (a combiner releasing each
// served request, an llist leader releasing its passivated followers), yield first: parking
// there cost 10x in throughput at 16 senders on 2 cores (combining: 0.19 vs 2.4 Mpps).
template <class T, class Done>
T spin_then_park(const std::atomic<T>& word, Done&& done,
                 unsigned yields_before_park = 0) noexcept {
  for (unsigned round = 0;; ++round) {
    // acquire: pairs with the release store/RMW that makes done() true (see header comment).
    const T seen = word.load(std::memory_order_acquire);
    if (done(seen)) return seen;
    if (round < kSpinBeforePark) {
      cpu_relax();
    } else if (const ParkPolicy policy = park_policy();
               policy.park && round >= kSpinBeforePark + yields_before_park) {
      if (policy.count_parks) [[unlikely]] count_park();
      // Sleeps until word != seen (spurious wake-ups possible; the loop re-checks).
      // acquire: as above.
      word.wait(seen, std::memory_order_acquire);
    } else {
      sched_yield();
    }
  }
}

}  // namespace txpath
