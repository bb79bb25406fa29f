// SPDX-License-Identifier: MIT
// Compact NUMA-aware lock (CNA), after D. Dice and A. Kogan, "Compact NUMA-aware Locks",
// EuroSys 2019 (written from the paper's description, summarised in docs/background.md, "Lock
// families"; no code copied). An MCS queue lock whose hand-off prefers a waiter on the new holder's NUMA node:
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
#include <cassert>
#include <cstdint>
#include <string_view>

#include "base/cpu_relax.hpp"
#include "sync/park.hpp"
#include "sync/word_waiters.hpp"
#include "txpath/topology.hpp"

namespace txpath {

// Local hand-offs, while remote waiters wait in the secondary queue, before they are served.
inline constexpr uint32_t kCnaDefaultThreshold = 1u << 16;

// The NUMA node of the calling thread, as CnaLock asks for it.
struct SystemNumaNode {
  static uint32_t current() noexcept { return static_cast<uint32_t>(current_numa_node()); }
};

namespace cna_detail {

struct alignas(64) Node {
  std::atomic<Node*> next{nullptr};  // successor (main queue: written by it; else by a head)
  std::atomic<uint32_t> head{0};     // 1 once handed the queue headship
  uint32_t numa = 0;                 // owner's NUMA node; written before the node is published
  // The secondary queue, valid while this node heads the main queue (written by the hand-off
  // before head = 1, or reset by the owner when it heads without a hand-off).
  Node* sec_head = nullptr;   // oldest passed-over waiter, or nullptr
  Node* sec_tail = nullptr;   // newest; its next is nullptr
  uint32_t sec_handoffs = 0;  // local hand-offs since the secondary queue became non-empty
};

inline constexpr unsigned kMaxNesting = 4;

struct NodePool {
  Node nodes[kMaxNesting];
  unsigned depth = 0;  // nodes in use by this thread's lock() calls in progress
};

// Constant-initialised, so access needs no TLS init guard; shared by every CNA lock.
inline constinit thread_local NodePool t_nodes{};

}  // namespace cna_detail

template <class NumaNodeOf = SystemNumaNode, uint32_t kThreshold = kCnaDefaultThreshold>
class alignas(64) BasicCnaLock {
  static_assert(kThreshold > 0);

 public:
  static constexpr std::string_view kName = "cna";

  BasicCnaLock() noexcept = default;
  BasicCnaLock(const BasicCnaLock&) = delete;
  BasicCnaLock& operator=(const BasicCnaLock&) = delete;

  void lock() noexcept {
    uint64_t v = 0;
    // acquire: pairs with the release fetch_sub in unlock() of the previous holder.
    if (word_.compare_exchange_strong(v, kLocked, std::memory_order_acquire,
                                      std::memory_order_relaxed)) [[likely]] {
      return;
    }
    lock_slow();
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
    // release: pairs with the acquire CAS/RMW/loads by which the next holder takes the lock. An
    // RMW, not a store: TAIL may change concurrently.
    const uint64_t prev = word_.fetch_sub(kLocked, std::memory_order_release);
    // Only a queue head (TAIL != 0) can be waiting for LOCKED to clear.
    if (prev & kTailMask) [[unlikely]] waiters_.wake();
  }

  // --- test hooks (a one-node machine cannot exercise the NUMA policy otherwise) ------------
  // The main queue's tail node as an opaque id (0: no queue).
  uintptr_t tail_for_testing() const noexcept {
    // acquire: the caller may pass the id to linked_for_testing().
    return static_cast<uintptr_t>(word_.load(std::memory_order_acquire) & kTailMask);
  }
  // Whether the waiter after node `id` (a tail_for_testing() value whose owner is still
  // waiting) has linked in.
  static bool linked_for_testing(uintptr_t id) noexcept {
    // acquire: pairs with the successor's release link store.
    return reinterpret_cast<const Node*>(id)->next.load(std::memory_order_acquire) != nullptr;
  }

 private:
  using Node = cna_detail::Node;

  static constexpr uint64_t kLocked = 1;

