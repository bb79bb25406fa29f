// SPDX-License-Identifier: MIT
// The masked completion interrupt (engine/irq_deferral.hpp): while another thread keeps polling
// the device, the service thread's timed wake-ups back off and raise_irq() stops kicking it;
// reaping completions itself, or finding the ring untouched, unmasks it. And a masked interrupt
// strands nothing: once the sender that did the polling stops, the service thread alone reaps
// what is left.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "engine/irq_deferral.hpp"
#include "support/scripted_device.hpp"
#include "txpath/device.hpp"
#include "txpath/pool.hpp"
#include "txpath/txqueue.hpp"

using namespace txpath;
using namespace std::chrono_literals;

namespace {

constexpr uint64_t kTick = 50'000;  // ns
constexpr uint64_t kCap = 1'000'000;

IrqDeferral::Wake timed(uint64_t poll_seen) { return {.timed_out = true, .poll_seen = poll_seen}; }

}  // namespace

TEST(IrqDeferral, StartsUnmaskedWithNoDelay) {
  const IrqDeferral irq;
  EXPECT_FALSE(irq.masked());
  EXPECT_EQ(irq.delay_ns(kTick, kCap), 0u);
}

TEST(IrqDeferral, EachTimedWakeThatFindsThePollDoneElsewhereDoublesTheDelayUpToFourTicks) {
  IrqDeferral irq;
  const std::vector<uint64_t> want = {kTick, 2 * kTick, 4 * kTick, 4 * kTick, 4 * kTick};
  uint64_t poll = 1000;
  for (const uint64_t delay : want) {
    irq.after(timed(poll), /*polled=*/false, poll + 500);  // the poll time moved on without us
    poll += 500;
    EXPECT_TRUE(irq.masked());
    EXPECT_EQ(irq.delay_ns(kTick, kCap), delay);
  }
  EXPECT_EQ(irq.deferrals(), IrqDeferral::kMax);
  EXPECT_EQ(irq.delay_ns(kTick, 3 * kTick), 3 * kTick) << "never past the cap";
  // A poll time that was 0 (nothing in flight) and is no longer: activity, not idleness.
  IrqDeferral fresh;
  fresh.after(timed(0), false, 7000);
  EXPECT_TRUE(fresh.masked());
}

TEST(IrqDeferral, ReapingItselfOrFindingTheRingUntouchedUnmasks) {
  IrqDeferral irq;
  irq.after(timed(1000), false, 2000);
  irq.after(timed(2000), false, 3000);
  ASSERT_EQ(irq.deferrals(), 2u);
  irq.after(timed(3000), /*polled=*/true, 3000);
  EXPECT_FALSE(irq.masked()) << "the completions were the service thread's to reap";
  irq.after(timed(3000), false, 4000);
  ASSERT_TRUE(irq.masked());
  irq.after(timed(4000), false, 4000);
  EXPECT_FALSE(irq.masked()) << "nobody touched the ring while it slept: nobody else polls";
  irq.after(timed(0), false, 0);
  EXPECT_FALSE(irq.masked()) << "idle stays unmasked";
}

TEST(IrqDeferral, AKickOrTheWatchdogChangesNothing) {
  IrqDeferral irq;
  irq.after(timed(1000), false, 2000);
  ASSERT_EQ(irq.deferrals(), 1u);
  irq.after(IrqDeferral::Wake{.timed_out = false, .poll_seen = 2000}, false, 9000);
  EXPECT_EQ(irq.deferrals(), 1u);
  irq.after(IrqDeferral::Wake{.timed_out = false, .poll_seen = 9000}, false, 9000);
  EXPECT_EQ(irq.deferrals(), 1u) << "a kick is not a look at an untouched ring";
}

// A sender slower than the wire (pkt=2 us a packet) that reaps on every xmit (clean=1), with a
// slow interrupt (irq=200 us), does all the polling: the service thread's interrupt is masked
// most of the time. When the sender stops with its last packets in flight, nobody calls
// service(): the service thread's backed-off timer must reap them, and the pool must fill
// again. A masked timer that never fired fails drain() (checked by making it so).
TEST(IrqDeferral, AMaskedInterruptStrandsNothingOnceTheSenderStops) {
  Pool pool(PoolConfig{.packets = 512, .buffer_size = 256, .cache_size = 0});
  test::FrameFactory frames(pool);
  auto dev = make_device("nic:pkt=2000,doorbell=0,ring=128,clean=1,irq=200000,bql=0");
  TxQueueConfig cfg;
  cfg.strategy = "busylock";
  auto txq = TxQueue::create(*dev, cfg);
  std::vector<Packet*> burst;
  std::vector<SendStatus> status;
  uint64_t seq = 0;
  uint64_t queued = 0;
  const auto until = std::chrono::steady_clock::now() + 300ms;
  for (int rounds = 0; std::chrono::steady_clock::now() < until || rounds < 100; ++rounds) {
    burst.clear();
    while (burst.size() < 16) {
      Packet* p = frames.make(0, seq);
      if (!p) break;
      burst.push_back(p);
      ++seq;
    }
    if (burst.empty()) {
      std::this_thread::yield();  // the budget is spent: the service thread reaps, or clean on xmit
      continue;
    }
    status.assign(burst.size(), SendStatus::too_big);
    queued += txq->send_burst(burst, status);
  }
  ASSERT_GT(queued, 0u);
  ASSERT_TRUE(txq->drain(30s)) << "completions stranded in the ring";
  const TxQueueStats s = txq->stats();
  EXPECT_EQ(s.submitted, s.sent + s.dropped + s.queued);
  EXPECT_EQ(dev->in_flight(), 0u);
  EXPECT_EQ(pool.free_count(), pool.capacity()) << "every buffer came back without service()";
}
