// SPDX-License-Identifier: MIT
// What every strategy shares: the qdisc, RUNNING ownership (qdisc_run_begin/qdisc_run_end),
// inspection, the counters and their aggregation (stats, consistent_stats), drain() and the one
// shutdown. It composes the two moving parts:
//  * DriverLoop (driver_loop.hpp): batch, device call, requeue, quota, bypass — Linux __qdisc_run
//    / qdisc_restart / sch_direct_xmit; why nothing is stranded is written there;
//  * Scheduler (scheduler.hpp): SCHED, wake-up, watchdog, the service thread — Linux
//    __netif_schedule / net_tx_action / the qdisc watchdog. It calls back deferred_run().
// The protected members below are what a strategy calls; those of the loop and the scheduler are
// inline forwarders (the templates stay templates: no call is added on the per-packet path).
//
// Inspection (TxQueue::inspect_qdisc, tc -s on a running queue). A caller puts fn into the
// request slot (InspectSlot, inspect_slot.hpp), which sets inspect_pending_ and schedule()s, so
// that an idle queue gets a deferred run. Every driver-loop owner checks the flag in run_end() — with the root lock (or the
// strategy's serialisation) still held and RUNNING still owned — and runs fn there; strategies
// whose batch end can skip the loop on an empty queue (combining's epilogue) call
// serve_inspect() themselves. Why it is served: a deferred run either wins RUNNING (and its
// run_end() serves) or finds an owner, which takes the root lock after the deferred run released
// it and so sees the flag at its own run_end(). Where that argument is weaker (nolock's trylock
// with MISSED) the waiting caller simply schedule()s again every millisecond. Cost when nobody
// inspects: one relaxed load per run, on the RUNNING cache line the owner writes anyway.
//
// Shutdown, once: shutdown() (idempotent, not virtual) stops the strategy's own threads
// (stop_workers()), closes inspection, stops the scheduler, detaches the device and frees
// everything still queued (counted as dropped). Finalized<> calls it from the most-derived
// destructor, while the strategy still exists; ~QueueBase calls it again as a no-op.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <utility>

#include "base/per_thread_counter.hpp"
#include "engine/admission.hpp"
#include "engine/driver_loop.hpp"
#include "engine/inspect_slot.hpp"
#include "engine/scheduler.hpp"
#include "txpath/counter.hpp"
#include "txpath/device.hpp"
#include "txpath/pool.hpp"
#include "txpath/qdisc.hpp"
#include "txpath/txqueue.hpp"

namespace txpath {

class QueueBase : public TxQueue, private Scheduler::Client {
 public:
  QueueBase(Device& device, std::unique_ptr<Qdisc> qdisc, const TxQueueConfig& config,
            std::string_view strategy, std::string_view lock_kind);
  ~QueueBase() override;

  bool drain(std::chrono::milliseconds timeout) override;
  bool service() noexcept override { return scheduler_.service(); }
  TxQueueStats stats() const override;
  std::optional<TxQueueStats> consistent_stats(std::chrono::milliseconds timeout) override;
  std::string_view strategy() const noexcept override { return strategy_; }
  std::string_view lock_kind() const noexcept override { return lock_kind_; }
  const Qdisc* qdisc() const noexcept override { return qdisc_.get(); }
  Device& device() noexcept override { return device_; }
  bool inspect_qdisc(const std::function<void(const Qdisc&)>& fn,
                     std::chrono::milliseconds timeout) override;
  bool edit_qdisc(const std::function<void(Qdisc& root, QdiscEdit& edit)>& fn,
                  std::chrono::milliseconds timeout) override;

  // Starts the service thread; called by the factory once the most-derived object exists.
  void start_service() { scheduler_.start(); }
  // The one teardown: stops the strategy's threads (stop_workers()), refuses and wakes
  // inspect_qdisc() callers, stops the service thread, detaches the device and frees every
  // packet still queued anywhere (counted as dropped). Idempotent: a second call does nothing.
  // Called by the most-derived destructor (Finalized<>), while the strategy still exists, or
  // earlier by the queue's owner; not concurrently with itself, and senders must have stopped.
  void shutdown() noexcept;

  // __netif_schedule(): ask for a deferred driver-loop run. Any thread, any context.
  void schedule() noexcept { scheduler_.schedule(); }
  // qdisc_watchdog_schedule_ns(): a deferred run at steady-clock time `at_ns`. Loop owner only
  // (root lock held); see Scheduler::arm_watchdog.
  void arm_watchdog(uint64_t at_ns) noexcept { scheduler_.arm_watchdog(at_ns); }

