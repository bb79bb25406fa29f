// SPDX-License-Identifier: MIT
// PolledDevice: a Device whose completion side publishes two lock-free hints for the service
// thread and drain(): next_poll_ns() (when poll() next has work; 0: nothing outstanding) and
// in_flight() (accepted, not yet completed). The device computes them under tx_lock whenever its
// ring changes and stores them with store_hints(); readers load them without the lock, and a
// stale value only delays a poll.
//
// Also the poll schedule of the devices that hand frames to the kernel through a ring and a kick
// (afpacket, afxdp): kernel_ring_poll_at().
#pragma once

#include <atomic>
#include <cstdint>

#include "txpath/device.hpp"

namespace txpath {

class PolledDevice : public Device {
 public:
  using Device::Device;

  uint64_t next_poll_ns() const noexcept final {
    return next_poll_.load(std::memory_order_relaxed);  // relaxed: a hint (see store_hints)
  }
  uint64_t in_flight() const noexcept final {
    return in_flight_.load(std::memory_order_relaxed);  // relaxed: a hint (see store_hints)
  }

 protected:
  // Called with tx_lock held. A poll time where there was none raises the completion interrupt
  // (Device::raise_completion_irq): a poller asleep until kicked would otherwise miss it.
  void store_hints(uint64_t in_flight, uint64_t next_poll_ns) noexcept {
    // relaxed (both loads and stores): hints for lock-free readers of next_poll_ns()/in_flight();
    // they pair with nothing — a reader that needs exact values takes tx_lock or waits for a
    // quiescent point. The one reader that must not miss a new poll time, a sleeping service
    // thread, is woken by the irq handler (Scheduler::raise_irq: its fence orders this store).
    const bool armed = next_poll_ns != 0 && next_poll_.load(std::memory_order_relaxed) == 0;
    in_flight_.store(in_flight, std::memory_order_relaxed);
    next_poll_.store(next_poll_ns, std::memory_order_relaxed);
    if (armed) raise_completion_irq();
  }

 private:
  std::atomic<uint64_t> next_poll_{0};
  std::atomic<uint64_t> in_flight_{0};
};

// When a kernel-ring device next polls: never (0) with nothing outstanding and no kick owed;
// else its completion "interrupt" kPollIdleNs after its last activity, or kPollStoppedNs while
// its queue is stopped or a kick failed.
inline uint64_t kernel_ring_poll_at(uint64_t outstanding, bool kick_needed, bool drv_stopped,
                                    uint64_t last_activity_ns) noexcept {
  constexpr uint64_t kPollIdleNs = 50'000;
  constexpr uint64_t kPollStoppedNs = 10'000;
  if (outstanding == 0 && !kick_needed) return 0;
  return last_activity_ns + (drv_stopped || kick_needed ? kPollStoppedNs : kPollIdleNs);
}

}  // namespace txpath
