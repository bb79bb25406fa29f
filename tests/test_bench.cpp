// SPDX-License-Identifier: MIT
// The bench engine: its conservation check, its defaults, its up-front validation, and real
// (tiny) runs whose every point must conserve packets, with one and with both park policies, on
// one and on several TX queues (per queue and in total), with each XPS policy.
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

#include "base/topology.hpp"
#include "bench/bench.hpp"
#include "support/bench_config.hpp"
#include "txpath/error.hpp"
#include "txpath/netdev.hpp"
#include "txpath/spin.hpp"
#include "txpath/txqueue.hpp"

namespace txpath {
namespace {

using test::expect_error;
using test::null_bench;

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

// The default set on the default device (nic, which DPDK has no driver for): the floor row and
// every strategy but the strawman peers (only when named: they drop what they cannot take); the
// DPDK peers where they can run (test_dpdk_peers.cpp checks them on null).
std::vector<std::string> default_set_on_nic() {
  std::vector<std::string> want{kFloorStrategy};
  for (std::string& s : strategy_names())
    if (!s.starts_with("peer:")) want.push_back(std::move(s));
  return want;
}

// Every strategy by default means every strategy that can run the qdisc: nolock (fifos only) is
// left out under htb; named explicitly it is an error, and a bad qdisc still fails.
TEST(Bench, DefaultStrategiesAreThoseThatRunTheQdisc) {
  BenchConfig c;
  c.qdisc = "htb default 1";
  const BenchConfig r = resolve_bench_config(c);
  auto want = default_set_on_nic();
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
  EXPECT_EQ(resolved.strategies, default_set_on_nic()) << "the floor row, then every strategy";
  EXPECT_EQ(resolved.burst, 1) << "the seed experiment sends packet by packet";
  EXPECT_EQ(resolved.threads, default_thread_counts());
  EXPECT_EQ(resolved.park, std::vector<bool>{true});
  {
    BenchConfig no_park;
    no_park.park.clear();
    EXPECT_EQ(resolve_bench_config(no_park).park, std::vector<bool>{true}) << "empty: park on";
  }

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
  for (const int burst : {0, -1, 1025}) {
    c = {};
    c.burst = burst;
    expect_error(c, "burst " + std::to_string(burst) + " out of range 1..1024");
  }
  c = {};
  c.burst = 1024;
  EXPECT_NO_THROW(resolve_bench_config(c));
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
  // A round runs every (park, strategy) once, in the seed's shuffled order.
  for (std::size_t round = 0; round < 4; ++round) {
    int off = 0;
    for (std::size_t i = 4 * round; i < 4 * round + 4; ++i) off += progress[i].find("park=off") != std::string::npos;
    EXPECT_EQ(off, 2) << "round " << round;
  }
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
  ASSERT_EQ(points.size(), 1u) << "only the first point (1 thread) ran";
  const BenchPoint& p = points[0];
  EXPECT_NE(progress[0].find(" " + p.strategy + " threads=1 "), std::string::npos) << progress[0];
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


// ---- TX queues (--queues, --xps) ---------------------------------------------------------------

// Every per_queue entry conserves and they sum to the point's totals.
void expect_queues_conserve(const BenchPoint& p) {
  SCOPED_TRACE(p.strategy + " threads=" + std::to_string(p.threads) +
               " queues=" + std::to_string(p.queues));
  EXPECT_TRUE(p.drained);
  EXPECT_TRUE(p.conserved);
  EXPECT_EQ(p.submitted, p.sent + p.dropped);
  if (without_queue_counts(p.strategy)) {  // the kernel's or testpmd's queues: not counted one by one
    EXPECT_TRUE(p.per_queue.empty());
    return;
  }
  ASSERT_EQ(p.per_queue.size(), p.queues);
  uint64_t submitted = 0, sent = 0, dropped = 0, doorbells = 0;
  for (const BenchQueuePoint& q : p.per_queue) {
    EXPECT_TRUE(q.conserved);
    EXPECT_EQ(q.submitted, q.sent + q.dropped);
    submitted += q.submitted;
    sent += q.sent;
    dropped += q.dropped;
    doorbells += q.doorbells;
  }
  EXPECT_EQ(submitted, p.submitted);
  EXPECT_EQ(sent, p.sent);
  EXPECT_EQ(dropped, p.dropped);
  EXPECT_EQ(doorbells, p.doorbells);
  EXPECT_GT(p.sent, 0u);
}

// ---- the floor row and --burst ------------------------------------------------------------------

// The floor row on every model device, on one and two TX queues: a point like the others
// (strategy "floor", no strategy lock), conserving on every queue and in total, ringing a
// doorbell at most every kFloorBatch packets; with two senders on two queues each queue carries
// one sender's packets. Every row's vs_floor_cpu is taken against it (the floor's own is 1).
TEST(BenchFloor, EveryModelDeviceHasAFloorRowAndEveryRowItsRatio) {
  const std::string pcap = ::testing::TempDir() + "txpath_floor_" + std::to_string(::getpid()) + ".pcap";
  for (const std::string& device :
       std::vector<std::string>{"null", "nic", "fault:busy=0.05,stop=0.01,seed=3", "pcap:" + pcap}) {
    SCOPED_TRACE(device);
    // 0.1 s windows: a row that sends nothing in its window (a loaded machine) has no ratio.
    BenchConfig c = null_bench({kFloorStrategy, "busylock"}, {2}, 0.1, 2);
    c.device = device;
    if (!device.starts_with("pcap:")) c.queues = {1, 2};
    const auto points = run_bench(c);
    ASSERT_EQ(points.size(), 2 * resolve_bench_config(c).queues.size());
    for (const BenchPoint& p : points) {
      SCOPED_TRACE(p.strategy + " queues=" + std::to_string(p.queues));
      expect_queues_conserve(p);
      EXPECT_EQ(p.output_error, "");
      EXPECT_GT(p.vs_floor_cpu, 0.0) << "every row has its ratio to the floor";
      if (p.strategy != kFloorStrategy) continue;
      EXPECT_EQ(p.lock, "-");
      EXPECT_DOUBLE_EQ(p.vs_floor_cpu, 1.0);
      EXPECT_EQ(p.requeues, 0u);
      EXPECT_EQ(p.dropped, 0u) << "what a model device refuses is handed again, not dropped";
      EXPECT_GT(p.doorbells, 0u);
      EXPECT_GE(p.doorbells * kFloorBatch, p.sent) << "a doorbell at least every 64 packets";
      if (p.queues == 2) {
        EXPECT_GT(p.per_queue[0].sent, 0u) << "sender 0 on queue 0";
        EXPECT_GT(p.per_queue[1].sent, 0u) << "sender 1 on queue 1";
      }
    }
  }
  std::remove(pcap.c_str());
}

// More senders than TX queues share theirs (3 senders, 2 queues), and without a floor row no
// row has a ratio to it.
TEST(BenchFloor, SendersBeyondTheQueueCountShareAndNoFloorNoRatio) {
  BenchConfig c = null_bench({kFloorStrategy}, {3}, 0.02, 1);
  c.device = "nic";
  c.queues = {2};
  auto points = run_bench(c);
  ASSERT_EQ(points.size(), 1u);
  expect_queues_conserve(points[0]);
  c = null_bench({"busylock"}, {1}, 0.02, 1);
  points = run_bench(c);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].vs_floor_cpu, 0.0);
}

// --burst 32: every strategy (and the floor) runs, on one and two TX queues, null and nic,
// every point conserving; a lone busylock sender's bursts leave one serialisation and one
// doorbell per burst, where send() per packet rings one per packet (batch 1 on the null
// device).
TEST(BenchFloor, BurstRunsEveryStrategyAndConserves) {
  for (const char* device : {"null", "nic"}) {
    SCOPED_TRACE(device);
    BenchConfig c = null_bench({}, {2}, 0.02, 1);
    c.device = device;
    c.queues = {1, 2};
    c.burst = 32;
    const BenchConfig resolved = resolve_bench_config(c);
    EXPECT_EQ(resolved.burst, 32);
    const auto points = run_bench(c);
    ASSERT_EQ(points.size(), 2 * resolved.strategies.size());
    for (const BenchPoint& p : points) expect_queues_conserve(p);
  }
  BenchConfig one = null_bench({"busylock"}, {1}, 0.1, 1);
  one.burst = 32;
  auto points = run_bench(one);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_TRUE(points[0].conserved);
  EXPECT_GT(points[0].batch_mean, 1.5) << "a burst of 32 is not one doorbell per packet";
  one.burst = 1;
  points = run_bench(one);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_LT(points[0].batch_mean, 1.5) << "one sender, send() per packet: a doorbell each";
}

// Queues {1, 2} on null and nic, every strategy: points grouped by queue count within a thread
// count, each conserving on every queue and in total; busylock's ratio is taken within its queue
// count.
TEST(BenchQueues, EveryStrategyConservesPerQueueAndInTotal) {
  for (const char* device : {"null", "nic"}) {
    SCOPED_TRACE(device);
    BenchConfig c = null_bench({}, {2}, 0.02, 1);
    c.device = device;
    c.queues = {1, 2};
    std::vector<std::string> progress;
    const auto points = run_bench(c, [&](const std::string& line) { progress.push_back(line); });
    const BenchConfig resolved = resolve_bench_config(c);
    ASSERT_EQ(points.size(), 2 * resolved.strategies.size());
    ASSERT_FALSE(progress.empty());
    EXPECT_NE(progress[0].find(" queues="), std::string::npos) << progress[0];
    for (std::size_t i = 0; i < points.size(); ++i) {
      const BenchPoint& p = points[i];
      EXPECT_EQ(p.queues, i < resolved.strategies.size() ? 1u : 2u) << "grouped by queue count";
      expect_queues_conserve(p);
      if (p.strategy == "busylock") EXPECT_DOUBLE_EQ(p.vs_busylock_mpps, 1.0);
    }
  }
}

TEST(BenchQueues, OneQueueIsTheSeedExperimentWithOnePerQueueEntry) {
  BenchConfig c = null_bench({"busylock"}, {1}, 0.02, 1);
  const BenchConfig resolved = resolve_bench_config(c);
  EXPECT_EQ(resolved.queues, std::vector<uint32_t>{1}) << "empty: one TX queue";
  std::vector<std::string> progress;
  const auto points = run_bench(c, [&](const std::string& line) { progress.push_back(line); });
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].queues, 1u);
  expect_queues_conserve(points[0]);
  ASSERT_EQ(progress.size(), 1u);
  EXPECT_EQ(progress[0].find("queues="), std::string::npos) << "the seed experiment's progress line";
}

