// SPDX-License-Identifier: MIT
// The part of Linux __dev_xmit_skb() shared by the root-lock strategies (busylock, rootlock):
// under the root lock, either the empty-qdisc bypass or enqueue, then qdisc_run_begin() and the
// driver loop if we won RUNNING. Also the service thread's run (net_tx_action: root lock only).
//
// Invariants (see core/queue_base.hpp for why nothing is stranded):
//  * the qdisc, the requeue list and RUNNING are touched only under root_;
//  * the bypass happens only when qdisc and requeue list are empty AND we won RUNNING, so a
//    bypassed packet can never overtake a queued one;
//  * drop victims go on the caller's to_free list, freed after every lock is released.
#pragma once

#include <memory>

#include "core/queue_base.hpp"
#include "sync/counting_lock.hpp"
#include "sync/locks.hpp"

namespace txpath {

inline SendStatus to_send_status(Verdict v) noexcept {
  switch (v) {
    case Verdict::success: return SendStatus::queued;
    case Verdict::congestion: return SendStatus::congested;
    case Verdict::drop: break;
  }
  return SendStatus::dropped;
}

template <class Lock>
class LockedQueue : public QueueBase {
 public:
  using QueueBase::QueueBase;

 protected:
  // Root lock held. `on_owner` runs right after RUNNING is won, before the driver loop
  // (busylock releases busylock there, so the owner competes for root_ with one sender at most).
  template <class OnOwner>
  Verdict enqueue_and_run(Packet* p, PacketList& to_free, OnOwner&& on_owner) noexcept {
    if (q().can_bypass() && backlog_packets() == 0 && run_begin()) {
      if (bypass_xmit(root_, p)) {
        on_owner();
        run(root_);
      }
      run_end();
      return Verdict::success;
    }
    const Verdict v = q().enqueue(p, to_free);
    if (run_begin()) {
      on_owner();
      run(root_);
      run_end();
    }
    return v;
  }

  void deferred_run() noexcept override {
    root_.lock();
    if (run_begin()) {
      run(root_);
      run_end();
    }
    root_.unlock();
  }

  bool quiescent() noexcept override {
    root_.lock();
    const bool idle = !is_running() && backlog_packets() == 0;
    root_.unlock();
    return idle;
  }

  void lock_stats(uint64_t& waits, uint64_t& wait_ns) const noexcept override {
    waits += root_.waits();
    wait_ns += root_.wait_ns();
  }

  // qdisc_lock(q): the root lock (each lock kind sits on its own cache line), counting waits.
  CountingLock<Lock> root_;
};

// Instantiates Strategy<Lock> for the lock kind named in config.lock (already validated by
// TxQueue::create), wrapped so its service thread stops before it is destroyed.
template <template <class> class Strategy>
std::unique_ptr<QueueBase> make_with_lock_kind(Device& device, std::unique_ptr<Qdisc> qdisc,
                                               const TxQueueConfig& config) {
  return with_lock_kind(*parse_lock_kind(config.lock), [&]<class Lock>() -> std::unique_ptr<QueueBase> {
    return std::make_unique<Finalized<Strategy<Lock>>>(device, std::move(qdisc), config);
  });
}

// Factories, one per strategy file; `lock` is the lock kind name already validated.
std::unique_ptr<QueueBase> make_busylock_queue(Device& device, std::unique_ptr<Qdisc> qdisc,
                                               const TxQueueConfig& config);
std::unique_ptr<QueueBase> make_rootlock_queue(Device& device, std::unique_ptr<Qdisc> qdisc,
                                               const TxQueueConfig& config);
std::unique_ptr<QueueBase> make_llist_queue(Device& device, std::unique_ptr<Qdisc> qdisc,
                                            const TxQueueConfig& config);
std::unique_ptr<QueueBase> make_mutex_queue(Device& device, std::unique_ptr<Qdisc> qdisc,
                                            const TxQueueConfig& config);
std::unique_ptr<QueueBase> make_nolock_queue(Device& device, std::unique_ptr<Qdisc> qdisc,
                                             const TxQueueConfig& config);
std::unique_ptr<QueueBase> make_combining_queue(Device& device, std::unique_ptr<Qdisc> qdisc,
                                                const TxQueueConfig& config);
std::unique_ptr<QueueBase> make_drainer_queue(Device& device, std::unique_ptr<Qdisc> qdisc,
                                              const TxQueueConfig& config);
std::unique_ptr<QueueBase> make_sharded_queue(Device& device, std::unique_ptr<Qdisc> qdisc,
                                              const TxQueueConfig& config);

}  // namespace txpath
