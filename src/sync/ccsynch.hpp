// SPDX-License-Identifier: MIT
// CC-Synch and H-Synch combining (Fatourou & Kallimanis, "Revisiting the combining
// synchronization technique", PPoPP 2012), written from the paper's description.
//
// CC-Synch. A list of request nodes ends in a shared Tail that always points to a node nobody has
// filled yet. To run a request a thread
//   1. prepares its spare node (next = null, state = WAIT) and swaps it into Tail (one exchange);
//      the node it gets back (`cur`, the previous tail) is its node for this request;
//   2. writes its request into cur and links cur->next = spare (this announces the request);
//   3. waits until cur->state leaves WAIT. DONE: a combiner served it, return. COMBINE: it is the
//      combiner now;
//   4. as combiner it walks the list from cur: while the node has a successor linked and fewer
//      than h requests were served, it applies the node's request and releases its owner with
//      DONE; then it runs the epilogue (the caller's batch-end work, still exclusive) and hands
//      the combiner role to the first unserved node with COMBINE. That node either belongs to a
//      thread waiting on it, or is still the Tail (or not yet linked): its owner-to-be finds
//      COMBINE at once and combines.
// The thread keeps cur as its next spare: nodes migrate between threads, the set of nodes is
// constant (one per thread that used the instance plus one per list).
// Deviation from the paper: its two per-node flags (wait, completed) are one word `state`
// (WAIT / DONE / COMBINE), so a waiter wakes on, and reads, a single atomic.
//
// H-Synch. One CC-Synch list per NUMA node (the node of the CPU the caller runs on); a node's
// combiner holds a global lock (McsLock by default) while it serves its batch and runs the
// epilogue, so cross-node traffic is paid once per batch. With one list there is no global lock.
// The node count and the node function are injectable (tests use two fake nodes).
//
// Invariants:
//  * at most one thread is combiner of a list at a time (the role moves only by a COMBINE store
//    into exactly one node), and with several lists combiners also hold the global lock, so
//    requests and epilogues are mutually exclusive across the whole instance;
//  * every request is applied exactly once, by its own thread or a combiner, in Tail-swap order
//    per list (so in program order per thread: a thread has one request in flight);
//  * a node is referenced by at most one thread besides the list: its owner (the thread whose
//    swap returned it) until the node is released, then nobody but its new owner; a releaser
//    reads node->next before its release store and touches only the node's wait word and its
//    parked count (wake_parked) after it;
//  * a batch serves at most h requests (h >= 1); the combiner's own request is always the first.
//
// Memory ordering (per atomic):
//  * spare->next / spare->state initialisation: relaxed, published by the release half of the
//    Tail exchange;
//  * Tail exchange: acq_rel — release publishes the spare's initialisation to the thread that
//    will swap it out; acquire makes the previous owner's initialisation of cur visible to us
//    before we write cur's request and next;
//  * cur->next = spare: release, pairs with the combiner's acquire load of cur->next, which
//    makes the request (fn, ctx and what ctx points to) visible to it;
//  * state = DONE / COMBINE: release, pairs with the owner's acquire load in spin_then_park, so
//    the request's effects (results, the caller's out-parameters) and, for COMBINE, everything
//    the previous combiner did are visible to the next reader (the combiner role is a lock
//    handed over by this release/acquire pair);
//  * every release of a waiter is followed by wake_parked() on its state word (park.hpp, timed
//    parking: a seq_cst fence, then a futex wake if the node's `parked` count says a waiter
//    sleeps; waiters use spin_then_park_timed). Except the hand-over to a node that is still the
//    Tail: nobody can be waiting on it yet, so the uncontended combiner pays a release store and
//    one load of Tail, no locked instruction; an arrival that swaps the node out just after that
//    load and sleeps before the store reaches it waits for park_timed's 1 ms timeout at most.
//
// Node storage: nodes are owned by the instance (freed with it), created lazily once per thread
// per instance under a mutex (not on the hot path). A thread finds its per-instance slot (which
// holds its current spare) through a small thread_local direct-mapped cache keyed by a unique
// instance id (sync/instance_cache.hpp: addresses are reused after destruction; ids never are);
// on a cache miss the instance's own map (thread ordinal -> slot, under the mutex) is consulted,
// so a thread never gets a second node from the same instance. Slots of threads that exited stay
// until the instance dies.
//
// Precondition: no thread is inside execute() when the instance is destroyed; a request or
// epilogue must not call execute() on the same instance (it would wait for itself).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "base/clock.hpp"
#include "base/per_thread_counter.hpp"
#include "base/topology.hpp"
#include "sync/counting_lock.hpp"
#include "sync/instance_cache.hpp"
#include "sync/mcs_lock.hpp"
#include "sync/park.hpp"
#include "txpath/counter.hpp"

