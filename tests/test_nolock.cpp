// SPDX-License-Identifier: MIT
// Strategy `nolock` and its lockless qdisc (qdisc/fifo_nolock.hpp):
//   * the ownership protocol step by step on the qdisc (the test thread plays owner and sender):
//     MISSED set by a sender that loses the trylock makes the owner's run_end() ask for a run;
//     the dequeue re-scan that clears MISSED; a stopped queue trading MISSED for DRAINING;
//   * per-band order, pfifo/bfifo limits and per-thread counters of the lockless qdisc;
//   * through TxQueue with the service thread off (every deferred run happens when the test
//     calls service()): what nolock adds to the driver-loop contract of tests/test_driver_loop.cpp
//     (which runs nolock too): a stopped queue without rescheduling, the bypass back after it,
//     a losing sender that returns at once while the owner is in the device, the ConfigError
//     for qdiscs that cannot run lockless.
// The stress and lost-wakeup suites cover nolock under contention (it is registered).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "qdisc/fifo_nolock.hpp"
#include "qdisc/pfifo_fast.hpp"
#include "support/scripted_device.hpp"
#include "txpath/error.hpp"
#include "txpath/frame.hpp"
#include "txpath/txqueue.hpp"
#include "txpath/tc.hpp"

using namespace std::chrono_literals;

namespace txpath {
namespace {

using Mode = NolockFifoQdisc::Mode;

// Test packets on local buffers (no pool): the qdisc never frees, it only moves pointers.
class Packets {
 public:
  explicit Packets(std::size_t n, uint32_t len = 100) : pkts_(n) {
    for (auto& p : pkts_) p.len = len;
  }
  Packet* at(std::size_t i, uint32_t priority = 0) {
    pkts_[i].priority = priority;
    return &pkts_[i];
  }
  std::size_t id(const Packet* p) const { return static_cast<std::size_t>(p - pkts_.data()); }

