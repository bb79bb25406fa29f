// SPDX-License-Identifier: MIT
// The bench engine: its conservation check, its defaults, its up-front validation, and real
// (tiny) runs whose every point must conserve packets, with one and with both park policies.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include "txpath/bench.hpp"
#include "txpath/error.hpp"
#include "txpath/spin.hpp"
#include "txpath/topology.hpp"
#include "txpath/txqueue.hpp"

namespace txpath {
namespace {

// An unpinned bench of these strategies and thread counts on the null device.
BenchConfig null_bench(std::vector<std::string> strategies, std::vector<int> threads,
                       double duration_s, int repeat) {
  BenchConfig c;
  c.strategies = std::move(strategies);
  c.threads = std::move(threads);
  c.duration_s = duration_s;
  c.device = "null";
  c.pin = false;
  c.repeat = repeat;
  return c;
}

TEST(Bench, ConservationCheckDetectsViolations) {
  EXPECT_TRUE(conservation_holds(100, 90, 10, 0));
  EXPECT_TRUE(conservation_holds(0, 0, 0, 0));
  EXPECT_FALSE(conservation_holds(100, 90, 9, 0)) << "a lost packet";
  EXPECT_FALSE(conservation_holds(100, 91, 10, 0)) << "a packet counted twice";
  EXPECT_FALSE(conservation_holds(100, 90, 9, 1)) << "a packet still queued after drain";
}

TEST(Bench, DefaultThreadCountsScaleWithTheMachine) {
  const int cores = topology().cores;
  const auto counts = default_thread_counts();
  ASSERT_FALSE(counts.empty());
  EXPECT_EQ(counts.front(), 1);
  EXPECT_EQ(counts.back(), 8 * cores);
  EXPECT_TRUE(std::is_sorted(counts.begin(), counts.end()));
  EXPECT_NE(std::find(counts.begin(), counts.end(), cores), counts.end());
}

TEST(Bench, TopologyIsSane) {
  const Topology& t = topology();
  EXPECT_GE(t.cores, 1);
  EXPECT_GE(t.pus, t.cores);
  EXPECT_GE(t.numa_nodes, 1);
  EXPECT_EQ(static_cast<int>(t.cores_by_node.size()), t.numa_nodes);
  EXPECT_FALSE(t.cpu_model.empty());
}

// Every strategy by default means every strategy that can run the qdisc: nolock (fifos only) is
// left out under htb; named explicitly it is an error, and a bad qdisc still fails.
TEST(Bench, DefaultStrategiesAreThoseThatRunTheQdisc) {
  BenchConfig c;
  c.qdisc = "htb default 1";
  const BenchConfig r = resolve_bench_config(c);
  auto want = strategy_names();
  std::erase(want, std::string("nolock"));
  EXPECT_EQ(r.strategies, want);
  c.strategies = {"busylock", "nolock"};
  EXPECT_THROW(resolve_bench_config(c), ConfigError);
  BenchConfig bad;
  bad.qdisc = "htb nosuchoption";
  EXPECT_THROW(resolve_bench_config(bad), ConfigError);
}

TEST(Bench, ResolveFillsDefaultsAndRejectsBadConfigs) {
  const BenchConfig resolved = resolve_bench_config({});
  EXPECT_EQ(resolved.strategies, strategy_names());
  EXPECT_EQ(resolved.threads, default_thread_counts());
  EXPECT_EQ(resolved.park, std::vector<bool>{true});
  {
    BenchConfig no_park;
    no_park.park.clear();
    EXPECT_EQ(resolve_bench_config(no_park).park, std::vector<bool>{true}) << "empty: park on";
  }

  auto expect_error = [](BenchConfig c, const std::string& needle) {
    try {
      resolve_bench_config(c);
      ADD_FAILURE() << "accepted a config that should fail with: " << needle;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  };
  BenchConfig c;
  c.strategies = {"nope"};
  expect_error(c, "nope");
  c = {};
  c.lock = "nope";
  expect_error(c, "nope");
  c = {};
  c.device = "nope";
  expect_error(c, "nope");
  c = {};
  c.qdisc = "pfifo limit -1";
  expect_error(c, "limit");
  c = {};
  c.threads = {0};
  expect_error(c, "thread");
  c = {};
  c.duration_s = 0;
  expect_error(c, "duration");
  c = {};
  c.payload = 1500;  // 1542-byte frame > 1514
  expect_error(c, "payload");
  c = {};
  c.park = {true, false, true};
  expect_error(c, "park");
}

TEST(Bench, ParkNames) {
  EXPECT_STREQ(park_name(true), "on");
  EXPECT_STREQ(park_name(false), "off");
}

TEST(Bench, TinyRunConservesEveryPoint) {
  BenchConfig c = null_bench({"busylock", "rootlock"}, {1, 3}, 0.05, 2);
  std::vector<std::string> progress;
  const auto points = run_bench(c, [&](const std::string& line) { progress.push_back(line); });
  ASSERT_EQ(points.size(), 4u);
  EXPECT_EQ(progress.size(), 8u) << "one line per run: 4 points x 2 rounds";
  // Interleaved: same thread count side by side.
  EXPECT_EQ(points[0].threads, 1);
  EXPECT_EQ(points[1].threads, 1);
  EXPECT_NE(points[0].strategy, points[1].strategy);
  for (const auto& p : points) {
    EXPECT_TRUE(p.drained) << p.strategy << "/" << p.threads;
    EXPECT_TRUE(p.conserved) << p.strategy << "/" << p.threads;
    EXPECT_EQ(p.submitted, p.sent + p.dropped);
    EXPECT_GT(p.sent, 0u);
    EXPECT_GT(p.mpps, 0.0);
    EXPECT_GT(p.cpu_ns_per_pkt, 0.0);
    EXPECT_EQ(p.lock, "ticket");
    EXPECT_TRUE(p.park) << "the default policy is park on";
    EXPECT_LE(p.mpps_min, p.mpps);
    EXPECT_LE(p.mpps, p.mpps_max);
    EXPECT_GE(p.fairness, 0.0);
    EXPECT_LE(p.fairness, 1.0 + 1e-9);
    EXPECT_GT(p.batch_mean, 0.0);
    EXPECT_LE(p.send_p50_ns, p.send_p99_ns);
    if (p.strategy == "busylock") EXPECT_DOUBLE_EQ(p.vs_busylock_mpps, 1.0);
    else EXPECT_GT(p.vs_busylock_mpps, 0.0);
  }
}

// Park as a dimension: each (strategy, park) pair is its own point, grouped by thread count then
// park (in the order given), the busylock ratio is taken within the same park policy, and the
// process-wide policy is left as it was.
TEST(Bench, ParkDimensionInterleavesAndKeepsRatiosWithinAPolicy) {
  BenchConfig c = null_bench({"busylock", "rootlock"}, {1, 3}, 0.05, 2);
  c.lock = "mcs";
  c.park = {false, true};
  set_spin_park(false);  // a non-default policy that run_bench must restore
  std::vector<std::string> progress;
  const auto points = run_bench(c, [&](const std::string& line) { progress.push_back(line); });
  EXPECT_FALSE(spin_park()) << "run_bench must restore the caller's policy";
  set_spin_park(true);
  ASSERT_EQ(points.size(), 8u) << "2 thread counts x 2 policies x 2 strategies";
  EXPECT_EQ(progress.size(), 16u) << "one line per run: 8 points x 2 rounds";
  EXPECT_NE(progress[0].find("park=off"), std::string::npos) << progress[0];
  EXPECT_NE(progress[2].find("park=on"), std::string::npos) << progress[2];
  const bool expect_park[] = {false, false, true, true, false, false, true, true};
  for (std::size_t i = 0; i < points.size(); ++i) {
    const BenchPoint& p = points[i];
    EXPECT_EQ(p.threads, i < 4 ? 1 : 3) << i;
    EXPECT_EQ(p.park, expect_park[i]) << i;
    EXPECT_EQ(p.strategy, i % 2 == 0 ? "busylock" : "rootlock") << i;
    EXPECT_TRUE(p.conserved) << p.strategy << "/" << p.threads << "/" << park_name(p.park);
    EXPECT_EQ(p.submitted, p.sent + p.dropped);
    EXPECT_GT(p.sent, 0u);
    EXPECT_EQ(p.lock, "mcs");
    // The ratio is against busylock with the same thread count AND park policy.
    const BenchPoint& base = points[i - i % 2];
    ASSERT_EQ(base.strategy, "busylock");
    ASSERT_EQ(base.park, p.park);
    ASSERT_GT(base.mpps, 0.0);
    EXPECT_DOUBLE_EQ(p.vs_busylock_mpps, p.mpps / base.mpps);
    EXPECT_DOUBLE_EQ(p.vs_busylock_cpu, p.cpu_ns_per_pkt / base.cpu_ns_per_pkt);
  }
}

// A stop request (what a SIGINT handler sets) ends the bench early: the run in progress stops,
// drains and is checked; no further run starts; the points that ran come back, the interrupted
// one marked incomplete. A long duration shows the stop did not wait for it.
TEST(Bench, StopRequestReturnsThePointsThatRan) {
  // 3600 s is never reached: the stop cuts the first run short.
  BenchConfig c = null_bench({"busylock", "rootlock"}, {1, 2}, 3600, 3);
  std::atomic<bool> stop{false};
  c.stop = &stop;
  std::vector<std::string> progress;
  const auto points = run_bench(c, [&](const std::string& line) {
    progress.push_back(line);
    stop.store(true);  // as a signal would, once the first run is about to start
  });
  ASSERT_EQ(progress.size(), 1u) << "no run starts after the stop";
  ASSERT_EQ(points.size(), 1u) << "only the (busylock, 1 thread) point ran";
  const BenchPoint& p = points[0];
  EXPECT_EQ(p.strategy, "busylock");
  EXPECT_EQ(p.threads, 1);
  EXPECT_EQ(p.runs, 1);
  EXPECT_FALSE(p.complete);
  EXPECT_TRUE(p.drained);
  EXPECT_TRUE(p.conserved) << "what ran is still checked";
  EXPECT_EQ(p.submitted, p.sent + p.dropped);
}

TEST(Bench, StopBeforeTheFirstRunReturnsNothing) {
  BenchConfig c = null_bench({"busylock"}, {1}, 3600, 3);
  std::atomic<bool> stop{true};
  c.stop = &stop;
  EXPECT_TRUE(run_bench(c).empty());
}

TEST(Bench, FinishedPointsAreComplete) {
  BenchConfig c = null_bench({"busylock"}, {1}, 0.02, 2);
  const auto points = run_bench(c);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].runs, 2);
  EXPECT_TRUE(points[0].complete);
  EXPECT_EQ(points[0].output_error, "");
}

// pcap:FILE: checking the configuration does not create FILE; each run's capture replaces it
// whole; a capture that cannot be written is reported on the point (one line naming the file),
// the measurement stands.
TEST(Bench, PcapOutputIsCompleteOrReported) {
  const std::string dir = ::testing::TempDir();
  const std::string path = dir + "txpath_bench_" + std::to_string(::getpid()) + ".pcap";
  std::remove(path.c_str());
  BenchConfig c;
  c.strategies = {"busylock"};
  c.threads = {1};
  c.duration_s = 0.02;
  c.device = "pcap:" + path;
  c.pin = false;
  c.repeat = 1;
  (void)resolve_bench_config(c);
  EXPECT_NE(::access(path.c_str(), F_OK), 0) << "checking the spec created the file";
  auto points = run_bench(c);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].output_error, "");
  EXPECT_EQ(::access(path.c_str(), F_OK), 0) << "the capture was not written";
  std::remove(path.c_str());
  {
    // A full disk mid-run (here: a file size limit, EFBIG; SIGXFSZ ignored meanwhile).
    rlimit old{};
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
    struct sigaction ignore {}, old_action {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGXFSZ, &ignore, &old_action);
    rlimit small = old;
    small.rlim_cur = 16 * 1024;
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
    points = run_bench(c);
    ::setrlimit(RLIMIT_FSIZE, &old);
    ::sigaction(SIGXFSZ, &old_action, nullptr);
    ASSERT_EQ(points.size(), 1u);
    EXPECT_EQ(points[0].output_error, "device 'pcap:" + path + "': write: File too large");
    EXPECT_TRUE(points[0].conserved) << "the measurement stands";
    EXPECT_NE(::access(path.c_str(), F_OK), 0) << "a cut capture was left as FILE";
  }
  // /dev/full is a device: written in place, and its first write (the header) fails at setup.
  c.device = "pcap:/dev/full";
  EXPECT_THROW(run_bench(c), ConfigError);
}

}  // namespace
}  // namespace txpath
