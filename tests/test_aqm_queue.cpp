// SPDX-License-Identifier: MIT
// AQM through a TxQueue: packets fq_codel drops inside dequeue() are collected by the driver
// loop (Qdisc::take_dequeue_drops) and freed outside the root lock; conservation holds, every
// buffer comes back, and teardown does not count them twice.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/senders.hpp"
#include "txpath/device.hpp"
#include "txpath/frame.hpp"
#include "txpath/pool.hpp"
#include "txpath/txqueue.hpp"

using namespace txpath;
using namespace std::chrono_literals;

namespace {

class AqmQueue : public ::testing::TestWithParam<std::string> {};

TEST_P(AqmQueue, CodelDropsAreFreedAndConservationHolds) {
  Pool pool(PoolConfig{.packets = 8192, .buffer_size = 2048, .cache_size = 32});
  {
    // A 100 Mbit/s wire: 1000-byte frames from two senders build a standing queue.
    auto dev = make_device("nic:rate=0.1,pkt=0,doorbell=0");
    TxQueueConfig cfg;
    cfg.strategy = GetParam();
    cfg.qdisc = "fq_codel target 500us interval 5ms";
    auto q = TxQueue::create(*dev, cfg);
    FrameSpec spec;
    spec.payload = 1000 - kHeadersLen;
    test::send_from_threads(*q, pool, 2, 3000, [](Packet& p, int t, uint64_t) {
      p.flow_hash = static_cast<uint32_t>(t) * 0x80000000u;
    }, spec);
    ASSERT_TRUE(q->drain(20s));
    const TxQueueStats st = q->stats();
    EXPECT_EQ(st.submitted, 6000u);
    EXPECT_EQ(st.submitted, st.sent + st.dropped);
    EXPECT_EQ(st.queued, 0u);
    EXPECT_GT(st.qdisc.drops, 0u) << "CoDel never dropped: the test lost its point";
    q.reset();  // teardown: nothing counted twice, nothing left out
    dev.reset();
  }
  EXPECT_EQ(pool.free_count(), pool.capacity()) << "a dropped packet was never freed";
}

INSTANTIATE_TEST_SUITE_P(Strategies, AqmQueue,
                         ::testing::Values("busylock", "llist", "drainer", "sharded"),
                         [](const auto& info) { return info.param; });

}  // namespace
