// SPDX-License-Identifier: MIT
// The qdisc watchdog (qdisc_watchdog_schedule_ns): a shaping qdisc that holds packets which
// become eligible later names that time, and the driver loop runs again then — with no further
// send() and without polling. Without it, the last packets behind a shaper would be stranded.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.hpp"
#include "device/null_device.hpp"
#include "strategy/factories.hpp"
#include "txpath/pool.hpp"
#include "txpath/qdisc.hpp"
#include "txpath/txqueue.hpp"

using namespace txpath;
using namespace std::chrono_literals;

namespace {

// A FIFO in which every packet becomes eligible `delay_ns` after it was enqueued (a crude
// shaper): dequeue() returns nullptr while the head is not yet eligible and says when it will be.
class GateQdisc final : public Qdisc {
 public:
  explicit GateQdisc(uint64_t delay_ns) : delay_ns_(delay_ns) {}
  std::string_view kind() const noexcept override { return "gate"; }
  DumpAttrs dump_options() const override { return {}; }
  Verdict enqueue(Packet* p, PacketList&) noexcept override {
    p->enqueue_ns = now_ns() + delay_ns_;  // reused as the eligible time
    q_.push_back(p);
    account_enqueue(*p);
    return Verdict::success;
  }
  Packet* dequeue() noexcept override {
    dequeues_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a test statistic
    Packet* p = q_.front();
    if (!p || p->enqueue_ns > now_ns()) return nullptr;
    q_.pop_front();
    account_dequeue(*p);
    return p;
  }
  Packet* peek() noexcept override { return q_.front(); }
  void reset(PacketList& to_free) noexcept override {
    while (Packet* p = q_.pop_front()) {
      account_remove(*p);
      to_free.push_back(p);
    }
  }
  uint64_t watchdog_ns() const noexcept override {
    const Packet* p = q_.front();
    return p && p->enqueue_ns > now_ns() ? p->enqueue_ns : 0;
  }
  uint64_t dequeues() const noexcept { return dequeues_.load(std::memory_order_relaxed); }

 private:
  const uint64_t delay_ns_;
  PacketList q_;
  std::atomic<uint64_t> dequeues_{0};
};

using Factory = std::unique_ptr<QueueBase> (*)(Device&, std::unique_ptr<Qdisc>,
                                               const TxQueueConfig&);

struct Case {
  const char* name;
  Factory make;
};

class Watchdog : public ::testing::TestWithParam<Case> {};

TEST_P(Watchdog, ShapedPacketsLeaveWhenEligibleWithoutAnotherSendOrPolling) {
  constexpr uint64_t kDelay = 100'000'000;  // 100 ms
  constexpr int kSenders = 3, kPerSender = 40;
  NullDevice dev;
  Pool pool(PoolConfig{.packets = 1024, .buffer_size = 256, .cache_size = 0});
  auto gate = std::make_unique<GateQdisc>(kDelay);
  GateQdisc* g = gate.get();
  TxQueueConfig cfg;
  cfg.strategy = GetParam().name;
  auto q = GetParam().make(dev, std::move(gate), cfg);
  q->start_service();
  const uint64_t start = now_ns();
  std::vector<std::thread> threads;
  for (int t = 0; t < kSenders; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPerSender; ++i) {
        Packet* p = pool.get();
        ASSERT_NE(p, nullptr);
        p->len = 60;
        EXPECT_EQ(q->send(p), SendStatus::queued);
      }
    });
  }
  for (auto& th : threads) th.join();
  // Nothing is eligible before start + kDelay: if the senders finished (and the statistics were
  // read) inside that window, every packet is still queued, none sent. A slow run (a sanitizer
  // on a loaded machine) may pass the window; then the first packets may rightly have left.
  const uint64_t sent_early = q->stats().sent;
  if (now_ns() - start < kDelay) {
    EXPECT_EQ(sent_early, 0u) << "sent before they were eligible";
  }
  // No further send(): only the watchdog can move them.
  ASSERT_TRUE(q->drain(10s)) << "packets stranded behind the shaper";
  const TxQueueStats st = q->stats();
  EXPECT_EQ(st.sent, uint64_t{kSenders * kPerSender});
  EXPECT_EQ(st.queued, 0u);
  EXPECT_GE(now_ns() - start, kDelay) << "sent before they were eligible";
  // No polling: a few dequeue attempts per send and per watchdog expiry, not one per tick
  // (a 50 us tick over 100 ms alone would be 2000).
  EXPECT_LT(g->dequeues(), 4u * kSenders * kPerSender + 200) << g->dequeues();
}

INSTANTIATE_TEST_SUITE_P(Strategies, Watchdog,
                         ::testing::Values(Case{"busylock", &make_busylock_queue},
                                           Case{"rootlock", &make_rootlock_queue},
                                           Case{"llist", &make_llist_queue},
                                           Case{"mutex", &make_mutex_queue},
                                           Case{"combining", &make_combining_queue},
                                           Case{"drainer", &make_drainer_queue},
                                           Case{"sharded", &make_sharded_queue}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace

namespace {

// The real shaper end to end: tbf through a TxQueue. Everything accepted leaves, paced, after
// the senders stopped, and not faster than burst + rate * elapsed allows.
TEST(WatchdogTbf, EverythingAcceptedLeavesPacedAfterSendersStop) {
  NullDevice dev;
  Pool pool(PoolConfig{.packets = 256, .buffer_size = 2048, .cache_size = 0});
  TxQueueConfig cfg;
  cfg.strategy = "busylock";
  cfg.qdisc = "tbf rate 8mbit burst 3000 limit 60000";  // 1 MB/s, two 1500-byte packets of burst
  auto q = TxQueue::create(dev, cfg);
  const uint64_t start = now_ns();
  for (int i = 0; i < 30; ++i) {
    Packet* p = pool.get();
    ASSERT_NE(p, nullptr);
    p->len = 1500;
    EXPECT_EQ(q->send(p), SendStatus::queued);
  }
  ASSERT_TRUE(q->drain(10s));
  const double elapsed_s = static_cast<double>(now_ns() - start) / 1e9;
  const TxQueueStats st = q->stats();
  EXPECT_EQ(st.sent, 30u);
  EXPECT_EQ(st.dropped, 0u);
  EXPECT_GT(st.qdisc.overlimits, 0u) << "the shaper never throttled";
  // 45000 bytes with a 3000-byte bucket at 1e6 B/s take at least 42 ms.
  EXPECT_GE(elapsed_s, 0.042);
}

}  // namespace
