// SPDX-License-Identifier: MIT
// Strategy `llist`: Linux 6.19 "net: dev_queue_xmit() llist adoption" (commit 100dfa74cad9,
// Eric Dumazet, 2025), which replaced busylock, with the qdisc_max_burst cap (ffe4ccd359d0).
//
// A sender pushes its packet onto a lock-free LIFO defer list with one CAS. If the list was not
// empty, some earlier sender is the leader and will handle it: return at once. The sender that
// pushed onto an EMPTY list is the leader: it takes the root lock, detaches the whole list with
// one exchange, restores arrival order, enqueues the batch and runs the qdisc (or, for a single
// packet into an empty qdisc, uses the bypass). Among senders only leaders touch the root lock.
//
// Burst cap: a sender that finds the list non-empty counts itself in defer_count (one RMW, only
// then — as the kernel, which avoids the atomic on the uncontended path); beyond `burst_limit`
// (qdisc_max_burst, default 1000) the packet is dropped and counted. The leader resets the count
// after detaching the list (not atomically with it: the list can briefly exceed the cap).
//
// Bursts (send_burst): the burst is linked into one chain (LifoChain) and pushed with one CAS, so
// the detach leaves it contiguous and in order. The cap counts packets: a burst that would take a
// non-empty list past it loses its newest packets beyond the cap (dropped, counted, freed).
//
// Passivation (a userspace adaptation; the kernel needs none). In Linux the leader cannot be
// preempted while it waits for or holds the root lock (spinlocks disable preemption). Here it
// can: with more senders than cores, followers that keep pushing while the leader is off-CPU only
// fill the list up to the cap and then drop — we measured 99% drops and 0.003 Mpps at 16 senders
// on 2 cores. So a follower whose push makes the list longer than one driver-loop quota
// (config.quota, 64) waits — spin, then park — until a leader has detached the list (its reset of
// defer_count notifies). This is concurrency restriction (Malthusian locks; docs/background.md,
// "Lock-holder preemption in user space"): the excess senders give their CPU to the leader. Below the threshold nothing changes; the
// burst cap and its drops stay as in the kernel.
//
// The uncontended path (userspace; the kernel always pushes): once the queue is quiet (64
// leaders in a row led their own packet alone, quiet_streak.hpp), a sender that finds the list
// empty, wins a try_lock of the root lock and finds the queue idle (the bypass open: qdisc and
// requeue list empty, not RUNNING) sends its packet as rootlock does, with no push and no detach
// — one locked instruction per packet, none more while the root lock is calm
// (DriverLoop::bypass_xmit). Otherwise it pushes as above (after unlocking, if the queue was
// busy: under load the leaders' batching stays as in the kernel). See send().
//
// Invariants: a packet is on the defer list, in the leader's hands, or in the qdisc/requeue
// list — never two; the list is empty at every quiescent point (its first pusher always drains
// it). Followers always get `queued` (no drop feedback from the qdisc), as in the kernel.
//
// Shared cache lines per packet: the list head (CAS), defer_count (only when contended); the
// root lock and qdisc are touched once per batch by the leader.
#include <algorithm>
#include <atomic>

#include "strategy/factories.hpp"
#include "strategy/locked_queue.hpp"
#include "strategy/quiet_streak.hpp"
#include "sync/park.hpp"

namespace txpath {

namespace {

template <class Lock>
class LlistQueue : public LockedQueue<Lock> {
 public:
  LlistQueue(Device& device, std::unique_ptr<Qdisc> qdisc, const TxQueueConfig& config)
      : LockedQueue<Lock>(device, std::move(qdisc), config, "llist"),
        burst_limit_(config.max_burst),
        passivate_at_(static_cast<uint64_t>(std::max(config.quota, 1))) {}

  SendStatus send(Packet* p) noexcept override {
    if (const SendStatus refused = this->admit(p); refused != SendStatus::queued) [[unlikely]]
      return refused;
    // The uncontended path (header comment). Order: a leader detaches the list and enqueues
    // what it took under ONE root-lock hold, so once we hold the lock every packet of ours that
    // left the list is in the qdisc (or sent); none is still on it, since our earlier pushes
    // precede this load of head_ in program order (it sees them or the detach that took them).
    // acquire: pairs with the leader's exchange of head_ (its detach).
    if (quiet_.quiet() && head_.load(std::memory_order_acquire) == nullptr) {
      SendStatus status;
      if (this->try_send_idle(p, status)) return status;
      quiet_.disturbed();  // the lock was taken or the queue busy: the defer list, as the kernel
    }
    LifoChain chain(p);
    PacketList refused;
    uint64_t deferred = 0;  // list length our push made, as counted (0 when not counted)
    switch (push(chain, refused, deferred)) {
      case Pushed::refused: return this->drop_unqueued(refused.pop_front());  // burst cap; no lock
      case Pushed::onto_empty: return lead(NoVerdicts{});
      case Pushed::behind_leader: break;
    }
    follow(deferred);
    return SendStatus::queued;
  }

  // The burst: one pre-linked chain, pushed with one CAS. It counts against the burst cap per
  // packet: the packets beyond the cap are the burst's newest, dropped (and freed) here; the
  // rest enter in order. Pushed onto an empty list, the sender leads and its packets are the
  // batch's first: they get the qdisc's verdicts; behind a leader they get `queued`, as send().
  std::size_t send_burst(std::span<Packet* const> packets,
                         std::span<SendStatus> status) noexcept override {
    return this->admit_and_hand_off(
        packets, status,
        [this](PacketList& batch, std::span<SendStatus> looked_at, std::size_t) noexcept {
          LifoChain chain(batch);
          PacketList refused;
          uint64_t deferred = 0;
          const Pushed how = push(chain, refused, deferred);
          if (!refused.empty()) this->drop_burst_tail(refused, looked_at);  // no lock held here
          if (how == Pushed::onto_empty) {
            lead(BurstVerdicts(looked_at, chain.size));
          } else if (how == Pushed::behind_leader) {
            follow(deferred);
          }
        });
  }

