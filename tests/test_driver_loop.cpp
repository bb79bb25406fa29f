// SPDX-License-Identifier: MIT
// The driver loop (qdisc_run) through the public TxQueue API, with the service thread off so
// that every deferred run happens exactly when the test calls service().
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "support/scripted_device.hpp"
#include "txpath/error.hpp"
#include "txpath/txqueue.hpp"

using namespace std::chrono_literals;

namespace txpath {
namespace {

struct Param {
  std::string strategy;
  std::string lock;
};
void PrintTo(const Param& p, std::ostream* os) { *os << p.strategy << "/" << p.lock; }

class DriverLoop : public ::testing::TestWithParam<Param> {
 protected:
  std::unique_ptr<TxQueue> make(const std::string& qdisc = "pfifo_fast") {
    TxQueueConfig cfg;
    cfg.strategy = GetParam().strategy;
    cfg.lock = GetParam().lock;
    cfg.qdisc = qdisc;
    cfg.service_thread = false;
    return TxQueue::create(dev, cfg);
  }
  Pool pool{PoolConfig{.packets = 4096, .buffer_size = 2048, .cache_size = 64}};
  test::ScriptedDevice dev;
  test::FrameFactory frames{pool};
};

TEST_P(DriverLoop, QuotaIsHonouredAndTheRestIsDeferred) {
  // One run = dev_tx_weight (64) packets per quota, restarted in place like __do_softirq() up to
  // 10 more times (see QueueBase::run()), then the rest is left to a deferred run.
  constexpr std::size_t kPackets = 1000;
  constexpr std::size_t kPerRun = 64 * 11;
  auto txq = make();
  dev.stop();
  for (uint64_t i = 0; i < kPackets; ++i)
    ASSERT_NE(txq->send(frames.make(0, i)), SendStatus::too_big);
  EXPECT_EQ(dev.log().size(), 0u);
  EXPECT_EQ(txq->stats().queued, kPackets);

  dev.wake();  // the wake schedules a deferred run; nothing is sent until it happens
  EXPECT_EQ(dev.log().size(), 0u);
  // A run may also stop early on its 2 ms budget (sanitizer builds are slow), but only on a
  // quota boundary, and never before one full quota.
  std::size_t before = 0;
  int runs = 0;
  while (before < kPackets) {
    ASSERT_TRUE(txq->service()) << "a run must stay scheduled while packets remain";
    const std::size_t now = dev.log().size();
    const std::size_t delta = now - before;
    EXPECT_GE(delta, std::min<std::size_t>(64, kPackets - before)) << "a run sends a full quota";
    EXPECT_LE(delta, kPerRun) << "one run sends at most 1 + 10 quotas of 64 packets";
    if (now < kPackets) EXPECT_EQ(delta % 64, 0u) << "a run ends on a quota boundary";
    before = now;
    ASSERT_LT(++runs, 100);
  }
  EXPECT_FALSE(txq->service()) << "no run is scheduled once the queue is empty";

  // Order kept; every doorbell batch (run of more=true closed by more=false) is within quota.
  const auto log = dev.log();
  std::size_t batch = 0;
  for (std::size_t i = 0; i < log.size(); ++i) {
    EXPECT_EQ(log[i].seq, i);
    ++batch;
    if (!log[i].more) {
      EXPECT_LE(batch, 64u);
      batch = 0;
    }
  }
  EXPECT_EQ(batch, 0u) << "the last packet must ring the doorbell";
  const auto s = txq->stats();
  EXPECT_EQ(s.submitted, kPackets);
  EXPECT_EQ(s.sent, kPackets);
  EXPECT_EQ(s.queued, 0u);
}

TEST_P(DriverLoop, RequeuedPacketsLeaveFirstAndInOrder) {
  auto txq = make();
  dev.stop();
  for (uint64_t i = 0; i < 100; ++i) ASSERT_EQ(txq->send(frames.make(0, i)), SendStatus::queued);
  dev.refuse_call(10);  // the 11th xmit call answers Busy in the middle of the first batch
  dev.wake();
  ASSERT_TRUE(txq->service());
  auto s = txq->stats();
  EXPECT_EQ(s.sent, 10u);
  EXPECT_GT(s.requeues, 0u);
  EXPECT_EQ(s.queued, 90u);
  // The requeue scheduled another run, which sends the requeued packets before the qdisc's.
  while (txq->service()) {
  }
  const auto log = dev.log();
  ASSERT_EQ(log.size(), 100u);
  for (std::size_t i = 0; i < log.size(); ++i) EXPECT_EQ(log[i].seq, i) << "at " << i;
  s = txq->stats();
  EXPECT_EQ(s.sent, 100u);
  EXPECT_EQ(s.queued, 0u);
  EXPECT_EQ(s.qdisc.requeues, s.requeues);
}

TEST_P(DriverLoop, BypassOnlyWhenTheQdiscIsEmpty) {
  auto txq = make();
  ASSERT_EQ(txq->send(frames.make(0, 0)), SendStatus::queued);
  EXPECT_EQ(txq->stats().bypassed, 1u);
  EXPECT_EQ(dev.log().size(), 1u);

  dev.stop();
  // Empty again: this one tries the bypass, finds the queue stopped and is requeued.
  ASSERT_EQ(txq->send(frames.make(0, 1)), SendStatus::queued);
  EXPECT_EQ(txq->stats().bypassed, 2u);
  // Not empty any more: these are enqueued, never bypassed.
  for (uint64_t i = 2; i < 10; ++i) ASSERT_EQ(txq->send(frames.make(0, i)), SendStatus::queued);
  EXPECT_EQ(txq->stats().bypassed, 2u);
  EXPECT_EQ(txq->stats().queued, 9u);
  dev.wake();
  while (txq->service()) {
  }
  const auto log = dev.log();
  ASSERT_EQ(log.size(), 10u);
  for (std::size_t i = 0; i < log.size(); ++i) EXPECT_EQ(log[i].seq, i);
  // Bypassed packets still count in the qdisc's sent bytes/packets (bstats).
  EXPECT_EQ(txq->stats().qdisc.packets, 10u);
}

TEST_P(DriverLoop, NoBypassForAQdiscThatCannotBypass) {
  auto txq = make("bfifo limit 1000");  // limit < psched_mtu: TCQ_F_CAN_BYPASS is not set
  for (uint64_t i = 0; i < 5; ++i) ASSERT_EQ(txq->send(frames.make(0, i)), SendStatus::queued);
  EXPECT_EQ(txq->stats().bypassed, 0u);
  EXPECT_EQ(dev.log().size(), 5u);
}

TEST_P(DriverLoop, DropsAreFreedOutsideEveryLock) {
  auto txq = make("pfifo limit 1");
  int frees = 0;
  bool root_lock_free = false;
  pool.set_free_hook([&](const PacketList&) {
    ++frees;
    // drain() takes the root lock; if the freeing thread still held it, this would block.
    auto other = std::async(std::launch::async, [&] { return txq->drain(0ms); });
    root_lock_free = other.wait_for(5s) == std::future_status::ready;
  });
  dev.stop();
  ASSERT_EQ(txq->send(frames.make(0, 0)), SendStatus::queued);  // requeued
  ASSERT_EQ(txq->send(frames.make(0, 1)), SendStatus::queued);  // in the pfifo
  EXPECT_EQ(frees, 0);
  ASSERT_EQ(txq->send(frames.make(0, 2)), SendStatus::dropped);
  EXPECT_EQ(frees, 1) << "the dropped packet is freed before send() returns";
  EXPECT_TRUE(root_lock_free) << "the root lock was held while a dropped packet was freed";
  pool.set_free_hook({});
  const auto s = txq->stats();
  EXPECT_EQ(s.dropped, 1u);
  EXPECT_EQ(s.qdisc.drops, 1u);
  dev.wake();
  while (txq->service()) {
  }
  EXPECT_EQ(txq->stats().sent, 2u);
}

TEST_P(DriverLoop, HeadDropReportsCongestion) {
  if (GetParam().strategy == "nolock") GTEST_SKIP() << "nolock runs pfifo_fast, pfifo and bfifo only";
  auto txq = make("pfifo_head_drop limit 2");
  dev.stop();
  for (uint64_t i = 0; i < 3; ++i) ASSERT_EQ(txq->send(frames.make(0, i)), SendStatus::queued);
  EXPECT_EQ(txq->send(frames.make(0, 3)), SendStatus::congested);
  dev.wake();
  while (txq->service()) {
  }
  const auto log = dev.log();
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[0].seq, 0u);  // was requeued by the failed bypass
  EXPECT_EQ(log[1].seq, 2u);  // 1 was the head dropped to make room for 3
  EXPECT_EQ(log[2].seq, 3u);
  const auto s = txq->stats();
  EXPECT_EQ(s.submitted, s.sent + s.dropped);
}

TEST_P(DriverLoop, OversizedPacketIsRefusedNotTruncated) {
  auto txq = make();
  Packet* p = pool.get();
  ASSERT_NE(p, nullptr);
  p->len = dev.max_frame_len() + 1;
  EXPECT_EQ(txq->send(p), SendStatus::too_big);
  EXPECT_EQ(p->len, dev.max_frame_len() + 1u) << "never truncated";
  EXPECT_EQ(txq->stats().submitted, 0u);
  EXPECT_EQ(dev.log().size(), 0u);
  pool.put(p);  // still ours
  Packet* max = frames.make(0, 0);
  max->len = dev.max_frame_len();
  EXPECT_EQ(txq->send(max), SendStatus::queued);
}

TEST_P(DriverLoop, TeardownCountsLeftoversAsDropped) {
  const std::size_t before = pool.free_count();
  {
    auto txq = make();
    dev.stop();
    for (uint64_t i = 0; i < 20; ++i) ASSERT_EQ(txq->send(frames.make(0, i)), SendStatus::queued);
    EXPECT_EQ(pool.free_count(), before - 20);
  }
  EXPECT_EQ(pool.free_count(), before) << "every queued buffer returns to the pool";
}

bool is_peer(const std::string& strategy) { return strategy.rfind("peer:", 0) == 0; }

// Every registered strategy (so a new one meets the contract the moment it is registered), plus
// every lock kind for the strategies whose root lock takes one. Left out: the peers (no qdisc,
// no driver loop) and drainer, whose own TX thread moves packets from its rings at its own pace
// (tests/test_drainer.cpp) — every test here needs send() to reach the qdisc in the caller.
std::vector<Param> params() {
  std::vector<Param> out;
  for (const std::string& strategy : strategy_names())
    if (!is_peer(strategy) && strategy != "drainer") out.push_back({strategy, "ticket"});
  for (const char* strategy : {"busylock", "rootlock", "llist"})
    for (const std::string& lock : lock_names())
      if (lock != "ticket") out.push_back({strategy, lock});  // ticket is covered above
  return out;
}

INSTANTIATE_TEST_SUITE_P(Strategies, DriverLoop, ::testing::ValuesIn(params()),
                         [](const auto& info) {
                           return info.param.strategy + "_" + info.param.lock;
                         });

TEST(TxQueueConfig, OneTxQueuePerDevice) {
  test::ScriptedDevice dev;
  TxQueueConfig cfg;
  cfg.service_thread = false;
  auto first = TxQueue::create(dev, cfg);
  EXPECT_THROW(TxQueue::create(dev, cfg), ConfigError) << "a second queue would steal the wake";
  first.reset();
  EXPECT_NO_THROW(TxQueue::create(dev, cfg)) << "the device is free again";
}

TEST(TxQueueConfig, UnknownNamesAreOneLineErrors) {
  test::ScriptedDevice dev;
  for (auto [strategy, lock, qdisc] :
       {std::tuple{"nope", "ticket", "pfifo_fast"}, std::tuple{"busylock", "nope", "pfifo_fast"},
        std::tuple{"busylock", "ticket", "nope"}}) {
    TxQueueConfig cfg;
    cfg.strategy = strategy;
    cfg.lock = lock;
    cfg.qdisc = qdisc;
    try {
      TxQueue::create(dev, cfg);
      ADD_FAILURE() << "accepted " << strategy << "/" << lock << "/" << qdisc;
    } catch (const ConfigError& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
      EXPECT_NE(std::string(e.what()).find("nope"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace txpath
