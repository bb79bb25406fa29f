// SPDX-License-Identifier: MIT
// What every strategy shares: the qdisc, the requeue list, RUNNING ownership, the driver loop
// (Linux __qdisc_run / qdisc_restart / sch_direct_xmit), the deferred-run service thread
// (Linux __netif_schedule / net_tx_action), counters and drain().
//
// Driver loop, in one paragraph. The owner of RUNNING loops: take a batch — the requeue list
// first, else one qdisc dequeue plus more while the BQL byte budget and the remaining quota
// allow — release the root lock, hand the batch to the device under its tx lock with
// more = "another packet follows", re-take the root lock. If the device refused part of the batch
// (Busy, or it stopped its queue mid-train) the rest goes to the tail of the requeue list, a
// deferred run is scheduled, and the loop ends. The loop also ends when the qdisc is empty, when
// the device queue is stopped (its wake will schedule a run) and when the quota (dev_tx_weight,
// 64 packets) is spent (a deferred run is scheduled). Nothing else ever dequeues.
//
// Deferred runs. schedule() sets SCHED and, if the service thread sleeps, wakes it. The service
// thread clears SCHED and asks the strategy for a run (deferred_run(): for lock-based strategies,
// root lock + qdisc_run_begin + the loop). While senders are active it instead ticks every
// `service_tick` and needs no wake-up call; after a quiet spell it sleeps until kicked (or 1 ms,
// to reap device completions). It also polls the device when the device asks (next_poll_ns):
// that is the TX-completion interrupt, which returns buffers and wakes a stopped queue.
//
// Why nothing is stranded (locked strategies): a sender enqueues under the root lock and then
// tries qdisc_run_begin under the same lock; the owner's final "qdisc empty" check and its
// run_end happen under that lock too, so either the owner sees the packet or the sender becomes
// the owner. Every other way the loop ends leaves a scheduled run (quota, requeue) or a device
// wake that will schedule one (queue stopped: the stop is observed under the root lock, and the
// wake, which follows the stop, schedules a run that takes the root lock after it).
//
// Inspection (TxQueue::inspect_qdisc, tc -s on a running queue). A caller puts fn into a request
// slot (inspect_mutex_), sets inspect_pending_ and schedule()s, so that an idle queue gets a
// deferred run. Every driver-loop owner checks the flag in run_end() — with the root lock (or the
// strategy's serialisation) still held and RUNNING still owned — and runs fn there; strategies
// whose batch end can skip the loop on an empty queue (combining's epilogue) call
// serve_inspect() themselves. Why it is served: a deferred run either wins RUNNING (and its
// run_end() serves) or finds an owner, which takes the root lock after the deferred run released
// it and so sees the flag at its own run_end(). Where that argument is weaker (nolock's trylock
// with MISSED) the waiting caller simply schedule()s again every millisecond. Cost when nobody
// inspects: one relaxed load per run, on the RUNNING cache line the owner writes anyway.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/clock.hpp"
#include "base/per_thread_counter.hpp"
#include "sync/park.hpp"
#include "txpath/counter.hpp"
#include "txpath/device.hpp"
#include "txpath/pool.hpp"
#include "txpath/qdisc.hpp"
#include "txpath/txqueue.hpp"

namespace txpath {

class QueueBase : public TxQueue {
 public:
  QueueBase(Device& device, std::unique_ptr<Qdisc> qdisc, const TxQueueConfig& config,
            std::string_view strategy, std::string_view lock_kind);
  ~QueueBase() override;

  bool drain(std::chrono::milliseconds timeout) override;
  bool service() noexcept override;
  TxQueueStats stats() const override;
  std::optional<TxQueueStats> consistent_stats(std::chrono::milliseconds timeout) override;
  std::string_view strategy() const noexcept override { return strategy_; }
  std::string_view lock_kind() const noexcept override { return lock_kind_; }
  const Qdisc* qdisc() const noexcept override { return qdisc_.get(); }
  Device& device() noexcept override { return device_; }
  bool inspect_qdisc(const std::function<void(const Qdisc&)>& fn,
                     std::chrono::milliseconds timeout) override;

  // Starts the service thread; called by the factory once the most-derived object exists.
  void start_service();
  // Stops the service thread and frees every packet still queued anywhere (counted as dropped).
  // Called by the most-derived destructor, while the strategy still exists.
  void shutdown() noexcept;

  // __netif_schedule(): ask for a deferred driver-loop run. Any thread, any context.
  void schedule() noexcept;
  // qdisc_watchdog_schedule_ns(): ask for a deferred run at steady-clock time `at_ns` (the
  // service thread sleeps until then). Loop owner only (root lock held). A later call replaces
  // an earlier deadline, as the kernel's hrtimer is re-armed.
  void arm_watchdog(uint64_t at_ns) noexcept;

