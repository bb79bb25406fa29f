// SPDX-License-Identifier: MIT
// Rounds (bench/bench_internal.hpp): the order a round runs its rows in, the progress lines and
// their ETA, and the aggregation of a thread count's runs into points: sums, medians, latency
// percentiles, per-queue counts, ratios to the busylock, floor and kernel rows in each group.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench/bench_internal.hpp"
#include "bench/live.hpp"
#include "bench/stats.hpp"

namespace txpath::bench_detail {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

namespace {

// The counters a point sums over its runs, and the figures it takes the median of.
constexpr std::pair<uint64_t BenchPoint::*, uint64_t Run::*> kSummed[] = {
    {&BenchPoint::submitted, &Run::submitted},       {&BenchPoint::sent, &Run::sent},
    {&BenchPoint::dropped, &Run::dropped},           {&BenchPoint::requeues, &Run::requeues},
    {&BenchPoint::doorbells, &Run::doorbells},       {&BenchPoint::lock_waits, &Run::lock_waits},
    {&BenchPoint::lock_wait_ns, &Run::lock_wait_ns}, {&BenchPoint::sink_received, &Run::sink_received},
    {&BenchPoint::sink_lost, &Run::sink_lost},       {&BenchPoint::sink_duplicated, &Run::sink_duplicated},
    {&BenchPoint::sink_out_of_order, &Run::sink_out_of_order},
    {&BenchPoint::sink_socket_drops, &Run::sink_socket_drops}};
constexpr std::pair<double BenchPoint::*, double Run::*> kMedians[] = {
    {&BenchPoint::mpps, &Run::mpps},           {&BenchPoint::cpu_ns_per_pkt, &Run::cpu_ns_per_pkt},
    {&BenchPoint::fairness, &Run::fairness}};

// The latency histograms of a point's runs, merged, and their percentiles.
void aggregate_latency(BenchPoint& p, const std::vector<Run>& runs) {
  for (const Run& r : runs) {
    p.send_latency.merge(r.send_latency);
    p.queue_delay.merge(r.queue_delay);
  }
  constexpr std::array<double, 4> kQuantiles = {0.50, 0.90, 0.99, 0.999};
  const std::array<double BenchPoint::*, 4> send = {&BenchPoint::send_p50_ns, &BenchPoint::send_p90_ns,
                                                    &BenchPoint::send_p99_ns, &BenchPoint::send_p999_ns};
  const std::array<double BenchPoint::*, 4> queue = {&BenchPoint::queue_p50_ns, &BenchPoint::queue_p90_ns,
                                                     &BenchPoint::queue_p99_ns, &BenchPoint::queue_p999_ns};
  for (std::size_t i = 0; i < kQuantiles.size(); ++i) {
    p.*send[i] = p.send_latency.percentile(kQuantiles[i]);
    p.*queue[i] = p.queue_delay.percentile(kQuantiles[i]);
  }
}

// Each TX queue's counts over a point's runs (every run of a point has the same queues).
std::vector<BenchQueuePoint> aggregate_queues(const std::vector<Run>& runs) {
  std::vector<BenchQueuePoint> out(runs.front().per_queue.size());
  for (std::size_t q = 0; q < out.size(); ++q) {
    BenchQueuePoint& mine = out[q];
    mine.conserved = true;
    uint64_t window_sent = 0, window_doorbells = 0;
    for (const Run& r : runs) {
      const QueueRun& one = r.per_queue[q];
      mine.submitted += one.submitted;
      mine.sent += one.sent;
      mine.dropped += one.dropped;
      mine.doorbells += one.doorbells;
      window_sent += one.window_sent;
      window_doorbells += one.window_doorbells;
      mine.conserved = mine.conserved && one.conserved;
    }
    mine.batch_mean = window_doorbells ? static_cast<double>(window_sent) /
                                             static_cast<double>(window_doorbells)
                                       : 0;
  }
  return out;
}

BenchPoint aggregate(const std::string& strategy, int threads, uint32_t queues, bool park,
                     const std::vector<Run>& runs) {
  BenchPoint p;
  p.strategy = strategy;
  p.threads = threads;
  p.queues = queues;
  p.per_queue = aggregate_queues(runs);
  p.park = park;
  p.lock = runs.front().lock;
  p.tc_stats = runs.back().tc_stats;  // the last round's tree: each round builds a fresh one
  p.runs = static_cast<int>(runs.size());
  p.drained = p.conserved = true;
  uint64_t window_sent = 0, window_doorbells = 0;
  for (const Run& r : runs) {
    p.complete = p.complete && !r.interrupted;
    if (p.output_error.empty()) p.output_error = r.output_error;
    for (const auto& [total, one] : kSummed) p.*total += r.*one;
    window_sent += r.window_sent;
    window_doorbells += r.window_doorbells;
    p.drained = p.drained && r.drained;
    p.conserved = p.conserved && r.conserved;
    p.sink_checked = r.sink_checked;
  }
  for (const auto& [mid, one] : kMedians) {
    std::vector<double> values;
    for (const Run& r : runs) values.push_back(r.*one);
    p.*mid = median(std::move(values));
  }
  aggregate_latency(p, runs);
  const auto by_mpps = [](const Run& a, const Run& b) { return a.mpps < b.mpps; };
  p.mpps_min = std::min_element(runs.begin(), runs.end(), by_mpps)->mpps;
  p.mpps_max = std::max_element(runs.begin(), runs.end(), by_mpps)->mpps;
  // Reordering fails txpath's rows only: the kernel row is the reference being measured, and
  // its senders' frames can cross a veth out of order when the qdisc owner on another CPU
  // transmits them (each CPU's receive backlog is drained on its own). It is reported.
  p.delivered = p.sink_duplicated == 0 && (p.sink_out_of_order == 0 || strategy == kKernelStrategy);
  p.batch_mean = window_doorbells ? static_cast<double>(window_sent) /
                                        static_cast<double>(window_doorbells)
                                  : 0;
  for (const Run& r : runs) {  // every round's figures, in round order
    p.mpps_samples.push_back(r.mpps);
    p.cpu_samples.push_back(r.cpu_ns_per_pkt);
    p.noise_samples.push_back(r.noise);
  }
  bench_stats::fill_row_statistics(p);
  return p;
}

// True unless the bench runs the seed experiment's one TX queue only.
bool several_queue_counts(const BenchConfig& cfg) {
  return cfg.queues.size() != 1 || cfg.queues.front() != 1;
}

}  // namespace

std::string progress_line(const BenchConfig& cfg, std::size_t done, std::size_t total,
                          const std::string& strategy, int threads, uint32_t queues, bool park,
                          int round) {
  std::string line(1, '[');  // appended piecewise: GCC 12 warns (-Wrestrict) on "[" + ...
  line += std::to_string(done);
  line += '/';
  line += std::to_string(total);
  line += "] ";
  line += strategy;
  line += " threads=";
  line += std::to_string(threads);
  if (several_queue_counts(cfg)) {
    line += " queues=";
    line += std::to_string(queues);
  }
  line += " park=";
  line += park_name(park);
  if (cfg.repeat > 1) {
    line += " round ";
    line += std::to_string(round + 1);
  }
  return line;
}

namespace {

// A row's CPU per packet over the floor row's: the median over the rounds both ran (round i is
// each one's i-th run) and both sent in their measured windows (a window without packets has no
// CPU per packet) of the ratio within the round; 0 when there is none to take.
double floor_ratio(const std::vector<Run>& mine, const std::vector<Run>& floor) {
  std::vector<double> ratios;
  for (std::size_t i = 0; i < std::min(mine.size(), floor.size()); ++i)
    if (floor[i].cpu_ns_per_pkt > 0 && mine[i].cpu_ns_per_pkt > 0)
      ratios.push_back(mine[i].cpu_ns_per_pkt / floor[i].cpu_ns_per_pkt);
  return median(std::move(ratios));
}

// Where a point keeps its ratios to one reference row: Mpps and CPU per packet over the
// reference's, and their round-by-round 95% intervals (null: not kept).
struct RatioFields {
  double BenchPoint::*mpps;
  double BenchPoint::*cpu;
  Interval95 BenchPoint::*mpps_ci95 = nullptr;
  Interval95 BenchPoint::*cpu_ci95 = nullptr;
};
constexpr RatioFields kVsBusylock{&BenchPoint::vs_busylock_mpps, &BenchPoint::vs_busylock_cpu,
                                  &BenchPoint::vs_busylock_mpps_ci95, &BenchPoint::vs_busylock_cpu_ci95};
constexpr RatioFields kVsKernel{&BenchPoint::vs_kernel_mpps, &BenchPoint::vs_kernel_cpu,
                                &BenchPoint::vs_kernel_mpps_ci95, &BenchPoint::vs_kernel_cpu_ci95};
constexpr RatioFields kVsDpdk{&BenchPoint::vs_dpdk_mpps, &BenchPoint::vs_dpdk_cpu};

// Every point of `group`'s ratios to its `reference` row, when the group has one.
void set_ratios(std::span<BenchPoint> group, std::string_view reference, const RatioFields& f) {
  const auto ref = std::find_if(group.begin(), group.end(), [&](const BenchPoint& p) { return p.strategy == reference; });
  if (ref == group.end()) return;
  const BenchPoint& base = *ref;  // the loop writes ratio fields only, never what it reads here
  for (BenchPoint& p : group) {
    p.*f.mpps = base.mpps > 0 ? p.mpps / base.mpps : 0;
    p.*f.cpu = base.cpu_ns_per_pkt > 0 ? p.cpu_ns_per_pkt / base.cpu_ns_per_pkt : 0;
    if (f.mpps_ci95) p.*f.mpps_ci95 = bench_stats::paired_ratio_ci95(p.mpps_samples, base.mpps_samples);
    if (f.cpu_ci95) p.*f.cpu_ci95 = bench_stats::paired_ratio_ci95(p.cpu_samples, base.cpu_samples);
  }
}

// The points of one (threads, queues, park) group, config order of strategies, and their ratios
// to busylock, to the floor row, to peer:dpdk and to the kernel row in the group.
void append_group(const BenchConfig& cfg, int threads, uint32_t queues, bool park,
                  RunsByPoint& runs, std::vector<BenchPoint>& points) {
  const std::size_t first = points.size();
  for (const auto& strategy : cfg.strategies) {
    const std::vector<Run>& mine = runs[{queues, park, strategy}];
    if (mine.empty()) continue;
    points.push_back(aggregate(strategy, threads, queues, park, mine));
    if (points.back().runs < cfg.repeat) points.back().complete = false;
    points.back().offered_mpps = offered_mpps(cfg, threads);
    points.back().flows = cfg.flows;
  }
  const std::span<BenchPoint> group(points.begin() + static_cast<std::ptrdiff_t>(first), points.end());
  set_ratios(group, "busylock", kVsBusylock);
  // Against the floor row, round by round, when it ran.
  const std::vector<Run>& floor = runs[{queues, park, std::string(kFloorStrategy)}];
  const auto floor_row = std::find_if(
      group.begin(), group.end(), [](const BenchPoint& p) { return p.strategy == kFloorStrategy; });
  for (BenchPoint& p : group) {
    p.vs_floor_cpu = floor_ratio(runs[{queues, park, p.strategy}], floor);
    if (floor_row != group.end())
      p.vs_floor_cpu_ci95 = bench_stats::paired_ratio_ci95(p.cpu_samples, floor_row->cpu_samples);
  }
  set_ratios(group, kDpdkPeer, kVsDpdk);
  set_ratios(group, kKernelStrategy, kVsKernel);
}

}  // namespace

void append_points(const BenchConfig& cfg, int threads, RunsByPoint& runs,
                   std::vector<BenchPoint>& points) {
  for (const uint32_t queues : cfg.queues) {
    for (const bool park : cfg.park) append_group(cfg, threads, queues, park, runs, points);
  }
}

std::string eta_note(const BenchConfig& cfg, const RoundProgress& counter) {
  const std::size_t finished = counter.done - 1;
  const std::size_t here = finished - counter.done_elsewhere;
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - counter.start;
  // As if the runs finished elsewhere had taken this process's mean (or the plan, before one).
  const double per_run = here > 0 ? elapsed.count() / static_cast<double>(here)
                                  : bench_detail::planned_run_seconds(cfg);
  return bench_detail::eta_note(cfg, per_run * static_cast<double>(finished), finished, counter.total);
}

void tell_live_note(const Run& run, const std::function<void(const std::string&)>& progress,
                    RoundProgress& counter) {
  if (progress && counter.live_notes && !run.live_note.empty() && run.live_note != counter.last_live_note)
    progress("no live counters for txpath tc -s: " + run.live_note);
  counter.last_live_note = run.live_note;
}

std::vector<RowKey> round_order(const BenchConfig& cfg, int threads, int round) {
  std::vector<RowKey> rows;
  for (const uint32_t queues : cfg.queues)
    for (const bool park : cfg.park)
      for (const auto& strategy : cfg.strategies) rows.emplace_back(queues, park, strategy);
  std::mt19937_64 rng(cfg.seed ^ (static_cast<uint64_t>(threads) * 0x9e3779b97f4a7c15ULL) ^
                      (static_cast<uint64_t>(round) * 0xc2b2ae3d27d4eb4fULL));
  for (std::size_t i = rows.size(); i > 1; --i) std::swap(rows[i - 1], rows[rng() % i]);
  return rows;
}

}  // namespace txpath::bench_detail