  // Makes `succ` the queue head, handing it the secondary queue.
  static void hand_off(Node* succ, Node* sec_head, Node* sec_tail, uint32_t handoffs) noexcept {
    succ->sec_head = sec_head;  // plain: published by the exchange below
    succ->sec_tail = sec_tail;
    succ->sec_handoffs = handoffs;
    // seq_cst: the release half pairs with the successor's acquire loads of its head flag (so
    // the fields above and everything this holder saw happen-before its headship). An RMW and
    // seq_cst, not a release store, so notify_one()'s seq_cst read of libstdc++'s waiter count
    // cannot miss the successor parking meanwhile (a lost wake-up).
    succ->head.exchange(1, std::memory_order_seq_cst);
    // Exactly one thread waits on this flag. If it already saw the flag and moved on (even
    // reused its node), this reaches only the kernel's futex hash: a no-op or a spurious wake.
    succ->head.notify_one();
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

  [[gnu::noinline]] void lock_slow() noexcept {
    cna_detail::NodePool& pool = cna_detail::t_nodes;
    if (pool.depth >= cna_detail::kMaxNesting) [[unlikely]] {
      SpinWait wait;  // no notifier: unlock() does not signal try_lock() pollers
      while (!try_lock()) wait.once();
      return;
    }
    Node* const node = &pool.nodes[pool.depth++];
    // relaxed (both): the node is private until the tail CAS below publishes it with release.
    node->next.store(nullptr, std::memory_order_relaxed);
    node->head.store(0, std::memory_order_relaxed);
    node->numa = NumaNodeOf::current();
    node->sec_head = node->sec_tail = nullptr;  // heading without a hand-off: no secondary queue
    node->sec_handoffs = 0;
    const uint64_t me = encode_tail(node);

    // relaxed: only the first guess for the CAS loop, which re-reads on failure.
    uint64_t old = word_.load(std::memory_order_relaxed);
    // acq_rel: release publishes our node's initialisation to the successor that will read this
    // tail and write node->next; acquire pairs with whoever installed the previous tail (through
    // the release sequence), so that node's initialisation is ordered before our link store.
    while (!word_.compare_exchange_weak(old, (old & kLocked) | me, std::memory_order_acq_rel,
                                        std::memory_order_relaxed)) {
    }

    if (Node* const prev = decode_tail<Node>(old)) {
      // release: pairs with the acquire loads of prev->next by the heads that link to or scan
      // past us: our node's fields (numa, head = 0) happen-before they read or write them.
      prev->next.store(node, std::memory_order_release);
      // acquire (inside spin_then_park): pairs with hand_off()'s exchange of our head flag, so
      // the secondary-queue fields it wrote are visible. Spin, then park or yield.
      spin_then_park(node->head, [](uint32_t h) { return h != 0; });
    }

    // We are the queue head and own the secondary queue in our node.
    Node* sec_head = node->sec_head;
    Node* sec_tail = node->sec_tail;
    uint32_t handoffs = node->sec_handoffs;

    uint64_t w = waiters_.wait(word_, [](uint64_t v) { return (v & kLocked) == 0; });
    if ((w & kTailMask) == me) {
      // We are the last main-queue node. Take the lock and, in the same step, empty the main
      // queue, or make the secondary queue the main queue (its tail's next is nullptr).
      // acq_rel: acquire pairs (through the release sequence) with the unlock() seen above;
      // release publishes sec_tail->next == nullptr to the next enqueuer, who links to it.
      // Fails only if a new node was queued behind us meanwhile.
      const uint64_t desired = (sec_head ? encode_tail(sec_tail) : 0) | kLocked;
      if (word_.compare_exchange_strong(w, desired, std::memory_order_acq_rel,
                                        std::memory_order_relaxed)) {
        if (sec_head) hand_off(sec_head, nullptr, nullptr, 0);
        --pool.depth;
        return;
      }
    }
    // acquire: as above. Take the lock keeping the tail; an RMW because the tail may move.
    word_.fetch_or(kLocked, std::memory_order_acquire);

    Node* next;
    // acquire: pairs with the successor's release link store. SpinWait, not parking: no
    // notifier (the successor may be preempted between its tail CAS and its link).
    SpinWait wait_link;
    while ((next = node->next.load(std::memory_order_acquire)) == nullptr) wait_link.once();

    Node* succ;
    Node* before = nullptr;
    if (sec_head != nullptr && handoffs >= kThreshold) {
      // Rule 1 (fairness): the passed-over waiters go first.
      // relaxed: published by the hand-off below (see the header comment).
      sec_tail->next.store(next, std::memory_order_relaxed);
      succ = sec_head;
      sec_head = sec_tail = nullptr;
      handoffs = 0;
    } else if (Node* local = find_local(next, node->numa, &before)) {
      // Rule 2: a waiter on our node; the ones skipped before it join the secondary queue.
      if (before != nullptr) {
        // relaxed (both): published by the hand-off below (see the header comment).
        if (sec_head != nullptr) {
          sec_tail->next.store(next, std::memory_order_relaxed);
        } else {
          sec_head = next;
        }
        sec_tail = before;
        sec_tail->next.store(nullptr, std::memory_order_relaxed);
      }
      succ = local;
      if (sec_head != nullptr) ++handoffs;
    } else if (sec_head != nullptr) {
      // Rule 3: nobody local is waiting; the passed-over waiters go first.
      // relaxed: published by the hand-off below.
      sec_tail->next.store(next, std::memory_order_relaxed);
      succ = sec_head;
      sec_head = sec_tail = nullptr;
      handoffs = 0;
    } else {
      succ = next;  // plain MCS
    }
    hand_off(succ, sec_head, sec_tail, handoffs);
    --pool.depth;
  }

  std::atomic<uint64_t> word_{0};
  // Woken by an unlock() that saw a TAIL; the queue head parks there. Same cache line as the
  // word: such an unlock already owns it.
  WordWaiters waiters_;
};

using CnaLock = BasicCnaLock<>;

static_assert(sizeof(CnaLock) == 64 && alignof(CnaLock) == 64);

}  // namespace txpath