// A spec naming queues=N runs on N queues when --queues is not given, and is refused with any
// other list (a resolved configuration resolves again to itself).
TEST(BenchQueues, SpecQueueCountIsTheDefaultAndClashesWithAList) {
  BenchConfig c = null_bench({"busylock"}, {2}, 0.02, 1);
  c.device = "nic:queues=2";
  EXPECT_EQ(resolve_bench_config(c).queues, std::vector<uint32_t>{2});
  const auto points = run_bench(c);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].queues, 2u);
  expect_queues_conserve(points[0]);
  c.queues = {2};
  EXPECT_EQ(resolve_bench_config(c).queues, std::vector<uint32_t>{2}) << "the spec's own count";
  c.queues = {1, 2};
  EXPECT_THROW(resolve_bench_config(c), ConfigError);
  c.queues = {4};
  EXPECT_THROW(resolve_bench_config(c), ConfigError);
}

TEST(BenchQueues, BadQueueListsAndMapsAreOneLineErrors) {
  BenchConfig c = null_bench({"busylock"}, {1}, 0.02, 1);
  c.queues = {0};
  expect_error(c, "queue count 0");
  c.queues = {2, 2};
  expect_error(c, "given twice");
  c.queues = {kMaxTxQueues + 1};
  expect_error(c, "out of range");
  c.queues = {2};
  c.device = "nic:queues=4";
  expect_error(c, "queues=");
  c.device = "pcap:" + ::testing::TempDir() + "never.pcap";
  expect_error(c, "has one TX queue");
  c.device = "null";
  c.xps = parse_xps("0:5");
  expect_error(c, "queue 5");
  c.queues = {1};
  EXPECT_NO_THROW(resolve_bench_config(c)) << "one TX queue has no XPS map to check";
  c.queues = {2};
  c.xps = parse_xps("4095:0");
  expect_error(c, "CPU 4095");
}

