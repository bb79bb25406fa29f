// SPDX-License-Identifier: MIT
// The limit row's measurement (bench/handoff.hpp): it counts real hand-offs between two threads,
// its ns are the elapsed time over them, and it returns on time whatever the scheduler does.
// No figure is checked against a speed: performance lives in `txpath bench`.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "base/topology.hpp"
#include "bench/bench.hpp"
#include "bench/handoff.hpp"
#include "support/bench_config.hpp"

namespace txpath::bench_detail {
namespace {

using namespace std::chrono_literals;

TEST(Handoff, CountsHandOffsBetweenTwoPinnedThreads) {
  const Topology& topo = topology();
  if (topo.pus < 2 || topo.cores_by_node.empty()) GTEST_SKIP() << "needs two CPUs";
  std::vector<int> cpus;
  for (const auto& node : topo.cores_by_node) cpus.insert(cpus.end(), node.begin(), node.end());
  const int a = cpus.at(0), b = cpus.size() > 1 ? cpus[1] : cpus[0];
  const HandoffCost c = measure_handoff(a, b, 20ms);
  EXPECT_EQ(c.cpu_a, a);
  EXPECT_EQ(c.cpu_b, b);
  ASSERT_GT(c.line_handoffs, 0u);
  ASSERT_GT(c.lock_handoffs, 0u);
  EXPECT_GE(c.lock_acquisitions, c.lock_handoffs);
  // ns per hand-off times the hand-offs is the measured time: at least the 20 ms it ran.
  EXPECT_GE(c.line_ns * static_cast<double>(c.line_handoffs), 20e6);
  EXPECT_GE(c.lock_ns * static_cast<double>(c.lock_handoffs), 20e6);
}

// Unpinned, and with more such pairs than CPUs at once: each returns (both of its threads see
// the stop however they were scheduled), in about its duration.
TEST(Handoff, ReturnsOnTimeUnpinnedAndOversubscribed) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pairs;
  for (int i = 0; i < 3; ++i)
    pairs.emplace_back([] {
      const HandoffCost c = measure_handoff(-1, -1, 5ms);
      EXPECT_GE(c.lock_acquisitions, c.lock_handoffs);
      if (c.line_handoffs == 0) {
        EXPECT_EQ(c.line_ns, 0);
      }
    });
  for (std::thread& t : pairs) t.join();
  // The contract "returns at all", not a speed: 10 ms of measuring against a minute.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 60s);
}

// In a bench: every point at 2 pinned threads carries the limit and its vs_limit (CPU per
// packet over the line's hand-off); at 1 thread there is nothing to hand off, and none.
TEST(Handoff, EveryPointAtTwoThreadsCarriesTheLimit) {
  const Topology& topo = topology();
  if (topo.pus < 2) GTEST_SKIP() << "needs two CPUs";
  BenchConfig c = test::null_bench({"floor", "busylock", "limit"}, {1, 2}, 0.02, 2);
  c.pin = true;  // the limit is measured between the first two senders' CPUs only when pinned
  std::vector<BenchPoint> points = run_bench(c, nullptr);
  ASSERT_EQ(points.size(), 5u);  // floor, busylock at 1 and 2 threads, then the limit row at 2
  ASSERT_EQ(points.back().strategy, kLimitStrategy);
  // Not named: the same figures on the points, no row.
  c.strategies = {"floor", "busylock"};
  c.threads = {2};
  const std::vector<BenchPoint> unnamed = run_bench(c, nullptr);
  ASSERT_EQ(unnamed.size(), 2u);
  EXPECT_GT(unnamed[1].vs_limit, 0);
  for (const BenchPoint& p : points) {
    SCOPED_TRACE(p.strategy + " at " + std::to_string(p.threads));
    if (p.threads == 1) {
      EXPECT_EQ(p.limit_line_ns, 0);
      EXPECT_EQ(p.vs_limit, 0);
      continue;
    }
    ASSERT_GT(p.limit_line_ns, 0);
    EXPECT_GT(p.limit_lock_ns, 0);
    EXPECT_EQ(p.limit_line_ns, points.back().limit_line_ns);  // one figure per thread count
    ASSERT_GT(p.cpu_ns_per_pkt, 0);
    EXPECT_DOUBLE_EQ(p.vs_limit, p.cpu_ns_per_pkt / p.limit_line_ns);
  }
}

// The limit row: the measurement's medians as a row after its thread count's points, its CPU per
// packet the line's hand-off and its Mpps the hand-offs per microsecond, nothing submitted.
TEST(Handoff, TheLimitRowIsTheMeasurementAsARow) {
  const Topology& topo = topology();
  if (topo.pus < 2) GTEST_SKIP() << "needs two CPUs";
  BenchConfig c = test::null_bench({"limit"}, {2, 3}, 0.02, 3);
  c.pin = true;
  const std::vector<BenchPoint> points = run_bench(c, nullptr);  // named alone: only it runs
  ASSERT_EQ(points.size(), 2u);
  for (const BenchPoint& p : points) {
    EXPECT_EQ(p.strategy, kLimitStrategy);
    EXPECT_EQ(p.lock, "tas");
    ASSERT_GT(p.limit_line_ns, 0);
    EXPECT_EQ(p.cpu_ns_per_pkt, p.limit_line_ns);
    EXPECT_DOUBLE_EQ(p.mpps, 1e3 / p.limit_line_ns);
    EXPECT_LE(p.mpps_min, p.mpps);
    EXPECT_GE(p.mpps_max, p.mpps);
    EXPECT_EQ(p.vs_limit, 1);
    EXPECT_EQ(p.runs, 3);
    EXPECT_EQ(p.mpps_samples.size(), 3u);
    EXPECT_EQ(p.submitted, 0u);
    EXPECT_TRUE(p.conserved);
  }
  EXPECT_EQ(points[0].threads, 2);
  EXPECT_EQ(points[1].threads, 3);
}

// Named where it cannot be measured: one line before anything runs.
TEST(Handoff, TheLimitRowNamedWhereItCannotBeMeasuredIsRefused) {
  BenchConfig one = test::null_bench({"busylock", "limit"}, {1}, 0.02, 1);
  one.pin = true;
  test::expect_error(one, "strategy limit needs 2 or more senders pinned on two CPUs");
  test::expect_error(test::null_bench({"limit"}, {2}, 0.02, 1), "strategy limit needs");  // unpinned
}

}  // namespace
}  // namespace txpath::bench_detail
