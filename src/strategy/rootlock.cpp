// SPDX-License-Identifier: MIT
// Strategy `rootlock`: __dev_xmit_skb() with busylock removed, as the May 2016 RFC
// "net: remove busylock" proposed: every sender takes the root lock directly, so the RUNNING
// owner, which re-takes the root lock after each device call, competes with all of them.
//
// Shared cache lines per packet: root lock, qdisc. Lock order: root lock -> device tx lock.
#include "strategy/locked_queue.hpp"
#include "base/clock.hpp"
#include "sync/locks.hpp"

namespace txpath {

namespace {

template <class Lock>
class RootlockQueue : public LockedQueue<Lock> {
 public:
  RootlockQueue(Device& device, std::unique_ptr<Qdisc> qdisc, const TxQueueConfig& config)
      : LockedQueue<Lock>(device, std::move(qdisc), config, "rootlock", Lock::kName) {}

  SendStatus send(Packet* p) noexcept override {
    if (!this->admit(p)) return SendStatus::too_big;
    p->enqueue_ns = now_ns();
    PacketList to_free;
    this->root_.lock();
    const Verdict v = this->enqueue_and_run(p, to_free, []() noexcept {});
    this->root_.unlock();
    free_packets(std::move(to_free));
    return to_send_status(v);
  }
};

}  // namespace

std::unique_ptr<QueueBase> make_rootlock_queue(Device& device, std::unique_ptr<Qdisc> qdisc,
                                               const TxQueueConfig& config) {
  return make_with_lock_kind<RootlockQueue>(device, std::move(qdisc), config);
}

}  // namespace txpath