 private:
  std::vector<Packet> pkts_;
};

// ---------------------------------------------------------------------------------------------
// The ownership protocol on the qdisc alone.

TEST(NolockProtocol, SenderThatLosesTheTrylockSetsMissedAndOwnersRunEndSchedules) {
  NolockFifoQdisc q(Mode::pfifo_fast, 16, 1514);
  Packets pk(2);
  PacketList to_free;

  ASSERT_TRUE(q.run_begin()) << "uncontended: the first trylock wins";
  EXPECT_TRUE(q.owned());
  EXPECT_EQ(q.dequeue(), nullptr) << "the owner's last scan finds nothing";

  // A sender enqueues after that scan and loses both trylocks.
  ASSERT_EQ(q.enqueue(pk.at(0), to_free), Verdict::success);
  EXPECT_FALSE(q.run_begin());
  EXPECT_EQ(q.state(), NolockFifoQdisc::kMissed);
  // A second loser finds MISSED already set and gives up at once; the mark covers it.
  ASSERT_EQ(q.enqueue(pk.at(1), to_free), Verdict::success);
  EXPECT_FALSE(q.run_begin());
  EXPECT_EQ(q.state(), NolockFifoQdisc::kMissed);

  EXPECT_TRUE(q.run_end()) << "MISSED set: the owner must schedule a run";
  EXPECT_FALSE(q.owned());

  // The scheduled run finds both packets, then clears MISSED on the empty re-scan.
  ASSERT_TRUE(q.run_begin());
  EXPECT_EQ(q.dequeue(), pk.at(0));
  EXPECT_EQ(q.dequeue(), pk.at(1));
  EXPECT_EQ(q.state(), NolockFifoQdisc::kMissed) << "cleared only by a scan that finds nothing";
  EXPECT_EQ(q.dequeue(), nullptr);
  EXPECT_EQ(q.state(), 0u);
  EXPECT_FALSE(q.run_end()) << "nothing missed: no run to schedule";
  EXPECT_TRUE(to_free.empty());
}

TEST(NolockProtocol, OwnerSeesAPacketEnqueuedBeforeItsScanWithoutAnyRun) {
  NolockFifoQdisc q(Mode::pfifo, 16, 1514);
  Packets pk(1);
  PacketList to_free;
  ASSERT_TRUE(q.run_begin());
  ASSERT_EQ(q.enqueue(pk.at(0), to_free), Verdict::success);
  EXPECT_FALSE(q.run_begin());
  EXPECT_EQ(q.dequeue(), pk.at(0)) << "the owner dequeues the loser's packet itself";
  EXPECT_EQ(q.dequeue(), nullptr);
  EXPECT_FALSE(q.run_end()) << "the empty re-scan consumed MISSED";
}

TEST(NolockProtocol, RunEndWithoutContentionAsksForNothing) {
  NolockFifoQdisc q(Mode::pfifo, 4, 1514);
  ASSERT_TRUE(q.run_begin());
  EXPECT_FALSE(q.run_begin()) << "held: a second owner is refused";
  EXPECT_TRUE(q.run_end()) << "that refusal set MISSED";
  ASSERT_TRUE(q.run_begin());
  EXPECT_EQ(q.dequeue(), nullptr);  // clears MISSED
  EXPECT_FALSE(q.run_end());
  EXPECT_TRUE(q.try_own()) << "try_own is a plain trylock";
  EXPECT_FALSE(q.try_own());
  EXPECT_EQ(q.state(), 0u) << "try_own never sets MISSED";
  EXPECT_FALSE(q.run_end());
}

TEST(NolockProtocol, StoppedQueueTradesMissedForDraining) {
  NolockFifoQdisc q(Mode::pfifo_fast, 16, 1514);
  Packets pk(1);
  PacketList to_free;
  ASSERT_TRUE(q.run_begin());
  ASSERT_EQ(q.enqueue(pk.at(0), to_free), Verdict::success);
  EXPECT_FALSE(q.run_begin());
  ASSERT_EQ(q.state(), NolockFifoQdisc::kMissed);

  // The loop ended on a stopped device queue that is still stopped: no run is scheduled (the
  // wake will), and senders see DRAINING, so they do not try the bypass meanwhile.
  int checks = 0;
  q.park_while_stopped([&] {
    ++checks;
    return true;
  });
  EXPECT_EQ(checks, 1);
  EXPECT_EQ(q.state(), NolockFifoQdisc::kDraining);
  EXPECT_FALSE(q.run_end()) << "a stopped queue must not reschedule runs endlessly";
  EXPECT_FALSE(q.looks_empty());

  // The wake's run dequeues the packet; the empty re-scan clears DRAINING.
  ASSERT_TRUE(q.run_begin());
  EXPECT_EQ(q.dequeue(), pk.at(0));
  EXPECT_EQ(q.dequeue(), nullptr);
  EXPECT_EQ(q.state(), 0u);
  EXPECT_TRUE(q.looks_empty());
  EXPECT_FALSE(q.run_end());
}

TEST(NolockProtocol, QueueWokenDuringTheCheckKeepsTheRunScheduled) {
  NolockFifoQdisc q(Mode::pfifo, 16, 1514);
  Packets pk(1);
  PacketList to_free;
  ASSERT_TRUE(q.run_begin());
  ASSERT_EQ(q.enqueue(pk.at(0), to_free), Verdict::success);
  EXPECT_FALSE(q.run_begin());
  // The wake came between the loop's stop and the re-check: MISSED is put back.
  q.park_while_stopped([] { return false; });
  EXPECT_EQ(q.state() & NolockFifoQdisc::kMissed, NolockFifoQdisc::kMissed);
  EXPECT_TRUE(q.run_end());
}

// ---------------------------------------------------------------------------------------------
// The lockless qdisc's queueing behaviour.

TEST(NolockFifo, PfifoFastServesBandsInOrderAndFifoWithinABand) {
  NolockFifoQdisc q(Mode::pfifo_fast, 64, 1514);
  ASSERT_EQ(q.bands(), 3u);
  Packets pk(32);
  PacketList to_free;
  std::vector<std::vector<std::size_t>> expected(3);
  for (std::size_t i = 0; i < 32; ++i) {
    const auto prio = static_cast<uint32_t>((i * 5) % 16);
    ASSERT_EQ(q.enqueue(pk.at(i, prio), to_free), Verdict::success);
    expected[PfifoFastQdisc::band_of(prio)].push_back(i);
  }
  EXPECT_EQ(q.lockless_stats().qlen, 32u);
  ASSERT_TRUE(q.run_begin());
  EXPECT_EQ(q.peek(), pk.at(expected[0].front()));
  for (const auto& band : expected)
    for (std::size_t i : band) EXPECT_EQ(pk.id(q.dequeue()), i);
  EXPECT_EQ(q.dequeue(), nullptr);
  EXPECT_FALSE(q.run_end());
  const QdiscStats s = q.lockless_stats();
  EXPECT_EQ(s.qlen, 0u);
  EXPECT_EQ(s.backlog, 0u);
  EXPECT_EQ(s.packets, 32u);
  EXPECT_EQ(s.bytes, 3200u);
}

TEST(NolockFifo, PfifoFastFullBandDropsOnlyItsOwnPackets) {
  NolockFifoQdisc q(Mode::pfifo_fast, 2, 1514);
  Packets pk(5);
  PacketList to_free;
  EXPECT_EQ(q.enqueue(pk.at(0, 0), to_free), Verdict::success);  // band 1
  EXPECT_EQ(q.enqueue(pk.at(1, 0), to_free), Verdict::success);
  EXPECT_EQ(q.enqueue(pk.at(2, 0), to_free), Verdict::drop) << "band 1 holds 2";
  EXPECT_EQ(q.enqueue(pk.at(3, 6), to_free), Verdict::success) << "band 0 is unaffected";
  EXPECT_EQ(q.enqueue(pk.at(4, 1), to_free), Verdict::success) << "band 2 is unaffected";
  ASSERT_EQ(to_free.size(), 1u);
  EXPECT_EQ(to_free.front(), pk.at(2));
  const QdiscStats s = q.lockless_stats();
  EXPECT_EQ(s.drops, 1u);
  EXPECT_EQ(s.qlen, 4u);
  EXPECT_EQ(s.backlog, 400u);
}

TEST(NolockFifo, PfifoDropsAtTheLimit) {
  NolockFifoQdisc q(Mode::pfifo, 3, 1514);
  ASSERT_EQ(q.bands(), 1u);
  Packets pk(5);
  PacketList to_free;
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_EQ(q.enqueue(pk.at(i, static_cast<uint32_t>(i * 6)), to_free), Verdict::success);
  EXPECT_EQ(q.enqueue(pk.at(3), to_free), Verdict::drop);
  ASSERT_TRUE(q.run_begin());
  EXPECT_EQ(q.dequeue(), pk.at(0)) << "one FIFO, whatever the priority";
  EXPECT_EQ(q.enqueue(pk.at(4), to_free), Verdict::success) << "ring of 3 has batch 1";
  EXPECT_EQ(pk.id(q.dequeue()), 1u);
  EXPECT_EQ(pk.id(q.dequeue()), 2u);
  EXPECT_EQ(pk.id(q.dequeue()), 4u);
  q.run_end();
  EXPECT_EQ(q.lockless_stats().drops, 1u);
  EXPECT_FALSE(NolockFifoQdisc(Mode::pfifo, 0, 1514).can_bypass());
  EXPECT_TRUE(NolockFifoQdisc(Mode::pfifo, 1, 1514).can_bypass());
}

TEST(NolockFifo, BfifoAdmitsByBytesAndReleasesThemOnDequeue) {
  NolockFifoQdisc q(Mode::bfifo, 1000, 1514);
  EXPECT_EQ(q.ring_size(0), 1000u / NolockFifoQdisc::kMinFrameLen + 1);
  EXPECT_FALSE(q.can_bypass()) << "limit < psched_mtu";
  EXPECT_TRUE(NolockFifoQdisc(Mode::bfifo, 1514, 1514).can_bypass());
  Packets pk(13, 100);
  PacketList to_free;
  for (std::size_t i = 0; i < 10; ++i) ASSERT_EQ(q.enqueue(pk.at(i), to_free), Verdict::success);
  EXPECT_EQ(q.enqueue(pk.at(10), to_free), Verdict::drop) << "1000 + 100 > 1000";
  EXPECT_EQ(q.lockless_stats().backlog, 1000u);
  ASSERT_TRUE(q.run_begin());
  EXPECT_EQ(q.dequeue(), pk.at(0));
  q.run_end();
  EXPECT_EQ(q.enqueue(pk.at(11), to_free), Verdict::success) << "the dequeue released 100 bytes";
  EXPECT_EQ(q.enqueue(pk.at(12), to_free), Verdict::drop);
  const QdiscStats s = q.lockless_stats();
  EXPECT_EQ(s.drops, 2u);
  EXPECT_EQ(s.qlen, 10u);
  EXPECT_EQ(s.backlog, 1000u);
  // reset() empties it without counting drops, and gives the bytes back.
  PacketList purged;
  q.reset(purged);
  EXPECT_EQ(purged.size(), 10u);
  EXPECT_EQ(q.lockless_stats().qlen, 0u);
  EXPECT_EQ(q.lockless_stats().backlog, 0u);
  EXPECT_EQ(q.lockless_stats().drops, 2u);
  EXPECT_EQ(q.enqueue(pk.at(12), to_free), Verdict::success);
}

TEST(NolockFifo, CountersAreKeptPerThreadAndSummed) {
  NolockFifoQdisc q(Mode::pfifo, 4096, 1514);
  constexpr int kThreads = 4;
  constexpr std::size_t kEach = 500;
  Packets pk(kThreads * kEach);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      PacketList to_free;
      for (std::size_t i = 0; i < kEach; ++i)
        q.enqueue(pk.at(static_cast<std::size_t>(t) * kEach + i), to_free);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(q.lockless_stats().qlen, kThreads * kEach);
  EXPECT_EQ(q.lockless_stats().backlog, kThreads * kEach * 100);
  EXPECT_EQ(q.kind(), "pfifo");
  EXPECT_EQ(txpath::tc::options_text(q), "limit 4096p");
}

// ---------------------------------------------------------------------------------------------
// Through TxQueue, service thread off.

class NolockQueueTest : public ::testing::Test {
 protected:
  std::unique_ptr<TxQueue> make(const std::string& qdisc = "pfifo_fast") {
    TxQueueConfig cfg;
    cfg.strategy = "nolock";
    cfg.qdisc = qdisc;
    cfg.service_thread = false;
    return TxQueue::create(dev, cfg);
  }
  void run_deferred(TxQueue& txq) {
    while (txq.service()) {
    }
  }
  Pool pool{PoolConfig{.packets = 4096, .buffer_size = 2048, .cache_size = 64}};
  test::ScriptedDevice dev;
  test::FrameFactory frames{pool};
};

TEST_F(NolockQueueTest, IsRegisteredAndRunsTheLocklessTwinOfTheQdisc) {
  auto txq = make("pfifo limit 7");
  EXPECT_EQ(txq->strategy(), "nolock");
  ASSERT_NE(txq->qdisc(), nullptr);
  EXPECT_EQ(txq->qdisc()->kind(), "pfifo");
  EXPECT_EQ(txpath::tc::options_text(*txq->qdisc()), "limit 7p");
  EXPECT_NE(dynamic_cast<const NolockFifoQdisc*>(txq->qdisc()), nullptr);
}

TEST_F(NolockQueueTest, QdiscsThatCannotRunLocklessAreAOneLineConfigError) {
  try {
    make("pfifo_head_drop limit 5");
    ADD_FAILURE() << "pfifo_head_drop accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "qdisc \"pfifo_head_drop\" cannot run lockless (strategy nolock supports "
              "pfifo_fast, pfifo, bfifo)");
  }
  EXPECT_THROW(make("pfifo limit 2000000"), ConfigError) << "rings are allocated up front";
  EXPECT_THROW(make("nope"), ConfigError);
  EXPECT_NO_THROW(make("bfifo")) << "a refused spec leaves the device free";
}

TEST_F(NolockQueueTest, LocklessQlenAndTheBypassIsBackAfterAStoppedQueue) {
  auto txq = make();
  dev.stop();
  // Empty: this one tries the bypass, finds the queue stopped and is requeued (DRAINING).
  ASSERT_EQ(txq->send(frames.make(0, 0)), SendStatus::queued);
  for (uint64_t i = 1; i < 10; ++i) ASSERT_EQ(txq->send(frames.make(0, i)), SendStatus::queued);
  EXPECT_EQ(txq->stats().bypassed, 1u);
  // Nine in the rings (the lockless qdisc's per-thread counters) and the requeued one.
  EXPECT_EQ(txq->stats().qdisc.qlen, 10u);
  dev.wake();
  run_deferred(*txq);
  EXPECT_EQ(dev.log().size(), 10u);
  EXPECT_EQ(txq->stats().queued, 0u);
  // Empty again and the device running: the bypass is back.
  ASSERT_EQ(txq->send(frames.make(0, 10)), SendStatus::queued);
  EXPECT_EQ(txq->stats().bypassed, 2u);
}

TEST_F(NolockQueueTest, StoppedQueueKeepsNoRunScheduledAndEveryWinnerCountsARun) {
  constexpr std::size_t kPackets = 1000;
  auto txq = make();
  dev.stop();
  for (uint64_t i = 0; i < kPackets; ++i)
    ASSERT_EQ(txq->send(frames.make(0, i)), SendStatus::queued);
  // The first packet's bypass was refused by the stopped queue: requeued, one run scheduled.
  // That run meets the stopped queue and parks (DRAINING): nothing more until the wake.
  ASSERT_TRUE(txq->service());
  EXPECT_EQ(dev.log().size(), 0u);
  EXPECT_FALSE(txq->service()) << "a stopped queue must not keep a run scheduled";
  dev.wake();
  uint64_t wake_runs = 0;
  while (txq->service()) ++wake_runs;
  EXPECT_EQ(dev.log().size(), kPackets);
  // One run per send() (each won the seqlock), the requeue's run, and the runs after the wake;
  // drain()'s seqlock probes are not runs.
  EXPECT_TRUE(txq->drain(1s));
  EXPECT_EQ(txq->stats().runs, kPackets + 1 + wake_runs);
}

TEST_F(NolockQueueTest, PerBandOrderThroughTheQueue) {
  auto txq = make();
  dev.stop();
  ASSERT_EQ(txq->send(frames.make(0, 0, 0)), SendStatus::queued);  // bypass -> requeued
  std::vector<std::vector<uint64_t>> bands(3);
  for (uint64_t i = 1; i < 40; ++i) {
    const auto prio = static_cast<uint32_t>((i * 3) % 16);
    ASSERT_EQ(txq->send(frames.make(0, i, prio)), SendStatus::queued);
    bands[PfifoFastQdisc::band_of(prio)].push_back(i);
  }
  dev.wake();
  run_deferred(*txq);
  std::vector<uint64_t> expected{0};  // the requeued packet leaves first
  for (const auto& b : bands) expected.insert(expected.end(), b.begin(), b.end());
  const auto log = dev.log();
  ASSERT_EQ(log.size(), expected.size());
  for (std::size_t i = 0; i < log.size(); ++i) EXPECT_EQ(log[i].seq, expected[i]) << "at " << i;
}

TEST_F(NolockQueueTest, BfifoByteLimitDrops) {
  auto txq = make("bfifo limit 1000");  // below psched_mtu: no bypass
  const std::size_t before = pool.free_count();
  dev.stop();
  Packet* first = frames.make(0, 0);
  const uint32_t len = first->len;
  const uint64_t fits = 1000 / len;
  ASSERT_EQ(txq->send(first), SendStatus::queued);
  uint64_t dropped = 0;
  for (uint64_t i = 1; i < 20; ++i) {
    const SendStatus st = txq->send(frames.make(0, i));
    if (i < fits) {
      EXPECT_EQ(st, SendStatus::queued) << i;
    } else {
      EXPECT_EQ(st, SendStatus::dropped) << i;
      ++dropped;
    }
  }
  auto s = txq->stats();
  EXPECT_EQ(s.qdisc.drops, dropped);
  EXPECT_EQ(s.dropped, dropped);
  EXPECT_EQ(s.queued, fits);
  EXPECT_EQ(s.qdisc.backlog, fits * len);
  EXPECT_EQ(pool.free_count(), before - fits) << "drops went straight back to the pool";
  dev.wake();
  run_deferred(*txq);
  s = txq->stats();
  EXPECT_EQ(s.sent, fits);
  EXPECT_EQ(s.submitted, s.sent + s.dropped);
  EXPECT_EQ(s.qdisc.backlog, 0u);
}

// A device whose next xmit() blocks until released: holds the driver-loop owner (and with it
// the seqlock) inside the device, so the test can send while the qdisc is owned.
class GateDevice : public Device {
 public:
  std::string_view kind() const noexcept override { return "gate"; }
  std::string describe() const override { return "gate"; }

