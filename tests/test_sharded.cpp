// SPDX-License-Identifier: MIT
// Strategy `sharded` (src/strategy/sharded.cpp), deterministically: the service thread is off
// and the strategy's release hook (run by the drainer just before it clears its flag) is where
// other threads send while a drainer certainly exists. Those packets land on the senders'
// shards; only the drainer's re-check after clearing the flag (or a deferred run) can move them.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <functional>
#include <thread>
#include <vector>

#include "base/topology.hpp"
#include "strategy/sharded_hooks.hpp"
#include "support/scripted_device.hpp"
#include "txpath/txqueue.hpp"

namespace txpath {

namespace {

using namespace sharded_test;

class Sharded : public ::testing::Test {
 protected:
  // `uncontended`: send()'s try_lock path (off here by default: these tests are about the
  // drainer flag and the shards, which a lone sender no longer reaches with it on).
  std::unique_ptr<TxQueue> make(uint32_t max_burst = 1000, const std::string& qdisc = "pfifo",
                                bool uncontended = false) {
    TxQueueConfig cfg;
    cfg.strategy = "sharded";
    cfg.lock = "ticket";
    cfg.qdisc = qdisc;
    cfg.max_burst = max_burst;
    cfg.service_thread = false;
    auto q = TxQueue::create(dev, cfg);
    set_uncontended_path(*q, uncontended);
    return q;
  }
  // Runs `f` on a new thread and waits for it (a sender other than the drainer).
  static void on_other_thread(const std::function<void()>& f) { std::thread(f).join(); }

  // The device log's sequence numbers for one sender, in transmit order.
  std::vector<uint64_t> seqs_of(uint32_t sender) {
    std::vector<uint64_t> out;
    for (const auto& r : dev.log())
      if (r.sender == sender) out.push_back(r.seq);
    return out;
  }

  Pool pool{PoolConfig{.packets = 4096, .buffer_size = 2048, .cache_size = 64}};
  test::ScriptedDevice dev;
  test::FrameFactory frames{pool};
};

std::vector<uint64_t> iota(uint64_t n) {
  std::vector<uint64_t> v;
  for (uint64_t i = 0; i < n; ++i) v.push_back(i);
  return v;
}

TEST_F(Sharded, OneShardPerTopologyCpuAssignedRoundRobin) {
  auto txq = make();
  const std::size_t n = shard_count(*txq);
  ASSERT_EQ(n, static_cast<std::size_t>(topology().pus));
  {
    test::ScriptedDevice other;
    TxQueueConfig cfg;
    cfg.strategy = "llist";
    cfg.service_thread = false;
    EXPECT_EQ(shard_count(*TxQueue::create(other, cfg)), 0u) << "llist is not sharded";
  }

  bool fired = false;
  on_drainer_release(*txq, [&] {
    if (fired) return;
    fired = true;
    // n new threads, one after the other: their first sends take consecutive shards.
    std::vector<std::size_t> shard_of(n);
    for (std::size_t t = 0; t < n; ++t)
      on_other_thread([&, t] {
        shard_of[t] = shard_of_calling_thread(*txq);
        EXPECT_EQ(txq->send(frames.make(static_cast<uint32_t>(t + 1), 0)), SendStatus::queued);
        EXPECT_EQ(shard_of_calling_thread(*txq), shard_of[t]);
      });
    for (std::size_t t = 0; t < n; ++t) {
      EXPECT_EQ(shard_of[t], (shard_of[0] + t) % n) << "round-robin over shards";
      EXPECT_EQ(shard_depth(*txq, t), 1u) << "shard " << t << ": one sender each";
    }
    EXPECT_EQ(dev.log().size(), 1u) << "the pushed packets wait for the drainer";
  });
  ASSERT_EQ(txq->send(frames.make(0, 0)), SendStatus::queued);  // drains, then releases
  ASSERT_TRUE(fired);
  EXPECT_EQ(dev.log().size(), n + 1);
  const auto s = txq->stats();
  EXPECT_EQ(s.queued, 0u);
  EXPECT_EQ(s.submitted, s.sent);
}

TEST_F(Sharded, SenderKeepsItsShardAndOrderAcrossMigration) {
  auto txq = make();
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  auto pin = [](int cpu) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return pthread_setaffinity_np(pthread_self(), sizeof(one), &one) == 0;
  };

