// SPDX-License-Identifier: MIT
// The `drainer` strategy (src/strategy/drainer.cpp): per-sender SPSC rings polled by a dedicated
// drainer thread. What is specific to it — the registry-driven stress and lost-wakeup suites
// cover the shared invariants:
//  * every packet send() accepted reaches the device, per sender in order, with many threads;
//  * a full ring drops exactly the newest packets and counts them (the drainer is held inside the
//    driver loop by holding the device's tx lock, so the ring cannot move: deterministic);
//  * after an idle spell (the drainer spins, then parks) one send is delivered with no further
//    send — under both park policies;
//  * the thread_local ring cache stays correct while queues are created and destroyed from the
//    same threads, two at a time;
//  * more concurrent senders than per-sender rings (1024) share the fallback ring, and rings of
//    exited threads are adopted by new ones;
//  * a lone sender transmits itself only on a device whose doorbell costs nothing, keeps its
//    order when refusals hand its packets to the drainer and back, and stops once a second
//    sender registers; with random refusals and stops while a second sender joins, every packet
//    of both arrives once, each sender's in order.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <latch>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "device/fault_device.hpp"
#include "support/scripted_device.hpp"
#include "txpath/frame.hpp"
#include "txpath/pool.hpp"
#include "txpath/spin.hpp"
#include "txpath/txqueue.hpp"

using namespace std::chrono_literals;

namespace txpath {
namespace {

#if defined(TXPATH_TSAN) || defined(TXPATH_ASAN)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// A queue limit no test reaches: every drop then comes from the drainer's rings.
constexpr const char* kBigFifo = "pfifo limit 1000000";

FaultConfig in_order_faults(double busy, double stop) {
  FaultConfig f;
  f.busy_prob = busy;
  f.stop_prob = stop;
  f.max_stop_ns = 50'000;
  f.order_key = [](const Packet&) { return 0u; };  // one band: order per sender overall
  return f;
}

TxQueueConfig drainer_config(const char* qdisc = kBigFifo) {
  TxQueueConfig cfg;
  cfg.strategy = "drainer";
  cfg.lock = "ttas";
  cfg.qdisc = qdisc;
  return cfg;
}

Packet* get_packet(Pool& pool) {
  Packet* p = pool.get();
  while (!p) {  // buffers are in flight: wait for completions
    std::this_thread::yield();
    p = pool.get();
  }
  return p;
}

// Sends seq to txq as `sender`; returns the status.
SendStatus send_one(TxQueue& txq, Pool& pool, const FrameTemplate& tmpl, uint32_t sender,
                    uint64_t seq) {
  Packet* p = get_packet(pool);
  p->len = static_cast<uint32_t>(tmpl.write(p->buffer(), sender, seq));
  return txq.send(p);
}

// A ScriptedDevice whose doorbell costs something or nothing (xmit_more_pays()), counting the
// xmit() calls made on threads other than the one that created it (the drainer's, the service
// thread's).
class XmitThreadDevice : public test::ScriptedDevice {
 public:
  explicit XmitThreadDevice(bool doorbell_costs) : doorbell_costs_(doorbell_costs) {}
  bool xmit_more_pays() const noexcept override { return doorbell_costs_; }
  XmitResult xmit(Packet* p, bool more) noexcept override {
    // relaxed: a counter read after drain() (which synchronises with the drainer's work).
    if (std::this_thread::get_id() != creator_) elsewhere_.fetch_add(1, std::memory_order_relaxed);
    return ScriptedDevice::xmit(p, more);
  }
  uint64_t elsewhere() const { return elsewhere_.load(std::memory_order_relaxed); }

