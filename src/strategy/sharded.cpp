// SPDX-License-Identifier: MIT
// Strategy `sharded`: per-CPU lock-free push lists drained in batches by ONE elected drainer.
//
// Origin: no Linux transmit path does this. It is the design docs/architecture.md
// ("Strategies") calls sharded: per-CPU push lists + one elected drainer, after the 2025 Linux UDP receive change that replaced busylock
// with one lockless queue per NUMA node drained by one CPU (Linux commit b650bf0977d3; docs/background.md, "Delegation and combining"). The push and the whole-list
// detach are those of `llist` (llist.cpp, Linux 6.19 commit 100dfa74cad9); what differs is that
// there is one list per CPU instead of one per queue, so concurrent senders do not all CAS the
// same cache line, and the drainer is elected by a flag instead of by "pushed onto an empty list".
//
// Data structures
//  * shards_[i], one per CPU the topology reports (topology().pus), each on its own cache line:
//    `head`, a LIFO push list of packets (CAS push, as llist), and `depth`, the number of packets
//    pushed and not yet detached (including pushes in flight), capped at `max_burst` per shard.
//  * draining_: the drainer flag. Whoever sets it (exchange false -> true) is THE drainer; only
//    the drainer detaches shard lists.
//  * the root lock, qdisc, requeue list and RUNNING of LockedQueue, used as in every root-lock
//    strategy (the service thread may run the qdisc under the root lock while a drainer exists).
//
// Which shard a sender uses. A sender must always push onto the same shard: the drainer visits
// shards one after the other, so a thread that pushed p1 onto shard 3 and then, after migrating
// to CPU 0, p2 onto shard 0 could see p2 enqueued first (shard 0 visited after p1 was pushed,
// shard 3 still to come... or the reverse). So the shard is not sched_getcpu() at each send: each
// thread takes an ordinal at its first send to any `sharded` queue (a global round-robin counter)
// and uses shard (ordinal + queue id) % shards for a queue — fixed for the thread's lifetime, and
// round-robin over shards for the threads that send to one queue. The result is cached in a
// thread_local keyed by the queue's unique id (ids are never reused, so a new queue at the
// address of a destroyed one is never mistaken for it); a miss recomputes the same value, so a
// thread alternating between queues never changes shard. (A per-queue round-robin counter with a
// one-entry thread_local cache would re-assign — and split — a thread that alternates queues.)
// "Per CPU" is therefore a count, not an affinity: with one sender per CPU, each shard line is
// written by one sender only.
//
// send(p)
//  0. The uncontended path (a userspace shortcut, as llist's): the queue has been quiet (its
//     last 64 drainer passes found no pushed packet, and no sender since lost a try_lock or found
//     the queue busy: quiet_), no drainer at work (a relaxed read of draining_), the thread's own
//     shard reads empty (acquire), a try_lock of the root lock wins and the queue is idle
//     (bypass_open(); else unlock and go on with step 1) -> enqueue or bypass under the root lock and
//     run, as rootlock (LockedQueue::try_send_idle): one locked instruction, none more while the lock is calm. The
//     drainer flag and the shards are not touched, so the Dekker argument below is unchanged;
//     order holds since a drainer detaches and enqueues under one root-lock hold. Otherwise:
//  1. If draining_ reads false, try to take it (exchange). The winner never pushes: as drainer
//     it detaches every shard into the qdisc, then enqueues its own packet (exact verdict
//     returned; alone, it may take the empty-qdisc bypass), then runs the driver loop. This is
//     the uncontended path (no shard RMW at all); the bypass can never overtake a queued packet,
//     since every shard was emptied first and serialize() (strategy/serialize.hpp) bypasses only
//     a lone packet, and only when qdisc and requeue list are empty.
//  2. Otherwise push onto the thread's shard: depth.fetch_add(1) — over the cap: undo, drop,
//     count_strategy_drop() — then CAS the packet onto head (seq_cst). Then load draining_
//     (seq_cst): set -> return `queued` at once (the drainer will take it). Clear -> try to take
//     it; losing also returns `queued` at once — unless the push made the shard deeper than one
//     quota (config.quota, 64): then the sender passivates (below).
//
// send_burst(burst): as send(), with the whole burst for the packet: the drainer role taken, the
//    burst is enqueued after everything detached (real verdicts); otherwise the burst is pushed
//    as one chain (LifoChain) with one CAS; the shard cap counts packets and drops the burst's
//    newest beyond it.
//
// The drainer (drain_held), with draining_ set:
//    a pass = take the root lock; for each shard with a non-null head: exchange head with null,
//    depth -= number taken, reverse into arrival order; enqueue the batch into the qdisc and run
//    the driver loop (serialize(), as every LockedQueue); drop the root lock; free drop victims.
//    Passes repeat while a pass took something, at most kMaxPasses per call. Then release:
//    draining_.store(false) (seq_cst), re-check every shard (seq_cst loads). All empty -> done.
//    Non-empty -> if passes are left, try to take draining_ again and go on (a sender or the
//    service thread that got it first will drain instead); if not, schedule() a deferred run.
//
// Why no packet is stranded (the Dekker pair). Sender: push A (seq_cst CAS on head) then R, a
// seq_cst load/exchange of draining_. Drainer: clear Y (seq_cst store of draining_) then C, seq_cst
// loads of every head. All four are in the single total order S of seq_cst operations, consistent
// with program order. If R reads `true` set by drainer H, R reads a value older than H's clear Y
// in draining_'s modification order, so R precedes Y in S; then A < R < Y < C in S, and H's
// re-check C sees A (or an emptier head, which only a later drainer that took A can cause). H
// then either takes draining_ again (and detaches A: its load after its own C reads A or later),
// or loses it to a drainer H2 whose take follows Y — for which the same argument applies, H2's
// re-check follows A in S too — or, out of passes, schedules a deferred run, whose own take of
// draining_ is ordered after C (schedule -> service thread is a happens-before chain) and so is
// in the same position as a sender's R. If R reads `false`, the sender tries to take draining_
// itself: winning, it detaches its own A (program order); losing reads `true` set by some H, the
// first case. So every pushed packet is detached by some drainer; once senders stop, the chain
// ends with the last drainer finding every shard empty. After the detach, the root-lock argument
// of driver_loop.hpp takes over (enqueue and run_begin under the root lock).
//
// deferred_run() (service thread): takes draining_ if it can and drains like a sender; if a
// drainer exists, it only runs the qdisc under the root lock (LockedQueue::deferred_run) — that
// drainer's re-check covers the shards.
//
// Invariants
//  * a packet is in exactly one place: a shard list, the drainer's hands (root lock held), the
//    qdisc/requeue list, the device; only the draining_ holder detaches shard lists, and it
//    enqueues what it detached before dropping the root lock (so quiescent(), which checks under
//    the root lock, never misses a detached packet);
//  * per-sender order: one sender -> one shard (above); a shard list is detached whole and
//    reversed; successive drainers are ordered by draining_ (release/acquire) and by the root
//    lock; a sender that becomes drainer empties every shard, its own included, before
//    enqueueing its own packet;
//  * depth >= packets on the list (incremented before the push, decremented after the detach),
//    so a shard never holds more than max_burst packets, and sum(depth) is exact at quiescence;
//  * quiescent (under the root lock): not RUNNING, qdisc and requeue list empty, draining_ clear,
//    every shard head null.
//
// Memory orders: see each atomic below. In short: head push seq_cst (release part publishes the
// packet to the detach's acquire; seq_cst part is the sender half of the Dekker pair); head
// detach acquire; draining_ take seq_cst exchange (acquire part pairs with the previous drainer's
// clear: its qdisc work happens-before ours); draining_ clear seq_cst store + seq_cst re-check
// loads (drainer half of the pair); depth relaxed when counted (a bound, never a
// synchronisation), seq_cst when the drainer lowers it (its notify, park.hpp).
//
// The root lock during the drainer's run: held across the device calls too (the driver loop
// gets NoRootLock, as for mutex), since only the service thread and drain() ever wait for it —
// the senders push onto shards. So the uncontended packet takes it once, not twice; the price is
// that drop victims of a dequeue (codel, fq_codel, red) are freed with it held, and a deferred
// run waits for the drainer's device calls. The service thread's own runs still release it
// around xmit (LockedQueue::deferred_run).
//
// Preemption (threads > cores): the drainer waits for nothing but the root lock (contended only
// by the service thread and drain()) and the device's tx lock, so it neither spins nor parks. If
// it is preempted, senders would keep pushing until their shard hits max_burst and then drop —
// measured at 16 senders on 2 cores: 83-97% drops. So a sender that did not take the drainer
// role and whose push made its shard deeper than one quota waits (spin, then park on the shard's
// depth) until the drainer has taken that shard; the detach lowers depth and notifies. That
// gives the CPU back to the drainer (concurrency restriction, as llist's followers). A drainer
// exists whenever such a sender waits: it saw the flag held, and the holder's release re-check
// sees the shard. The packets already in the qdisc still move meanwhile: the service thread
// runs the qdisc under the root lock (deferred runs, device wakes). A drainer that is a sender
// returns after at most kMaxPasses passes, so no sender is kept draining forever.
//
// Shared cache lines per packet, uncontended (step 0): the sender's shard line (a load) and the
// root lock (one CAS). Otherwise: the sender's shard line (two RMWs, written by that shard's
// senders only when there is one sender per shard) and a read of draining_ (shared, written only
// when the drainer changes). Per pass the drainer touches the root lock, the qdisc and every
// shard line (a load; an exchange where non-empty) — O(shards) per pass, fine for the CPUs of
// one machine; a large machine would want a non-empty summary bitmap or per-node shards.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>