  bool fired = false;
  bool migrated = false;
  on_drainer_release(*txq, [&] {
    if (fired) return;
    fired = true;
    // While the drainer exists, sender 1 sends 0..9 from the highest CPU, then 10..19 from the
    // lowest (a shard chosen by the current CPU would put the second half on a shard the
    // drainer visits first).
    on_other_thread([&] {
      const bool can_migrate = cpus.size() >= 2 && pin(cpus.back());
      const std::size_t shard = shard_of_calling_thread(*txq);
      for (uint64_t i = 0; i < 10; ++i)
        EXPECT_EQ(txq->send(frames.make(1, i)), SendStatus::queued);
      if (can_migrate) migrated = pin(cpus.front()) && sched_getcpu() == cpus.front();
      for (uint64_t i = 10; i < 20; ++i)
        EXPECT_EQ(txq->send(frames.make(1, i)), SendStatus::queued);
      EXPECT_EQ(shard_of_calling_thread(*txq), shard) << "a thread never changes shard";
      EXPECT_EQ(shard_depth(*txq, shard), 20u) << "all on one shard";
    });
    // Another sender on another shard, interleaved in time with nothing in particular.
    on_other_thread([&] {
      for (uint64_t i = 0; i < 5; ++i) EXPECT_EQ(txq->send(frames.make(2, i)), SendStatus::queued);
    });
  });
  ASSERT_EQ(txq->send(frames.make(0, 0)), SendStatus::queued);
  ASSERT_TRUE(fired);
  EXPECT_EQ(seqs_of(1), iota(20)) << "per-sender order across the migration";
  EXPECT_EQ(seqs_of(2), iota(5));
  EXPECT_EQ(txq->stats().queued, 0u);
  if (!migrated) GTEST_SKIP() << "could not move a thread between two CPUs; order checked only";
}

TEST_F(Sharded, BurstCapDropsAndCountsTheExcess) {
  auto txq = make(/*max_burst=*/5);
  const std::size_t free_before = pool.free_count();
  bool fired = false;
  on_drainer_release(*txq, [&] {
    if (fired) return;
    fired = true;
    on_other_thread([&] {
      for (uint64_t i = 0; i < 8; ++i)
        EXPECT_EQ(txq->send(frames.make(1, i)), i < 5 ? SendStatus::queued : SendStatus::dropped)
            << "packet " << i;
      EXPECT_EQ(shard_depth(*txq, shard_of_calling_thread(*txq)), 5u);
    });
    const auto s = txq->stats();
    EXPECT_EQ(s.dropped, 3u) << "strategy drops are counted";
    EXPECT_EQ(s.queued, 5u) << "exactly the capped shard";
    EXPECT_EQ(s.submitted, s.sent + s.dropped + s.queued);
  });
  ASSERT_EQ(txq->send(frames.make(0, 0)), SendStatus::queued);
  ASSERT_TRUE(fired);
  EXPECT_EQ(seqs_of(1), iota(5));
  const auto s = txq->stats();
  EXPECT_EQ(s.submitted, 9u);
  EXPECT_EQ(s.sent, 6u);
  EXPECT_EQ(s.dropped, 3u);
  EXPECT_EQ(s.queued, 0u);
  EXPECT_EQ(pool.free_count(), free_before) << "dropped and sent buffers are back in the pool";
}

TEST_F(Sharded, PacketPushedWhileTheDrainerFinishesIsPickedUp) {
  auto txq = make();
  bool fired = false;
  on_drainer_release(*txq, [&] {
    if (fired) return;
    fired = true;
    // The drainer has made its last pass and is about to clear its flag: this sender sees the
    // flag set, pushes, and returns at once.
    on_other_thread([&] { EXPECT_EQ(txq->send(frames.make(1, 0)), SendStatus::queued); });
    EXPECT_EQ(txq->stats().queued, 1u);
    EXPECT_EQ(dev.log().size(), 1u) << "not sent by its own sender";
  });
  ASSERT_EQ(txq->send(frames.make(0, 0)), SendStatus::queued);
  ASSERT_TRUE(fired);
  // No service() call: only the drainer's re-check after clearing its flag can have sent it.
  EXPECT_EQ(seqs_of(1), iota(1)) << "stranded on its shard";
  EXPECT_EQ(txq->stats().queued, 0u);
  EXPECT_EQ(txq->stats().submitted, txq->stats().sent);
}

TEST_F(Sharded, DrainerTenureIsBoundedAndADeferredRunDrainsTheShards) {
  auto txq = make();
  // Every release finds a new packet pushed (by the drainer's own thread, on its shard): a
  // drainer that never stopped would send all of them before returning.
  constexpr uint64_t kPushes = 50;
  uint64_t pushed = 0;
  on_drainer_release(*txq, [&] {
    if (pushed < kPushes) {
      EXPECT_EQ(txq->send(frames.make(1, pushed++)), SendStatus::queued);
    }
  });
  ASSERT_EQ(txq->send(frames.make(0, 0)), SendStatus::queued);
  EXPECT_LT(pushed, kPushes) << "the drainer kept draining";
  const auto s = txq->stats();
  EXPECT_EQ(s.queued, 1u) << "the last push waits for the scheduled deferred run";
  EXPECT_EQ(s.submitted, s.sent + s.queued);
  ASSERT_TRUE(txq->service()) << "a deferred run must be scheduled for the rest";
  while (txq->service()) {
  }
  EXPECT_EQ(pushed, kPushes);
  EXPECT_EQ(seqs_of(1), iota(kPushes));
  EXPECT_EQ(txq->stats().queued, 0u);
  EXPECT_EQ(txq->stats().sent, kPushes + 1);
}

TEST_F(Sharded, UncontendedSenderGetsTheQdiscVerdictAndTheBypass) {
  auto txq = make(1000, "pfifo limit 1");
  ASSERT_EQ(txq->send(frames.make(0, 0)), SendStatus::queued);
  EXPECT_EQ(txq->stats().bypassed, 1u);
  dev.stop();
  ASSERT_EQ(txq->send(frames.make(0, 1)), SendStatus::queued);  // bypass meets a stopped queue
  ASSERT_EQ(txq->send(frames.make(0, 2)), SendStatus::queued);  // in the pfifo
  EXPECT_EQ(txq->send(frames.make(0, 3)), SendStatus::dropped) << "the drainer's own verdict";
  dev.wake();
  while (txq->service()) {
  }
  EXPECT_EQ(seqs_of(0), (std::vector<uint64_t>{0, 1, 2}));
  const auto s = txq->stats();
  EXPECT_EQ(s.submitted, s.sent + s.dropped);
  EXPECT_EQ(s.qdisc.drops, 1u);
}

TEST_F(Sharded, ALoneSenderTakesTheRootLockWithoutTheDrainerRoleOnceTheQueueIsQuiet) {
  auto txq = make(1000, "pfifo limit 1", /*uncontended=*/true);
  int tenures = 0;
  on_drainer_release(*txq, [&] { ++tenures; });
  // The first 64 packets (kQuietAfter) go through the drainer role: each pass finds no pushed
  // packet, and the 64th makes the queue quiet.
  uint64_t seq = 0;
  for (; seq < 64; ++seq) ASSERT_EQ(txq->send(frames.make(0, seq)), SendStatus::queued);
  EXPECT_EQ(tenures, 64);
  tenures = 0;
  const uint64_t bypassed = txq->stats().bypassed;
  ASSERT_EQ(txq->send(frames.make(0, seq++)), SendStatus::queued);
  ASSERT_EQ(txq->send(frames.make(0, seq++)), SendStatus::queued);
  EXPECT_EQ(tenures, 0) << "quiet, an empty shard and a free root lock: no drainer flag, no push";
  EXPECT_EQ(txq->stats().bypassed, bypassed + 2);
  dev.stop();
  ASSERT_EQ(txq->send(frames.make(0, seq++)), SendStatus::queued);  // bypass meets a stopped queue
  EXPECT_EQ(tenures, 0);
  // The requeued packet makes the queue busy: the next sender unlocks, the queue is no longer
  // quiet, and it takes the drainer role (which gives the qdisc's own verdicts).
  ASSERT_EQ(txq->send(frames.make(0, seq++)), SendStatus::queued);  // in the pfifo
  EXPECT_EQ(tenures, 1);
  EXPECT_EQ(txq->send(frames.make(0, seq++)), SendStatus::dropped) << "the qdisc's own verdict";
  EXPECT_EQ(tenures, 2) << "not quiet any more";
  for (std::size_t i = 0; i < shard_count(*txq); ++i) EXPECT_EQ(shard_depth(*txq, i), 0u);
  dev.wake();
  while (txq->service()) {
  }
  EXPECT_EQ(seqs_of(0), iota(seq - 1));
  const auto s = txq->stats();
  EXPECT_EQ(s.submitted, s.sent + s.dropped);
}

TEST_F(Sharded, TeardownFreesWhatTheShardsHold) {
  const std::size_t before = pool.free_count();
  {
    auto txq = make();
    // As above: the drainer gives up with a packet left on a shard; no deferred run follows.
    uint64_t pushed = 0;
    on_drainer_release(*txq, [&] {
      if (pushed < 50) txq->send(frames.make(1, pushed++));
    });
    dev.stop();  // and more in the requeue list and the qdisc
    for (uint64_t i = 0; i < 3; ++i) ASSERT_EQ(txq->send(frames.make(0, i)), SendStatus::queued);
    uint64_t on_shards = 0;
    for (std::size_t i = 0; i < shard_count(*txq); ++i) on_shards += shard_depth(*txq, i);
    EXPECT_EQ(on_shards, 1u);
    EXPECT_EQ(txq->stats().queued, pushed + 3);
  }
  EXPECT_EQ(pool.free_count(), before) << "every queued buffer returns to the pool";
}

}  // namespace
}  // namespace txpath
