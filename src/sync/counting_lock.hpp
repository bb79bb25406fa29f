// SPDX-License-Identifier: MIT
// A lock adapter that counts contended acquisitions and the time spent waiting in them, for
// `txpath bench`'s lock_waits / lock_wait_ns columns.
//
// Uncontended path: one try_lock() (for every kind here the same single CAS as its lock() fast
// path). Only when it fails is the clock read, twice. The counters are written while the lock is
// held, so the lock itself serialises their writers: they are SingleWriterCounters (relaxed
// load + store), adding no atomic read-modify-write to any path. It also says whether the lock
// has been calm (calm(): its last acquisitions never waited), which the driver loop's bypass asks.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/clock.hpp"
#include "txpath/counter.hpp"

namespace txpath {

template <class Lock>
class CountingLock {
 public:
  static constexpr std::string_view kName = Lock::kName;

  void lock() noexcept {
    if (lock_.try_lock()) {
      if (free_in_a_row_ < kCalmAfter) ++free_in_a_row_;  // under the lock, as the counters
      return;
    }
    const uint64_t t0 = now_ns();
    lock_.lock();
    free_in_a_row_ = 0;
    waits_.add(1);  // under the lock: see the header comment
    wait_ns_.add(now_ns() - t0);
  }
  // A success found the lock free: it counts towards calm() as a free lock() does.
  bool try_lock() noexcept {
    if (!lock_.try_lock()) return false;
    if (free_in_a_row_ < kCalmAfter) ++free_in_a_row_;  // under the lock, as in lock()
    return true;
  }
  void unlock() noexcept { lock_.unlock(); }

  // Whether the last kCalmAfter lock() calls found the lock free (none waited): the driver loop
  // then keeps it across a bypass's device call (DriverLoop::bypass_xmit). Lock held.
  bool calm() const noexcept { return free_in_a_row_ >= kCalmAfter; }

  uint64_t waits() const noexcept { return waits_.get(); }
  uint64_t wait_ns() const noexcept { return wait_ns_.get(); }

 private:
  static constexpr uint32_t kCalmAfter = 64;

  Lock lock_;
  SingleWriterCounter waits_, wait_ns_;
  // lock() calls in a row that found the lock free, up to kCalmAfter. A plain field: read and
  // written only by the lock's holder (the lock orders them, as it orders the counters).
  uint32_t free_in_a_row_ = 0;
};

}  // namespace txpath