 protected:
  // A run of the driver loop on behalf of the service thread (net_tx_action).
  virtual void deferred_run() noexcept = 0;
  // Packets the strategy holds outside the qdisc (hand-off lists); 0 for lock-based strategies.
  virtual uint64_t strategy_queued() const noexcept { return 0; }
  // Adds the strategy's lock contention (acquisitions that waited, ns waited).
  virtual void lock_stats(uint64_t& /*waits*/, uint64_t& /*wait_ns*/) const noexcept {}
  // consistent_stats(): called by the loop owner in the serialised context right after stats()
  // read the strategy's lists. False when packets may have been between a list and the qdisc
  // during that read (taken by a thread that is not the owner, as the drainer's); the snapshot is
  // then taken again. Lock-based strategies move packets only under the root lock: always true.
  virtual bool snapshot_complete() const noexcept { return true; }
  // Frees packets held in the strategy's own lists at shutdown; returns how many.
  virtual uint64_t purge_strategy(PacketList& /*to_free*/) noexcept { return 0; }
  // True when nothing is queued anywhere in the strategy or qdisc and nobody owns the driver
  // loop, checked under the strategy's serialisation (so the counters read after it are exact).
  virtual bool quiescent() noexcept = 0;

  // The size check shared by every send(): a frame longer than the device's max is refused.
  bool admit(Packet* p) noexcept {
    if (p->len > device_.max_frame_len()) return false;
    submitted_.add(1);
    return true;
  }

  // qdisc_run_begin()/qdisc_run_end() for strategies that serialise under a root lock.
  // Call with the root lock held.
  bool run_begin() noexcept {
    // relaxed: RUNNING is only written under the root lock, which orders these accesses;
    // the unlocked reader (is_running) is a heuristic.
    if (running_.load(std::memory_order_relaxed)) return false;
    running_.store(true, std::memory_order_relaxed);  // relaxed: as above
    runs_.add(1);
    return true;
  }
  void run_end() noexcept {
    serve_inspect();  // still the owner: an inspect_qdisc() request is served here
    running_.store(false, std::memory_order_relaxed);  // relaxed: as run_begin()
  }
  // Serves a pending inspect_qdisc() request. Only in the qdisc's serialised context (root lock
  // held, combiner role, nolock seqlock), i.e. where the qdisc may be read consistently.
  void serve_inspect() noexcept {
    // relaxed: a hint that costs one load when nobody inspects; pairs with nothing — the request
    // itself (fn) is handed over under inspect_mutex_. A set not yet visible here is seen by a
    // later owner (the waiter schedules a deferred run again every millisecond).
    if (inspect_pending_.load(std::memory_order_relaxed)) [[unlikely]] serve_inspect_slow();
  }
  // qdisc_is_running(), read without the root lock: a racy hint by design (busylock's test).
  bool is_running() const noexcept {
    return running_.load(std::memory_order_relaxed);  // relaxed: heuristic, pairs with nothing
  }

  // Packets in the qdisc plus the requeue list. Root lock held (or quiescent).
  uint64_t backlog_packets() const noexcept { return qdisc_->qlen() + requeue_qlen_.get(); }
  // Packets in the requeue list alone: exact for the loop owner, a hint for anyone else (nolock's
  // lockless bypass test; its qdisc keeps its own per-thread qlen).
  uint64_t requeue_qlen() const noexcept { return requeue_qlen_.get(); }

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
  template <class Lock>
  void run(Lock& root) noexcept {
    const uint64_t start = now_ns();
    for (int round = 0;; ++round) {
      int quota = quota_;
      while (quota > 0) {
        const int n = restart(root, quota);
        if (n <= 0) return;
        quota -= n;
      }
      if (round >= kSoftirqRestarts || now_ns() - start > kSoftirqBudgetNs) {
        schedule();
        return;
      }
    }
  }

  // The empty-qdisc bypass (TCQ_F_CAN_BYPASS): root lock held and RUNNING just won with
  // backlog_packets() == 0. Sends p directly; returns true if the loop should go on running.
  template <class Lock>
  bool bypass_xmit(Lock& root, Packet* p) noexcept {
    qdisc_->count_bypass(*p);
    bypassed_.add(1);
    PacketList one;
    one.push_back(p);
    return direct_xmit(root, one) > 0;
  }

  // Backpressure for strategies whose senders never wait (nolock): a sender whose packet was
  // dropped for want of room waits — spin, then park — until the driver loop has handed one more
  // batch to the device, or `idle()` says there is nothing left to wait for. In the kernel the
  // owner cannot be preempted mid-run; here it can, and senders that keep enqueueing into a full
  // queue only turn CPU time into drops while the owner waits for a core. Every batch that
  // empties the queue also bumps the counter, so a waiter that saw a backlog cannot miss the end.
  template <class Idle>
  void wait_for_tx_progress(Idle&& idle) noexcept {
    // acquire: pairs with the release fetch_add in direct_xmit().
    const uint32_t before = tx_progress_.load(std::memory_order_acquire);
    spin_then_park(tx_progress_, [&](uint32_t now) { return now != before || idle(); },
                   kYieldsBeforePark);
  }

  Qdisc& q() noexcept { return *qdisc_; }
  Device& dev() noexcept { return device_; }
  void count_strategy_drop(uint64_t n = 1) noexcept { strategy_drops_.add(n); }