 protected:
  // A run of the driver loop on behalf of the service thread (net_tx_action). No lock held.
  void deferred_run() noexcept override = 0;
  // Stops the threads the strategy runs itself (drainer's TX thread), at the start of
  // shutdown(), before anything they feed is torn down. Must be idempotent; default: none.
  virtual void stop_workers() noexcept {}
  // Packets the strategy holds outside the qdisc (hand-off lists); 0 for lock-based strategies.
  virtual uint64_t strategy_queued() const noexcept { return 0; }
  // Adds the strategy's lock contention (acquisitions that waited, ns waited).
  virtual void lock_stats(uint64_t& /*waits*/, uint64_t& /*wait_ns*/) const noexcept {}
  // consistent_stats(): called by the loop owner in the serialised context right after stats()
  // read the strategy's lists. False when packets may have been between a list and the qdisc
  // during that read (taken by a thread that is not the owner, as the drainer's); the snapshot is
  // then taken again. Lock-based strategies move packets only under the root lock: always true.
  virtual bool snapshot_complete() const noexcept { return true; }
  // Frees packets held in the strategy's own lists at shutdown, after stop_workers(); returns
  // how many.
  virtual uint64_t purge_strategy(PacketList& /*to_free*/) noexcept { return 0; }
  // True when nothing is queued anywhere in the strategy or qdisc and nobody owns the driver
  // loop, checked under the strategy's serialisation (so the counters read after it are exact).
  virtual bool quiescent() noexcept = 0;
  // Whether edit_qdisc() may change the root: false where senders enqueue into it without the
  // root lock (nolock's rings).
  virtual bool editable() const noexcept { return true; }

  // The checks shared by every send() (engine/admission.hpp): `queued` when the packet may
  // enter (claimed, counted in `submitted`), else the refusal to return, the packet untouched.
  [[gnu::always_inline]] SendStatus admit(Packet* p) noexcept {
    const SendStatus s = admission(p, device_.max_frame_len());
    if (s == SendStatus::queued) [[likely]] submitted_.add(1);
    return s;
  }
  // The same for a burst (send_burst): every packet admission() lets in goes onto `batch`, in
  // order, with status `queued` until the owner's verdict replaces it; the others get their
  // refusal (too_big, invalid: the caller keeps them; in_flight: a packet already handed over,
  // earlier in this burst too — so no packet is ever linked twice). One `submitted` update for
  // the whole burst. Returns the count admitted.
  std::size_t admit_burst(std::span<Packet* const> packets, std::span<SendStatus> status,
                          PacketList& batch) noexcept {
    const std::size_t n = std::min(packets.size(), status.size());
    const uint32_t max_len = device_.max_frame_len();
    for (std::size_t i = 0; i < n; ++i) {
      Packet* p = packets[i];
      status[i] = admission(p, max_len);
      if (status[i] == SendStatus::queued) [[likely]] batch.push_back(p);
    }
    if (!batch.empty()) submitted_.add(batch.size());
    return batch.size();
  }

  // qdisc_run_begin()/qdisc_run_end() for strategies that serialise under a root lock.
  // Call with the root lock held. always_inline: once per uncontended packet; called through
  // serialize.hpp, GCC kept an out-of-line copy in busylock, llist, sharded and drainer.
  [[gnu::always_inline]] bool run_begin() noexcept {
    // relaxed: RUNNING is only written under the root lock, which orders these accesses;
    // the unlocked reader (is_running) is a heuristic.
    if (running_.load(std::memory_order_relaxed)) return false;
    running_.store(true, std::memory_order_relaxed);  // relaxed: as above
    runs_.add(1);
    return true;
  }
  [[gnu::always_inline]] void run_end() noexcept {
    serve_inspect();  // still the owner: an inspect_qdisc() request is served here
    running_.store(false, std::memory_order_relaxed);  // relaxed: as run_begin()
  }
  // Serves a pending inspect_qdisc() request. Only in the qdisc's serialised context (root lock
  // held, combiner role, nolock seqlock), i.e. where the qdisc may be read consistently.
  [[gnu::always_inline]] void serve_inspect() noexcept {
    // relaxed: a hint that costs one load when nobody inspects; pairs with nothing — the request
    // itself (fn) is handed over under the slot's mutex (inspect_slot.hpp). A set not yet
    // visible here is seen by a later owner (the waiter asks for a run again every millisecond).
    if (inspect_pending_.load(std::memory_order_relaxed)) [[unlikely]] serve_inspect_slow();
  }
  // qdisc_is_running(), read without the root lock: a racy hint by design (busylock's test).
  bool is_running() const noexcept {
    return running_.load(std::memory_order_relaxed);  // relaxed: heuristic, pairs with nothing
  }

