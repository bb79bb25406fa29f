// SPDX-License-Identifier: MIT
// Live tc changes (issue 17, "Live"): `txpath tc qdisc|class ... add|change|replace|del` reaches
// the process that runs the configuration (LiveStats' control endpoint), which applies it in the
// driver-loop owner's context (TxQueue::edit_qdisc); the file changes only once it is applied.
// A lower limit trims and counts drops; a deleted or replaced qdisc's packets are dropped and
// counted above it; a class change rules the next dequeue; every packet stays accounted for; a
// process that cannot apply a change leaves the file as it was; another uid is refused.
#include <gtest/gtest.h>

#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "support/scripted_device.hpp"
#include "support/tc_fixture.hpp"
#include "tc/control_socket.hpp"
#include "txpath/device.hpp"
#include "txpath/frame.hpp"
#include "txpath/multiqueue.hpp"
#include "txpath/netdev.hpp"
#include "txpath/pool.hpp"
#include "txpath/tc.hpp"
#include "txpath/txqueue.hpp"

using namespace std::chrono_literals;

namespace txpath::tc {
namespace {

// In a forked child: drops root for uid and gid 65534 (nobody), or exits 3.
void become_nobody() {
  const gid_t none = 65534;
  if (::setgroups(1, &none) != 0 || ::setresgid(none, none, none) != 0 || ::setresuid(none, none, none) != 0)
    ::_exit(3);
}

class TcApply : public test::TcFileFixture {
 protected:
  // A running queue built from dev d0 of the file (on `device`), serving it.
  void start(Device& device, const std::string& strategy = "busylock") {
    TxQueueConfig qc;
    qc.strategy = strategy;
    tree_ = std::make_shared<Tree>();
    qc.root_qdisc = Config::load(path_).root_factory("d0", tree_);
    txq_ = TxQueue::create(device, qc);
    live_ = std::make_unique<LiveStats>(path_, "d0", *txq_, tree_);
  }
  void send(int count, uint32_t priority = 0) {
    for (int i = 0; i < count; ++i) {
      Packet* p = pool_.get();
      ASSERT_NE(p, nullptr);
      p->len = 100;
      p->priority = priority;
      txq_->send(p);
    }
  }
  TxQueueStats stats() {
    auto s = txq_->consistent_stats(10s);
    EXPECT_TRUE(s.has_value());
    return s.value_or(TxQueueStats{});
  }
  // Packets the root holds itself (the rest of `queued`: one dequeued and put back on the
  // driver loop's requeue list by a stopped device, which a change leaves where it is).
  uint64_t in_root() {
    uint64_t n = 0;
    EXPECT_TRUE(txq_->inspect_qdisc([&](const Qdisc& q) { n = q.qlen(); }, 10s));
    return n;
  }
  static void expect_conserved(const TxQueueStats& s) {
    EXPECT_EQ(s.submitted, s.sent + s.dropped + s.queued)
        << "submitted " << s.submitted << " sent " << s.sent << " dropped " << s.dropped << " queued " << s.queued;
  }
  void TearDown() override {
    live_.reset();
    txq_.reset();
    test::TcFileFixture::TearDown();
  }

