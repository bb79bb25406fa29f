// SPDX-License-Identifier: MIT
// The DPDK peers (bench/dpdk_env.hpp): which device each runs on as which DPDK driver, the rows
// left out with one line where they cannot run, and both rows run for real on the null device
// where DPDK is there (this build for peer:dpdk, dpdk-testpmd for peer:testpmd): they conserve,
// send, and peer:dpdk is every row's vs_dpdk reference. Skipped, saying why, where DPDK is not.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "bench/bench.hpp"
#include "bench/dpdk_env.hpp"
#include "support/bench_config.hpp"

namespace txpath::bench_detail {
namespace {

TEST(DpdkPeers, EachDeviceAsDpdksDriverForIt) {
  const auto null = dpdk_device("null", 3, 1);
  ASSERT_TRUE(null);
  EXPECT_EQ(null->name, "net_null3");
  EXPECT_EQ(null->devargs, "net_null3");
  EXPECT_EQ(null->iface, "");
  EXPECT_TRUE(dpdk_device("null:queues=2", 0, 2));
  const auto afp = dpdk_device("afpacket:txp0,ring=256,bypass=1", 1, 2);
  ASSERT_TRUE(afp);
  EXPECT_EQ(afp->name, "net_af_packet1");
  EXPECT_EQ(afp->devargs, "net_af_packet1,iface=txp0,qpairs=2");
  EXPECT_EQ(afp->iface, "txp0");
  const auto xdp = dpdk_device("afxdp:eth0", 0, 1);
  ASSERT_TRUE(xdp);
  EXPECT_EQ(xdp->devargs, "net_af_xdp0,iface=eth0,start_queue=0,queue_count=1");
  for (const char* none : {"nic", "pcap:/tmp/x.pcap", "udp:127.0.0.1:9", "afpacket:", "null:refuse=0.5", "tun:t0"})
    EXPECT_FALSE(dpdk_device(none, 0, 1)) << none;
}

// Where DPDK has no driver, each named peer leaves the list with one line, and the run goes on.
TEST(DpdkPeers, SkippedWithOneLineWhereTheyCannotRun) {
  BenchConfig c = test::null_bench({"busylock", "peer:dpdk", "peer:testpmd"}, {1}, 0.02, 1);
  c.device = "nic";
  const BenchConfig r = resolve_bench_config(c);
  EXPECT_EQ(r.strategies, std::vector<std::string>{"busylock"});
  ASSERT_EQ(r.skipped.size(), 2u);
  EXPECT_EQ(r.skipped[0].rfind("peer:dpdk: ", 0), 0u) << r.skipped[0];
  EXPECT_EQ(r.skipped[1].rfind("peer:testpmd: DPDK has no driver for nic", 0), 0u) << r.skipped[1];
  for (const std::string& line : r.skipped) EXPECT_EQ(line.find('\n'), std::string::npos);
  // Asked to replay or pace, testpmd (which sends its own frames) is left out too.
  BenchConfig paced = test::null_bench({"peer:testpmd"}, {1}, 0.02, 1);
  paced.rate_pps = 1000;
  const BenchConfig p = resolve_bench_config(paced);
  EXPECT_TRUE(p.strategies.empty());
  ASSERT_EQ(p.skipped.size(), 1u);
  EXPECT_NE(p.skipped[0].find("its own frames"), std::string::npos) << p.skipped[0];
}

// The default set: the strawman peers only when named; the DPDK peers where they can run.
TEST(DpdkPeers, TheDefaultSetHasTheDpdkPeersNotTheStrawmen) {
  BenchConfig c = test::null_bench({}, {1}, 0.02, 1);
  const BenchConfig r = resolve_bench_config(c);
  const auto has = [&](const char* s) {
    return std::find(r.strategies.begin(), r.strategies.end(), s) != r.strategies.end();
  };
  EXPECT_FALSE(has("peer:ck_ring"));
  EXPECT_FALSE(has("peer:mutex_deque"));
  EXPECT_EQ(has(kDpdkPeer), !dpdk_unavailable("null"));
  EXPECT_EQ(has(kTestpmdPeer), !testpmd_unavailable("null"));
  EXPECT_EQ(r.skipped.size(), (has(kDpdkPeer) ? 0u : 1u) + (has(kTestpmdPeer) ? 0u : 1u));
}

// peer:dpdk on null at 1 and 2 senders: every packet submitted is sent (backpressure, no drop),
// nothing is left in the rings, and the other rows get their vs_dpdk ratios.
TEST(DpdkPeers, PeerDpdkConservesAndIsTheReference) {
  if (const auto why = dpdk_unavailable("null")) GTEST_SKIP() << *why;
  const std::vector<BenchPoint> points =
      run_bench(test::null_bench({"busylock", "peer:dpdk"}, {1, 2}, 0.05, 1), nullptr);
  ASSERT_EQ(points.size(), 4u);
  for (const BenchPoint& p : points) {
    SCOPED_TRACE(p.strategy + " at " + std::to_string(p.threads));
    EXPECT_TRUE(p.conserved);
    EXPECT_GT(p.sent, 0u);
    EXPECT_GT(p.vs_dpdk_mpps, 0);
    if (p.strategy != kDpdkPeer) continue;
    EXPECT_EQ(p.submitted, p.sent);
    EXPECT_EQ(p.dropped, 0u);
    EXPECT_EQ(p.vs_dpdk_mpps, 1);
    EXPECT_GT(p.cpu_ns_per_pkt, 0);
    EXPECT_GT(p.batch_mean, 0);  // packets per rte_eth_tx_burst()
  }
}

// peer:testpmd on null (net_null): testpmd's own count, its CPU from /proc.
TEST(DpdkPeers, PeerTestpmdRunsDpdkTestpmd) {
  if (const auto why = testpmd_unavailable("null")) GTEST_SKIP() << *why;
  BenchConfig c = test::null_bench({"peer:testpmd"}, {1}, 0.1, 1);
  c.burst = 32;
  const std::vector<BenchPoint> points = run_bench(c, nullptr);
  ASSERT_EQ(points.size(), 1u);
  const BenchPoint& p = points[0];
  EXPECT_EQ(p.strategy, kTestpmdPeer);
  EXPECT_GT(p.sent, 0u);
  EXPECT_GT(p.mpps, 0);
  EXPECT_GT(p.cpu_ns_per_pkt, 0);
  EXPECT_TRUE(p.conserved);
  EXPECT_FALSE(p.sink_checked) << "net_null has no counter of arrivals";
}

}  // namespace
}  // namespace txpath::bench_detail