 private:
  const bool doorbell_costs_;
  const std::thread::id creator_ = std::this_thread::get_id();
  std::atomic<uint64_t> elsewhere_{0};
};

std::vector<uint64_t> seqs_of(test::ScriptedDevice& dev, uint32_t sender) {
  std::vector<uint64_t> seqs;
  for (const auto& r : dev.log())
    if (r.sender == sender) seqs.push_back(r.seq);
  return seqs;
}

// drainer.cpp, "A lone sender": where the doorbell costs nothing, the only sender thread
// transmits its own packets on an idle queue; where it costs, the drainer sends every one. A
// second sender thread ends the lone sender's path for good.
TEST(Drainer, ALoneSenderSendsItselfOnlyWhereTheDoorbellCostsNothing) {
  Pool pool(PoolConfig{.packets = 4096, .buffer_size = 256, .cache_size = 16});
  FrameTemplate tmpl;
  for (const bool doorbell_costs : {false, true}) {
    XmitThreadDevice dev(doorbell_costs);
    auto txq = TxQueue::create(dev, drainer_config());
    for (uint64_t seq = 0; seq < 500; ++seq)
      ASSERT_EQ(send_one(*txq, pool, tmpl, 0, seq), SendStatus::queued);
    ASSERT_TRUE(txq->drain(10s));
    EXPECT_EQ(dev.elsewhere(), doorbell_costs ? 500u : 0u) << "doorbell costs " << doorbell_costs;
    EXPECT_EQ(txq->stats().sent, 500u);
    std::thread([&] { ASSERT_EQ(send_one(*txq, pool, tmpl, 1, 0), SendStatus::queued); }).join();
    for (uint64_t seq = 500; seq < 600; ++seq)
      ASSERT_EQ(send_one(*txq, pool, tmpl, 0, seq), SendStatus::queued);
    ASSERT_TRUE(txq->drain(10s));
    EXPECT_EQ(dev.elsewhere(), doorbell_costs ? 601u : 101u) << "doorbell costs " << doorbell_costs;
    const std::vector<uint64_t> seqs = seqs_of(dev, 0);
    ASSERT_EQ(seqs.size(), 600u);
    for (uint64_t i = 0; i < seqs.size(); ++i) ASSERT_EQ(seqs[i], i) << "per-sender order";
  }
}

// The lone sender's path and the drainer take turns: a refused xmit leaves a requeued packet,
// so the sender's next packets find the queue busy and go through its ring until the drainer
// (or the service thread) has sent them; then the sender sends itself again. Order and count
// hold throughout.
TEST(Drainer, ALoneSenderKeepsItsOrderAcrossRefusalsAndHandOvers) {
  Pool pool(PoolConfig{.packets = 4096, .buffer_size = 256, .cache_size = 16});
  FrameTemplate tmpl;
  XmitThreadDevice dev(/*doorbell_costs=*/false);
  auto txq = TxQueue::create(dev, drainer_config());
  constexpr uint64_t kPackets = 3000;
  for (uint64_t seq = 0; seq < kPackets; ++seq) {
    if (seq % 300 == 100) dev.refuse_call(dev.calls());  // the next xmit call answers busy
    ASSERT_EQ(send_one(*txq, pool, tmpl, 0, seq), SendStatus::queued);
  }
  ASSERT_TRUE(txq->drain(10s));
  EXPECT_EQ(txq->stats().sent, kPackets);
  EXPECT_GT(dev.elsewhere(), 0u) << "refused packets are sent by another thread";
  EXPECT_LT(dev.elsewhere(), kPackets) << "the sender sent some itself";
  const std::vector<uint64_t> seqs = seqs_of(dev, 0);
  ASSERT_EQ(seqs.size(), kPackets);
  for (uint64_t i = 0; i < seqs.size(); ++i) ASSERT_EQ(seqs[i], i) << "per-sender order";
}

// The lone sender's path under a device that refuses and stops at random (a chaos thread) while
// a second sender joins halfway: both senders' packets all arrive, each in order, none twice.
TEST(Drainer, ALoneSenderSurvivesRefusalsStopsAndASecondSenderJoining) {
  const uint64_t per_sender = kSanitized ? 2000 : 20000;
  Pool pool(PoolConfig{.packets = 8192, .buffer_size = 256, .cache_size = 16});
  FrameTemplate tmpl;
  XmitThreadDevice dev(/*doorbell_costs=*/false);
  auto txq = TxQueue::create(dev, drainer_config());
  std::atomic<bool> done{false};
  std::latch chaos_began(1);
  std::thread chaos([&] {
    for (uint64_t i = 0; !done.load(std::memory_order_relaxed); ++i) {  // relaxed: a stop flag
      if (i % 3 == 0) dev.refuse_call(dev.calls() + i % 5);
      if (i % 7 == 0) {
        dev.stop();
        if (i == 0) chaos_began.count_down();  // the senders start against a stopped queue
        std::this_thread::sleep_for(20us);
        dev.wake();
      }
      std::this_thread::sleep_for(50us);
    }
    dev.wake();
  });
  chaos_began.wait();
  std::latch halfway(1);
  std::thread second([&] {
    halfway.wait();
    for (uint64_t seq = 0; seq < per_sender; ++seq)
      ASSERT_EQ(send_one(*txq, pool, tmpl, 1, seq), SendStatus::queued);
  });
  for (uint64_t seq = 0; seq < per_sender; ++seq) {
    if (seq == per_sender / 2) halfway.count_down();
    ASSERT_EQ(send_one(*txq, pool, tmpl, 0, seq), SendStatus::queued);
  }
  second.join();
  done.store(true, std::memory_order_relaxed);  // relaxed: see above
  chaos.join();
  ASSERT_TRUE(txq->drain(30s));
  EXPECT_EQ(txq->stats().sent, 2 * per_sender);
  EXPECT_GT(dev.stats().stops, 0u);
  EXPECT_GT(dev.stats().busy, 0u) << "a refusal was armed before the first send";
  for (uint32_t sender : {0u, 1u}) {
    const std::vector<uint64_t> seqs = seqs_of(dev, sender);
    ASSERT_EQ(seqs.size(), per_sender) << "sender " << sender;
    for (uint64_t i = 0; i < seqs.size(); ++i) ASSERT_EQ(seqs[i], i) << "sender " << sender;
  }
}

TEST(Drainer, EveryAcceptedPacketArrivesInOrderPerSender) {
  const int threads = 16;
  const uint64_t per_thread = kSanitized ? 300 : 4000;
  Pool pool(PoolConfig{.packets = 8192, .buffer_size = 256, .cache_size = 16});
  FaultDevice dev(in_order_faults(0.02, 0.01));
  auto txq = TxQueue::create(dev, drainer_config());

  std::vector<uint64_t> accepted(threads, 0), dropped(threads, 0);
  std::vector<std::thread> senders;
  std::latch go(threads + 1);
  for (int t = 0; t < threads; ++t) {
    senders.emplace_back([&, t] {
      FrameTemplate tmpl;
      go.arrive_and_wait();
      for (uint64_t seq = 0; seq < per_thread; ++seq) {
        const SendStatus s = send_one(*txq, pool, tmpl, static_cast<uint32_t>(t), seq);
        ASSERT_NE(s, SendStatus::too_big);
        ++(s == SendStatus::queued ? accepted : dropped)[static_cast<std::size_t>(t)];
      }
    });
  }
  go.arrive_and_wait();
  for (auto& s : senders) s.join();

  ASSERT_TRUE(txq->drain(20s)) << txq->stats().queued << " packets stranded";
  const TxQueueStats s = txq->stats();
  EXPECT_EQ(s.submitted, per_thread * threads);
  EXPECT_EQ(s.queued, 0u);
  EXPECT_EQ(s.submitted, s.sent + s.dropped);
  EXPECT_EQ(s.qdisc.drops, 0u);
  uint64_t all_dropped = 0;
  for (int t = 0; t < threads; ++t) {
    // Accepted means delivered: the queue's only drop point here is a full ring, at send().
    EXPECT_EQ(dev.sent_by(static_cast<uint32_t>(t)), accepted[static_cast<std::size_t>(t)])
        << "sender " << t;
    all_dropped += dropped[static_cast<std::size_t>(t)];
  }
  EXPECT_EQ(s.dropped, all_dropped);
  EXPECT_EQ(dev.order_violations(), 0u) << "a packet was sent twice or out of order";
  EXPECT_EQ(dev.unparsable(), 0u);
  EXPECT_GT(s.device.busy + s.device.stops, 0u) << "the faults never fired";
}

TEST(Drainer, FullRingMakesTheSenderWaitAndLosesNothing) {
  Pool pool(PoolConfig{.packets = 8192, .buffer_size = 256, .cache_size = 16});
  test::ScriptedDevice dev;
  test::FrameFactory frames(pool);
  auto txq = TxQueue::create(dev, drainer_config());

  // Hold the device's tx lock: the drainer takes the first packet, enqueues (or bypasses) it,
  // wins RUNNING and blocks in the device call, so it cannot take anything more from the rings.
  std::unique_lock tx(dev.tx_lock());
  ASSERT_EQ(txq->send(frames.make(0, 0)), SendStatus::queued);
  while (txq->stats().queued != 0) std::this_thread::yield();  // taken out of the ring

  // More than any ring holds (at most 4096 slots), from one sender thread.
  constexpr uint64_t kMore = 6000;
  std::atomic<uint64_t> returned{0};
  std::atomic<uint64_t> not_queued{0};
  std::vector<Packet*> packets;
  for (uint64_t seq = 1; seq <= kMore; ++seq) packets.push_back(frames.make(0, seq));
  std::thread sender([&] {
    for (Packet* p : packets) {
      if (txq->send(p) != SendStatus::queued) not_queued.fetch_add(1);
      returned.fetch_add(1);
    }
  });
  // The ring fills and the sender must then wait (the drainer is held): its send() calls stop
  // returning. A ring that dropped instead would let all of them return at once.
  uint64_t last = 0;
  for (int still = 0; still < 50;) {
    std::this_thread::sleep_for(2ms);
    const uint64_t now = returned.load();
    still = now == last ? still + 1 : 0;
    last = now;
  }
  EXPECT_LT(last, kMore) << "a full ring must hold the sender back, not drop";
  EXPECT_GT(last, 0u);
  EXPECT_EQ(not_queued.load(), 0u);
  EXPECT_EQ(txq->stats().queued, last) << "the ring's packets must be counted as queued";
  EXPECT_EQ(txq->stats().sent, 0u);
  tx.unlock();
  sender.join();

  ASSERT_TRUE(txq->drain(10s));
  const TxQueueStats s = txq->stats();
  EXPECT_EQ(not_queued.load(), 0u);
  EXPECT_EQ(s.submitted, kMore + 1);
  EXPECT_EQ(s.sent, kMore + 1) << "nothing may be lost to a full ring";
  const auto log = dev.log();
  ASSERT_EQ(log.size(), kMore + 1);
  for (uint64_t i = 0; i < log.size(); ++i) EXPECT_EQ(log[i].seq, i) << "in order";
}

class DrainerPark : public ::testing::TestWithParam<bool> {};

TEST_P(DrainerPark, OneSendAfterAnIdleSpellIsDelivered) {
  const bool saved = spin_park();
  set_spin_park(GetParam());
  {
    const int rounds = kSanitized ? 60 : 300;
    Pool pool(PoolConfig{.packets = 256, .buffer_size = 256, .cache_size = 16});
    test::ScriptedDevice dev;
    test::FrameFactory frames(pool);
    auto txq = TxQueue::create(dev, drainer_config("pfifo_fast"));
    for (int r = 0; r < rounds; ++r) {
      // Idle spells from 0 to ~3 ms: the drainer is caught sweeping, spinning, about to park
      // and parked.
      std::this_thread::sleep_for(std::chrono::microseconds((r * 397) % 3000));
      ASSERT_EQ(txq->send(frames.make(0, static_cast<uint64_t>(r))), SendStatus::queued);
      ASSERT_TRUE(txq->drain(5s)) << "round " << r << ": the drainer missed its wake-up";
      ASSERT_EQ(txq->stats().sent, static_cast<uint64_t>(r) + 1);
    }
    const auto log = dev.log();
    for (std::size_t i = 0; i < log.size(); ++i) EXPECT_EQ(log[i].seq, i);
  }
  set_spin_park(saved);
}

INSTANTIATE_TEST_SUITE_P(Policies, DrainerPark, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "park" : "yield"; });

TEST(Drainer, ThreadCachesSurviveQueuesComingAndGoing) {
  constexpr int kThreads = 4;
  constexpr int kQueues = 2;  // alive at once; senders alternate between them
  const int rounds = kSanitized ? 25 : 150;
  const uint64_t per_queue = 40;
  Pool pool(PoolConfig{.packets = 4096, .buffer_size = 256, .cache_size = 16});

  std::vector<std::unique_ptr<FaultDevice>> devs(kQueues);
  std::vector<std::unique_ptr<TxQueue>> queues(kQueues);
  std::vector<std::array<uint64_t, kQueues>> accepted(kThreads);
  std::barrier sync(kThreads + 1);
  std::atomic<bool> quit{false};
  std::vector<std::thread> senders;
  for (int t = 0; t < kThreads; ++t) {
    senders.emplace_back([&, t] {
      FrameTemplate tmpl;
      for (;;) {
        sync.arrive_and_wait();  // queues created
        // relaxed: set before the barrier, which orders it.
        if (quit.load(std::memory_order_relaxed)) return;
        for (uint64_t seq = 0; seq < per_queue; ++seq)
          for (int q = 0; q < kQueues; ++q)
            if (send_one(*queues[q], pool, tmpl, static_cast<uint32_t>(t), seq) == SendStatus::queued)
              ++accepted[t][q];
        sync.arrive_and_wait();  // done sending
      }
    });
  }
  for (int r = 0; r < rounds; ++r) {
    for (int q = 0; q < kQueues; ++q) {
      devs[q] = std::make_unique<FaultDevice>(in_order_faults(0.01, 0.0));
      queues[q] = TxQueue::create(*devs[q], drainer_config());
    }
    for (auto& a : accepted) a.fill(0);
    sync.arrive_and_wait();
    sync.arrive_and_wait();
    for (int q = 0; q < kQueues; ++q) {
      ASSERT_TRUE(queues[q]->drain(5s)) << "round " << r << " queue " << q;
      const TxQueueStats s = queues[q]->stats();
      ASSERT_EQ(s.submitted, per_queue * kThreads);
      ASSERT_EQ(s.submitted, s.sent + s.dropped);
      for (int t = 0; t < kThreads; ++t)
        ASSERT_EQ(devs[q]->sent_by(static_cast<uint32_t>(t)), accepted[t][q])
            << "round " << r << " queue " << q << " sender " << t;
      ASSERT_EQ(devs[q]->order_violations(), 0u);
      queues[q].reset();  // destroyed while the senders' caches still name it
      devs[q].reset();
    }
  }
  quit.store(true, std::memory_order_relaxed);  // relaxed: the barrier orders it
  sync.arrive_and_wait();
  for (auto& s : senders) s.join();
  EXPECT_EQ(pool.free_count(), pool.capacity());
}

TEST(Drainer, MoreSendersThanRingsShareTheFallbackAndExitedRingsAreReused) {
  constexpr int kWave1 = 1100;  // > 1024 per-sender rings, all alive at once
  constexpr int kWave2 = 300;   // later threads: adopt rings of exited ones
  constexpr uint64_t kEach = 3;
  Pool pool(PoolConfig{.packets = 8192, .buffer_size = 256, .cache_size = 4});
  FaultDevice dev(in_order_faults(0.0, 0.0));
  TxQueueConfig cfg = drainer_config();
  cfg.txqueuelen = 63;  // the smallest rings (64 slots): 1024 of them stay small
  auto txq = TxQueue::create(dev, cfg);

  auto wave = [&](uint32_t first_sender, int n) {
    std::vector<uint64_t> accepted(static_cast<std::size_t>(n), 0);
    std::latch sent(n + 1), release(1);
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) {
      threads.emplace_back([&, i] {
        FrameTemplate tmpl;
        for (uint64_t seq = 0; seq < kEach; ++seq)
          if (send_one(*txq, pool, tmpl, first_sender + static_cast<uint32_t>(i), seq) ==
              SendStatus::queued)
            ++accepted[static_cast<std::size_t>(i)];
        sent.arrive_and_wait();
        release.wait();  // stay alive (and registered) until every thread has sent
      });
    }
    sent.arrive_and_wait();
    EXPECT_TRUE(txq->drain(20s));
    for (int i = 0; i < n; ++i)
      EXPECT_EQ(dev.sent_by(first_sender + static_cast<uint32_t>(i)), accepted[static_cast<std::size_t>(i)])
          << "sender " << first_sender + i;
    release.count_down();
    for (auto& t : threads) t.join();
  };
  wave(0, kWave1);
  wave(kWave1, kWave2);