namespace txpath {

namespace ccsynch_detail {

enum : uint32_t { kWait = 0, kDone = 1, kCombine = 2 };

// One request node; its own cache line (the waiter spins on it, the combiner writes it).
struct alignas(64) Node {
  std::atomic<uint32_t> state{kWait};
  // Waiters asleep on `state` (park_timed's count; park.hpp "Timed parking"): the releaser's
  // wake_parked() reads it after its fence.
  std::atomic<uint32_t> parked{0};
  std::atomic<Node*> next{nullptr};
  // The request: fn(ctx, more). Plain fields, published by the release store of next.
  void (*fn)(void* ctx, bool more) = nullptr;
  void* ctx = nullptr;
};

// A thread's per-instance slot: its current spare node. Only that thread touches it.
struct ThreadSlot {
  Node* spare = nullptr;
};

// A thread's slot per instance, found through a direct-mapped cache keyed by instance id.
inline constexpr unsigned kCacheEntries = 16;
struct SlotCacheTag {};
using SlotCache = InstanceCache<SlotCacheTag, ThreadSlot*, kCacheEntries>;

inline unsigned current_node() noexcept {
  const int n = current_numa_node();
  return n < 0 ? 0u : static_cast<unsigned>(n);
}

}  // namespace ccsynch_detail

struct CcSynchConfig {
  // The combining bound h: requests one combiner serves before handing the role over. The
  // paper bounds a batch so a combiner is not stuck serving forever; 64 matches dev_tx_weight
  // (one batch of requests ~ one quota of the driver loop).
  unsigned h = 64;
  // Lists (H-Synch: one per NUMA node) and the function that picks the caller's list (taken
  // modulo `lists`). 0 lists = topology().numa_nodes; null node_of = current_numa_node().
  unsigned lists = 0;
  unsigned (*node_of)() noexcept = nullptr;
};

// Counters (exact at quiescent points).
struct CcSynchStats {
  uint64_t requests = 0;      // requests served
  uint64_t batches = 0;       // combiner turns (batches)
  uint64_t max_batch = 0;     // largest batch
  uint64_t limit_handoffs = 0;  // batches that ended at h with a request waiting (role handed on)
  uint64_t waits = 0;         // requests whose thread found its node not yet released (waited)
  uint64_t wait_ns = 0;       // time spent in those waits
  uint64_t global_waits = 0;  // H-Synch: global-lock acquisitions that waited
  uint64_t global_wait_ns = 0;
};

template <class GlobalLock = McsLock>
class CcSynch {
 public:
  explicit CcSynch(const CcSynchConfig& cfg = {})
      : h_(cfg.h > 0 ? cfg.h : 1),
        nlists_(cfg.lists > 0 ? cfg.lists
                              : static_cast<unsigned>(topology().numa_nodes > 0
                                                          ? topology().numa_nodes
                                                          : 1)),
        node_of_(cfg.node_of ? cfg.node_of : &ccsynch_detail::current_node),
        id_(ccsynch_detail::SlotCache::new_instance_id()),
        lists_(std::make_unique<List[]>(nlists_)) {
    for (unsigned i = 0; i < nlists_; ++i) {
      // The initial Tail: released as COMBINE, so the first arrival combines at once. (No lock:
      // nobody else can see the instance yet.)
      Node* dummy = new_node_locked();
      dummy->state.store(ccsynch_detail::kCombine, std::memory_order_relaxed);  // not shared yet
      lists_[i].tail.store(dummy, std::memory_order_relaxed);  // published by the constructor's end
    }
  }
  CcSynch(const CcSynch&) = delete;
  CcSynch& operator=(const CcSynch&) = delete;

