// SPDX-License-Identifier: MIT
// LockedQueue: the serialisation of every strategy whose qdisc lives under one lock — Linux
// qdisc_lock(q), the root lock. Its send() is the plain __dev_xmit_skb(): take the root lock,
// enqueue (or bypass) and run the driver loop if RUNNING is free, release (strategy/serialize.hpp,
// steps 2-5). rootlock and mutex use it as it is; busylock adds busylock in front of the root
// lock; llist, sharded and drainer override send() with their hand-off and take the root lock
// only in the thread that enqueues the batch. The service thread's run (net_tx_action) and the
// drain check take the root lock too.
//
// kHeldAcrossXmit: the driver loop releases the root lock around every device call
// (sch_direct_xmit), except for mutex, whose lock stays held for the whole run, and except a
// bypass while the root lock is calm (CountingLock::calm, DriverLoop::bypass_xmit).
//
// Invariants (see engine/driver_loop.hpp for why nothing is stranded):
//  * the qdisc, the requeue list and RUNNING are touched only under root_;
//  * the bypass happens only when qdisc and requeue list are empty AND we won RUNNING, so a
//    bypassed packet can never overtake a queued one;
//  * drop victims go on the caller's to_free list, freed after every lock is released.
#pragma once

#include <memory>
#include <string_view>

#include "strategy/serialize.hpp"
#include "sync/counting_lock.hpp"
#include "sync/locks.hpp"

namespace txpath {

template <class Lock, bool kHeldAcrossXmit = false>
class LockedQueue : public SerializedQueue {
 public:
  LockedQueue(Device& device, std::unique_ptr<Qdisc> qdisc, const TxQueueConfig& config,
              std::string_view strategy)
      : SerializedQueue(device, std::move(qdisc), config, strategy, Lock::kName) {}

  SendStatus send(Packet* p) noexcept override {
    if (const SendStatus refused = admit(p); refused != SendStatus::queued) [[unlikely]]
      return refused;
    PacketList batch, to_free;
    batch.push_back(p);
    root_.lock();
    const Verdict v = serialize(loop_lock(), batch, to_free);
    root_.unlock();
    return leave(to_free, v);
  }

  // The burst: one root-lock round for all of it (strategy/serialize.hpp, steps 2-5).
  std::size_t send_burst(std::span<Packet* const> packets,
                         std::span<SendStatus> status) noexcept override {
    PacketList batch, to_free;
    const std::size_t accepted = admit_burst(packets, status, batch);
    if (accepted == 0) return 0;
    root_.lock();
    serialize(loop_lock(), batch, to_free, NoOwnerHook{}, BurstVerdicts(status, accepted));
    root_.unlock();
    free_packets(std::move(to_free));
    return accepted;
  }

 protected:
  void deferred_run() noexcept override {
    root_.lock();
    run_qdisc(loop_lock());
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

  // The uncontended paths of llist and sharded (each says why its order holds): a try_lock of
  // the root lock and, if the queue is idle (bypass_open), the rest of rootlock's send() — true,
  // the answer in `status`. False when the lock was taken or the queue busy (the lock released):
  // the caller hands the packet over as usual.
  bool try_send_idle(Packet* p, SendStatus& status) noexcept {
    if (!root_.try_lock()) return false;
    if (!bypass_open()) {
      root_.unlock();
      return false;
    }
    PacketList batch, to_free;
    batch.push_back(p);
    const Verdict v = serialize(loop_lock(), batch, to_free);
    root_.unlock();
    status = leave(to_free, v);
    return true;
  }

  // What the driver loop releases and re-takes around a device call.
  decltype(auto) loop_lock() noexcept {
    if constexpr (kHeldAcrossXmit) {
      return (held_);
    } else {
      return (root_);
    }
  }

  // qdisc_lock(q): the root lock (each lock kind sits on its own cache line), counting waits.
  CountingLock<Lock> root_;
  [[no_unique_address]] NoRootLock held_;
};

}  // namespace txpath