#include "base/topology.hpp"
#include "strategy/factories.hpp"
#include "strategy/locked_queue.hpp"
#include "strategy/quiet_streak.hpp"
#include "strategy/sharded_hooks.hpp"
#include "sync/instance_cache.hpp"
#include "sync/park.hpp"

namespace txpath {

namespace {

// Passes (shard sweep + driver-loop run) one drainer tenure may make before it hands the rest
// to a deferred run: bounds the time a sender spends draining for others.
constexpr int kMaxPasses = 4;

// A thread's shard per queue, keyed by queue id; thread ordinals taken at a thread's first send.
struct ShardCacheTag {};
using ShardCache = InstanceCache<ShardCacheTag, std::size_t>;

// One per CPU: a cache line written by its senders and, once per batch, by the drainer.
struct alignas(64) Shard {
  std::atomic<Packet*> head{nullptr};
  std::atomic<uint64_t> depth{0};
};

// The non-template part: shards, the drainer flag, shard choice; and what tests look at.
class ShardedCore {
 public:
  explicit ShardedCore(const TxQueueConfig& config)
      : passivate_at_(static_cast<uint64_t>(std::max(config.quota, 1))),
        id_(ShardCache::new_instance_id()),
        nshards_(static_cast<std::size_t>(std::max(1, topology().pus))),
        burst_limit_(std::max<uint64_t>(1, config.max_burst)),
        shards_(std::make_unique<Shard[]>(nshards_)) {}

