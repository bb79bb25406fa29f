// SPDX-License-Identifier: MIT
// Lost wakeups (the Linux "packet stuck" / MISSED bug class): senders stop just as the owner
// finishes. Many short bursts from a few threads, each ending abruptly; after every burst, with
// no further send(), the backlog must reach 0 within a bounded time — only the owner, the
// service thread and device wakes may move the last packets. The device answers Busy and stops
// its queue at random, so bursts also end while a requeue or a stopped queue is pending.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "device/fault_device.hpp"
#include "txpath/frame.hpp"
#include "txpath/pool.hpp"
#include "txpath/txqueue.hpp"

using namespace std::chrono_literals;

namespace txpath {
namespace {

#if defined(TXPATH_TSAN) || defined(TXPATH_ASAN)
constexpr int kBursts = 40;
#else
constexpr int kBursts = 300;
#endif
constexpr int kThreads = 3;

class LostWakeup : public ::testing::TestWithParam<std::string> {};

TEST_P(LostWakeup, BacklogDrainsAfterEveryBurstWithoutFurtherSends) {
  Pool pool(PoolConfig{.packets = 4096, .buffer_size = 256, .cache_size = 16});
  FaultConfig fcfg;
  fcfg.busy_prob = 0.03;
  fcfg.stop_prob = 0.02;
  fcfg.max_stop_ns = 50'000;
  FaultDevice dev(fcfg);
  TxQueueConfig cfg;
  cfg.strategy = GetParam();
  cfg.lock = "ttas";
  auto txq = TxQueue::create(dev, cfg);

  std::barrier start(kThreads + 1);
  std::barrier done(kThreads + 1);
  std::atomic<bool> quit{false};
  std::vector<std::thread> senders;
  std::vector<uint64_t> seq(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    senders.emplace_back([&, t] {
      FrameTemplate tmpl;
      uint64_t rng = 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(t + 1);
      for (;;) {
        start.arrive_and_wait();
        // relaxed: set before the barrier, which orders it.
        if (quit.load(std::memory_order_relaxed)) return;
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        const int n = 1 + static_cast<int>(rng % 24);
        for (int i = 0; i < n; ++i) {
          Packet* p = pool.get();
          if (!p) break;
          p->len = static_cast<uint32_t>(tmpl.write(p->buffer(), static_cast<uint32_t>(t), seq[t]++));
          txq->send(p);
        }
        done.arrive_and_wait();
      }
    });
  }
  for (int b = 0; b < kBursts; ++b) {
    start.arrive_and_wait();
    done.arrive_and_wait();  // every sender has stopped; nobody sends until the next burst
    ASSERT_TRUE(txq->drain(5s)) << "burst " << b << ": " << txq->stats().queued
                                << " packets stranded with no further send()";
    const auto s = txq->stats();
    ASSERT_EQ(s.submitted, s.sent + s.dropped) << "burst " << b;
  }
  quit.store(true, std::memory_order_relaxed);  // relaxed: the barrier below orders it
  start.arrive_and_wait();
  for (auto& s : senders) s.join();
  EXPECT_EQ(dev.order_violations(), 0u);
  EXPECT_GT(txq->stats().requeues + dev.stats().stops, 0u) << "the faults never fired";
}

INSTANTIATE_TEST_SUITE_P(AllStrategies, LostWakeup,
                         ::testing::ValuesIn(strategy_names()),  // every registered one
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name)
                             if (c == ':') c = '_';
                           return name;
                         });

}  // namespace
}  // namespace txpath
