// SPDX-License-Identifier: MIT
// Queued spinlock in the style of Linux qspinlock (written from its documented state machine):
// one 64-bit lock word
//
//     bit 0      LOCKED   the lock is held
//     bit 1      PENDING  the first contender is waiting on the word itself (no queue node)
//     bits 6..63 TAIL     address of the last MCS queue node (nodes are 64-byte aligned, so
//                         the address has bits 0..5 clear and is stored as-is); 0 = no queue
//
// States and transitions (tail, pending, locked):
//   (0,0,0) -> (0,0,1)              uncontended lock: one CAS 0 -> LOCKED.
//   (0,0,1) -> (0,1,1)              first contender: CAS LOCKED -> LOCKED|PENDING, then it spins
//                                   on the word until LOCKED clears and turns PENDING into
//                                   LOCKED with one fetch_sub(1) (bit 1 set, bit 0 clear: minus
//                                   one clears bit 1 and sets bit 0, no borrow reaches the tail,
//                                   whatever the tail is).
//   anything else -> (n,*,*)        later contenders queue MCS-style: a CAS loop swaps their
//                                   node into TAIL keeping LOCKED/PENDING, they link to the
//                                   previous tail node and spin on their own node's flag.
//   queue head                      waits for LOCKED == PENDING == 0, then either CASes
//                                   (me,0,0) -> (0,0,1) (it was the last node: the queue
//                                   empties) or sets LOCKED keeping the tail, waits for its
//                                   successor to link in, and hands it the headship.
//   unlock                          fetch_sub(LOCKED): clears bit 0, leaves the rest alone.
//
// Why this is exclusive: while PENDING is set, nobody but the pending waiter sets LOCKED (the
// fast path and try_lock need word == 0, the queue head needs PENDING == 0, a new contender
// needs word == LOCKED to become pending). While TAIL != 0, nobody but the queue head sets
// LOCKED or PENDING (the fast path, try_lock and the pending step need TAIL == 0). So at most one
// thread ever turns LOCKED from 0 to 1 at a time.
//
// Queue nodes are per thread: a thread_local array of kMaxNesting 64-byte-aligned nodes with a
// nesting depth. The node is given back before lock() returns (once the headship has been passed
// on, or the queue emptied, no other thread will touch it), so unlock() needs no node, a held
// lock holds no node, and a thread may hold any number of McsLocks at once (busylock + root lock)
// and release them in any order. Depth > 1 is only reached if a lock() slow path were interrupted
// by another lock() on the same thread (a signal handler); past kMaxNesting it falls back to
// spinning with try_lock.
//
// Waiting (spin_then_park, park.hpp: spin, then park or yield per set_spin_park()):
//   - a queued node waits on its own head flag; the hand-off stores 1 there and notify_one()s it
//     (exactly one thread, the node's owner, waits on that flag);
//   - the pending waiter and the queue head wait for bits of the 64-bit lock word. They park on
//     `waiters_` (sync/word_waiters.hpp), a 32-bit wake-up counter on the lock's line, not on
//     the word itself: libstdc++ cannot futex-wait on a 64-bit atomic and falls back to a
//     process-wide proxy (one of 16 shared slots, bumped with an RMW on every notify and waking
//     every waiter in it), which would add a global hot line to each contended unlock.
//     unlock() bumps that counter and notify_all()s it only when the word it released had
//     PENDING or a TAIL, the only states in which a thread can be waiting on the word; an
//     uncontended unlock stays one RMW;
//   - the queue head waiting for its successor to link in (node->next) and the kMaxNesting
//     fallback keep SpinWait (spin-then-yield): the link is a few instructions after the
//     successor's tail CAS (only a preempted successor makes it long, and yielding lets it run),
//     and giving it a notifier would put a notify on every queueing path for that window; the
//     fallback polls try_lock(), which no unlock() signals.
//
// Memory ordering per operation (every RMW on the word is a read-modify-write, so each release
// on it heads a release sequence that every later RMW continues):
//   lock fast path / try_lock: CAS 0 -> LOCKED with acquire.
//   pending step:              CAS LOCKED -> LOCKED|PENDING relaxed; acquire loads of the word
//                              until LOCKED clears; fetch_sub(PENDING - LOCKED) with acquire.
//   queueing:                  tail CAS with acq_rel; release store of prev->next; acquire loads
//                              of our node's head flag; acquire loads of the word while
//                              LOCKED|PENDING; final CAS / fetch_or with acquire; acquire load
//                              of node->next; seq_cst exchange of the successor's head flag
//                              (release is what pairs), then notify_one().
//   unlock:                    fetch_sub(LOCKED) with release; if contended, fetch_add(waiters_)
//                              seq_cst, then notify_all().
//   parked waits:              acquire loads of the counter (then of the word); its seq_cst
//                              fetch_add is sequenced after the word's release fetch_sub, so a
//                              waiter that reads the new count also reads the released
//                              word, and one that read the old count sleeps only while the
//                              counter still holds it (the futex re-checks) or until notify_all().
#pragma once