  std::size_t shard_count() const noexcept { return nshards_; }

  // The calling thread's shard for this queue: the same for the thread's whole life.
  std::size_t my_shard() const noexcept {
    if (const std::size_t* cached = ShardCache::find(id_)) return *cached;
    const std::size_t shard = (ShardCache::thread_ordinal() - 1 + id_) % nshards_;
    ShardCache::store(id_, shard);
    return shard;
  }

  uint64_t shard_depth(std::size_t i) const noexcept {
    return shards_[i].depth.load(std::memory_order_relaxed);  // relaxed: a statistic
  }

  void set_release_hook(std::function<void()> hook) { release_hook_ = std::move(hook); }
  // Tests only, before any send: off, every send() goes through the drainer flag and the shards.
  void set_uncontended_path(bool on) noexcept { quiet_.allow(on); }

 protected:
  // Pushes `chain` (one packet, or a burst) onto the caller's shard with one CAS. The shard's cap
  // counts packets: the chain's newest packets beyond it are cut onto `refused` (still ours).
  // False if nothing was left to push.
  bool push(LifoChain& chain, PacketList& refused, Shard*& shard, uint64_t& depth) noexcept {
    Shard& s = shards_[my_shard()];
    shard = &s;
    const uint64_t k = chain.size;
    // relaxed: a bound, not a synchronisation; the drainer's fetch_sub comes after its detach.
    depth = s.depth.fetch_add(k, std::memory_order_relaxed) + k;
    if (depth > burst_limit_) {
      const uint64_t before = depth - k;
      const uint64_t over = before >= burst_limit_ ? k : depth - burst_limit_;
      s.depth.fetch_sub(over, std::memory_order_relaxed);  // relaxed: as above
      depth -= over;
      chain.cut_newest(over, refused);
      if (chain.empty()) return false;
    }
    // relaxed: only the first guess for the CAS, which re-reads on failure.
    Packet* first = s.head.load(std::memory_order_relaxed);
    do {
      chain.oldest->next = first;
      // seq_cst: the release part publishes the chain (frames, links) to the drainer's acquire
      // detach; the total order is the sender half of the Dekker pair with release() (header
      // comment).
    } while (!s.head.compare_exchange_weak(first, chain.newest, std::memory_order_seq_cst,
                                           std::memory_order_relaxed));
    return true;
  }

