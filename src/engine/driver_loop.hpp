// SPDX-License-Identifier: MIT
// The driver loop (Linux __qdisc_run / qdisc_restart / sch_direct_xmit / dev_requeue_skb): batch,
// device call, requeue, quota, bypass — nothing else. One per queue, run by whoever owns RUNNING
// (QueueBase::run_begin); it asks the Scheduler for a deferred run when it stops with work left.
//
// Driver loop, in one paragraph. The owner of RUNNING loops: take a batch — the requeue list
// first, else one qdisc dequeue plus more while the BQL byte budget and the remaining quota
// allow — release the root lock, hand the batch to the device under its tx lock with
// more = "another packet follows", re-take the root lock. If the device refused part of the batch
// (Busy, or it stopped its queue mid-train) the rest goes back to the HEAD of the requeue list
// (it is older than anything still queued, see requeue()), a deferred run is scheduled, and the
// loop ends. The loop also ends when the qdisc is empty, when the device queue is stopped (its
// wake will schedule a run) and when the quota (dev_tx_weight, 64 packets) is spent (a deferred
// run is scheduled). Nothing else ever dequeues.
//
// Why nothing is stranded (locked strategies): a sender enqueues under the root lock and then
// tries qdisc_run_begin under the same lock; the owner's final "qdisc empty" check and its
// run_end happen under that lock too, so either the owner sees the packet or the sender becomes
// the owner. Every other way the loop ends leaves a scheduled run (quota, requeue) or a device
// wake that will schedule one (queue stopped: the stop is observed under the root lock, and the
// wake, which follows the stop, schedules a run that takes the root lock after it).
//
// Locks. "Root lock" below is the strategy's serialisation of the qdisc: the root lock of the
// lock-based strategies, or a no-op `Lock` for those that serialise otherwise (nolock's seqlock,
// the combiner role), which then stays held across the device call. Every function says what it
// runs under. The requeue list and the counters below are the RUNNING owner's alone.
#pragma once

#include <atomic>
#include <cstdint>

#include "base/clock.hpp"
#include "engine/scheduler.hpp"
#include "sync/park.hpp"
#include "txpath/counter.hpp"
#include "txpath/device.hpp"
#include "txpath/pool.hpp"
#include "txpath/qdisc.hpp"

namespace txpath {

// What the driver loop "releases and re-takes" around a device call when the strategy's
// serialisation stays held for the whole run (mutex's mutex, nolock's seqlock, the combiner
// role, a calm root lock's bypass): nothing. For a root lock, the loop gets the root lock itself
// (sch_direct_xmit).
struct NoRootLock {
  void lock() noexcept {}
  void unlock() noexcept {}
};

class DriverLoop {
 public:
  DriverLoop(Device& device, Qdisc& qdisc, Scheduler& scheduler, int quota) noexcept
      : device_(device), qdisc_(&qdisc), scheduler_(scheduler), quota_(quota > 0 ? quota : 64) {}
  DriverLoop(const DriverLoop&) = delete;
  DriverLoop& operator=(const DriverLoop&) = delete;

  // The root qdisc after a live tc change replaced it (QueueBase::edit_qdisc). Root lock held,
  // RUNNING owned: nothing else runs the loop meanwhile.
  void set_qdisc(Qdisc& qdisc) noexcept { qdisc_ = &qdisc; }

  // __qdisc_run(): the driver loop. Root lock held, RUNNING owned; returns the same way.
  //
  // Quota and softirq restarts. __qdisc_run() stops after dev_tx_weight (64) packets and raises
  // NET_TX_SOFTIRQ; in Linux that softirq runs on the SAME CPU as soon as the sender re-enables
  // bottom halves, and __do_softirq() restarts it up to MAX_SOFTIRQ_RESTART (10) times or for
  // MAX_SOFTIRQ_TIME (2 ms) before handing it to ksoftirqd. So a sender that owns the qdisc drains
  // up to 11 quotas in a row, not one. We emulate that inline: after each spent quota the loop
  // goes on (the root lock is still dropped around every device call) until 1 + 10 quotas or
  // 2 ms are spent; only then is the rest left to the service thread (our ksoftirqd). Without
  // it, an owner thread drains 64 packets and everything else waits for the service thread to
  // be scheduled — which on an oversubscribed machine is the bottleneck.
  static constexpr int kSoftirqRestarts = 10;
  static constexpr uint64_t kSoftirqBudgetNs = 2'000'000;
  // The 2 ms are counted from the end of the first quota: a run that ends within one quota (the
  // common case) reads no clock.
  template <class Lock>
  void run(Lock& root) noexcept {
    uint64_t start = 0;
    for (int round = 0;; ++round) {
      int quota = quota_;
      while (quota > 0) {
        const int n = restart(root, quota);
        if (n <= 0) return;
        quota -= n;
      }
      if (round == 0) start = now_ns();
      if (round >= kSoftirqRestarts || now_ns() - start > kSoftirqBudgetNs) {
        scheduler_.schedule();
        return;
      }
    }
  }