  const TxQueueStats s = txq->stats();
  EXPECT_EQ(s.submitted, (kWave1 + kWave2) * kEach);
  EXPECT_EQ(s.submitted, s.sent + s.dropped);
  EXPECT_GT(s.sent, 0u);
  EXPECT_EQ(dev.order_violations(), 0u);
  EXPECT_EQ(dev.untracked(), 0u);
}

TEST(Drainer, TeardownStopsTheDrainerThenFreesWhatTheRingsHold) {
  Pool pool(PoolConfig{.packets = 4096, .buffer_size = 256, .cache_size = 16});
  test::ScriptedDevice dev;
  test::FrameFactory frames(pool);
  auto txq = TxQueue::create(dev, drainer_config());

  // A helper holds the tx lock, so the drainer is held in its first device call (as in
  // FullRingMakesTheSenderWait...) while 100 packets wait in the ring; it lets go only after the queue's
  // destruction has begun, so the drainer normally sees its stop before it sweeps again and the
  // 100 are purged (if it is slower, it sends them: both must conserve every buffer).
  std::atomic<int> phase{0};
  std::thread holder([&] {
    std::lock_guard tx(dev.tx_lock());
    phase.store(1);
    phase.notify_all();
    phase.wait(1);
    std::this_thread::sleep_for(20ms);
  });
  phase.wait(0);
  // EXPECT, not ASSERT, until the holder is released: returning early would leave it blocked.
  EXPECT_EQ(txq->send(frames.make(0, 0)), SendStatus::queued);
  // Until packet 0 is in the device call: the drainer's run has begun (runs, counted after the
  // drainer put down what it had in hand) and nothing is queued. queued == 0 alone can be read
  // between the drainer's pop and its in_hand_ store, and packet 0 then counted again below.
  for (TxQueueStats s = txq->stats(); s.queued != 0 || s.runs == 0; s = txq->stats())
    std::this_thread::yield();
  for (uint64_t seq = 1; seq <= 100; ++seq) EXPECT_EQ(txq->send(frames.make(0, seq)), SendStatus::queued);
  EXPECT_EQ(txq->stats().queued, 100u);
  phase.store(2);
  phase.notify_all();
  txq.reset();  // stops and joins the drainer, resets the qdisc, purges the rings
  holder.join();
  EXPECT_EQ(pool.free_count(), pool.capacity()) << "a packet left in a ring was leaked";
  const auto log = dev.log();
  ASSERT_GE(log.size(), 1u);
  for (std::size_t i = 0; i < log.size(); ++i) EXPECT_EQ(log[i].seq, i);
}

}  // namespace
}  // namespace txpath
