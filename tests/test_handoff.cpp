// SPDX-License-Identifier: MIT
// The limit row's measurement (bench/handoff.hpp): it counts real hand-offs between two threads,
// its ns are the elapsed time over them, and it returns on time whatever the scheduler does.
// No figure is checked against a speed: performance lives in `txpath bench`.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "base/topology.hpp"
#include "bench/handoff.hpp"

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

}  // namespace
}  // namespace txpath::bench_detail