  Pool pool_{PoolConfig{}};
  txpath::test::ScriptedDevice dev_;  // before the queue: outlives it
  std::unique_ptr<Device> null_;
  std::shared_ptr<Tree> tree_;
  std::unique_ptr<TxQueue> txq_;
  std::unique_ptr<LiveStats> live_;
};

// A fifo's lower limit (sch_fifo.c: fifo_change sets the limit, nothing more): the queue keeps
// what it holds, new packets are refused until dequeues bring it below the new limit.
TEST_F(TcApply, ALowerFifoLimitKeepsTheQueueAndRefusesNewPackets) {
  ASSERT_EQ(tc("link add dev d0"), 0);
  ASSERT_EQ(tc("qdisc add dev d0 root handle 1: pfifo limit 100"), 0);
  auto& dev = dev_;
  dev.stop();  // nothing leaves: the packets stay queued
  start(dev);
  send(50);
  TxQueueStats s = stats();
  ASSERT_EQ(s.queued, 50u);
  const uint64_t held = in_root();
  ASSERT_GT(held, 20u);
  ASSERT_EQ(tc("qdisc change dev d0 root handle 1: pfifo limit 20"), 0) << err_.str();
  s = stats();
  EXPECT_EQ(in_root(), held) << "the fifo trimmed its queue; the kernel's keeps it";
  EXPECT_EQ(s.dropped, 0u);
  expect_conserved(s);
  send(5);  // over the new limit: refused
  s = stats();
  EXPECT_EQ(in_root(), held);
  EXPECT_EQ(s.dropped, 5u);
  EXPECT_EQ(s.qdisc.drops, 5u);
  expect_conserved(s);
  EXPECT_NE(file().find("limit 20"), std::string::npos) << file();
  ASSERT_EQ(tc("-s qdisc show dev d0"), 0);
  EXPECT_NE(out_.str().find("limit 20p"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("dropped 5,"), std::string::npos) << out_.str();
  dev.wake();
  ASSERT_TRUE(txq_->drain(30s));
  s = stats();
  EXPECT_EQ(s.sent, 50u);
  expect_conserved(s);
  send(20);  // below the limit again: taken
  ASSERT_TRUE(txq_->drain(30s));
  EXPECT_EQ(stats().sent, 70u);
}

// A child that stays goes on with its own drop count (the kernel's qdisc is the same object),
// and its parent does not count the carried drops again. Found by the conformance run ("live:
// pfifo limit lowered under tbf": the child's drops had restarted at zero, 2533 against 3731).
TEST_F(TcApply, AChildKeepsItsDropsAcrossAChangeAndItsParentCountsThemOnce) {
  ASSERT_EQ(tc("link add dev d0"), 0);
  ASSERT_EQ(tc("qdisc add dev d0 root handle 1: tbf rate 1kbit burst 10kb limit 100kb"), 0);
  ASSERT_EQ(tc("qdisc add dev d0 parent 1:1 handle 10: pfifo limit 5"), 0);
  auto& dev = dev_;
  dev.refuse_call(0, /*stop=*/true);
  start(dev);
  send(12);
  const auto drops = [&] {
    std::pair<uint64_t, uint64_t> d{~0ull, ~0ull};  // tbf's, pfifo's
    EXPECT_TRUE(txq_->inspect_qdisc(
        [&](const Qdisc& q) {
          d.first = q.drops();
          if (const ClassOps* ops = q.class_ops()) d.second = const_cast<ClassOps*>(ops)->child(1)->drops();
        },
        10s));
    return d;
  };
  const auto before = drops();
  ASSERT_GT(before.second, 0u);
  EXPECT_EQ(before.first, before.second);
  ASSERT_EQ(tc("qdisc change dev d0 parent 1:1 handle 10: pfifo limit 3"), 0) << err_.str();
  EXPECT_EQ(drops(), before) << "the child's drops restarted, or its parent counted them twice";
  send(2);  // over the kept queue's new limit: refused
  const auto after = drops();
  EXPECT_EQ(after.second, before.second + 2);
  EXPECT_EQ(after.first, after.second);
  expect_conserved(stats());
}

// codel's, fq_codel's and fq's lower limit (codel_change, fq_codel_change, fq_change): the head
// is dropped (fq_codel, fq: dequeued and dropped) until the queue is within it, so the newest
// packets of a flow stay, in order.
struct LimitCase {
  const char* before;  // the qdisc's options, limit 100
  const char* after;   // limit 20
  friend void PrintTo(const LimitCase& c, std::ostream* os) { *os << c.before; }  // not its address
};
class TcApplyAqm : public TcApply, public ::testing::WithParamInterface<LimitCase> {};

TEST_P(TcApplyAqm, ALowerLimitDropsFromTheHead) {
  const LimitCase& c = GetParam();
  ASSERT_EQ(tc("link add dev d0"), 0);
  ASSERT_EQ(tc(std::string("qdisc add dev d0 root handle 1: ") + c.before), 0);
  auto& dev = dev_;
  dev.refuse_call(0, /*stop=*/true);
  start(dev);
  const FrameTemplate frames(FrameSpec{.payload = 64});
  for (uint64_t i = 0; i < 50; ++i) {
    Packet* p = pool_.get();
    ASSERT_NE(p, nullptr);
    p->len = static_cast<uint32_t>(frames.write(p->buffer(), 7, i));
    p->flow_hash = 1;  // one flow
    txq_->send(p);
  }
  const uint64_t held = in_root(), aside = 50 - held;
  ASSERT_GT(held, 20u);
  ASSERT_EQ(tc(std::string("qdisc change dev d0 root handle 1: ") + c.after), 0) << err_.str();
  const TxQueueStats s = stats();
  EXPECT_EQ(in_root(), 20u) << c.after;
  EXPECT_EQ(s.dropped, held - 20);
  expect_conserved(s);
  dev.wake();
  ASSERT_TRUE(txq_->drain(30s));
  const auto log = dev.log();
  ASSERT_EQ(log.size(), 20u + aside);
  // The requeued packets first (the oldest), then the 20 newest: 30..49.
  for (std::size_t i = 0; i < 20; ++i) EXPECT_EQ(log[aside + i].seq, 30 + i) << c.after << " " << i;
}

INSTANTIATE_TEST_SUITE_P(
    HeadTrimmingKinds, TcApplyAqm,
    ::testing::Values(LimitCase{"codel limit 100 target 1s interval 10s", "codel limit 20 target 1s interval 10s"},
                      LimitCase{"fq_codel limit 100 target 1s interval 10s", "fq_codel limit 20 target 1s interval 10s"},
                      LimitCase{"fq limit 100", "fq limit 20"}),
    [](const ::testing::TestParamInfo<LimitCase>& info) {  // the kind: "codel", "fq_codel", "fq"
      const std::string before = info.param.before;
      return before.substr(0, before.find(' '));
    });

// red's change (red_change: tc always sends a limit, so a fresh child replaces the old one and
// what it held is dropped); a red that a change elsewhere leaves as it was keeps its queue.
TEST_F(TcApply, AChangedRedDropsWhatItHeldAnUnchangedOneKeepsIt) {
  const std::string red = "red limit 400000 min 30000 max 90000 avpkt 1000 burst 55 probability 0.02";
  ASSERT_EQ(tc("link add dev d0"), 0);
  ASSERT_EQ(tc("qdisc add dev d0 root handle 1: prio"), 0);
  ASSERT_EQ(tc("qdisc add dev d0 parent 1:1 handle 10: " + red), 0);
  auto& dev = dev_;
  dev.refuse_call(0, /*stop=*/true);
  start(dev);
  send(30, 0x10001);  // band 1:1, into red
  const uint64_t held = in_root();
  ASSERT_GT(held, 20u);
  ASSERT_EQ(tc("qdisc add dev d0 parent 1:2 handle 20: pfifo limit 5"), 0) << err_.str();
  EXPECT_EQ(in_root(), held) << "an unchanged red kept nothing";
  EXPECT_EQ(stats().dropped, 0u);
  ASSERT_EQ(tc("qdisc change dev d0 parent 1:1 handle 10: " + red.substr(0, red.size() - 4) + "0.05"), 0)
      << err_.str();
  const TxQueueStats s = stats();
  EXPECT_EQ(in_root(), 0u);
  EXPECT_EQ(s.dropped, held);
  expect_conserved(s);
}

// qdisc_purge_queue() on graft: the deleted qdisc's packets are dropped, the parent's qlen and
// backlog fall and it counts them as drops; what stays keeps its counters and packets.
TEST_F(TcApply, ADeletedQdiscsPacketsAreDroppedAndCountedAbove) {
  ASSERT_EQ(tc("link add dev d0"), 0);
  ASSERT_EQ(tc("qdisc add dev d0 root handle 1: prio"), 0);
  ASSERT_EQ(tc("qdisc add dev d0 parent 1:1 handle 10: pfifo limit 100"), 0);
  ASSERT_EQ(tc("qdisc add dev d0 parent 1:2 handle 20: pfifo limit 100"), 0);
  auto& dev = dev_;
  dev.refuse_call(0, /*stop=*/true);  // the first packet goes back on the requeue list
  start(dev);
  send(10, 0x10001);  // band 1:1
  send(7, 0x10002);   // band 1:2
  ASSERT_EQ(stats().queued, 17u);
  const uint64_t aside = 17 - in_root();  // band 1:1's first packet, on the requeue list
  // A child's deletion leaves the root, and so the requeue list, where they are.
  ASSERT_EQ(tc("qdisc del dev d0 parent 1:1 handle 10:"), 0) << err_.str();
  TxQueueStats s = stats();
  EXPECT_EQ(in_root(), 7u);
  EXPECT_EQ(s.queued, 7u + aside);
  EXPECT_EQ(s.dropped, 10u - aside);
  EXPECT_EQ(s.qdisc.drops, 10u - aside);  // prio counts its purged child's packets
  EXPECT_EQ(s.qdisc.backlog, 100 * (7u + aside));
  expect_conserved(s);
  // Replacing the root drops everything in it, and the packet on the requeue list with it (the
  // kernel's qdisc_reset() of the old root frees its gso_skb); the new root starts from zero,
  // the queue's totals go on.
  ASSERT_GT(aside, 0u) << "the stopped device left no packet on the requeue list";
  ASSERT_EQ(tc("qdisc replace dev d0 root handle 2: pfifo limit 5"), 0) << err_.str();
  s = stats();
  EXPECT_EQ(s.queued, 0u);
  EXPECT_EQ(s.dropped, 17u);
  EXPECT_EQ(s.qdisc.drops, 0u);
  EXPECT_EQ(txq_->qdisc()->kind(), "pfifo");
  expect_conserved(s);
  send(8);
  s = stats();
  EXPECT_EQ(in_root(), 5u);  // the new root's limit
  EXPECT_EQ(s.sent, 0u);
  expect_conserved(s);
}

// A class change rules the next dequeue: a class shaped to 1 kbit (200 packets of 100 bytes
// would take 160 s) drains at once after `class change ... rate 1gbit`.
TEST_F(TcApply, AClassChangeRulesTheNextDequeue) {
  ASSERT_EQ(tc("link add dev d0"), 0);
  ASSERT_EQ(tc("qdisc add dev d0 root handle 1: htb default 10"), 0);
  ASSERT_EQ(tc("class add dev d0 parent 1: classid 1:10 htb rate 1kbit ceil 1kbit burst 100b cburst 100b"), 0);
  auto& dev = dev_;
  start(dev);
  send(200);
  EXPECT_FALSE(txq_->drain(200ms));  // shaped: most are still queued
  ASSERT_EQ(tc("class change dev d0 parent 1: classid 1:10 htb rate 1gbit ceil 1gbit"), 0) << err_.str();
  ASSERT_TRUE(txq_->drain(30s));
  const TxQueueStats s = stats();
  EXPECT_EQ(s.sent, 200u);
  EXPECT_EQ(s.dropped, 0u);
  EXPECT_EQ(s.qdisc.packets, 200u);  // the root's counters went on across the change
  expect_conserved(s);
}

// The kernel changes an htb class in place (sch_htb.c htb_change_class: new rates, the same
// class): its counters, its xstats and its buckets go on across `tc class change`, and so do
// those of the classes the change did not touch.
TEST_F(TcApply, AClassChangeKeepsTheClassCountersAndTokens) {
  ASSERT_EQ(tc("link add dev d0"), 0);
  ASSERT_EQ(tc("qdisc add dev d0 root handle 1: htb default 10"), 0);
  ASSERT_EQ(tc("class add dev d0 parent 1: classid 1:1 htb rate 8kbit ceil 8kbit burst 200b cburst 200b"), 0);
  ASSERT_EQ(tc("class add dev d0 parent 1:1 classid 1:10 htb rate 1kbit ceil 8kbit burst 200b cburst 200b"), 0);
  auto& dev = dev_;
  start(dev);
  send(30, 0x10010);
  // The buckets let a few packets through at once; the rest wait for tokens (100 ms a packet).
  struct Seen {
    uint64_t packets = 0, bytes = 0, parent_packets = 0;
    int64_t tokens = 0, ctokens = 0, lended = 0;
  };
  const auto look = [&] {
    Seen v;
    EXPECT_TRUE(txq_->inspect_qdisc(
        [&](const Qdisc& q) {
          const ClassOps* ops = q.class_ops();
          ASSERT_NE(ops, nullptr);
          v.packets = ops->class_stats(0x10).packets;
          v.bytes = ops->class_stats(0x10).bytes;
          v.parent_packets = ops->class_stats(1).packets;
          for (const auto& [k, x] : ops->class_xstats(0x10)) {
            if (k == "tokens") v.tokens = x;
            if (k == "ctokens") v.ctokens = x;
            if (k == "lended") v.lended = x;
          }
        },
        10s));
    return v;
  };
  Seen before;
  for (int i = 0; i < 200 && (before = look()).packets < 2; ++i) std::this_thread::sleep_for(5ms);
  ASSERT_GE(before.packets, 2u);
  ASSERT_EQ(tc("class change dev d0 parent 1:1 classid 1:10 htb rate 1kbit ceil 4kbit burst 200b cburst 200b"), 0)
      << err_.str();
  const Seen after = look();
  EXPECT_GE(after.packets, before.packets) << "the class's counters started again";
  EXPECT_GE(after.bytes, before.bytes);
  EXPECT_GE(after.parent_packets, before.packets) << "the untouched parent's too";
  EXPECT_GE(after.lended, before.lended);
  if (after.packets == before.packets) {  // nothing dequeued in between: the same buckets
    EXPECT_EQ(after.tokens, before.tokens);
    EXPECT_EQ(after.ctokens, before.ctokens);
  }
}

// Every packet stays accounted for while senders run and the tree changes under them (the
// library call, LiveStats::apply, as an application would make it).
TEST_F(TcApply, EveryPacketIsAccountedForUnderConcurrentSenders) {
  ASSERT_EQ(tc("link add dev d0"), 0);
  ASSERT_EQ(tc("qdisc add dev d0 root handle 1: prio"), 0);
  ASSERT_EQ(tc("qdisc add dev d0 parent 1:2 handle 20: pfifo limit 1000"), 0);
  null_ = make_device("null");
  start(*null_);
  const Config base = Config::load(path_);
  std::atomic<bool> stop{false};
  std::vector<std::thread> senders;
  for (int t = 0; t < 3; ++t)
    senders.emplace_back([&] {
      Pool::Cache cache(pool_);
      while (!stop.load(std::memory_order_relaxed)) {
        Packet* p = cache.get();
        if (!p) continue;
        p->len = 100;
        txq_->send(p);
      }
    });
  const std::vector<std::string> changes = {
      "qdisc change dev d0 parent 1:2 handle 20: pfifo limit 3",
      "qdisc change dev d0 parent 1:2 handle 20: pfifo limit 1000",
      "qdisc del dev d0 parent 1:2 handle 20:",
      "qdisc add dev d0 parent 1:2 handle 20: bfifo limit 3000",
      "qdisc replace dev d0 root handle 1: prio bands 4",
      "qdisc del dev d0 root",  // the default root: everything queued goes
  };
  // Each cycle starts from the file's configuration (a new root again after the delete).
  Config cfg = base;
  for (std::size_t round = 0; round < 8 * changes.size(); ++round) {
    const std::string& line = changes[round % changes.size()];
    if (round % changes.size() == 0) cfg = base;
    std::ostringstream out;
    ASSERT_NO_THROW(cfg.execute(batch_words(line), out, {})) << line;
    ASSERT_NO_THROW(live_->apply(cfg)) << line;
  }
  stop = true;
  for (auto& t : senders) t.join();
  ASSERT_TRUE(txq_->drain(30s));
  const TxQueueStats s = stats();
  expect_conserved(s);
  EXPECT_EQ(s.queued, 0u);
  EXPECT_GT(s.sent, 0u);
}

// A running 2-queue device built from dev d0 of the file (an mq root), serving it: its members
// go in reverse order (the server before the queues, the queues before the device).
struct MultiQueueRun {
  explicit MultiQueueRun(const std::string& path) {
    const Config::MultiQueueSetup setup = Config::load(path).multiqueue("d0", trees);
    MultiQueueConfig mc;
    mc.queue.strategy = "busylock";
    mc.queue_qdisc = setup.queue_qdisc;
    tx = MultiQueueTx::create(*device, mc);
    live = std::make_unique<LiveStats>(path, "d0", *tx, trees);
  }
  std::unique_ptr<NetDevice> device = make_net_device("null:queues=2");
  std::shared_ptr<QueueTrees> trees = std::make_shared<QueueTrees>();
  std::unique_ptr<MultiQueueTx> tx;
  std::unique_ptr<LiveStats> live;
};

// A process that cannot apply the change (a multi-queue device's root) refuses it: the command
// fails with its status and the file stays as it was.
TEST_F(TcApply, ARefusedChangeLeavesTheFileAsItWas) {
  ASSERT_EQ(tc("link add dev d0 numtxqueues 2"), 0);
  ASSERT_EQ(tc("qdisc add dev d0 root handle 1: mq"), 0);
  MultiQueueRun run(path_);
  auto& tx = run.tx;
  auto& live = run.live;
  const std::string before = file();
  EXPECT_EQ(tc("qdisc replace dev d0 root handle 2: pfifo"), 2);
  EXPECT_NE(err_.str().find("refused the change"), std::string::npos) << err_.str();
  EXPECT_EQ(file(), before);
  // A change below the root goes through, on every TX queue.
  ASSERT_EQ(tc("qdisc add dev d0 parent 1:2 handle 20: pfifo limit 7"), 0) << err_.str();
  EXPECT_NE(file().find("limit 7"), std::string::npos);
  EXPECT_EQ(tx->queue(1).qdisc()->kind(), "pfifo");
  EXPECT_EQ(tx->queue(0).qdisc()->kind(), "pfifo_fast");
  live.reset();
  tx.reset();
  // Without a running process the file alone changes, as before.
  ASSERT_EQ(tc("qdisc replace dev d0 root handle 2: pfifo"), 0) << err_.str();
}

// A multi-queue change is one step: while TX queue 1's context is held (its loop owner busy),
// TX queue 0 keeps running the old tree, and both run the new one once queue 1 takes it. Before,
// queue 0 changed at once and queue 1 after it: for that while the queues ran different trees.
TEST_F(TcApply, AMultiQueueChangeIsOneStep) {
  ASSERT_EQ(tc("link add dev d0 numtxqueues 2"), 0);
  ASSERT_EQ(tc("qdisc add dev d0 root handle 1: mq"), 0);
  MultiQueueRun run(path_);
  auto& tx = run.tx;
  std::atomic<bool> holding{false};
  std::string kind0_while_held;
  std::thread holder([&] {
    tx->queue(1).inspect_qdisc(
        [&](const Qdisc&) {
          holding = true;
          std::this_thread::sleep_for(400ms);  // the change reaches queue 0 meanwhile
          kind0_while_held = std::string(tx->queue(0).qdisc()->kind());
        },
        10s);
  });
  while (!holding) std::this_thread::sleep_for(1ms);
  ASSERT_EQ(tc("qdisc add dev d0 parent 1:1 handle 10: pfifo limit 7"), 0) << err_.str();
  holder.join();
  EXPECT_EQ(kind0_while_held, "pfifo_fast") << "queue 0 ran the new tree while queue 1 ran the old";
  EXPECT_EQ(tx->queue(0).qdisc()->kind(), "pfifo");
  EXPECT_EQ(tx->queue(1).qdisc()->kind(), "pfifo_fast");
}

// A queue that does not take the change in time calls it off for every queue: nothing changed,
// the file as it was.
TEST_F(TcApply, AMultiQueueChangeOneQueueCannotTakeChangesNoQueue) {
  ASSERT_EQ(tc("link add dev d0 numtxqueues 2"), 0);
  ASSERT_EQ(tc("qdisc add dev d0 root handle 1: mq"), 0);
  MultiQueueRun run(path_);
  auto& tx = run.tx;
  const std::string before = file();
  std::atomic<bool> holding{false};
  std::thread holder([&] {
    tx->queue(1).inspect_qdisc(
        [&](const Qdisc&) {
          holding = true;
          std::this_thread::sleep_for(7s);  // past the change's 5 s
        },
        20s);
  });
  while (!holding) std::this_thread::sleep_for(1ms);
  EXPECT_NE(tc("qdisc add dev d0 parent 1:1 handle 10: pfifo limit 7"), 0);
  EXPECT_NE(err_.str().find("no TX queue changed"), std::string::npos) << err_.str();
  holder.join();
  EXPECT_EQ(tx->queue(0).qdisc()->kind(), "pfifo_fast") << "queue 0 changed alone";
  EXPECT_EQ(file(), before);
}

// Strategy nolock's senders enqueue without the root lock: it refuses at once (exit 2), and the
// file stays as it was.
TEST_F(TcApply, ANolockQueueRefusesAndTheFileStays) {
  ASSERT_EQ(tc("link add dev d0"), 0);
  ASSERT_EQ(tc("qdisc add dev d0 root handle 1: pfifo limit 100"), 0);
  null_ = make_device("null");
  start(*null_, "nolock");
  const std::string before = file();
  EXPECT_EQ(tc("qdisc change dev d0 root handle 1: pfifo limit 7"), 2);
  EXPECT_NE(err_.str().find("(strategy nolock) does not change its qdisc while it runs"), std::string::npos)
      << err_.str();
  EXPECT_EQ(file(), before);
}

// The control endpoint answers its own uid and root only: a client of another uid gets nothing,
// and nothing is applied.
TEST_F(TcApply, AnotherUidIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a client as another uid";
  std::filesystem::permissions(dir_, std::filesystem::perms::all);  // reachable by nobody
  const std::string path = (dir_ / "c.ctl").string();
  std::atomic<int> handled{0};
  ControlServer server(path, [&](const std::string&) {
    ++handled;
    return std::string("{\"ok\":true}");
  });
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    become_nobody();
    const ControlReply r = control_request(path, "{\"dev\":\"d0\",\"config\":\"\"}", 5s);
    ::_exit(r.answer ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the other uid got an answer";
  EXPECT_EQ(handled.load(), 0);
  // Our own uid is answered.
  const ControlReply mine = control_request(path, "{}", 5s);
  ASSERT_TRUE(mine.answer.has_value()) << mine.why_not;
  EXPECT_EQ(handled.load(), 1);
}

// An endpoint directory that is not private (another user may have made it) serves nobody: the
// file alone changes, as before, and nobody can hold a user's edits up with such a directory.
TEST_F(TcApply, ADirectoryThatIsNotPrivateLeavesTheFileToItself) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run as another uid";
  std::filesystem::permissions(dir_, std::filesystem::perms::all);
  const std::filesystem::path xdg = dir_ / "xdg";
  std::filesystem::create_directories(xdg);
  std::filesystem::permissions(xdg, std::filesystem::perms::all);  // 0777: not private
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    become_nobody();
    ::setenv("XDG_RUNTIME_DIR", xdg.c_str(), 1);
    const int first = tc("link add dev d0");
    ::_exit(first != 0 ? 10 + first % 100 : tc("qdisc add dev d0 root handle 1: pfifo"));
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_NE(file().find("qdisc add dev d0 root handle 1: pfifo"), std::string::npos) << file();
}

}  // namespace
}  // namespace txpath::tc
