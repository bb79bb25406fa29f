// SPDX-License-Identifier: MIT
// The limit at a thread count: measure_handoff() between the first two senders' CPUs once a
// round, its medians on every point of that thread count (bench_internal.hpp).
#include "bench/bench_internal.hpp"
#include "bench/handoff.hpp"
#include "bench/measure.hpp"

namespace txpath::bench_detail {

void sample_limit(const BenchConfig& cfg, int threads, LimitSamples& samples) {
  if (threads < 2 || !cfg.pin) return;
  const int a = cpu_for_sender(0, cfg.nodes), b = cpu_for_sender(1, cfg.nodes);
  if (a < 0 || b < 0 || a == b) return;
  const HandoffCost cost = measure_handoff(a, b, kLimitSample);
  if (cost.lock_handoffs > 0) samples.lock_ns.push_back(cost.lock_ns);
  if (cost.line_handoffs > 0) samples.line_ns.push_back(cost.line_ns);
}

void apply_limit(const LimitSamples& samples, std::span<BenchPoint> points) {
  const double lock_ns = median(samples.lock_ns), line_ns = median(samples.line_ns);
  for (BenchPoint& p : points) {
    p.limit_lock_ns = lock_ns;
    p.limit_line_ns = line_ns;
    p.vs_limit = line_ns > 0 && p.cpu_ns_per_pkt > 0 ? p.cpu_ns_per_pkt / line_ns : 0;
  }
}

}  // namespace txpath::bench_detail
