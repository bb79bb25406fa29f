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

#include "base/cpu_relax.hpp"
#include "sync/park.hpp"
#include "sync/word_waiters.hpp"

namespace txpath {

namespace mcs_detail {

struct alignas(64) Node {
  std::atomic<Node*> next{nullptr};  // successor in the queue, written by the successor
  std::atomic<uint32_t> head{0};     // 1 once the predecessor handed us the queue headship
};

inline constexpr unsigned kMaxNesting = 4;

struct NodePool {
  Node nodes[kMaxNesting];
  unsigned depth = 0;  // nodes in use by this thread's lock() calls in progress
};

// Constant-initialised, so access needs no TLS init guard; shared by every McsLock.
inline constinit thread_local NodePool t_nodes{};

}  // namespace mcs_detail

class alignas(64) McsLock {
 public:
  static constexpr std::string_view kName = "mcs";

  McsLock() noexcept = default;
  McsLock(const McsLock&) = delete;
  McsLock& operator=(const McsLock&) = delete;

  void lock() noexcept {
    uint64_t v = 0;
    // acquire: pairs with the release fetch_sub in unlock() of the previous holder.
    if (word_.compare_exchange_strong(v, kLocked, std::memory_order_acquire,
                                      std::memory_order_relaxed)) [[likely]] {
      return;
    }
    lock_slow(v);
  }

  bool try_lock() noexcept {
    // relaxed: pairs with nothing; skips the RMW (and the exclusive line) when visibly busy.
    uint64_t v = word_.load(std::memory_order_relaxed);
    if (v != 0) return false;
    // acquire: pairs with the release fetch_sub in unlock() of the previous holder.
    return word_.compare_exchange_strong(v, kLocked, std::memory_order_acquire,
                                         std::memory_order_relaxed);
  }

  void unlock() noexcept {
    // release: pairs with the acquire CAS/loads/RMW by which the next holder takes the lock
    // (fast path, try_lock, the pending waiter's spin, the queue head's spin). An RMW, not a
    // store: PENDING and TAIL may change concurrently.
    const uint64_t prev = word_.fetch_sub(kLocked, std::memory_order_release);
    // Only a pending waiter (PENDING) or a queue head (TAIL != 0) can be waiting for LOCKED to
    // clear; with neither, nobody is parked on waiters_ for this lock.
    if (prev & (kPending | kTailMask)) [[unlikely]] waiters_.wake();
  }

 private:
  using Node = mcs_detail::Node;

  static constexpr uint64_t kLocked = 1;
  static constexpr uint64_t kPending = 2;
  static constexpr uint64_t kLockedPending = kLocked | kPending;

  // `v` is the word as the failed fast-path CAS saw it.
  [[gnu::noinline]] void lock_slow(uint64_t v) noexcept {
    // --- pending step: only while there is no queue and no other pending waiter.
    for (;;) {
      if (v == 0) {
        // acquire: pairs with the release fetch_sub in unlock() of the previous holder.
        if (word_.compare_exchange_weak(v, kLocked, std::memory_order_acquire,
                                        std::memory_order_relaxed)) {
          return;
        }
        continue;  // v was reloaded by the failed CAS
      }
      if (v != kLocked) break;  // a pending waiter or a queue exists: join the queue
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
        return;
      }
    }

    // --- queue.
    mcs_detail::NodePool& pool = mcs_detail::t_nodes;
    if (pool.depth >= mcs_detail::kMaxNesting) [[unlikely]] {
      SpinWait wait;  // no notifier: unlock() does not signal try_lock() pollers
      while (!try_lock()) wait.once();
      return;
    }
    Node* const node = &pool.nodes[pool.depth++];
    // relaxed: the node is private until the tail CAS below publishes it with release.
    node->next.store(nullptr, std::memory_order_relaxed);
    // relaxed: as above.
    node->head.store(0, std::memory_order_relaxed);
    const uint64_t me = encode_tail(node);

    // relaxed: only the first guess for the CAS loop, which re-reads on failure.
    uint64_t old = word_.load(std::memory_order_relaxed);
    // acq_rel: release publishes our node's initialisation to the successor that will read this
    // tail and write node->next; acquire pairs with the predecessor's tail CAS (through the
    // release sequence), so its initialisation of prev->next is ordered before our write to it.
    while (!word_.compare_exchange_weak(old, (old & kLockedPending) | me,
                                        std::memory_order_acq_rel, std::memory_order_relaxed)) {
    }

    if (Node* const prev = decode_tail<Node>(old)) {
      // release: pairs with the predecessor's acquire load of prev->next, so our node's
      // initialisation (head = 0) happens-before it writes head = 1.
      prev->next.store(node, std::memory_order_release);
      // acquire (inside spin_then_park): pairs with the predecessor's seq_cst (release) exchange
      // of node->head (headship handoff), which it follows with notify_one(). Spin, then park
      // or yield: a preempted predecessor must get to run.
      spin_then_park(node->head, [](uint32_t h) { return h != 0; });
    }

    // We are the queue head: wait for the holder and the pending waiter to go.
    // acquire: pairs with the release fetch_sub in unlock() of the last holder (the loads are in
    // waiters_.wait()).
    uint64_t w = waiters_.wait(word_, [](uint64_t v) { return (v & kLockedPending) == 0; });

    if ((w & kTailMask) == me) {
      // acquire: pairs (through the release sequence) with the unlock() observed above. We are
      // the last node: take the lock and empty the queue in one step. Fails only if a new node
      // was queued behind us meanwhile (LOCKED/PENDING cannot be set while a tail exists).
      if (word_.compare_exchange_strong(w, kLocked, std::memory_order_acquire,
                                        std::memory_order_relaxed)) {
        --pool.depth;
        return;
      }
    }
    // acquire: as above. Take the lock keeping the tail; an RMW because the tail may move.
    word_.fetch_or(kLocked, std::memory_order_acquire);

    Node* next;
    // acquire: pairs with the successor's release store of node->next (its link), so its
    // initialisation of its head flag happens-before our store to it.
    // SpinWait, not parking: no notifier (see the header comment). The successor may be
    // preempted between its tail CAS and its link.
    SpinWait wait_link;
    while ((next = node->next.load(std::memory_order_acquire)) == nullptr) wait_link.once();
    // seq_cst: the release half pairs with the successor's acquire loads of its head flag. An
    // RMW and seq_cst rather than a release store, so that notify_one()'s seq_cst read of
    // libstdc++'s waiter count cannot miss the successor parking meanwhile (a lost wake-up).
    next->head.exchange(1, std::memory_order_seq_cst);
    // Exactly one thread waits on this flag. If the successor already saw it and has moved on
    // (even reused or freed its node), this only reaches the kernel's futex hash, which treats
    // an address nobody waits on as a no-op.
    next->head.notify_one();
    --pool.depth;
  }

  std::atomic<uint64_t> word_{0};
  // Woken by a contended unlock(); the pending waiter and the queue head park there. Same cache
  // line as the word: a contended unlock already owns it.
  WordWaiters waiters_;
};

static_assert(sizeof(McsLock) == 64 && alignof(McsLock) == 64);

}  // namespace txpath