  unsigned lists() const noexcept { return nlists_; }
  unsigned h() const noexcept { return h_; }

  // Runs `request(bool more)` exclusively (by this thread or a combiner), then returns. If this
  // thread becomes the combiner it also runs `epilogue()` once after its batch, still exclusive.
  // `more` is true when another request is linked behind this one and will be served in the same
  // batch (a hint: e.g. don't flush now). Both must be noexcept; neither may call execute() on
  // this instance.
  template <class Request, class Epilogue>
  void execute(Request&& request, Epilogue&& epilogue) noexcept {
    using Req = std::remove_reference_t<Request>;
    using namespace ccsynch_detail;
    ThreadSlot* const slot = my_slot();
    List& list = lists_[nlists_ == 1 ? 0 : node_of_() % nlists_];

    Node* const spare = slot->spare;
    // relaxed, both: the node is ours alone until the exchange below publishes it (release).
    spare->next.store(nullptr, std::memory_order_relaxed);
    spare->state.store(kWait, std::memory_order_relaxed);
    // acq_rel: see the header (publishes spare's init; acquires cur's init by its last owner).
    Node* const cur = list.tail.exchange(spare, std::memory_order_acq_rel);
    cur->fn = &invoke<Req>;
    cur->ctx = const_cast<void*>(static_cast<const void*>(&request));
    // release: pairs with the combiner's acquire load of cur->next; publishes fn/ctx/request.
    cur->next.store(spare, std::memory_order_release);
    slot->spare = cur;  // cur is ours once released; it becomes the next spare

    // acquire: pairs with the releaser's release store of DONE/COMBINE.
    uint32_t st = cur->state.load(std::memory_order_acquire);
    if (st == kWait) {
      const uint64_t t0 = now_ns();
      // acquire (inside spin_then_park_timed): as above; the releaser calls wake_parked() after
      // its store. Yield a while before parking: see park.hpp (a futex wake per served request
      // is the dominant cost otherwise). Timed: see the hand-over below.
      st = spin_then_park_timed(cur->state, cur->parked, [](uint32_t v) { return v != kWait; },
                                kYieldsBeforePark);
      waits_.add(1);
      wait_ns_.add(now_ns() - t0);
    }
    if (st == kDone) return;

    // We are the combiner of this list.
    if (nlists_ > 1) global_.lock();
    Node* n = cur;
    unsigned served = 0;
    for (;;) {
      // acquire: pairs with the owner's release store of n->next (its request is visible).
      Node* const nx = n->next.load(std::memory_order_acquire);
      if (nx == nullptr || served >= h_) break;
      // Another request follows in this batch if nx is linked too and h allows it.
      // acquire: as above (a peek; nx's request is read only in the next round, after the load
      // there).
      const bool more = served + 1 < h_ && nx->next.load(std::memory_order_acquire) != nullptr;
      n->fn(n->ctx, more);
      ++served;
      if (n != cur) {
        // release: pairs with the owner's acquire in spin_then_park_timed (its request's effects
        // are visible to it). Then wake_parked()'s seq_cst fence and read of n->parked: the
        // Dekker pair with a waiter that counts itself before it sleeps (park.hpp). After this
        // store only the wake touches n.
        n->state.store(kDone, std::memory_order_release);
        wake_parked(n->state, n->parked);
      }
      n = nx;
    }
    epilogue();
    list.requests.add(served);  // written only by this list's combiner
    list.batches.add(1);
    if (served > list.max_batch.get()) list.max_batch.set(served);
    // relaxed: a statistic; n->next may be linked concurrently.
    if (served >= h_ && n->next.load(std::memory_order_relaxed) != nullptr)
      list.limit_handoffs.add(1);
    if (nlists_ > 1) global_.unlock();
    // release: hands the combiner role over; pairs with the acquire of n's (future) owner, who
    // then sees every effect of this batch and the epilogue.
    n->state.store(kCombine, std::memory_order_release);
    // Only a thread that swapped n out of Tail can wait on n. relaxed: the cheap test of
    // park.hpp's timed parking. Still the Tail (the uncontended case: nobody came during our
    // batch): no fence, no wake — the hand-over costs a plain store. An arrival whose swap this
    // load missed, and who then sleeps before our store is visible to it, is woken by
    // park_timed's timeout (kParkTimeoutNs) at the latest; it sees COMBINE at its first re-read.
    if (list.tail.load(std::memory_order_relaxed) != n) wake_parked(n->state, n->parked);
  }

