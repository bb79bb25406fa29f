// SPDX-License-Identifier: MIT
// A sender's pacer (--rate, --rate-per-sender, --replay-speed): the slots at which its packets
// are due, and how many are due now. Pure arithmetic on times the caller passes in (a test
// drives it with a fake clock); pace_wait() below is the one place that reads the real clock.
//
// Slots. Slot k is due at start + (k / m) * period + offsets[k % m] (offsets nondecreasing and
// below period). A rate is one offset {0} and period 1/rate; a capture's replay is the sender's
// frames' capture times (scaled by the replay speed), repeated every capture length.
//
// Catching up. A sender that falls behind (it was descheduled, or the path is slower than the
// rate) finds at most `max_burst` slots due at once: the older ones are skipped (counted in
// skipped()), so the offered load is never above the rate by more than one such burst, and a
// saturated path is offered what it can take, not an ever-growing backlog.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "base/clock.hpp"
#include "base/cpu_relax.hpp"

namespace txpath::bench_detail {

class Pacer {
 public:
  Pacer() = default;  // unpaced: every slot is due
  // Slots every 1e9 / per_second ns (per_second > 0).
  static Pacer at_rate(double per_second, uint64_t max_burst) {
    return Pacer(1e9 / per_second, {0.0}, max_burst);
  }
  // Slots at `offsets` (ns, nondecreasing, each below period_ns), repeated every period_ns.
  Pacer(double period_ns, std::vector<double> offsets, uint64_t max_burst)
      : period_(period_ns), offsets_(std::move(offsets)), max_burst_(std::max<uint64_t>(1, max_burst)) {}

  bool paced() const noexcept { return !offsets_.empty(); }
  void start(uint64_t now_ns) noexcept { start_ = now_ns; }

  // The slots due at now_ns, at most max_burst (older ones are skipped); unpaced: max_burst.
  uint64_t due(uint64_t now_ns) noexcept {
    if (!paced()) return max_burst_;
    const uint64_t late = first_after(now_ns);  // slots [next_, late) are due
    if (late > next_ + max_burst_) {
      skipped_ += late - max_burst_ - next_;
      next_ = late - max_burst_;
    }
    return late - next_;
  }
  // Nanoseconds until the next slot is due (0: due now).
  uint64_t ns_until_next(uint64_t now_ns) const noexcept {
    if (!paced()) return 0;
    const double at = static_cast<double>(start_) + slot_offset(next_);
    const double now = static_cast<double>(now_ns);
    return at > now ? static_cast<uint64_t>(std::ceil(at - now)) : 0;
  }
  void take(uint64_t n) noexcept { next_ += n; }  // n slots used (n <= due())
  uint64_t taken() const noexcept { return next_; }  // slots used or skipped so far
  uint64_t skipped() const noexcept { return skipped_; }

 private:
  // Slot k's time after start.
  double slot_offset(uint64_t k) const noexcept {
    const uint64_t m = offsets_.size();
    return static_cast<double>(k / m) * period_ + offsets_[k % m];
  }
  // The first slot due after now_ns (every slot below it is due).
  uint64_t first_after(uint64_t now_ns) const noexcept {
    if (now_ns < start_) return 0;
    const double t = static_cast<double>(now_ns - start_);
    const uint64_t m = offsets_.size();
    const auto periods = static_cast<uint64_t>(std::floor(t / period_));
    const double within = t - static_cast<double>(periods) * period_;
    const auto in = static_cast<uint64_t>(std::upper_bound(offsets_.begin(), offsets_.end(), within) - offsets_.begin());
    return periods * m + in;
  }

  double period_ = 0;
  std::vector<double> offsets_;  // empty: unpaced
  uint64_t max_burst_ = 1;
  uint64_t start_ = 0;
  uint64_t next_ = 0;     // the next slot to use
  uint64_t skipped_ = 0;
};

// Waits until `pacer` has a slot due or `running()` turns false; returns the slots due (0 when
// it stopped first). While the next slot is more than kSleepAbove (100 us) away it sleeps until
// ~50 us before it (a sleep overshoots by the timer slack, 50 us by default); closer, it yields
// until the slot is due (on an idle CPU a yield returns at once: a spin). So pacing uses a CPU
// only in the last ~100 us before each slot; slots closer together than that are met spinning.
// A sleep lasts at most 5 ms, so a stop is seen that soon whatever the rate.
template <class Running>
uint64_t pace_wait(Pacer& pacer, Running&& running) {
  constexpr uint64_t kSleepAbove = 100'000;     // ns
  constexpr uint64_t kLongestSleep = 5'000'000;  // ns: how soon a stop is seen at a low rate
  for (;;) {
    const uint64_t now = now_ns();
    if (const uint64_t n = pacer.due(now); n > 0) return n;
    if (!running()) return 0;
    const uint64_t wait = pacer.ns_until_next(now);
    if (wait > kSleepAbove)
      std::this_thread::sleep_for(std::chrono::nanoseconds(std::min(wait - kSleepAbove / 2, kLongestSleep)));
    else
      std::this_thread::yield();
  }
}

}  // namespace txpath::bench_detail
