// SPDX-License-Identifier: MIT
// The strategy factories TxQueue::create() picks from (strategy/registry.cpp), one per strategy
// file, and the helper that turns the validated --lock name into a template instantiation.
#pragma once

#include <memory>

#include "engine/queue_base.hpp"
#include "sync/locks.hpp"

namespace txpath {

// Builds a queue of one strategy around `qdisc`; config.lock is already validated.
using QueueFactory = std::unique_ptr<QueueBase>(Device& device, std::unique_ptr<Qdisc> qdisc,
                                                const TxQueueConfig& config);

QueueFactory make_busylock_queue;
QueueFactory make_rootlock_queue;
QueueFactory make_llist_queue;
QueueFactory make_mutex_queue;
QueueFactory make_nolock_queue;
QueueFactory make_combining_queue;
QueueFactory make_drainer_queue;
QueueFactory make_sharded_queue;

// Instantiates Strategy<Lock> for the lock kind named in config.lock (already validated by
// TxQueue::create), wrapped so its service thread stops before it is destroyed. `more` follows
// config in the constructor call.
template <template <class> class Strategy, class... More>
std::unique_ptr<QueueBase> make_with_lock_kind(Device& device, std::unique_ptr<Qdisc> qdisc,
                                               const TxQueueConfig& config, const More&... more) {
  return with_lock_kind(*parse_lock_kind(config.lock), [&]<class Lock>() -> std::unique_ptr<QueueBase> {
    return std::make_unique<Finalized<Strategy<Lock>>>(device, std::move(qdisc), config, more...);
  });
}

}  // namespace txpath
