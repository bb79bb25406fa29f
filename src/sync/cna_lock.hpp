// SPDX-License-Identifier: MIT
// Compact NUMA-aware lock (CNA), after D. Dice and A. Kogan, "Compact NUMA-aware Locks",
// EuroSys 2019 (written from the paper's description, summarised in docs/background.md, "Lock
// families"; no code copied). An MCS queue lock whose hand-off prefers a waiter on the new holder's
// NUMA node:
// the lock (and the data it protects) stays on one node for a run of hand-offs, and remote
// waiters that were passed over wait in a secondary queue.
//
// Shape: the paper's single-word lock, used the way the CNA patches for Linux qspinlock use it
// (a queue-head hand-off, so a holder needs no queue node). One 64-bit word:
//
//     bit 0      LOCKED   the lock is held
//     bits 6..63 TAIL     address of the last main-queue node (64-byte aligned nodes); 0 = none
//
//   lock fast path / try_lock   CAS 0 -> LOCKED.
//   slow path                   swap our node into TAIL (keeping LOCKED), link to the previous
//                               tail node, wait for the queue headship on our node's flag.
//   queue head                  waits for LOCKED to clear, then either (it is the last main
//                               node) CASes TAIL away in the same step as it sets LOCKED — to 0,
//                               or to the secondary queue's tail after splicing that queue in as
//                               the new main queue — or sets LOCKED keeping the tail, waits for
//                               its successor to link in, and hands the headship on (below).
//   unlock                      fetch_sub(LOCKED).
// There is no pending bit (unlike McsLock): the second contender simply queues and heads.
//
// Hand-off policy (the queue head, now holding the lock, picks the next head):
//   1. fairness: if the secondary queue is non-empty and has seen kThreshold local hand-offs,
//      splice it in front of the main queue; its oldest waiter is the next head;
//   2. otherwise scan the main queue (only as far as it is linked, never waiting) for the first
//      waiter on our NUMA node; move the waiters skipped on the way to the tail of the secondary
//      queue; that waiter is the next head (counting a local hand-off if the secondary queue is
//      non-empty);
//   3. no local waiter: splice the secondary queue (if any) in front of the main queue, as in 1;
//      else plain MCS: our successor.
// The secondary queue (head, tail, local hand-off count) travels with the headship, in the new
// head's node. It is non-empty only while its owner heads a non-empty main queue, so try_lock /
// the fast path (which need the word == 0) never overtake it.
//
// Fairness threshold (the knob): kThreshold, default kCnaDefaultThreshold = 65536 local
// hand-offs while the secondary queue is non-empty, i.e. a remote waiter that was passed over is
// served after at most ~64K critical sections of the local node. The paper and the Linux patches
// flush with probability 1/2^16 per hand-off instead (a pseudo-random draw); a count gives the
// same average bound, a hard limit, and deterministic tests.
//
// NUMA node of a waiter: NumaNodeOf::current() at enqueue (default: current_numa_node(), i.e.
// sched_getcpu() through hwloc's CPU -> node table; a hint, the thread may migrate). Injectable
// so that the secondary-queue logic can be tested with fake nodes on a one-node machine.
//
// Queue nodes: as McsLock, a thread_local array of kMaxNesting nodes used as a stack; the node is
// given back before lock() returns (once the headship is passed on or the queue emptied, nobody
// touches it), so a held lock holds no node and locks may be released in any order. Nested slow
// paths beyond kMaxNesting (a signal handler) poll try_lock.
//
// Waiting: a queued node waits for its head flag with spin_then_park (park.hpp); the hand-off
// exchanges it to 1 and notify_one()s it. The queue head waits for LOCKED to clear with
// spin_then_park on `waiters_` (sync/word_waiters.hpp: a 32-bit counter, since libstdc++
// cannot futex-wait on a 64-bit word; see mcs_lock.hpp), which unlock() bumps and notifies when
// the word it released had a TAIL. Waiting for a successor to link in keeps SpinWait (no
// notifier: a few instructions after its tail CAS).
//
// Invariants: LOCKED goes 0 -> 1 only by the fast path / try_lock (word == 0, so no queue) or by
// the one queue head (TAIL != 0, so the fast path cannot): mutual exclusion. Every waiter is in
// exactly one of the main queue or the secondary queue, and the secondary queue is owned by the
// current queue head; every waiter eventually heads (splice rules 1 and 3).
//
// Memory ordering:
//   fast path / try_lock / head's final CAS or fetch_or: acquire (pairs with unlock()'s release
//     fetch_sub, continued by the release sequence of RMWs on the word).
//   tail CAS: acq_rel (publishes our node; orders the previous tail node's init before our link).
//   link prev->next: release (publishes our node's fields to the heads that scan it); loads of
//     next: acquire. next pointers rewritten by a head (secondary queue moves/splices): relaxed,
//     published to later heads by the headship hand-off (or by the acq_rel tail CAS that makes a
//     spliced secondary tail the main tail).
//   hand-off: plain writes of the secondary-queue fields into the successor's node, then a
//     seq_cst exchange of its head flag (release pairs with its acquire wait; seq_cst and an RMW
//     so that notify_one()'s waiter-count read cannot miss it parking), then notify_one().
//   unlock: fetch_sub(LOCKED) release; if a TAIL was present, fetch_add(waiters_) seq_cst (release
//     orders the word before it for the acquire wait on it), then notify_all().
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