  // The empty-qdisc bypass (TCQ_F_CAN_BYPASS): root lock held and RUNNING just won with
  // backlog_packets() == 0. Sends p directly; returns true if the device took it (a refusal is
  // requeued and a run scheduled). The caller then runs the loop only if packets arrived
  // meanwhile (sch_direct_xmit() answers qdisc_qlen(), and __dev_xmit_skb() runs __qdisc_run()
  // only then), so that an idle queue costs no dequeue after a bypass.
  // always_inline: the per-packet path of an idle queue; inlined into each strategy's send(), as
  // it was before QueueBase forwarded to it (GCC otherwise keeps combining's copy out of line).
  //
  // The calm bypass (docs/architecture.md, "The calm bypass"): a root lock that says calm() —
  // its last kCalmAfter acquisitions found it free — stays held across this one device call
  // instead of being released and re-taken (one locked instruction instead of two). Nobody can
  // enqueue meanwhile, so nothing is left for the loop; a sender that arrives waits one xmit()
  // and, by waiting, ends the calm: the next bypass releases the lock as the kernel does.
  template <class Lock>
  [[gnu::always_inline]] bool bypass_xmit(Lock& root, Packet* p) noexcept {
    qdisc_->count_bypass(*p);
    bypassed_.add(1);
    if constexpr (requires { root.calm(); }) {
      if (root.calm()) {
        NoRootLock kept;
        return direct_xmit_one(kept, p);
      }
    }
    return direct_xmit_one(root, p);
  }

  // Backpressure for strategies whose senders never wait (nolock): a sender whose packet was
  // dropped for want of room waits — spin, then park — until the driver loop has handed one more
  // batch to the device, or `idle()` says there is nothing left to wait for. In the kernel the
  // owner cannot be preempted mid-run; here it can, and senders that keep enqueueing into a full
  // queue only turn CPU time into drops while the owner waits for a core. Every batch that
  // empties the queue also bumps the counter, so a waiter that saw a backlog cannot miss the end.
  // No lock held.
  template <class Idle>
  void wait_for_tx_progress(Idle&& idle) noexcept {
    // acquire: pairs with the release store in bump_tx_progress() (driver_loop.cpp).
    const uint32_t before = tx_progress_.load(std::memory_order_acquire);
    spin_then_park_timed(tx_progress_, progress_parked_,
                         [&](uint32_t now) { return now != before || idle(); }, kYieldsBeforePark);
  }

  // Makes every batch handed to the device bump the counter wait_for_tx_progress() waits on. Only
  // a strategy whose senders call wait_for_tx_progress() (nolock) turns it on, in its
  // constructor, before the queue is shared: the others save a seq_cst RMW per batch.
  void enable_progress_waiters() noexcept { progress_waiters_ = true; }

  // Packets / bytes in the requeue list: exact for the loop owner, a hint for anyone else.
  uint64_t requeue_qlen() const noexcept { return requeue_qlen_.get(); }
  uint64_t requeue_backlog() const noexcept { return requeue_backlog_.get(); }
  // Statistics (any thread; exact at quiescence).
  uint64_t requeues() const noexcept { return requeues_.get(); }
  uint64_t sent() const noexcept { return sent_.get(); }
  uint64_t batches() const noexcept { return batches_.get(); }
  uint64_t bypassed() const noexcept { return bypassed_.get(); }

  // Teardown (every thread that could run the loop stopped), or a live change whose root goes
  // (QueueBase::apply_edit, RUNNING owned): moves the requeue list onto `to_free`.
  void take_requeued(PacketList& to_free) noexcept {
    requeue_qlen_.set(0);
    requeue_backlog_.set(0);
    to_free.splice_back(requeue_);
  }