  // Tries to become the drainer.
  bool try_take() noexcept {
    // relaxed: a hint that saves the RMW on a line every sender reads; the exchange decides.
    if (draining_.load(std::memory_order_relaxed)) return false;
    // seq_cst: the acquire part pairs with the previous drainer's clear in release() (its
    // detaches and qdisc work happen-before ours); the total order places this take in the
    // Dekker argument.
    return !draining_.exchange(true, std::memory_order_seq_cst);
  }

  // After a push: the sender half of the Dekker pair (header comment).
  bool take_after_push() noexcept {
    // seq_cst: ordered after our seq_cst push in S; pairs with release()'s clear + re-check.
    if (draining_.load(std::memory_order_seq_cst)) return false;
    return !draining_.exchange(true, std::memory_order_seq_cst);  // seq_cst: as try_take()
  }

  // Gives up the drainer role; true if a shard is non-empty afterwards (someone must drain it).
  bool release() noexcept {
    if (release_hook_) [[unlikely]] release_hook_();
    // seq_cst: the drainer half of the Dekker pair; the release part pairs with the next
    // taker's exchange.
    draining_.store(false, std::memory_order_seq_cst);
    for (std::size_t i = 0; i < nshards_; ++i)
      // seq_cst: ordered after the clear in S, so it sees every push whose sender saw us hold
      // the flag (header comment).
      if (shards_[i].head.load(std::memory_order_seq_cst) != nullptr) return true;
    return false;
  }

  // Drainer only, root lock held: detaches every non-empty shard, appending its packets in
  // arrival order to `out`. Returns true if anything was taken.
  bool detach_all(PacketList& out) noexcept {
    bool took = false;
    for (std::size_t i = 0; i < nshards_; ++i) {
      Shard& s = shards_[i];
      // acquire: pairs with the pushers' seq_cst CAS; skips idle shards without an RMW.
      if (s.head.load(std::memory_order_acquire) == nullptr) continue;
      // acquire: pairs with every pusher's CAS, so their packets (and links) are visible.
      PacketList batch =
          PacketList::from_lifo(s.head.exchange(nullptr, std::memory_order_acquire));
      const uint64_t n = batch.size();
      // seq_cst: the bound needs no ordering (see push(); after the detach, so depth never
      // undercounts the list), but the notify below must not read libstdc++'s waiter count
      // before this is visible (park.hpp). It wakes senders passivated on this shard.
      s.depth.fetch_sub(n, std::memory_order_seq_cst);
      s.depth.notify_all();
      took = took || n > 0;
      out.splice_back(batch);
    }
    return took;
  }

  // send()'s step 0 may be tried: the queue has been quiet (see quiet_), no drainer is at work
  // and the calling thread's shard holds nothing. Otherwise the sender pushes: senders that take
  // the root lock and RUNNING themselves get preempted holding them, and the drainer then waits
  // (at 16 senders on 2 cores the row fell from 5-15 to 2-8 Mpps when step 0 ran there too).
  bool alone_possible() const noexcept {
    // relaxed, both: hints (the try_lock that follows decides; a drainer that starts meanwhile
    // waits for the root lock like the service thread).
    if (!quiet_.quiet()) return false;
    if (draining_.load(std::memory_order_relaxed)) return false;
    // acquire: pairs with the detach's exchange — a drainer's, made under the root lock — or
    // reads our own earlier push.
    return shards_[my_shard()].head.load(std::memory_order_acquire) == nullptr;
  }

  // Shard state for quiescent(): every head null and the flag clear.
  bool shards_idle() const noexcept {
    // acquire: pairs with the last drainer's clear (its enqueues are then visible to the caller).
    if (draining_.load(std::memory_order_acquire)) return false;
    for (std::size_t i = 0; i < nshards_; ++i)
      // acquire: pairs with the pushers' CAS.
      if (shards_[i].head.load(std::memory_order_acquire) != nullptr) return false;
    return true;
  }

