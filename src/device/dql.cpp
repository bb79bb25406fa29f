// SPDX-License-Identifier: MIT
// Dynamic queue limits (BQL), written from the semantics documented in dql.hpp and in
// docs/background.md ("Byte queue limits").
//
// Byte counters are 64-bit and never wrap in practice (2^64 bytes is ~470 years at 10 Tbit/s),
// so the modular "after"/POSDIFF comparisons the kernel needs for its 32-bit counters become
// plain comparisons here.
//
// Synchronisation: queued() and completed() are called under the device tx lock, which orders
// successive writers; the atomics only exist so that avail()/limit() may be read without that
// lock as a budget hint. All of them are therefore relaxed: the lock provides the ordering
// between writers, and a lock-free reader only needs some recent value.
//
// Deviations from the kernel, on purpose:
//  * The slack hold window starts at the first completion after construction/reset (the kernel
//    starts it at reset time, from jiffies; this class has no clock of its own).
//  * No stall detector (newer kernels' optional dql stall history).
//  * completed() of more bytes than are in flight is clamped instead of a BUG().
#include "txpath/dql.hpp"

#include <algorithm>

namespace txpath {

namespace {
constexpr uint64_t posdiff(uint64_t a, uint64_t b) noexcept { return a > b ? a - b : 0; }
constexpr uint64_t kNoSlack = UINT64_MAX;
}  // namespace

Dql::Dql(const Config& config) : cfg_(config) {
  // Never throws (Device::enable_bql() reconstructs in place): an inverted range is read as
  // "the limit is pinned at min_limit".
  if (cfg_.max_limit < cfg_.min_limit) cfg_.max_limit = cfg_.min_limit;
  reset();
}

void Dql::reset() noexcept {
  // relaxed (all three): reset happens before the device is shared or under tx_lock; see above.
  num_queued_.store(0, std::memory_order_relaxed);
  limit_.store(cfg_.min_limit, std::memory_order_relaxed);
  adj_limit_.store(cfg_.min_limit, std::memory_order_relaxed);
  last_obj_cnt_ = 0;
  num_completed_ = 0;
  prev_ovlimit_ = 0;
  prev_num_queued_ = 0;
  prev_last_obj_cnt_ = 0;
  lowest_slack_ = kNoSlack;
  slack_start_time_ = 0;  // 0 = the hold window starts at the next completion
}

void Dql::queued(uint64_t bytes) noexcept {
  last_obj_cnt_ = bytes;
  // relaxed load + store: the only writer holds tx_lock; a lock-free avail() reader pairs with
  // nothing (it takes the value as a hint).
  num_queued_.store(num_queued_.load(std::memory_order_relaxed) + bytes, std::memory_order_relaxed);
}

int64_t Dql::avail() const noexcept {
  // relaxed (both): under tx_lock exact; without it a hint, possibly mixing two generations.
  const uint64_t adj = adj_limit_.load(std::memory_order_relaxed);
  const uint64_t queued = num_queued_.load(std::memory_order_relaxed);
  return static_cast<int64_t>(adj - queued);
}

uint64_t Dql::inflight() const noexcept {
  // relaxed: num_completed_ is plain, so this is exact only under tx_lock (like the kernel's).
  return num_queued_.load(std::memory_order_relaxed) - num_completed_;
}

void Dql::completed(uint64_t bytes, uint64_t now_ns) noexcept {
  // relaxed (loads of our own fields): we hold tx_lock, the only writer.
  const uint64_t num_queued = num_queued_.load(std::memory_order_relaxed);
  uint64_t limit = limit_.load(std::memory_order_relaxed);

  if (slack_start_time_ == 0) slack_start_time_ = now_ns;

  // Bytes completed in total after this call; cannot exceed what was queued.
  const uint64_t completed = std::min(num_completed_ + bytes, num_queued);

  // Was the queue over its limit just before this completion?
  const uint64_t ovlimit = posdiff(num_queued - num_completed_, limit);
  // Bytes still in flight after this completion.
  const uint64_t inprogress = num_queued - completed;
  // Bytes in flight at the start of the interval that have not yet completed (before this call).
  const uint64_t prev_inprogress = posdiff(prev_num_queued_, num_completed_);
  // Everything queued at the end of the previous interval has now completed.
  const bool all_prev_completed = completed >= prev_num_queued_;

  if ((ovlimit != 0 && inprogress == 0) || (prev_ovlimit_ != 0 && all_prev_completed)) {
    // Starved: the hardware ran out of work because the limit held bytes back. Grow by what
    // completed beyond the previous interval's queue plus the previous overrun.
    limit += posdiff(completed, prev_num_queued_) + prev_ovlimit_;
    slack_start_time_ = now_ns;
    lowest_slack_ = kNoSlack;
  } else if (inprogress != 0 && prev_inprogress != 0 && !all_prev_completed) {
    // Busy for the whole interval: the excess that stayed queued is slack. Twice the bytes
    // completed this interval is what keeps the hardware busy for two intervals.
    uint64_t slack = posdiff(limit + prev_ovlimit_, 2 * (completed - num_completed_));
    const uint64_t slack_last_objs =
        prev_ovlimit_ != 0 ? posdiff(prev_last_obj_cnt_, prev_ovlimit_) : 0;
    slack = std::max(slack, slack_last_objs);
    lowest_slack_ = std::min(lowest_slack_, slack);
    if (now_ns > slack_start_time_ + cfg_.slack_hold_time_ns) {  // time_after()
      limit = posdiff(limit, lowest_slack_);
      slack_start_time_ = now_ns;
      lowest_slack_ = kNoSlack;
    }
  }

  limit = std::clamp(limit, cfg_.min_limit, cfg_.max_limit);
  // relaxed (both stores): writers hold tx_lock; lock-free readers take a hint (see above).
  limit_.store(limit, std::memory_order_relaxed);
  adj_limit_.store(limit + completed, std::memory_order_relaxed);

  prev_last_obj_cnt_ = last_obj_cnt_;
  num_completed_ = completed;
  prev_num_queued_ = num_queued;
  prev_ovlimit_ = ovlimit;
}

}  // namespace txpath
