// SPDX-License-Identifier: MIT
// IrqDeferral: when the service thread's completion "interrupt" may stay masked.
//
// A sender that cleans the ring itself (NicDevice's clean on xmit, or TxQueue::service() while
// it waits for its send budget) does the service thread's polling for it. Every wake-up of the
// service thread then finds its poll done, and costs the sender's core two context switches for
// nothing — on a sender's own core (TxQueueConfig::service_cpus) about a third of its CPU time,
// measured on nic --burst 32. So, as busy polling masks a NIC's interrupt while the application
// polls (Linux napi_defer_hard_irqs, commit 6f8b12d661d0, arms a timer instead of the interrupt;
// SO_PREFER_BUSY_POLL, commit 7fd3253a7de6, keeps it so while the application polls), the service
// thread counts its timed wake-ups that found the device's poll time moved on without it:
//   * each one adds a deferral (up to kMax): the interrupt is masked (raise_irq() no longer
//     kicks the thread) and its timer is delayed by a tick, then 2, then 4 (200 us by default);
//   * a wake-up that reaps completions itself, or that finds the ring untouched since it went
//     to sleep (nobody else is polling, or the device is idle), unmasks it;
//   * a kick (a deferred run, the watchdog) says nothing about who polls: no change.
// Masked, completions are still reaped: by the other poller, or by the delayed timer, at most
// 4 ticks after their poll time. The service thread also leaves it unmasked while the device's
// queue is stopped: only completions restart it, and no sender's xmit polls for them then.
// Used by the service thread only: no synchronisation.
#pragma once

#include <algorithm>
#include <cstdint>

namespace txpath {

class IrqDeferral {
 public:
  static constexpr unsigned kMax = 3;  // the timer at most 4 ticks past the poll time

  // How a sleep of the service thread ended: by its own deadline (not a kick, nor the
  // watchdog's), having seen the device's poll time `poll_seen` before it slept.
  struct Wake {
    bool timed_out = false;
    uint64_t poll_seen = 0;
  };

  // After a sleep that ended as `wake`: `polled` says the thread then reaped completions itself,
  // `poll_now` is the device's poll time it found on waking (before reaping).
  void after(const Wake& wake, bool polled, uint64_t poll_now) noexcept {
    if (!wake.timed_out) return;
    if (polled || poll_now == wake.poll_seen) {
      deferrals_ = 0;
    } else {
      deferrals_ = std::min(deferrals_ + 1, kMax);
    }
  }

  bool masked() const noexcept { return deferrals_ != 0; }
  unsigned deferrals() const noexcept { return deferrals_; }

  // How long past the device's poll time the timer fires: 0 unmasked, else tick << (deferrals
  // - 1) (at most 4 ticks), and never more than `cap_ns`.
  uint64_t delay_ns(uint64_t tick_ns, uint64_t cap_ns) const noexcept {
    if (deferrals_ == 0) return 0;
    return std::min(tick_ns << (deferrals_ - 1), cap_ns);
  }

 private:
  unsigned deferrals_ = 0;
};

}  // namespace txpath
