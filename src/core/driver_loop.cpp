// SPDX-License-Identifier: MIT
#include "core/driver_loop.hpp"

#include <mutex>
#include <utility>

namespace txpath {

int DriverLoop::xmit_list(PacketList& batch) noexcept {
  if (device_.lltx()) return xmit_train(batch);  // LLTX: RUNNING alone serialises xmit()
  std::lock_guard tx(device_.tx_lock());          // HARD_TX_LOCK
  return xmit_train(batch);
}

int DriverLoop::xmit_train(PacketList& batch) noexcept {
  int sent = 0;
  while (!batch.empty()) {
    if (device_.stopped()) break;  // stopped (before or mid-train): the rest is requeued
    Packet* p = batch.pop_front();
    const bool more = !batch.empty();  // xmit_more: the doorbell waits for the last packet
    if (device_.xmit_sampled(p, more) != XmitResult::ok) {
      batch.push_front(p);
      break;
    }
    ++sent;
  }
  sent_.add(static_cast<uint64_t>(sent));
  batches_.add(1);
  return sent;
}

void DriverLoop::requeue(PacketList& rest) noexcept {
  const uint64_t n = rest.size();
  requeue_qlen_.add(n);
  requeue_backlog_.add(rest.bytes());
  requeues_.add(n);
  // The refused packets go back at the HEAD. They were the oldest packets of the queue: either
  // the batch came from the qdisc, and then the requeue list was empty, or it was a prefix of
  // the requeue list (cut short by the quota or the BQL budget), and then what is still on the
  // list came after them.
  rest.splice_back(requeue_);
  requeue_ = std::move(rest);
}

}  // namespace txpath
