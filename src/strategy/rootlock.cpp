// SPDX-License-Identifier: MIT
// Strategy `rootlock`: __dev_xmit_skb() with busylock removed, as the May 2016 RFC
// "net: remove busylock" proposed: every sender takes the root lock directly, so the RUNNING
// owner, which re-takes the root lock after each device call, competes with all of them. That is
// LockedQueue's own send() (strategy/locked_queue.hpp).
//
// Shared cache lines per packet: root lock, qdisc. Lock order: root lock -> device tx lock.
#include "strategy/factories.hpp"
#include "strategy/locked_queue.hpp"

namespace txpath {

namespace {

template <class Lock>
using RootlockQueue = LockedQueue<Lock>;

}  // namespace

std::unique_ptr<QueueBase> make_rootlock_queue(Device& device, std::unique_ptr<Qdisc> qdisc,
                                               const TxQueueConfig& config) {
  return make_with_lock_kind<RootlockQueue>(device, std::move(qdisc), config, "rootlock");
}

}  // namespace txpath
