// SPDX-License-Identifier: MIT
// Byte queue limits: Linux's dynamic queue limits (lib/dynamic_queue_limits.c), written from its
// documented semantics. The enqueue side (queued/avail) and the completion side (completed) are
// called under the device tx lock in txpath, so no internal synchronisation is needed; avail()
// is also read by the driver loop under the same lock or as a racy budget hint (atomic fields).
//
// Algorithm (per completion interval):
//  * starved  = (the queue went over its limit and nothing is in flight any more) or
//               (it was over the limit last interval and everything queued then has completed)
//    -> limit += bytes completed beyond what was queued at the last interval + last overlimit.
//  * otherwise, if the queue was busy for the whole interval, measure slack =
//    max(limit + prev_ovlimit - 2 * completed_this_interval, prev_last_obj - prev_ovlimit) and
//    remember the lowest slack; after `slack_hold_time_ns` lower the limit by it.
//  * limit is clamped to [min_limit, max_limit]; adj_limit = limit + num_completed.
#pragma once

#include <atomic>
#include <cstdint>

namespace txpath {

class Dql {
 public:
  struct Config {
    uint64_t min_limit = 0;
    uint64_t max_limit = 1879048192;   // DQL_MAX_LIMIT ((DQL_MAX_OBJECT / 2) = 1879048192)
    uint64_t slack_hold_time_ns = 1'000'000'000;  // HZ
  };

  Dql() : Dql(Config{}) {}
  explicit Dql(const Config& config);

  // dql_queued(): `bytes` were handed to the hardware.
  void queued(uint64_t bytes) noexcept;
  // dql_avail(): bytes that may still be queued; negative means over the limit.
  int64_t avail() const noexcept;
  // dql_completed(): `bytes` finished transmission. `now_ns` drives slack_hold_time.
  void completed(uint64_t bytes, uint64_t now_ns) noexcept;
  void reset() noexcept;

  uint64_t limit() const noexcept { return limit_.load(std::memory_order_relaxed); }
  uint64_t inflight() const noexcept;

 private:
  Config cfg_;
  // Writers hold the device tx lock; avail()/limit() may be read without it (relaxed loads of
  // values that are only ever a budget hint there).
  std::atomic<uint64_t> num_queued_{0};
  std::atomic<uint64_t> adj_limit_{0};
  std::atomic<uint64_t> limit_{0};
  uint64_t last_obj_cnt_ = 0;
  uint64_t num_completed_ = 0;
  uint64_t prev_ovlimit_ = 0;
  uint64_t prev_num_queued_ = 0;
  uint64_t prev_last_obj_cnt_ = 0;
  uint64_t lowest_slack_ = UINT64_MAX;
  uint64_t slack_start_time_ = 0;
};

}  // namespace txpath