 private:
  // qdisc_restart(): one bulk dequeue and one device hand-off. Returns packets sent; 0 = stop.
  template <class Lock>
  int restart(Lock& root, int budget) noexcept {
    if (device_.stopped()) return 0;  // don't dequeue into a stopped queue (ONETXQUEUE rule)
    PacketList batch;
    int64_t bytes_left = device_.tx_budget_bytes();
    if (!requeue_.empty()) {
      // Requeued packets leave first, in order, as one batch (a refused remainder goes back to the
      // head of the list, see requeue()).
      while (!requeue_.empty() && static_cast<int>(batch.size()) < budget &&
             (batch.empty() || bytes_left > 0)) {
        Packet* p = requeue_.pop_front();
        requeue_qlen_.sub(1);
        requeue_backlog_.sub(p->len);
        bytes_left -= p->len;
        batch.push_back(p);
      }
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
        if (const uint64_t at = qdisc_->watchdog_ns(); at != 0) arm_watchdog(at);
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

  // sch_direct_xmit(): root lock dropped around the device call and re-taken.
  template <class Lock>
  int direct_xmit(Lock& root, PacketList& batch, PacketList* to_free = nullptr) noexcept {
    root.unlock();
    if (to_free) free_packets(std::move(*to_free));  // outside every lock
    const int sent = xmit_list(batch);  // leaves the refused remainder in batch
    if (sent > 0) {
      // seq_cst: a waiter in wait_for_tx_progress() only needs to see the change (its acquire
      // load pairs with the release half), but notify_all's read of the waiter count must not
      // pass it (park.hpp). notify_all costs one load when nobody is parked.
      tx_progress_.fetch_add(1, std::memory_order_seq_cst);
      tx_progress_.notify_all();
    }
    root.lock();
    if (!batch.empty()) {
      requeue(batch);
      schedule();
      return 0;
    }
    return sent;
  }

  int xmit_list(PacketList& batch) noexcept;  // dev_hard_start_xmit under the tx lock
  void requeue(PacketList& rest) noexcept;    // dev_requeue_skb: tail of the requeue list
  void service_main();
  void serve_inspect_slow() noexcept;
  // Refuses further inspect_qdisc() calls, wakes the waiting ones and waits until they have left.
  void close_inspect() noexcept;

  Device& device_;
  std::unique_ptr<Qdisc> qdisc_;
  const std::string strategy_;
  const std::string lock_kind_;
  const int quota_;
  const std::chrono::microseconds service_tick_;
  const bool service_thread_;

  // RUNNING; see run_begin(). Own cache line: every sender of busylock reads it.
  alignas(64) std::atomic<bool> running_{false};
  // An inspect_qdisc() request waits in the slot below. On RUNNING's line: the owner reads it in
  // run_end() next to its RUNNING store. Set seq_cst (then schedule()) and cleared under
  // inspect_mutex_; read relaxed by owners (see serve_inspect()).
  std::atomic<bool> inspect_pending_{false};

  // Owned by the RUNNING owner under the root lock.
  alignas(64) PacketList requeue_;
  SingleWriterCounter requeue_qlen_, requeue_backlog_, requeues_;
  SingleWriterCounter sent_, batches_, runs_, bypassed_;
  std::atomic<uint64_t> deferred_runs_{0};
  // Batches handed to the device (wraps); bumped and notified per batch, see wait_for_tx_progress.
  alignas(64) std::atomic<uint32_t> tx_progress_{0};
  SingleWriterCounter purged_;

  PerThreadCounter submitted_;
  PerThreadCounter strategy_drops_;

  // Deferred-run machinery.
  alignas(64) std::atomic<bool> sched_{false};  // __QDISC_STATE_SCHED
  std::atomic<uint64_t> watchdog_{0};           // armed deadline (ns), 0: none; see arm_watchdog
  std::atomic<uint64_t> watchdog_fires_{0};     // statistic
  std::atomic<bool> service_idle_{false};       // the service thread sleeps until kicked
  std::atomic<bool> stop_{false};
  std::mutex service_mutex_;
  std::condition_variable service_cv_;
  std::thread service_;

  // The inspect_qdisc() request slot (control path only); all fields under inspect_mutex_.
  std::mutex inspect_mutex_;
  std::condition_variable inspect_cv_;  // request served, slot freed, or closed
  const std::function<void(const Qdisc&)>* inspect_fn_ = nullptr;  // the request; null: slot free
  bool inspect_done_ = false;                                     // fn has run
  std::exception_ptr inspect_error_;                              // what fn threw
  bool inspect_closed_ = false;                                   // shutdown() began
  int inspect_callers_ = 0;                                       // threads inside inspect_qdisc()
};

// Wraps a strategy so that its service thread stops before any part of it is destroyed.
template <class Strategy>
class Finalized final : public Strategy {
 public:
  using Strategy::Strategy;
  ~Finalized() override { this->shutdown(); }
};

}  // namespace txpath
