// SPDX-License-Identifier: MIT
// Classful trees from a tc configuration through a TxQueue: prio, htb and tbf roots with an
// fq_codel child that drops on enqueue (limit, drop_batch) and inside dequeue (CoDel), and a
// pacing fq root (its watchdog must finish the backlog: drain() succeeds with nobody sending). Every drop
// below the root must reach the root's count (qdisc_tree_reduce_backlog), so that the queue's
// conservation holds: submitted == sent + dropped, nothing left queued, every buffer returned.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "support/senders.hpp"
#include "txpath/device.hpp"
#include "txpath/frame.hpp"
#include "txpath/pool.hpp"
#include "txpath/tc.hpp"
#include "txpath/txqueue.hpp"

using namespace txpath;
using namespace std::chrono_literals;

namespace {

constexpr const char* kCodel = "fq_codel limit 200 target 500us interval 5ms drop_batch 16";

std::string tree_config(const std::string& root) {
  std::string c = "link add dev d0\n";
  if (root == "prio") {
    c += "qdisc add dev d0 root handle 1: prio\n";
    c += std::string("qdisc add dev d0 parent 1:2 handle 2: ") + kCodel + "\n";  // priority 0
  } else if (root == "htb") {
    c += "qdisc add dev d0 root handle 1: htb default 10\n";
    c += "class add dev d0 parent 1: classid 1:1 htb rate 80mbit\n";
    c += "class add dev d0 parent 1:1 classid 1:10 htb rate 40mbit ceil 80mbit\n";
    c += std::string("qdisc add dev d0 parent 1:10 handle 10: ") + kCodel + "\n";
  } else if (root == "fq") {
    // A paced root: flows held to maxrate are re-run by the watchdog; flow_limit drops.
    c += "qdisc add dev d0 root handle 1: fq maxrate 40mbit flow_limit 50 quantum 1514\n";
  } else {
    c += "qdisc add dev d0 root handle 1: tbf rate 80mbit burst 20k latency 50ms\n";
    c += std::string("qdisc add dev d0 parent 1:1 handle 10: ") + kCodel + "\n";
  }
  return c;
}

class TcTreeQueue : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(TcTreeQueue, EveryDropBelowTheRootIsCounted) {
  const auto& [strategy, root] = GetParam();
  Pool pool(PoolConfig{.packets = 8192, .buffer_size = 2048, .cache_size = 32});
  {
    const tc::Config cfg = tc::Config::parse(tree_config(root), root);
    auto dev = make_device("nic:rate=0.1,pkt=0,doorbell=0");  // a 100 Mbit/s wire
    TxQueueConfig qc;
    qc.strategy = strategy;
    auto tree = std::make_shared<tc::Tree>();
    qc.root_qdisc = cfg.root_factory("d0", tree);
    auto q = TxQueue::create(*dev, qc);
    ASSERT_EQ(tree->nodes.size(), root == "fq" ? 1u : 2u);
    const Qdisc& child = *tree->nodes.back().qdisc;  // fq_codel, or fq itself
    FrameSpec spec;
    spec.payload = 1000 - kHeadersLen;
    constexpr int kSenders = 3;  // more threads than the 2 cores of CI
    test::send_from_threads(*q, pool, kSenders, 2000, [](Packet& p, int t, uint64_t) {
      p.flow_hash = static_cast<uint32_t>(t) * 0x55555555u;
      p.priority = 0;
    }, spec);
    ASSERT_TRUE(q->drain(30s));
    const TxQueueStats st = q->stats();
    EXPECT_EQ(st.submitted, uint64_t{kSenders} * 2000u);
    EXPECT_EQ(st.submitted, st.sent + st.dropped) << root << " under " << strategy;
    EXPECT_EQ(st.queued, 0u);
    EXPECT_GT(child.stats().drops, 0u) << "nothing dropped: the test lost its point";
    EXPECT_GE(st.qdisc.drops, child.stats().drops) << "a child's drops did not reach the root";
    q.reset();
    dev.reset();
  }
  EXPECT_EQ(pool.free_count(), pool.capacity()) << "a dropped packet was never freed";
}

INSTANTIATE_TEST_SUITE_P(
    Trees, TcTreeQueue,
    ::testing::Combine(::testing::Values("busylock", "llist", "drainer", "combining"),
                       ::testing::Values("prio", "htb", "tbf", "fq")),
    [](const auto& info) { return std::get<0>(info.param) + "_" + std::get<1>(info.param); });

}  // namespace