  uint64_t shards_queued() const noexcept {
    uint64_t n = 0;
    // relaxed: an estimate while running, exact at quiescence (see the depth invariant).
    for (std::size_t i = 0; i < nshards_; ++i) n += shards_[i].depth.load(std::memory_order_relaxed);
    return n;
  }

  // Teardown (no senders, no service thread): frees what the shards hold.
  uint64_t purge_shards(PacketList& to_free) noexcept {
    uint64_t n = 0;
    for (std::size_t i = 0; i < nshards_; ++i) {
      // acquire: pairs with the pushers' CAS.
      PacketList left =
          PacketList::from_lifo(shards_[i].head.exchange(nullptr, std::memory_order_acquire));
      n += left.size();
      to_free.splice_back(left);
      shards_[i].depth.store(0, std::memory_order_relaxed);  // relaxed: teardown, single thread
    }
    return n;
  }

 protected:
  const uint64_t passivate_at_;  // a non-draining sender beyond this shard depth waits

 private:
  const uint64_t id_;
  const std::size_t nshards_;
  const uint64_t burst_limit_;
  std::unique_ptr<Shard[]> shards_;
  // The drainer flag: read by every sender that pushed, written twice per drainer tenure.
  alignas(64) std::atomic<bool> draining_{false};

  // Tests only: runs in release() before the flag is cleared (set before any send).
  std::function<void()> release_hook_;

 protected:
  // Step 0's switch (quiet_streak.hpp): a quiet step per drainer pass with its own packet in
  // hand that found no pushed packet; disturbed by a lost try_lock, a busy queue, a pass that
  // found pushed packets. Read by every sender.
  QuietStreak quiet_;
};

template <class Lock>
class ShardedQueue : public LockedQueue<Lock>, public ShardedCore {
 public:
  ShardedQueue(Device& device, std::unique_ptr<Qdisc> qdisc, const TxQueueConfig& config)
      : LockedQueue<Lock>(device, std::move(qdisc), config, "sharded"),
        ShardedCore(config) {}

  SendStatus send(Packet* p) noexcept override {
    if (const SendStatus refused = this->admit(p); refused != SendStatus::queued) [[unlikely]]
      return refused;
    // Step 0 (header comment). Order: a drainer detaches and enqueues under one root-lock hold,
    // so once we hold the lock every packet of ours that left the shard is in the qdisc or sent,
    // and none is still on it (our earlier pushes precede alone_possible()'s load of its head).
    if (alone_possible()) {
      SendStatus status;
      if (this->try_send_idle(p, status)) return status;
      quiet_.disturbed();  // the lock was taken or the queue busy: the shards and the drainer
    }
    if (try_take()) {  // we drain, p in hand
      PacketList own;
      own.push_back(p);
      return to_send_status(drain_held(own, no_verdicts));
    }
    LifoChain chain(p);
    PacketList refused;
    Shard* shard = nullptr;
    uint64_t depth = 0;
    if (!push(chain, refused, shard, depth))
      return this->drop_unqueued(refused.pop_front());  // no lock is held here
    after_push(*shard, depth);
    return SendStatus::queued;
  }

  // The burst, as send() with the whole burst for the one packet: drained in hand after
  // everything detached (real verdicts), or pushed onto the thread's shard as one chain with one
  // CAS (`queued`; the shard cap counts packets, and the burst's newest beyond it are dropped).
  std::size_t send_burst(std::span<Packet* const> packets,
                         std::span<SendStatus> status) noexcept override {
    return this->admit_and_hand_off(
        packets, status,
        [this](PacketList& batch, std::span<SendStatus> looked_at, std::size_t accepted) noexcept {
          if (try_take()) {
            drain_held(batch, [looked_at, accepted](std::size_t skip) {
              return BurstVerdicts(looked_at, accepted, skip);
            });
            return;
          }
          LifoChain chain(batch);
          PacketList refused;
          Shard* shard = nullptr;
          uint64_t depth = 0;
          const bool pushed = push(chain, refused, shard, depth);
          if (!refused.empty()) this->drop_burst_tail(refused, looked_at);  // no lock held here
          if (pushed) after_push(*shard, depth);
        });
  }

 protected:
  void deferred_run() noexcept override {
    if (try_take()) {
      drain_others();
      return;
    }
    // A drainer exists: its re-check covers the shards; we keep the qdisc moving.
    LockedQueue<Lock>::deferred_run();
  }