#include <atomic>
#include <cassert>
#include <cstdint>
#include <string_view>

#include "sync/queued_lock.hpp"
#include "sync/word_waiters.hpp"

namespace txpath {

namespace mcs_detail {

struct alignas(64) Node {
  std::atomic<Node*> next{nullptr};  // successor in the queue, written by the successor
  std::atomic<uint32_t> head{0};     // 1 once the predecessor handed us the queue headship
};

inline constexpr uint64_t kPending = 2;

}  // namespace mcs_detail

// lock(), try_lock(), unlock() and the queue steps: sync/queued_lock.hpp. A contended unlock()
// wakes the word's waiters when the released word had PENDING or a TAIL.
class alignas(64) McsLock
    : public queued_lock::QueuedLock<McsLock, mcs_detail::kPending | kTailMask> {
 public:
  static constexpr std::string_view kName = "mcs";

 private:
  friend QueuedLock;
  using Node = mcs_detail::Node;

  static constexpr uint64_t kPending = mcs_detail::kPending;
  static constexpr uint64_t kLockedPending = kLocked | kPending;

  // `v` is the word as the failed fast-path CAS saw it.
  [[gnu::noinline]] void lock_slow(uint64_t v) noexcept {
    if (lock_pending(v)) return;
    queued_lock::NodeStack<Node>& stack = queued_lock::t_nodes<Node>;
    Node* const node = stack.push();
    if (node == nullptr) [[unlikely]] {
      lock_by_polling();
      return;
    }
    const uint64_t me = encode_tail(node);
    wait_for_headship(node, swap_tail<Node>(me, kLockedPending));
    // We are the queue head: wait for the holder and the pending waiter to go.
    if (!lock_as_last_node(wait_until_clear(kPending), me)) {
      lock_keeping_tail();
      pass_headship(wait_for_successor(node));
    }
    stack.pop();
  }

  // The pending step, only while there is no queue and no other pending waiter: true once we
  // hold the lock, false if a pending waiter or a queue exists (join the queue).
  bool lock_pending(uint64_t v) noexcept {
    for (;;) {
      if (v == 0) {
        // acquire: pairs with the release fetch_sub in unlock() of the previous holder.
        if (word_.compare_exchange_weak(v, kLocked, std::memory_order_acquire,
                                        std::memory_order_relaxed)) {
          return true;
        }
        continue;  // v was reloaded by the failed CAS
      }
      if (v != kLocked) return false;
      // relaxed: setting PENDING publishes nothing and takes nothing; the acquire is the spin
      // below. The CAS (not a fetch_or) keeps us from setting PENDING over a tail.
      if (word_.compare_exchange_weak(v, kLocked | kPending, std::memory_order_relaxed,
                                      std::memory_order_relaxed)) {
        // acquire: pairs with the release fetch_sub in unlock() that clears LOCKED (the loads
        // are in waiters_.wait()).
        waiters_.wait(word_, [](uint64_t w) { return (w & kLocked) == 0; });
        // acquire: pairs (through the release sequence) with the same unlock(); we are the only
        // thread allowed to set LOCKED while PENDING is set, so this cannot collide.
        [[maybe_unused]] const uint64_t prev =
            word_.fetch_sub(kPending - kLocked, std::memory_order_acquire);
        assert((prev & kLockedPending) == kPending);
        return true;
      }
    }
  }

  // The queue head, the word `w` free of LOCKED and PENDING: if we are the last node, takes the
  // lock and empties the queue in one step (true).
  bool lock_as_last_node(uint64_t w, uint64_t me) noexcept {
    if ((w & kTailMask) != me) return false;
    // acquire: pairs (through the release sequence) with the unlock() wait_until_clear() saw.
    // Fails only if a new node was queued behind us meanwhile (LOCKED/PENDING cannot be set
    // while a tail exists).
    return word_.compare_exchange_strong(w, kLocked, std::memory_order_acquire,
                                         std::memory_order_relaxed);
  }
};

static_assert(sizeof(McsLock) == 64 && alignof(McsLock) == 64);

}  // namespace txpath
