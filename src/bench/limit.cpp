// SPDX-License-Identifier: MIT
// The limit at a thread count: measure_handoff() between the first two senders' CPUs once a
// round, its medians on every point of that thread count and as the `limit` row
// (bench_internal.hpp).
#include <algorithm>

#include "bench/bench_internal.hpp"
#include "bench/handoff.hpp"
#include "bench/measure.hpp"
#include "bench/stats.hpp"

namespace txpath::bench_detail {

void sample_limit(const BenchConfig& cfg, int threads, LimitSamples& samples) {
  if (!limit_measured_at(cfg, threads)) return;
  const HandoffCost cost = measure_handoff(cpu_for_sender(0, cfg.nodes), cpu_for_sender(1, cfg.nodes), kLimitSample);
  if (cost.lock_handoffs > 0) samples.lock_ns.push_back(cost.lock_ns);
  if (cost.line_handoffs > 0) samples.line_ns.push_back(cost.line_ns);
}

namespace {

// The `limit` row of one thread count: hand-offs as packets (kLimitStrategy, bench.hpp).
BenchPoint limit_row(const LimitSamples& samples, int threads, double lock_ns, double line_ns) {
  BenchPoint row;
  row.strategy = kLimitStrategy;
  row.lock = "tas";
  row.threads = threads;
  row.cpu_ns_per_pkt = line_ns;
  row.mpps = 1e3 / line_ns;  // hand-offs per microsecond
  for (const double ns : samples.line_ns) {
    row.cpu_samples.push_back(ns);
    row.mpps_samples.push_back(1e3 / ns);
  }
  const auto [lo, hi] = std::minmax_element(row.mpps_samples.begin(), row.mpps_samples.end());
  row.mpps_min = *lo;
  row.mpps_max = *hi;
  row.limit_lock_ns = lock_ns;
  row.limit_line_ns = line_ns;
  row.vs_limit = 1;
  row.runs = static_cast<int>(samples.line_ns.size());
  row.drained = row.conserved = true;  // nothing was submitted: nothing to lose
  bench_stats::fill_row_statistics(row);
  return row;
}

}  // namespace

void apply_limit(const BenchConfig& cfg, const LimitSamples& samples, int threads,
                 std::vector<BenchPoint>& points, std::size_t from) {
  const double lock_ns = median(samples.lock_ns), line_ns = median(samples.line_ns);
  for (std::size_t i = from; i < points.size(); ++i) {
    BenchPoint& p = points[i];
    p.limit_lock_ns = lock_ns;
    p.limit_line_ns = line_ns;
    p.vs_limit = line_ns > 0 && p.cpu_ns_per_pkt > 0 ? p.cpu_ns_per_pkt / line_ns : 0;
  }
  if (cfg.limit_row && line_ns > 0) points.push_back(limit_row(samples, threads, lock_ns, line_ns));
}

}  // namespace txpath::bench_detail

namespace txpath {

bool limit_measured_at(const BenchConfig& cfg, int threads) {
  if (threads < 2 || !cfg.pin) return false;
  const int a = bench_detail::cpu_for_sender(0, cfg.nodes), b = bench_detail::cpu_for_sender(1, cfg.nodes);
  return a >= 0 && b >= 0 && a != b;
}

bool limit_measured(const BenchConfig& cfg) {
  return std::any_of(cfg.threads.begin(), cfg.threads.end(), [&](int t) { return limit_measured_at(cfg, t); });
}

}  // namespace txpath