  bool quiescent() noexcept override {
    this->root_.lock();
    const bool idle = !this->is_running() && this->backlog_packets() == 0 && shards_idle();
    this->root_.unlock();
    return idle;
  }

  uint64_t strategy_queued() const noexcept override { return shards_queued(); }

  uint64_t purge_strategy(PacketList& to_free) noexcept override { return purge_shards(to_free); }

 private:
  // After our push: the sender half of the Dekker pair (take the drainer role if it is free),
  // or passivation while the drainer falls behind.
  void after_push(Shard& shard, uint64_t depth) noexcept {
    if (take_after_push()) {
      drain_others();
    } else if (depth > passivate_at_) {
      // The drainer is falling behind (likely preempted): wait until it has taken our shard
      // (its detach lowers depth and notifies) instead of filling it to the cap and dropping.
      // A drainer exists — we saw the flag held — and its release re-check sees our shard.
      spin_then_park(shard.depth, [this](uint64_t d) { return d <= passivate_at_; },
                     kYieldsBeforePark);
    }
  }

  // drain_held() with nothing of our own (a push already handed our packets over, or a deferred
  // run).
  void drain_others() noexcept {
    PacketList none;
    drain_held(none, no_verdicts);
  }
  static NoVerdicts no_verdicts(std::size_t /*ahead*/) noexcept { return {}; }

  // Called holding draining_; returns with it released. `own` (may be empty) is the caller's
  // packet or burst, enqueued after everything detached in the first pass; returns the verdict
  // of its last packet. make_verdicts(n) makes the sink for that pass's verdicts, the first n of
  // which are of the detached packets ahead of ours.
  template <class MakeVerdicts>
  Verdict drain_held(PacketList& own, MakeVerdicts&& make_verdicts) noexcept {
    Verdict verdict = Verdict::success;
    for (int pass = 1;; ++pass) {
      PacketList batch, to_free;
      this->root_.lock();
      const bool took = detach_all(batch);
      if (took) {
        quiet_.disturbed();
      } else if (!own.empty()) {
        quiet_.quiet_step();
      }
      const bool has_own = !own.empty();
      const std::size_t ahead = batch.size();
      batch.splice_back(own);  // after all it could see
      // Our own packets are the batch's last: the last verdict is theirs. An empty batch only
      // runs the qdisc (what a deferred run or an earlier pass may have left). The root lock
      // stays held across the device calls (held_, as mutex does): no sender ever waits for it
      // here — they push onto shards — so releasing it around xmit (sch_direct_xmit) would only
      // cost the uncontended packet a second CAS to re-take it.
      const Verdict v =
          this->serialize(this->held_, batch, to_free, NoOwnerHook{}, make_verdicts(ahead));
      if (has_own) verdict = v;
      this->root_.unlock();
      free_packets(std::move(to_free));
      if (took && pass < kMaxPasses) continue;  // more may have arrived meanwhile
      if (!release()) return verdict;
      if (pass >= kMaxPasses) {
        this->schedule();  // the deferred run takes draining_ (or a sender does first)
        return verdict;
      }
      if (!take_after_push()) return verdict;  // another drainer has it, and will re-check
    }
  }
};

}  // namespace

std::unique_ptr<QueueBase> make_sharded_queue(Device& device, std::unique_ptr<Qdisc> qdisc,
                                              const TxQueueConfig& config) {
  return make_with_lock_kind<ShardedQueue>(device, std::move(qdisc), config);
}

// Test hooks (strategy/sharded_hooks.hpp): introspection of a `sharded` queue.
namespace sharded_test {

namespace {
ShardedCore* core(TxQueue& q) { return dynamic_cast<ShardedCore*>(&q); }
}  // namespace

std::size_t shard_count(TxQueue& q) {
  ShardedCore* c = core(q);
  return c ? c->shard_count() : 0;
}
std::size_t shard_of_calling_thread(TxQueue& q) { return core(q)->my_shard(); }
uint64_t shard_depth(TxQueue& q, std::size_t shard) { return core(q)->shard_depth(shard); }
void on_drainer_release(TxQueue& q, std::function<void()> hook) {
  core(q)->set_release_hook(std::move(hook));
}
void set_uncontended_path(TxQueue& q, bool on) { core(q)->set_uncontended_path(on); }

}  // namespace sharded_test

}  // namespace txpath