 protected:
  bool quiescent() noexcept override {
    // The list drains itself (its first pusher leads), so with senders stopped it is empty once
    // the last leader has finished; check it under the root lock with the rest.
    this->root_.lock();
    const bool idle = !this->is_running() && this->backlog_packets() == 0 &&
                      head_.load(std::memory_order_acquire) == nullptr;  // acquire: see push()
    this->root_.unlock();
    return idle;
  }

  uint64_t strategy_queued() const noexcept override {
    // relaxed: a racy estimate while running; 0 at quiescence (see quiescent()).
    if (head_.load(std::memory_order_relaxed) == nullptr) return 0;
    return defer_count_.load(std::memory_order_relaxed) + 1;
  }

 private:
  enum class Pushed { onto_empty, behind_leader, refused };

  // Step 2: pushes `chain` onto the defer list with one CAS (onto_empty: we lead; behind_leader:
  // the leader of this list will take it). The burst cap counts packets: when the list is not
  // empty, the chain's newest packets beyond the cap are cut onto `refused` (still ours);
  // `refused` is returned when nothing is left to push.
  Pushed push(LifoChain& chain, PacketList& refused, uint64_t& deferred) noexcept {
    // relaxed: only the first guess for the CAS, which re-reads on failure.
    Packet* first = head_.load(std::memory_order_relaxed);
    bool counted = false;
    do {
      if (first && !counted) {
        counted = true;
        const uint64_t k = chain.size;
        // relaxed: a bound, not a synchronisation; the leader's reset may race with it (as in
        // the kernel), which only lets a burst briefly exceed the cap.
        deferred = defer_count_.fetch_add(static_cast<uint32_t>(k), std::memory_order_relaxed) + k;
        const uint64_t before = deferred - k;
        const uint64_t room = before >= burst_limit_ ? 0 : burst_limit_ - before;
        if (room < k) chain.cut_newest(k - room, refused);
        if (chain.empty()) return Pushed::refused;
      }
      chain.oldest->next = first;
      // release: publishes the chain (frames and links) to the leader's acquire exchange.
    } while (!head_.compare_exchange_weak(first, chain.newest, std::memory_order_release,
                                          std::memory_order_relaxed));
    return first ? Pushed::behind_leader : Pushed::onto_empty;
  }

  // Behind a leader: passivate if the leader is falling behind (see the header); the leader's
  // reset of defer_count_ (notified) ends the wait.
  void follow(uint64_t deferred) noexcept {
    if (deferred > passivate_at_)
      spin_then_park(defer_count_, [this](uint32_t n) { return n <= passivate_at_; },
                     kYieldsBeforePark);  // see park.hpp
  }

  // We pushed onto an empty list: we lead. Steps 3-5 for the whole list under the root lock. Our
  // own packets are the oldest on the list, so the batch's first: `verdicts` gets theirs first.
  template <class Verdicts>
  SendStatus lead(Verdicts&& verdicts) noexcept {
    PacketList to_free;
    this->root_.lock();
    // acquire: pairs with every pusher's release CAS, so their packets are visible.
    Packet* list = head_.exchange(nullptr, std::memory_order_acquire);
    // relaxed: every follower whose packet we just took counted itself before its release CAS,
    // which our acquire exchange saw, so this load sees those counts; 0 means no follower of this
    // list, hence none waiting on it: a lone leader skips the reset's seq_cst store and notify.
    if (defer_count_.load(std::memory_order_relaxed) != 0) {
      // seq_cst: the count itself needs no ordering (see the fetch_add above), but the notify
      // below must not read libstdc++'s waiter count before this store is visible, or a follower
      // parking right now would sleep through the reset (park.hpp).
      defer_count_.store(0, std::memory_order_seq_cst);
      defer_count_.notify_all();
    }
    PacketList batch = PacketList::from_lifo(list);
    const bool lone = batch.size() == 1;  // only a lone packet may take the bypass
    if (lone) {
      quiet_.quiet_step();  // nobody else's packet: see quiet_streak.hpp
    } else {
      quiet_.disturbed();
    }
    const Verdict v = this->serialize(this->root_, batch, to_free, NoOwnerHook{},
                                      std::forward<Verdicts>(verdicts));
    this->root_.unlock();
    // A lone packet keeps its own verdict; a leader of several answers `queued`, as followers do.
    return this->leave(to_free, lone ? v : Verdict::success);
  }

  const uint64_t burst_limit_;
  const uint64_t passivate_at_;  // followers beyond this list length wait for the leader
  alignas(64) std::atomic<Packet*> head_{nullptr};     // q->defer_list
  // The uncontended path's switch (quiet_streak.hpp): a quiet step per leader whose batch is its
  // own packet alone; disturbed by a batch of several, a lost try_lock, a busy queue. On head_'s
  // line: every sender reads both.
  QuietStreak quiet_;
  // q->defer_count. 32 bits (the cap, max_burst, is a uint32_t): libstdc++ waits and notifies on
  // a 32-bit word with the futex itself, where a 64-bit one costs every notify_all() a seq_cst
  // RMW on a process-wide waiter table.
  alignas(64) std::atomic<uint32_t> defer_count_{0};
};

}  // namespace

std::unique_ptr<QueueBase> make_llist_queue(Device& device, std::unique_ptr<Qdisc> qdisc,
                                            const TxQueueConfig& config) {
  return make_with_lock_kind<LlistQueue>(device, std::move(qdisc), config);
}

}  // namespace txpath
