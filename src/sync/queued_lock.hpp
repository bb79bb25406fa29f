// SPDX-License-Identifier: MIT
// What the queued locks (mcs_lock.hpp, cna_lock.hpp) share, in one place:
//  * the lock word: bit 0 LOCKED, bits 6..63 the tail queue node (word_waiters.hpp's
//    encode_tail), bits 1..5 the lock's own flags (McsLock's PENDING);
//  * lock() / try_lock() / unlock(): the uncontended CAS 0 -> LOCKED, and fetch_sub(LOCKED),
//    which wakes the word's waiters (WordWaiters) when the released word had one of the bits
//    `kWaiterBits` (the states in which a thread can be waiting for LOCKED to clear);
//  * the steps of the MCS queue that do not depend on the hand-off policy: a thread's stack of
//    queue nodes, swapping a node into the tail, linking to the previous tail and waiting for the
//    headship, waiting for the successor to link in, and handing it the headship.
// The lock (CRTP: `Lock` derives from QueuedLock<Lock, kWaiterBits>) writes only its slow path,
// lock_slow(v), from these steps; the header comments of mcs_lock.hpp and cna_lock.hpp give the
// states, the invariants and the memory ordering of each lock as a whole.
//
// Queue nodes: `Node` is 64-byte aligned (the tail encoding needs it) and has
//   std::atomic<Node*> next;       successor in the queue, written by the successor's link
//   std::atomic<uint32_t> head;    1 once the predecessor handed the queue headship over
// A thread takes its node from a thread_local stack of kMaxNesting nodes and gives it back before
// lock() returns (once the headship is passed on or the queue emptied, nobody touches it), so a
// held lock holds no node and locks may be released in any order. A slow path nested deeper
// than kMaxNesting (a signal handler) polls try_lock() instead.
#pragma once

#include <atomic>
#include <cstdint>

#include "base/cpu_relax.hpp"
#include "sync/park.hpp"
#include "sync/word_waiters.hpp"

namespace txpath::queued_lock {

inline constexpr unsigned kMaxNesting = 4;

template <class Node>
struct NodeStack {
  Node nodes[kMaxNesting];
  unsigned depth = 0;  // nodes in use by this thread's lock() calls in progress

  // A node for this lock() call with next = nullptr and head = 0, or nullptr past kMaxNesting.
  Node* push() noexcept {
    if (depth >= kMaxNesting) [[unlikely]] return nullptr;
    Node* const node = &nodes[depth++];
    // relaxed (both): the node is private until swap_tail() publishes it with release.
    node->next.store(nullptr, std::memory_order_relaxed);
    node->head.store(0, std::memory_order_relaxed);
    return node;
  }
  void pop() noexcept { --depth; }
};

// Constant-initialised, so access needs no TLS init guard; shared by every lock of one Node type.
template <class Node>
inline constinit thread_local NodeStack<Node> t_nodes{};

template <class Lock, uint64_t kWaiterBits>
class QueuedLock {
 public:
  QueuedLock() noexcept = default;
  QueuedLock(const QueuedLock&) = delete;
  QueuedLock& operator=(const QueuedLock&) = delete;

  void lock() noexcept {
    uint64_t v = 0;
    // acquire: pairs with the release fetch_sub in unlock() of the previous holder.
    if (word_.compare_exchange_strong(v, kLocked, std::memory_order_acquire,
                                      std::memory_order_relaxed)) [[likely]] {
      return;
    }
    static_cast<Lock*>(this)->lock_slow(v);
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
    // release: pairs with the acquire CAS/loads/RMW by which the next holder takes the lock (the
    // fast path, try_lock, the lock's own slow-path steps). An RMW, not a store: the flags and
    // the tail may change concurrently.
    const uint64_t prev = word_.fetch_sub(kLocked, std::memory_order_release);
    // Only in the states kWaiterBits names can a thread be waiting for LOCKED to clear; with
    // none of them, nobody is parked on waiters_ for this lock.
    if (prev & kWaiterBits) [[unlikely]] waiters_.wake();
  }

 protected:
  static constexpr uint64_t kLocked = 1;