  // Packets in the qdisc plus the requeue list. Root lock held (or quiescent).
  [[gnu::always_inline]] uint64_t backlog_packets() const noexcept {
    return qdisc_->qlen() + loop_.requeue_qlen();
  }
  // Packets in the requeue list alone: exact for the loop owner, a hint for anyone else (nolock's
  // lockless bypass test; its qdisc keeps its own per-thread qlen).
  uint64_t requeue_qlen() const noexcept { return loop_.requeue_qlen(); }

  // Forwarders to the driver loop, always inlined: the forwarding level must not change what
  // the compiler inlines into a strategy's send() (checked with nm on the strategy objects).
  //
  // The driver loop (DriverLoop::run). Root lock held, RUNNING owned; returns the same way.
  template <class Lock>
  [[gnu::always_inline]] void run(Lock& root) noexcept {
    loop_.run(root);
  }
  // The empty-qdisc bypass (DriverLoop::bypass_xmit): root lock held and RUNNING just won with
  // backlog_packets() == 0. Returns true if the loop should go on running.
  template <class Lock>
  [[gnu::always_inline]] bool bypass_xmit(Lock& root, Packet* p) noexcept {
    return loop_.bypass_xmit(root, p);
  }
  // For a strategy that calls wait_for_tx_progress(): in its constructor (DriverLoop).
  void enable_tx_progress_waits() noexcept { loop_.enable_progress_waiters(); }
  // Backpressure for senders that never wait (DriverLoop::wait_for_tx_progress). No lock held.
  template <class Idle>
  [[gnu::always_inline]] void wait_for_tx_progress(Idle&& idle) noexcept {
    loop_.wait_for_tx_progress(std::forward<Idle>(idle));
  }

  Qdisc& q() noexcept { return *qdisc_; }
  Device& dev() noexcept { return device_; }
  void count_strategy_drop(uint64_t n = 1) noexcept { strategy_drops_.add(n); }

 private:
  // Teardown, every thread stopped: frees what the qdisc, the requeue list and the strategy hold.
  void purge() noexcept;
  void serve_inspect_slow() noexcept;
  // edit_qdisc()'s request, in the serialised context: runs fn, installs a new root (under
  // root_mutex_, for stats()), empties the old one and counts what was dropped.
  void apply_edit(const std::function<void(Qdisc& root, QdiscEdit& edit)>& fn, QdiscEdit& edit);

  Device& device_;
  std::unique_ptr<Qdisc> qdisc_;
  const std::string strategy_;
  const std::string lock_kind_;
  bool shut_down_ = false;  // shutdown() ran (owner's thread only, see shutdown())

  Scheduler scheduler_;
  DriverLoop loop_;

  // RUNNING; see run_begin(). Own cache line: every sender of busylock reads it.
  alignas(64) std::atomic<bool> running_{false};
  // An inspect_qdisc() request waits in inspect_. On RUNNING's line: the owner reads it in
  // run_end() next to its RUNNING store. Set seq_cst and cleared under the slot's mutex by
  // InspectSlot; read relaxed by owners (serve_inspect()).
  std::atomic<bool> inspect_pending_{false};
  // Driver-loop runs (RUNNING acquisitions); written by the owner in run_begin().
  SingleWriterCounter runs_;

  alignas(64) SingleWriterCounter purged_;
  // Drops of live tc changes no root counter holds (edit_qdisc); written by the owner only.
  SingleWriterCounter edit_drops_;
  // qdisc_ is replaced by edit_qdisc() (exclusive) while stats() may read it from any thread
  // (shared); control path only, never taken on the per-packet path.
  mutable std::shared_mutex root_mutex_;
  PerThreadCounter submitted_;
  PerThreadCounter strategy_drops_;

  // The inspect_qdisc() request slot (control path only).
  InspectSlot inspect_{inspect_pending_};
};

// Wraps a strategy so that shutdown() runs (its threads and the service thread stop) before any
// part of it is destroyed.
template <class Strategy>
class Finalized final : public Strategy {
 public:
  using Strategy::Strategy;
  ~Finalized() override { this->shutdown(); }
};

}  // namespace txpath