 private:
  // qdisc_restart(): one bulk dequeue and one device hand-off. Root lock held, RUNNING owned.
  // Returns packets sent; 0 = stop.
  template <class Lock>
  int restart(Lock& root, int budget) noexcept {
    if (device_.stopped()) return 0;  // don't dequeue into a stopped queue (ONETXQUEUE rule)
    PacketList batch;
    int64_t bytes_left = device_.tx_budget_bytes();
    if (!requeue_.empty()) {
      take_requeued_batch(batch, budget, bytes_left);
    } else {
      Packet* p = nullptr;
      while (static_cast<int>(batch.size()) < budget && (batch.empty() || bytes_left > 0)) {
        p = qdisc_->dequeue();
        if (!p) break;
        bytes_left -= p->len;
        batch.push_back(p);
      }
      // A shaper that holds packets not yet eligible names the time they become so: the
      // service thread runs the loop again then, without any further send().
      if (!p) {
        if (const uint64_t at = qdisc_->watchdog_ns(); at != 0) scheduler_.arm_watchdog(at);
      }
      // AQM victims of these dequeues: freed below, once the root lock is released.
      PacketList dequeue_drops;
      qdisc_->take_dequeue_drops(dequeue_drops);
      if (!dequeue_drops.empty()) {
        if (batch.empty()) {
          root.unlock();
          free_packets(std::move(dequeue_drops));
          root.lock();
          return 0;
        }
        return direct_xmit(root, batch, &dequeue_drops);
      }
      if (batch.empty()) return 0;
    }
    return direct_xmit(root, batch);
  }

  // Requeued packets leave first, in order, as one batch, within the same packet and byte
  // budget as a dequeue (a refused remainder goes back to the head of the list, see requeue()).
  // Root lock held, RUNNING owned.
  void take_requeued_batch(PacketList& batch, int budget, int64_t& bytes_left) noexcept {
    while (!requeue_.empty() && static_cast<int>(batch.size()) < budget &&
           (batch.empty() || bytes_left > 0)) {
      Packet* p = requeue_.pop_front();
      requeue_qlen_.sub(1);
      requeue_backlog_.sub(p->len);
      bytes_left -= p->len;
      batch.push_back(p);
    }
  }

  // sch_direct_xmit(): called with the root lock held and RUNNING owned; drops the root lock
  // around the device call (which runs under the device's tx lock) and re-takes it.
  template <class Lock>
  int direct_xmit(Lock& root, PacketList& batch, PacketList* to_free = nullptr) noexcept {
    root.unlock();
    if (to_free) free_packets(std::move(*to_free));  // outside every lock
    const int sent = xmit_list(batch);  // leaves the refused remainder in batch
    if (sent > 0 && progress_waiters_) bump_tx_progress();
    root.lock();
    if (!batch.empty()) {
      give_back(batch);
      return 0;
    }
    return sent;
  }

  // direct_xmit() of one packet (the bypass), with no list: the same steps, one xmit() with
  // more = false.
  template <class Lock>
  bool direct_xmit_one(Lock& root, Packet* p) noexcept {
    root.unlock();
    const bool sent = xmit_one(p);
    if (sent && progress_waiters_) bump_tx_progress();
    root.lock();
    if (!sent) {
      PacketList refused;
      refused.push_back(p);
      give_back(refused);
    }
    return sent;
  }

  // A batch went to the device: wakes senders in wait_for_tx_progress(). RUNNING owned. Out of
  // line, so that direct_xmit() stays small for the strategies that never call it.
  void bump_tx_progress() noexcept;
  // dev_hard_start_xmit: root lock released, RUNNING owned; takes the device's tx lock unless
  // the device is LLTX (HARD_TX_LOCK).
  int xmit_list(PacketList& batch) noexcept;
  // xmit_list() of a train of one: true if the device took p.
  bool xmit_one(Packet* p) noexcept;
  // The train itself: xmit() each packet, more = true until the last. RUNNING owned, tx lock
  // held or the device LLTX.
  int xmit_train(PacketList& batch) noexcept;
  // dev_requeue_skb: head of the requeue list. Root lock held, RUNNING owned.
  void requeue(PacketList& rest) noexcept;
  // What the device refused: requeued, and a deferred run scheduled (the service thread tries
  // again). Root lock held, RUNNING owned. The cold end of direct_xmit() and direct_xmit_one().
  void give_back(PacketList& refused) noexcept;

  Device& device_;
  Qdisc* qdisc_;  // changed only by set_qdisc(), in the owner's context
  Scheduler& scheduler_;
  const int quota_;
  bool progress_waiters_ = false;  // see enable_progress_waiters(); set before the queue is shared

  // Owned by the RUNNING owner under the root lock.
  alignas(64) PacketList requeue_;
  SingleWriterCounter requeue_qlen_, requeue_backlog_, requeues_;
  SingleWriterCounter sent_, batches_, bypassed_;
  // Batches handed to the device (wraps); bumped per batch by the RUNNING owner (its only
  // writer at a time), see wait_for_tx_progress.
  alignas(64) std::atomic<uint32_t> tx_progress_{0};
  std::atomic<uint32_t> progress_parked_{0};  // waiters asleep on tx_progress_ (park_timed)
};

}  // namespace txpath
