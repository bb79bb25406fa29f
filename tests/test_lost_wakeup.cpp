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
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "device/fault_device.hpp"
#include "txpath/frame.hpp"
#include "txpath/multiqueue.hpp"
#include "txpath/netdev.hpp"
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

struct LostWakeupParam {
  std::string strategy;
  uint32_t queues;  // TX queues of the device (> 1: a MultiQueueTx, the flow hash spreads)
};

class LostWakeup : public ::testing::TestWithParam<LostWakeupParam> {};

TEST_P(LostWakeup, BacklogDrainsAfterEveryBurstWithoutFurtherSends) {
  Pool pool(PoolConfig{.packets = 4096, .buffer_size = 256, .cache_size = 16});
  std::vector<std::unique_ptr<Device>> queues;
  std::vector<FaultDevice*> faults;
  for (uint32_t q = 0; q < GetParam().queues; ++q) {
    FaultConfig fcfg;
    fcfg.busy_prob = 0.03;
    fcfg.stop_prob = 0.02;
    fcfg.max_stop_ns = 50'000;
    fcfg.seed = 1 + q;
    queues.push_back(std::make_unique<FaultDevice>(fcfg));
    faults.push_back(static_cast<FaultDevice*>(queues.back().get()));
  }
  NetDevice dev(std::move(queues), "fault");
  MultiQueueConfig cfg;
  cfg.queue.strategy = GetParam().strategy;
  cfg.queue.lock = "ttas";
  auto txq = MultiQueueTx::create(dev, cfg);

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
          p->flow_hash = static_cast<uint32_t>(rng >> 32) | 1;  // flows spread over the queues
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
  uint64_t stops = 0;
  for (FaultDevice* f : faults) {
    EXPECT_EQ(f->order_violations(), 0u);
    stops += f->stats().stops;
  }
  EXPECT_GT(txq->stats().requeues + stops, 0u) << "the faults never fired";
}

std::vector<LostWakeupParam> lost_wakeup_params() {
  std::vector<LostWakeupParam> out;
  for (const std::string& s : strategy_names()) {  // every registered one
    out.push_back({s, 1});
    out.push_back({s, 3});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllStrategies, LostWakeup, ::testing::ValuesIn(lost_wakeup_params()),
                         [](const auto& info) {
                           std::string name = info.param.strategy;
                           for (char& c : name)
                             if (c == ':') c = '_';
                           // One queue keeps the test's old name.
                           return info.param.queues == 1 ? name : name + "_q" + std::to_string(info.param.queues);
                         });

}  // namespace
}  // namespace txpath
