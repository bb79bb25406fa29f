// SPDX-License-Identifier: MIT
#include "engine/driver_loop.hpp"

#include <mutex>
#include <utility>

namespace txpath {

namespace {

// HARD_TX_LOCK: fn() under the device's tx lock, or without it for an LLTX device, whose xmit()
// RUNNING alone serialises.
template <class Fn>
auto hard_tx_locked(Device& device, Fn&& fn) noexcept {
  if (device.lltx()) return fn();
  std::lock_guard tx(device.tx_lock());
  return fn();
}

}  // namespace

int DriverLoop::xmit_list(PacketList& batch) noexcept {
  return hard_tx_locked(device_, [&] { return xmit_train(batch); });
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

bool DriverLoop::xmit_one(Packet* p) noexcept {
  const bool sent = hard_tx_locked(device_, [&] {
    return !device_.stopped() && device_.xmit_sampled(p, /*more=*/false) == XmitResult::ok;
  });
  if (sent) sent_.add(1);
  batches_.add(1);  // as xmit_train(): a batch whether or not the device took it
  return sent;
}

void DriverLoop::give_back(PacketList& refused) noexcept {
  requeue(refused);
  scheduler_.schedule();
}

void DriverLoop::bump_tx_progress() noexcept {
  // One writer at a time (the RUNNING owner; RUNNING's hand-off orders successive owners), so a
  // load and a store, no RMW. release: pairs with the acquire loads in wait_for_tx_progress().
  // relaxed load of the parked count: the cheap test of park_timed's protocol (park.hpp); a
  // waiter that parks just after it is woken by its 1 ms timeout at the latest.
  tx_progress_.store(tx_progress_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  if (progress_parked_.load(std::memory_order_relaxed) != 0) [[unlikely]]
    wake_parked(tx_progress_, progress_parked_);
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