  // Sums the counters (exact when no execute() is in progress).
  CcSynchStats stats() const noexcept {
    CcSynchStats s;
    for (unsigned i = 0; i < nlists_; ++i) {
      s.requests += lists_[i].requests.get();
      s.batches += lists_[i].batches.get();
      if (lists_[i].max_batch.get() > s.max_batch) s.max_batch = lists_[i].max_batch.get();
      s.limit_handoffs += lists_[i].limit_handoffs.get();
    }
    s.waits = waits_.sum();
    s.wait_ns = wait_ns_.sum();
    s.global_waits = global_.waits();
    s.global_wait_ns = global_.wait_ns();
    return s;
  }

  // Nodes allocated so far (lists + one per thread that used the instance); for tests.
  std::size_t nodes_allocated() const {
    std::lock_guard lock(mutex_);
    return nodes_.size();
  }

 private:
  using Node = ccsynch_detail::Node;
  using ThreadSlot = ccsynch_detail::ThreadSlot;

  struct alignas(64) List {
    std::atomic<Node*> tail{nullptr};
    // Written by this list's combiner only (the role orders successive writers).
    alignas(64) SingleWriterCounter requests, batches, max_batch, limit_handoffs;
  };

  template <class Req>
  static void invoke(void* ctx, bool more) noexcept {
    (*static_cast<Req*>(ctx))(more);
  }

  ThreadSlot* my_slot() {
    if (ThreadSlot** slot = ccsynch_detail::SlotCache::find(id_)) [[likely]] return *slot;
    return my_slot_slow();
  }

  [[gnu::noinline]] ThreadSlot* my_slot_slow() {
    const uint64_t uid = ccsynch_detail::SlotCache::thread_ordinal();
    std::lock_guard lock(mutex_);
    std::unique_ptr<ThreadSlot>& slot = slots_[uid];
    if (!slot) {
      slot = std::make_unique<ThreadSlot>();
      slot->spare = new_node_locked();
    }
    ccsynch_detail::SlotCache::store(id_, slot.get());
    return slot.get();
  }

  Node* new_node_locked() {
    nodes_.push_back(std::make_unique<Node>());
    return nodes_.back().get();
  }

  const unsigned h_;
  const unsigned nlists_;
  unsigned (*const node_of_)() noexcept;
  const uint64_t id_;
  std::unique_ptr<List[]> lists_;
  CountingLock<GlobalLock> global_;  // H-Synch only (nlists_ > 1)
  PerThreadCounter waits_, wait_ns_;

  mutable std::mutex mutex_;  // guards nodes_ and slots_ (cold path)
  std::vector<std::unique_ptr<Node>> nodes_;
  std::unordered_map<uint64_t, std::unique_ptr<ThreadSlot>> slots_;
};

}  // namespace txpath