TEST(BenchQueues, XpsTextParsesAndPrintsBack) {
  EXPECT_EQ(parse_xps("auto").mode, XpsPolicy::Mode::automatic);
  EXPECT_EQ(parse_xps("off").mode, XpsPolicy::Mode::off);
  const XpsPolicy map = parse_xps("0:0,1:1+2,3:0");
  EXPECT_EQ(map.mode, XpsPolicy::Mode::map);
  ASSERT_EQ(map.cpus.size(), 3u);
  EXPECT_EQ(map.cpus[1].first, 1u);
  EXPECT_EQ(map.cpus[1].second, (std::vector<uint32_t>{1, 2}));
  for (const char* text : {"auto", "off", "0:0,1:1+2,3:0", "7:4095"})
    EXPECT_EQ(xps_text(parse_xps(text)), text);
  for (const std::string& bad : std::vector<std::string>{"", "x", "0", "0:", ":1", "0:a", "0:1,", ",0:1", "0:1,0:2",
                                "0:1+1", "0:1++2", "-1:0", "4096:0", "0:4096", "0:1\n2",
                                std::string("0:\x1b[2J"), "0:99999999999999999999"}) {
    try {
      (void)parse_xps(bad);
      ADD_FAILURE() << "accepted --xps " << bad;
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("--xps: ", 0), 0u) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      EXPECT_EQ(what.find('\x1b'), std::string::npos) << what;
    }
  }
}

