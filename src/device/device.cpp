// SPDX-License-Identifier: MIT
// The Device base: queue state (DRV_XOFF / STACK_XOFF), BQL glue and the wake signal.
//
// Queue state lives in one atomic word so that stopped() is a single acquire load for the driver
// loop, which may look at it without tx_lock. Every writer holds tx_lock (xmit by the driver-loop
// owner, poll by the completion side), so the RMWs below never race with each other in practice;
// they are RMWs so that the "was it stopped before?" test and the update are one step, which keeps
// the stop/wake counters and the wake notification exact even if a subclass ever calls them from
// somewhere else.
//
// Counting: `stops` counts transitions running -> stopped and `wakes` transitions stopped ->
// running (the moment the wake handler is called), so at any quiescent point
//   stops == wakes + (stopped() ? 1 : 0).
#include <memory>

#include "txpath/device.hpp"

#include "base/clock.hpp"
#include "sync/park.hpp"

#include "txpath/error.hpp"
#include "txpath/histogram.hpp"
#include "txpath/pool.hpp"

namespace txpath {

void TxLock::lock_contended() noexcept {
  for (;;) {
    // Spin, then park while held; then try to take it (another thread may win the exchange).
    spin_then_park_timed(locked_, parked_, [](uint32_t held) { return held == 0; });
    // acquire: as lock().
    if (locked_.exchange(1, std::memory_order_acquire) == 0) return;
  }
}

void TxLock::wake_waiters() noexcept { wake_parked(locked_, parked_); }

DeviceStats Device::stats() const noexcept {
  return DeviceStats{.tx_packets = tx_packets_.get(),
                     .tx_bytes = tx_bytes_.get(),
                     .doorbells = doorbells_.get(),
                     .busy = busy_.get(),
                     .completed = completed_.get(),
                     .stops = stops_.get(),
                     .wakes = wakes_.get(),
                     .tx_errors = tx_errors_.get()};
}

void Device::note_departure(uint32_t stamp) noexcept {
  if (departure_log_ == nullptr) return;
  // Unsigned 32-bit difference: exact for delays below 2^32 ns (4.3 s), across a wrap of the
  // low bits.
  departure_log_->record(static_cast<uint32_t>(static_cast<uint32_t>(now_ns()) - stamp));
}

void Device::attach_queue(std::function<void()> wake_handler, std::function<void()> irq_handler) {
  std::lock_guard tx(tx_lock_);
  if (wake_handler_) throw ConfigError("device " + describe() + " already has a TX queue attached");
  wake_handler_ = std::move(wake_handler);
  irq_handler_ = std::move(irq_handler);
}

void Device::detach_queue() noexcept {
  std::lock_guard tx(tx_lock_);
  wake_handler_ = {};
  irq_handler_ = {};
}

void Device::stop_queue() noexcept {
  // acq_rel: the release half pairs with the acquire load in stopped() (a driver loop that sees
  // the bit sees everything the driver wrote before stopping); the acquire half orders us after
  // the previous writer of state_ (a wake on the completion side).
  const uint32_t prev = state_.fetch_or(kDrvXoff, std::memory_order_acq_rel);
  if (prev == 0) stops_.add(1);
}

void Device::wake_queue() noexcept {
  // acq_rel: the release half pairs with the acquire load in stopped() — a driver loop that sees
  // the queue running also sees the ring space the completion freed before waking it; the
  // acquire half orders us after the stop_queue()/bql_sent() that set the bit.
  const uint32_t prev = state_.fetch_and(~kDrvXoff, std::memory_order_acq_rel);
  // Only the transition to "fully running" is a wake: if BQL still holds the queue, the BQL
  // completion that releases it will notify instead.
  if (prev == kDrvXoff) notify_wake();
}

void Device::bql_sent(uint64_t bytes) noexcept {
  if (!bql_enabled_) return;
  dql_.queued(bytes);
  if (dql_.avail() >= 0) return;
  // acq_rel: the release half pairs with the acquire load in stopped(); the acquire half pairs
  // with the release in bql_completed()/wake_queue() that last cleared a bit.
  const uint32_t prev = state_.fetch_or(kStackXoff, std::memory_order_acq_rel);
  if (prev == 0) stops_.add(1);
  // Linux re-checks dql_avail() here because completions may run concurrently under another
  // lock; in txpath queued() and completed() both run under tx_lock, so the limit cannot have
  // moved between the avail() above and the stop.
}

void Device::bql_completed(uint64_t packets, uint64_t bytes, uint64_t now_ns) noexcept {
  if (!bql_enabled_ || packets == 0 || bytes == 0) return;
  dql_.completed(bytes, now_ns);
  if (dql_.avail() < 0) return;
  // relaxed: a pre-check under tx_lock, which orders us after every writer of state_; the RMW
  // below does the real transition.
  if ((state_.load(std::memory_order_relaxed) & kStackXoff) == 0) return;
  // acq_rel: the release half pairs with the acquire load in stopped() (the driver loop that sees
  // BQL released also sees the credit just given to dql); the acquire half pairs with the
  // fetch_or in bql_sent().
  const uint32_t prev = state_.fetch_and(~kStackXoff, std::memory_order_acq_rel);
  // Wake only if the driver does not hold the queue as well (netif_schedule_queue() checks
  // netif_xmit_stopped()); otherwise its wake_queue() will notify.
  if (prev == kStackXoff) notify_wake();
}

void Device::ring_and_complete(PacketList& batch) noexcept {
  if (batch.empty()) return;
  doorbells_.add(1);
  const uint64_t n = batch.size();
  free_packets(std::move(batch));
  completed_.add(n);
}

void Device::ring_and_complete_one(Packet* p) noexcept {
  doorbells_.add(1);
  p->pool->put(p);
  completed_.add(1);
}

void Device::drop_overlong_slow(Packet* p) noexcept {
  tx_packets_.add(1);  // no bytes: its len is not a length the device could have sent
  tx_errors_.add(1);
  if (p->pool) {  // a packet of no pool has nowhere to go back to: it stays the caller's
    PacketList one;
    one.push_back(p);
    free_packets(std::move(one));
  }
  completed_.add(1);
}

void Device::enable_bql(const Dql::Config& config) {
  // Called from a subclass constructor, before the device is shared with any other thread.
  std::destroy_at(&dql_);
  std::construct_at(&dql_, config);
  bql_enabled_ = true;
}

void Device::notify_wake() noexcept {
  wakes_.add(1);
  // The handler only marks a driver-loop run as due (a flag, perhaps a condition-variable
  // notify); it may be called with tx_lock held and must never enqueue or dequeue.
  if (wake_handler_) wake_handler_();
}

}  // namespace txpath