#include "base/topology.hpp"
#include "sync/queued_lock.hpp"
#include "sync/word_waiters.hpp"

namespace txpath {

// Local hand-offs, while remote waiters wait in the secondary queue, before they are served.
inline constexpr uint32_t kCnaDefaultThreshold = 1u << 16;

// The NUMA node of the calling thread, as CnaLock asks for it.
struct SystemNumaNode {
  static uint32_t current() noexcept { return static_cast<uint32_t>(current_numa_node()); }
};

namespace cna_detail {

struct Node;

// The secondary queue: valid while its node heads the main queue (written by the hand-off
// before head = 1, or reset by the owner when it heads without a hand-off).
struct SecondaryQueue {
  Node* head = nullptr;   // oldest passed-over waiter, or nullptr
  Node* tail = nullptr;   // newest; its next is nullptr
  uint32_t handoffs = 0;  // local hand-offs since the secondary queue became non-empty
};

struct alignas(64) Node {
  std::atomic<Node*> next{nullptr};  // successor (main queue: written by it; else by a head)
  std::atomic<uint32_t> head{0};     // 1 once handed the queue headship
  uint32_t numa = 0;                 // owner's NUMA node; written before the node is published
  SecondaryQueue sec;
};

}  // namespace cna_detail

// lock(), try_lock(), unlock() and the queue steps: sync/queued_lock.hpp. A contended unlock()
// wakes the queue head when the released word had a TAIL.
template <class NumaNodeOf = SystemNumaNode, uint32_t kThreshold = kCnaDefaultThreshold>
class alignas(64) BasicCnaLock
    : public queued_lock::QueuedLock<BasicCnaLock<NumaNodeOf, kThreshold>, kTailMask> {
  static_assert(kThreshold > 0);
  using Base = queued_lock::QueuedLock<BasicCnaLock, kTailMask>;

 public:
  static constexpr std::string_view kName = "cna";

  // --- test hooks (a one-node machine cannot exercise the NUMA policy otherwise) ------------
  // The main queue's tail node as an opaque id (0: no queue).
  uintptr_t tail_for_testing() const noexcept {
    // acquire: the caller may pass the id to linked_for_testing().
    return static_cast<uintptr_t>(this->word_.load(std::memory_order_acquire) & kTailMask);
  }
  // Whether the waiter after node `id` (a tail_for_testing() value whose owner is still
  // waiting) has linked in.
  static bool linked_for_testing(uintptr_t id) noexcept {
    // acquire: pairs with the successor's release link store.
    return reinterpret_cast<const Node*>(id)->next.load(std::memory_order_acquire) != nullptr;
  }

 private:
  friend Base;
  using Node = cna_detail::Node;
  using SecondaryQueue = cna_detail::SecondaryQueue;
  using Base::kLocked;

  [[gnu::noinline]] void lock_slow(uint64_t /*v: the fast path's word, unused*/) noexcept {
    queued_lock::NodeStack<Node>& stack = queued_lock::t_nodes<Node>;
    Node* const node = stack.push();
    if (node == nullptr) [[unlikely]] {
      this->lock_by_polling();
      return;
    }
    node->numa = NumaNodeOf::current();
    node->sec = {};  // heading without a hand-off: no secondary queue
    const uint64_t me = encode_tail(node);
    this->wait_for_headship(node, this->template swap_tail<Node>(me, kLocked));
    // We are the queue head and own the secondary queue in our node.
    SecondaryQueue sec = node->sec;
    if (!lock_as_last_node(this->wait_until_clear(0), me, sec)) {
      this->lock_keeping_tail();
      Node* const succ = pick_successor(node->numa, this->wait_for_successor(node), sec);
      hand_off(succ, sec);
    }
    stack.pop();
  }

  // The queue head, the word `w` free of LOCKED: if we are the last main-queue node, takes the
  // lock and, in the same step, empties the main queue or makes the secondary queue the main
  // queue (its tail's next is nullptr), whose oldest waiter then heads (true).
  bool lock_as_last_node(uint64_t w, uint64_t me, const SecondaryQueue& sec) noexcept {
    if ((w & kTailMask) != me) return false;
    // acq_rel: acquire pairs (through the release sequence) with the unlock() wait_until_clear()
    // saw; release publishes sec.tail->next == nullptr to the next enqueuer, who links to it.
    // Fails only if a new node was queued behind us meanwhile.
    const uint64_t desired = (sec.head ? encode_tail(sec.tail) : 0) | kLocked;
    if (!this->word_.compare_exchange_strong(w, desired, std::memory_order_acq_rel,
                                             std::memory_order_relaxed)) {
      return false;
    }
    if (sec.head) hand_off(sec.head, SecondaryQueue{});
    return true;
  }

  // The hand-off policy (rules 1-3 in the header comment): the next head after us, `next` being
  // our successor in the main queue; updates the secondary queue we hand on with it.
  static Node* pick_successor(uint32_t numa, Node* next, SecondaryQueue& sec) noexcept {
    if (sec.head != nullptr && sec.handoffs >= kThreshold) {
      // Rule 1 (fairness): the passed-over waiters go first.
      return splice_secondary(next, sec);
    }
    Node* before = nullptr;
    if (Node* local = find_local(next, numa, &before)) {
      // Rule 2: a waiter on our node; the ones skipped before it join the secondary queue.
      if (before != nullptr) {
        // relaxed (both): published by the hand-off (see the header comment).
        if (sec.head != nullptr) {
          sec.tail->next.store(next, std::memory_order_relaxed);
        } else {
          sec.head = next;
        }
        sec.tail = before;
        sec.tail->next.store(nullptr, std::memory_order_relaxed);
      }
      if (sec.head != nullptr) ++sec.handoffs;
      return local;
    }
    // Rule 3: nobody local is waiting; the passed-over waiters go first. Else plain MCS.
    if (sec.head != nullptr) return splice_secondary(next, sec);
    return next;
  }

  // Puts the secondary queue in front of the main queue from `next` on; returns its oldest
  // waiter, the next head, and leaves `sec` empty.
  static Node* splice_secondary(Node* next, SecondaryQueue& sec) noexcept {
    // relaxed: published by the hand-off (see the header comment).
    sec.tail->next.store(next, std::memory_order_relaxed);
    Node* const succ = sec.head;
    sec = SecondaryQueue{};
    return succ;
  }

  // Makes `succ` the queue head, handing it the secondary queue `sec`.
  static void hand_off(Node* succ, const SecondaryQueue& sec) noexcept {
    succ->sec = sec;  // plain: published by pass_headship()'s seq_cst (release) exchange
    Base::pass_headship(succ);
  }

  // The first main-queue waiter from `first` on that is on node `numa`, following next links
  // only as far as they are set (never waits); *before is the node preceding it (nullptr if it
  // is `first`). nullptr if none.
  static Node* find_local(Node* first, uint32_t numa, Node** before) noexcept {
    Node* prev = nullptr;
    for (Node* cur = first; cur != nullptr;) {
      // numa: written by the owner before its release link store, which we (or an earlier head,
      // ordered before us by the headship chain) read with acquire.
      if (cur->numa == numa) {
        *before = prev;
        return cur;
      }
      prev = cur;
      // acquire: pairs with the successor's release link store (its fields are visible).
      cur = cur->next.load(std::memory_order_acquire);
    }
    return nullptr;
  }
};

using CnaLock = BasicCnaLock<>;

static_assert(sizeof(CnaLock) == 64 && alignof(CnaLock) == 64);

}  // namespace txpath