  // Past kMaxNesting: polls try_lock() until it succeeds.
  void lock_by_polling() noexcept {
    SpinWait wait;  // no notifier: unlock() does not signal try_lock() pollers
    while (!try_lock()) wait.once();
  }

  // Swaps `node` (encoded `me`, initialised by the caller) into the tail, keeping the word's
  // bits `keep`; returns the previous tail node (nullptr: the queue was empty, we head it).
  template <class Node>
  Node* swap_tail(uint64_t me, uint64_t keep) noexcept {
    // relaxed: only the first guess for the CAS loop, which re-reads on failure.
    uint64_t old = word_.load(std::memory_order_relaxed);
    // acq_rel: release publishes our node's initialisation to the successor that will read this
    // tail and write node->next (or scan past it); acquire pairs with whoever installed the
    // previous tail (through the release sequence), so that node's initialisation of its next
    // is ordered before our link store to it.
    while (!word_.compare_exchange_weak(old, (old & keep) | me, std::memory_order_acq_rel,
                                        std::memory_order_relaxed)) {
    }
    return decode_tail<Node>(old);
  }

  // Links `node` behind `prev` (if any) and waits until `prev`'s owner hands us the headship.
  template <class Node>
  static void wait_for_headship(Node* node, Node* prev) noexcept {
    if (prev == nullptr) return;  // the queue was empty: we head it
    // release: pairs with the acquire loads of prev->next by the heads that link to or scan past
    // us (wait_for_successor, a lock's own scans): our node's initialisation (head = 0 and the
    // lock's fields) happens-before they read or write it.
    prev->next.store(node, std::memory_order_release);
    // acquire (inside spin_then_park): pairs with the seq_cst (release) exchange of node->head in
    // pass_headship(), which it follows with notify_one(). Spin, then park or yield: a
    // preempted predecessor must get to run.
    spin_then_park(node->head, [](uint32_t h) { return h != 0; });
  }

  // Waits for LOCKED and the lock's bits `busy` to clear; returns the word that showed it.
  uint64_t wait_until_clear(uint64_t busy) noexcept {
    // acquire: pairs with the release fetch_sub in unlock() of the last holder (the loads are in
    // waiters_.wait()).
    return waiters_.wait(word_, [busy](uint64_t v) { return (v & (kLocked | busy)) == 0; });
  }

  // Takes the lock keeping the tail (a successor is queued behind the head).
  void lock_keeping_tail() noexcept {
    // acquire: pairs (through the release sequence) with the unlock() wait_until_clear() saw. An
    // RMW because the tail may move.
    word_.fetch_or(kLocked, std::memory_order_acquire);
  }

  // The head's successor, once it has linked in.
  template <class Node>
  static Node* wait_for_successor(Node* node) noexcept {
    Node* next;
    // acquire: pairs with the successor's release store of node->next (its link in
    // wait_for_headship), so its initialisation happens-before we read or write its node.
    // SpinWait, not parking: no notifier (the link is a few instructions after the successor's
    // tail CAS; only a preempted successor makes the wait long, and yielding lets it run).
    SpinWait wait_link;
    while ((next = node->next.load(std::memory_order_acquire)) == nullptr) wait_link.once();
    return next;
  }

  // Makes `succ` the queue head. Whatever the caller wrote into *succ before is published too.
  template <class Node>
  static void pass_headship(Node* succ) noexcept {
    // seq_cst: the release half pairs with the successor's acquire loads of its head flag in
    // wait_for_headship(). An RMW and seq_cst rather than a release store, so that
    // notify_one()'s seq_cst read of libstdc++'s waiter count cannot miss the successor parking
    // meanwhile (a lost wake-up).
    succ->head.exchange(1, std::memory_order_seq_cst);
    // Exactly one thread waits on this flag. If the successor already saw it and has moved on
    // (even reused or freed its node), this only reaches the kernel's futex hash, which treats
    // an address nobody waits on as a no-op.
    succ->head.notify_one();
  }

  std::atomic<uint64_t> word_{0};
  // Woken by an unlock() that saw kWaiterBits; the lock's word waiters park there. Same cache
  // line as the word: such an unlock already owns it.
  WordWaiters waiters_;
};

}  // namespace txpath::queued_lock