// The CPUs the senders are pinned to, in pinning order (at most `count`).
std::vector<int> first_sender_cpus(std::size_t count) {
  std::vector<int> cpus;
  const auto& nodes = topology().cores_by_node;
  for (std::size_t i = 0; cpus.size() < count && i < 64; ++i) {
    const auto& node = nodes[i % nodes.size()];
    if (!node.empty()) cpus.push_back(node[(i / nodes.size()) % node.size()]);
  }
  return cpus;
}

// XPS auto with pinned senders on at least as many cores as queues: every queue gets a sender.
// An explicit map that sends every sender CPU to queue 1 leaves queue 0 idle.
TEST(BenchQueues, XpsSpreadsPinnedSendersOverTheQueues) {
  if (topology().cores < 2) GTEST_SKIP() << "needs 2 cores";
  BenchConfig c = null_bench({"busylock"}, {2}, 0.05, 1);
  c.pin = true;
  c.queues = {2};
  auto points = run_bench(c);
  ASSERT_EQ(points.size(), 1u);
  expect_queues_conserve(points[0]);
  EXPECT_GT(points[0].per_queue[0].sent, 0u) << "the first CPU sends on queue 0";
  EXPECT_GT(points[0].per_queue[1].sent, 0u) << "the second CPU sends on queue 1";

  std::string map;
  for (const int cpu : first_sender_cpus(2)) map += (map.empty() ? "" : ",") + std::to_string(cpu) + ":1";
  c.xps = parse_xps(map);
  points = run_bench(c);
  ASSERT_EQ(points.size(), 1u);
  expect_queues_conserve(points[0]);
  EXPECT_EQ(points[0].per_queue[0].submitted, 0u) << "no CPU maps queue 0 (--xps " << map << ")";
  EXPECT_EQ(points[0].per_queue[1].sent, points[0].sent);

  c.xps = parse_xps("off");  // the flow hash: some queue, every packet accounted for
  points = run_bench(c);
  ASSERT_EQ(points.size(), 1u);
  expect_queues_conserve(points[0]);
}

}  // namespace
}  // namespace txpath

// A tc configuration whose device has several TX queues (an mq root with a graft): the bench
// runs on that many queues with mq's children, conserves on each, and refuses another count.
namespace txpath {

TEST(BenchQueues, AnMqTcConfigurationRunsOnItsQueues) {
  const std::string path = ::testing::TempDir() + "bench_mq_" + std::to_string(::getpid()) + ".tc";
  {
    std::ofstream f(path);
    f << "link add dev m0 numtxqueues 2\n"
         "qdisc add dev m0 root handle 1: mq\n"
         "qdisc add dev m0 parent 1:2 handle 20: pfifo limit 50\n";
  }
  BenchConfig cfg;
  cfg.device = "null";
  cfg.tc_config = path;
  cfg.strategies = {"busylock", "llist"};
  cfg.threads = {2};
  cfg.duration_s = 0.05;
  cfg.repeat = 1;
  const BenchConfig resolved = resolve_bench_config(cfg);
  EXPECT_EQ(resolved.queues, std::vector<uint32_t>{2});
  EXPECT_EQ(resolved.qdisc.rfind("mq (tc config", 0), 0u) << resolved.qdisc;
  for (const BenchPoint& p : run_bench(cfg)) {
    SCOPED_TRACE(p.strategy);
    EXPECT_EQ(p.queues, 2u);
    EXPECT_TRUE(p.conserved);
    ASSERT_EQ(p.per_queue.size(), 2u);
    EXPECT_GT(p.per_queue[0].sent + p.per_queue[1].sent, 0u);
  }
  cfg.queues = {1};
  EXPECT_THROW(resolve_bench_config(cfg), ConfigError);
  // An XPS map in the file replaces the bench's: every CPU on queue 1, queue 0 idle.
  {
    std::ofstream f(path, std::ios::app);
    f << "link set dev m0 txqueue 1 xps_cpus " << std::hex << ((1u << std::min(sysconf(_SC_NPROCESSORS_CONF), 31L)) - 1) << "\n";
  }
  cfg.queues.clear();
  for (const BenchPoint& p : run_bench(cfg)) {
    SCOPED_TRACE(p.strategy);
    ASSERT_EQ(p.per_queue.size(), 2u);
    EXPECT_EQ(p.per_queue[0].submitted, 0u);
    EXPECT_GT(p.per_queue[1].sent, 0u);
  }
  {
    std::ofstream f(path, std::ios::app);
    f << "link set dev m0 txqueue 0 xps_cpus 1";
    for (int w = 0; w < 127; ++w) f << ",0";  // CPU 4064
    f << "\n";
  }
  EXPECT_THROW(resolve_bench_config(cfg), ConfigError);  // CPU 4064: not on this machine
  std::remove(path.c_str());
}

}  // namespace txpath
