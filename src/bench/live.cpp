// SPDX-License-Identifier: MIT
#include "bench/live.hpp"

#include <algorithm>
#include <cmath>

namespace txpath::bench_detail {

namespace {

// The run RowScope names on this thread (run_bench runs its runs on the thread that called it).
thread_local BenchInterval current_row;

}  // namespace

double eta_seconds(double elapsed_s, std::size_t finished, std::size_t total, double planned_per_run_s) {
  if (finished >= total) return 0;
  const auto left = static_cast<double>(total - finished);
  if (finished == 0) return left * planned_per_run_s;
  return elapsed_s / static_cast<double>(finished) * left;
}

std::string eta_text(double seconds) {
  const long long s = std::isfinite(seconds) && seconds > 0 ? std::llround(seconds) : 0;
  const auto two = [](long long v) {  // appended piecewise: GCC 12 warns (-Wrestrict) on "0" + ...
    std::string out(v < 10 ? 1 : 0, '0');
    out += std::to_string(v);
    return out;
  };
  if (s >= 3600) return std::to_string(s / 3600) + ":" + two(s / 60 % 60) + ":" + two(s % 60);
  return std::to_string(s / 60) + ":" + two(s % 60);
}

double planned_run_seconds(const BenchConfig& cfg) {
  return std::min(0.2, cfg.duration_s * 0.1) + cfg.duration_s;  // measure()'s warm-up + window
}

std::string eta_note(const BenchConfig& cfg, double elapsed_s, std::size_t finished, std::size_t total) {
  const double per_run = planned_run_seconds(cfg);
  if (per_run * static_cast<double>(total) < kEtaFromSeconds) return {};
  return " ETA " + eta_text(eta_seconds(elapsed_s, finished, total, per_run));
}

IntervalCounts interval_counts(uint64_t sent) { return {sent, 0}; }

IntervalCounts interval_counts(const std::vector<TxQueueStats>& queues) {
  IntervalCounts c;
  for (const TxQueueStats& q : queues) {
    c.sent += q.sent;
    c.dropped += q.dropped;
  }
  return c;
}

RowScope::RowScope(const std::string& strategy, int threads, uint32_t queues, bool park, int round)
    : saved_(current_row) {
  current_row = BenchInterval{};
  current_row.strategy = strategy;
  current_row.threads = threads;
  current_row.queues = queues;
  current_row.park = park;
  current_row.round = round;
}

RowScope::~RowScope() { current_row = std::move(saved_); }

IntervalClock::IntervalClock(const BenchConfig& cfg, IntervalCounts start)
    : cfg_(cfg),
      enabled_(cfg.interval_s > 0 && std::isfinite(cfg.interval_s) && static_cast<bool>(cfg.on_interval)),
      opened_(std::chrono::steady_clock::now()),
      last_(start) {}

std::chrono::steady_clock::time_point IntervalClock::next_end() const noexcept {
  const double end_s = std::min(cfg_.duration_s, cfg_.interval_s * (slices_ + 1));
  return opened_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                       std::chrono::duration<double>(end_s));
}

void IntervalClock::tick(IntervalCounts now) {
  ++slices_;
  BenchInterval slice = current_row;
  slice.begin_s = last_s_;
  slice.end_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - opened_).count();
  // Counters only grow; a sample that reads lower (none should) reports 0, not a wrapped count.
  slice.sent = now.sent > last_.sent ? now.sent - last_.sent : 0;
  slice.dropped = now.dropped > last_.dropped ? now.dropped - last_.dropped : 0;
  const double secs = slice.end_s - slice.begin_s;
  slice.mpps = secs > 0 ? static_cast<double>(slice.sent) / secs / 1e6 : 0;
  last_s_ = slice.end_s;
  last_ = now;
  cfg_.on_interval(slice);
}

}  // namespace txpath::bench_detail