  XmitResult xmit(Packet* p, bool more) noexcept override {
    // acq_rel / acquire / release below: the test thread and the owner hand the gate over;
    // every store is followed by notify_all() (spin_then_park contract, here plain wait()).
    if (hold_next_.exchange(false, std::memory_order_acq_rel)) {
      entered_.store(true, std::memory_order_release);
      entered_.notify_all();
      released_.wait(false, std::memory_order_acquire);
    }
    const auto info = parse_frame(p->frame());
    seqs_.push_back(info ? info->sender * 1000 + info->seq : ~0ull);  // under tx_lock
    tx_packets_.add(1);
    pending_.push_back(p);
    if (!more) ring_and_complete(pending_);
    return XmitResult::ok;
  }

  void hold_next() { hold_next_.store(true, std::memory_order_release); }
  void wait_entered() { entered_.wait(false, std::memory_order_acquire); }
  void release() {
    released_.store(true, std::memory_order_release);
    released_.notify_all();
  }
  std::vector<uint64_t> seqs() {
    std::lock_guard lock(tx_lock());
    return seqs_;
  }

 private:
  std::atomic<bool> hold_next_{false}, entered_{false}, released_{false};
  std::vector<uint64_t> seqs_;
  PacketList pending_;
};

TEST(NolockContention, LosingSenderReturnsAtOnceAndTheOwnerSendsItsPacket) {
  Pool pool(PoolConfig{.packets = 256, .buffer_size = 2048, .cache_size = 8});
  test::FrameFactory frames(pool);
  GateDevice dev;
  TxQueueConfig cfg;
  cfg.strategy = "nolock";
  cfg.service_thread = false;
  auto txq = TxQueue::create(dev, cfg);

  dev.hold_next();
  Packet* first = frames.make(0, 0);
  std::thread owner([&] { txq->send(first); });  // bypass: owns the qdisc, blocks in xmit
  dev.wait_entered();

  // The qdisc is owned: this sender neither waits nor transmits; it leaves MISSED behind.
  EXPECT_EQ(txq->send(frames.make(1, 0)), SendStatus::queued);
  EXPECT_EQ(txq->send(frames.make(1, 1)), SendStatus::queued);
  auto s = txq->stats();
  EXPECT_EQ(s.queued, 2u);
  EXPECT_EQ(s.sent, 0u);
  EXPECT_EQ(s.runs, 1u) << "only the owner's run";

  dev.release();
  owner.join();
  // The owner found the packets before giving up the seqlock (its loop, or its MISSED re-scan).
  EXPECT_EQ(dev.seqs(), (std::vector<uint64_t>{0, 1000, 1001}));
  EXPECT_FALSE(txq->service()) << "the owner consumed MISSED: nothing left to schedule";
  s = txq->stats();
  EXPECT_EQ(s.sent, 3u);
  EXPECT_EQ(s.queued, 0u);
  EXPECT_EQ(s.bypassed, 1u);
  EXPECT_TRUE(txq->drain(1s));
}

}  // namespace
}  // namespace txpath
