// SPDX-License-Identifier: MIT
// Strategy `mutex`: the plain baseline. One pthread mutex around everything — enqueue, and the
// whole driver loop including the device calls (unlike every Linux variant, which drops the
// root lock around the driver). Senders that arrive during a run wait on the mutex; the next one
// in becomes the owner if anything is left. The --lock option does not apply.
//
// That is LockedQueue's send() (strategy/locked_queue.hpp) with a MutexLock that the driver loop
// keeps held across the device calls (kHeldAcrossXmit: it releases a NoRootLock instead).
//
// Shared cache lines per packet: the mutex, the qdisc.
#include "strategy/factories.hpp"
#include "strategy/locked_queue.hpp"
#include "sync/mutex_lock.hpp"

namespace txpath {

std::unique_ptr<QueueBase> make_mutex_queue(Device& device, std::unique_ptr<Qdisc> qdisc,
                                            const TxQueueConfig& config) {
  using MutexQueue = LockedQueue<MutexLock, /*kHeldAcrossXmit=*/true>;
  return std::make_unique<Finalized<MutexQueue>>(device, std::move(qdisc), config, "mutex");
}

}  // namespace txpath
