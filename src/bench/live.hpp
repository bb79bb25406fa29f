// SPDX-License-Identifier: MIT
// What the bench tells its caller while it runs: the ETA on its progress lines, and the interval
// reports of BenchConfig::on_interval (a slice of a run's measured window at a time).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/bench.hpp"
#include "txpath/txqueue.hpp"

namespace txpath::bench_detail {

// Seconds left when `finished` of `total` runs are done after `elapsed_s` seconds: the mean so
// far times the runs left, or, before any has finished, `planned_per_run_s` each.
double eta_seconds(double elapsed_s, std::size_t finished, std::size_t total, double planned_per_run_s);
// "0:42", "12:05", "1:02:03" (rounded to whole seconds; negative or not finite: "0:00").
std::string eta_text(double seconds);
// A run's planned seconds: its warm-up and its measured window (what measure() sleeps).
double planned_run_seconds(const BenchConfig& cfg);
// Progress lines carry an ETA when the whole bench is planned to take at least this long.
inline constexpr double kEtaFromSeconds = 3.0;
// " ETA 0:42" for a progress line, when `total` runs of `cfg` are planned to take
// kEtaFromSeconds or more; empty otherwise.
std::string eta_note(const BenchConfig& cfg, double elapsed_s, std::size_t finished, std::size_t total);

// Packets a run's queue(s) sent and dropped so far, from the sample measure() takes.
struct IntervalCounts {
  uint64_t sent = 0;
  uint64_t dropped = 0;
};
IntervalCounts interval_counts(uint64_t sent);  // the kernel row samples its senders' sent count
IntervalCounts interval_counts(const std::vector<TxQueueStats>& queues);

// The run being measured, for the interval reports; set by run_bench's round loop around each
// run on its own thread (RowScope), read by IntervalClock on the same thread.
class RowScope {
 public:
  RowScope(const std::string& strategy, int threads, uint32_t queues, bool park, int round);
  ~RowScope();
  RowScope(const RowScope&) = delete;
  RowScope& operator=(const RowScope&) = delete;

 private:
  BenchInterval saved_;
};

// Cuts one measured window into BenchConfig::interval_s slices and reports each to
// BenchConfig::on_interval. `start` is the sample at the window's opening.
class IntervalClock {
 public:
  IntervalClock(const BenchConfig& cfg, IntervalCounts start);
  bool enabled() const noexcept { return enabled_; }
  // When the next slice ends (the window's end at the latest).
  std::chrono::steady_clock::time_point next_end() const noexcept;
  // Reports the slice that ends now, with the counts sampled now.
  void tick(IntervalCounts now);

 private:
  const BenchConfig& cfg_;
  bool enabled_;
  std::chrono::steady_clock::time_point opened_;
  double last_s_ = 0;
  IntervalCounts last_;
  int slices_ = 0;
};

}  // namespace txpath::bench_detail
