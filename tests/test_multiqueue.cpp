// SPDX-License-Identifier: MIT
// Multi-queue transmit (txpath/netdev.hpp, txpath/multiqueue.hpp): the queue choice (explicit,
// XPS, hash, traffic classes), the ooo_okay rule (a flow keeps its queue while it has packets in
// flight, so per-flow order holds when the XPS map changes under load), and every strategy's
// invariants on every queue of a device that refuses packets at random.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "device/fault_device.hpp"
#include "txpath/error.hpp"
#include "txpath/frame.hpp"
#include "txpath/multiqueue.hpp"
#include "txpath/netdev.hpp"
#include "txpath/pool.hpp"
#include "base/clock.hpp"

using namespace std::chrono_literals;

namespace txpath {
namespace {

#if defined(TXPATH_TSAN) || defined(TXPATH_ASAN)
constexpr uint64_t kPacketsTotal = 3000;
#else
constexpr uint64_t kPacketsTotal = 24000;
#endif

bool is_peer(const std::string& strategy) { return strategy.rfind("peer:", 0) == 0; }

// A packet of sender `t`, sequence `seq`, flow `flow` (its flow hash, never 0).
Packet* make_packet(Pool::Cache& cache, const FrameTemplate& tmpl, int t, uint64_t seq,
                    uint32_t flow) {
  Packet* p = cache.get();
  while (!p) {  // buffers are in flight: wait for completions
    std::this_thread::yield();
    p = cache.get();
  }
  p->len = static_cast<uint32_t>(tmpl.write(p->buffer(), static_cast<uint32_t>(t), seq));
  p->flow_hash = flow;
  return p;
}

// ---------------------------------------------------------------------------------------------
// The queue choice.

std::unique_ptr<NetDevice> null_device(uint32_t queues) {
  return make_net_device("null:queues=" + std::to_string(queues));
}

TEST(NetDevice, SpecBuildsTheQueuesAndDescribesThem) {
  auto dev = make_net_device("nic:queues=4,ring=64");
  ASSERT_EQ(dev->num_tx_queues(), 4u);
  EXPECT_EQ(dev->kind(), "nic");
  auto again = make_net_device(dev->describe());
  EXPECT_EQ(again->describe(), dev->describe());
  EXPECT_EQ(again->num_tx_queues(), 4u);
  EXPECT_NE(&dev->tx_queue(0), &dev->tx_queue(1));
  EXPECT_EQ(make_net_device("null")->num_tx_queues(), 1u);
  EXPECT_EQ(make_net_device("null")->describe(), "null");
  EXPECT_EQ(make_net_device("null:queues=3")->describe(), "null:queues=3");
  EXPECT_THROW(make_net_device("null:queues=0"), ConfigError);
  EXPECT_THROW(make_net_device("null:queues=4097"), ConfigError);
  EXPECT_THROW(make_device("null:queues=2"), ConfigError);  // one Device cannot be two queues
  EXPECT_NO_THROW(make_device("null:queues=1"));
}

TEST(NetDevice, XpsMapsAreSetPerQueueAndChecked) {
  auto dev = null_device(4);
  const unsigned cpus = dev->cpu_count();
  const std::vector<unsigned> zero = {0};
  dev->set_xps_cpus(2, zero);
  EXPECT_EQ(dev->xps_cpus(2), zero);
  EXPECT_TRUE(dev->xps_cpus(1).empty());
  EXPECT_THROW(dev->set_xps_cpus(4, zero), ConfigError);
  const std::vector<unsigned> beyond = {cpus};
  EXPECT_THROW(dev->set_xps_cpus(0, beyond), ConfigError);
  dev->set_xps_cpus(2, {});
  EXPECT_TRUE(dev->xps_cpus(2).empty());
}

TEST(NetDevice, ExplicitThenXpsThenHash) {
  auto dev = null_device(4);
  Pool pool(PoolConfig{.packets = 64, .buffer_size = 256});
  Packet* p = pool.get();
  p->flow_hash = 0xC000'0000;  // hash alone: queue 3 of 4
  EXPECT_EQ(dev->pick_tx_queue(*p, 0), 3u);
  EXPECT_NE(p->flow_in_flight, nullptr);
  EXPECT_EQ(dev->flows_in_flight(), 1u);
  pool.put(p);  // freed: the flow has nothing in flight any more
  EXPECT_EQ(dev->flows_in_flight(), 0u);

  const std::vector<unsigned> cpu0 = {0};
  dev->set_xps_cpus(1, cpu0);
  p = pool.get();
  p->flow_hash = 0xC000'0000;
  EXPECT_EQ(dev->pick_tx_queue(*p, 0), 1u);  // CPU 0's map: queue 1 only
  pool.put(p);
  p = pool.get();
  p->flow_hash = 0xC000'0000;
  p->tx_queue = 2;
  EXPECT_EQ(dev->pick_tx_queue(*p, 0), 2u);  // the application's choice wins
  EXPECT_EQ(p->flow_in_flight, nullptr);     // and holds no flow slot
  pool.put(p);
  EXPECT_EQ(pool.get()->tx_queue, kAnyTxQueue);  // a fresh packet has no choice
}

TEST(NetDevice, AFlowKeepsItsQueueWhileItHasPacketsInFlight) {
  auto dev = null_device(4);
  Pool pool(PoolConfig{.packets = 64, .buffer_size = 256});
  const std::vector<unsigned> cpu0 = {0};
  dev->set_xps_cpus(1, cpu0);
  Packet* first = pool.get();
  first->flow_hash = 77;
  ASSERT_EQ(dev->pick_tx_queue(*first, 0), 1u);
  // The map moves CPU 0 to queue 3 while the first packet is still in flight.
  dev->set_xps_cpus(1, {});
  dev->set_xps_cpus(3, cpu0);
  Packet* second = pool.get();
  second->flow_hash = 77;
  EXPECT_EQ(dev->pick_tx_queue(*second, 0), 1u) << "the flow moved with a packet in flight";
  Packet* other = pool.get();
  other->flow_hash = 78 + 1024 * 0 + 1;  // another slot: it follows the new map at once
  EXPECT_EQ(dev->pick_tx_queue(*other, 0), 3u);
  pool.put(first);
  pool.put(second);
  Packet* third = pool.get();
  third->flow_hash = 77;
  EXPECT_EQ(dev->pick_tx_queue(*third, 0), 3u) << "nothing in flight: the new map decides";
  pool.put(third);
  pool.put(other);
  EXPECT_EQ(dev->flows_in_flight(), 0u);
}

TEST(NetDevice, TrafficClassesMapPrioritiesToQueueRanges) {
  auto dev = null_device(8);
  TrafficClasses tcs;
  tcs.num_tc = 2;
  tcs.prio_tc = {0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0};
  tcs.tc_queues[0] = {.offset = 0, .count = 2};
  tcs.tc_queues[1] = {.offset = 2, .count = 6};
  dev->set_traffic_classes(tcs);
  EXPECT_EQ(dev->traffic_classes().num_tc, 2u);
  EXPECT_EQ(dev->traffic_classes().tc_queues[1].offset, 2u);
  Pool pool(PoolConfig{.packets = 1100, .buffer_size = 256});
  std::vector<Packet*> held;
  std::map<uint32_t, std::vector<uint32_t>> queues_of_prio;
  for (uint32_t h = 1; h <= 256; ++h) {
    for (uint32_t prio : {0u, 5u}) {
      Packet* p = pool.get();
      p->priority = prio;
      p->flow_hash = (h * 2 + (prio ? 1 : 0)) * 0x0080'0001u;  // one flow per (h, priority)
      queues_of_prio[prio].push_back(dev->pick_tx_queue(*p, 0));
      held.push_back(p);
    }
  }
  for (uint32_t q : queues_of_prio[0]) EXPECT_LT(q, 2u);
  for (uint32_t q : queues_of_prio[5]) EXPECT_TRUE(q >= 2 && q < 8) << q;
  for (Packet* p : held) pool.put(p);

  TrafficClasses bad = tcs;
  bad.tc_queues[1] = {.offset = 4, .count = 6};  // past queue 7
  EXPECT_THROW(dev->set_traffic_classes(bad), ConfigError);
  bad = tcs;
  bad.prio_tc[3] = 2;  // class 2 of 2
  EXPECT_THROW(dev->set_traffic_classes(bad), ConfigError);
  dev->set_traffic_classes({});  // cleared
  EXPECT_EQ(dev->traffic_classes().num_tc, 0u);
}

// ---------------------------------------------------------------------------------------------
// Per-flow order across queues: a device whose queues share one record of what left through
// each (sender, flow), checked at xmit. Queue `slow` spends `slow_ns` per packet, so a flow that
// changed queue with packets still queued on the slow one would overtake them.

struct FlowOrder {
  std::mutex mu;
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> next;  // (sender, flow) -> next seq at least
  std::map<uint32_t, uint64_t> by_sender;
  uint64_t violations = 0;
  uint64_t packets = 0;

  uint64_t sent_by(uint32_t sender) {
    std::lock_guard lock(mu);
    return by_sender[sender];
  }

  void saw(uint32_t sender, uint32_t flow, uint64_t seq) {
    std::lock_guard lock(mu);
    ++packets;
    ++by_sender[sender];
    auto [it, fresh] = next.try_emplace({sender, flow}, 0);
    if (!fresh && seq < it->second) ++violations;
    it->second = seq + 1;
  }
};

class OrderedQueue final : public Device {
 public:
  OrderedQueue(FlowOrder& order, uint64_t cost_ns, std::atomic<uint64_t>* seen = nullptr)
      : order_(order), cost_ns_(cost_ns), seen_(seen) {}
  std::string_view kind() const noexcept override { return "ordered"; }
  std::string describe() const override { return "ordered"; }
  XmitResult xmit(Packet* p, bool more) noexcept override {
    if (cost_ns_) busy_wait_ns(cost_ns_);
    const auto info = parse_frame(p->frame());
    order_.saw(info ? info->sender : ~0u, p->flow_hash, info ? info->seq : 0);
    tx_packets_.add(1);
    tx_bytes_.add(p->len);
    // relaxed: a count the senders poll to know both queues were used; the join orders the rest.
    if (seen_) seen_->fetch_add(1, std::memory_order_relaxed);
    pending_.push_back(p);
    if (!more) ring_and_complete(pending_);
    return XmitResult::ok;
  }

 private:
  FlowOrder& order_;
  const uint64_t cost_ns_;
  std::atomic<uint64_t>* const seen_;
  PacketList pending_;
};

class XpsChange : public ::testing::TestWithParam<std::string> {};

TEST_P(XpsChange, FlowsKeepTheirOrderWhenTheMapChangesUnderLoad) {
  FlowOrder order;
  std::array<std::atomic<uint64_t>, 2> seen{};
  std::vector<std::unique_ptr<Device>> queues;
  queues.push_back(std::make_unique<OrderedQueue>(order, 3000, &seen[0]));  // slow
  queues.push_back(std::make_unique<OrderedQueue>(order, 0, &seen[1]));
  NetDevice dev(std::move(queues), "ordered:queues=2");
  MultiQueueConfig cfg;
  cfg.queue.strategy = GetParam();
  cfg.queue.txqueuelen = 100000;  // no drops: every packet is checked
  auto tx = MultiQueueTx::create(dev, cfg);
  Pool pool(PoolConfig{.packets = 16384, .buffer_size = 256, .cache_size = 32});

  std::vector<unsigned> all(dev.cpu_count());
  for (unsigned c = 0; c < all.size(); ++c) all[c] = c;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> flips{0};
  std::thread flipper([&] {
    // relaxed: a plain stop flag; the join orders everything after it.
    for (uint32_t to = 0; !stop.load(std::memory_order_relaxed); to ^= 1) {
      dev.set_xps_cpus(to ^ 1, {});
      dev.set_xps_cpus(to, all);
      flips.fetch_add(1, std::memory_order_relaxed);  // relaxed: a count read after the join
      std::this_thread::sleep_for(200us);
    }
  });
  constexpr int kSenders = 4;
  constexpr uint32_t kFlows = 4;
  const uint64_t per_sender = kPacketsTotal / kSenders;
  // The senders start once the flipper has set a map, and go on past per_sender (up to 64 times
  // as many) until the map has changed three times and both queues have sent: on a loaded
  // machine the flipper may sleep through the whole nominal run (CI saw queue 0 send nothing),
  // and a test that needs the map to change under load must see it change.
  const auto map_changed_under_load = [&] {
    // relaxed: polled counts; the joins order the final values.
    return flips.load(std::memory_order_relaxed) > 2 && seen[0].load(std::memory_order_relaxed) > 0 &&
           seen[1].load(std::memory_order_relaxed) > 0;
  };
  while (flips.load(std::memory_order_relaxed) == 0) std::this_thread::yield();  // relaxed: a start gate
  std::atomic<uint64_t> submitted{0};
  std::vector<std::thread> senders;
  for (int t = 0; t < kSenders; ++t) {
    senders.emplace_back([&, t] {
      Pool::Cache cache(pool);
      const FrameTemplate tmpl;
      uint64_t seq = 0;
      for (; seq < per_sender || (!map_changed_under_load() && seq < 64 * per_sender); ++seq) {
        const auto flow = static_cast<uint32_t>(t) * kFlows + static_cast<uint32_t>(seq % kFlows) + 1;
        Packet* p = make_packet(cache, tmpl, t, seq, flow * 0x9E37'79B9u);
        EXPECT_NE(tx->send(p), SendStatus::too_big);
        // Now and then the sender lets its flows empty (a backlogged flow never moves), so that
        // later picks follow whatever the map says by then.
        if (seq % 256 == 255) {
          while (order.sent_by(static_cast<uint32_t>(t)) < seq + 1) std::this_thread::yield();
        }
      }
      submitted.fetch_add(seq, std::memory_order_relaxed);  // relaxed: read after the join
    });
  }
  for (auto& s : senders) s.join();
  stop.store(true, std::memory_order_relaxed);
  flipper.join();
  ASSERT_TRUE(tx->drain(20s));
  const auto per_queue = tx->queue_stats();
  EXPECT_GT(flips.load(), 2u);
  EXPECT_GT(per_queue[0].sent, 0u);
  EXPECT_GT(per_queue[1].sent, 0u);
  EXPECT_EQ(order.packets, submitted.load());
  EXPECT_EQ(order.violations, 0u) << "a flow overtook its own packets on another queue";
  EXPECT_EQ(dev.flows_in_flight(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Strategies, XpsChange,
                         ::testing::Values("busylock", "llist", "nolock", "drainer"),
                         [](const auto& info) { return info.param; });

// ---------------------------------------------------------------------------------------------
// Every strategy on every queue: conservation per queue and in total, per-sender order per
// queue (each queue's FaultDevice checks it per priority), nothing stranded, every buffer back.

struct MqParam {
  std::string strategy;
  uint32_t queues;
  int threads;
  bool xps;  // a CPU -> queue map (changed once mid-run) instead of the flow hash alone
  bool bursts = false;  // senders mix send() with MultiQueueTx::send_burst() of 1..64 packets
};

// Sender t's `count` packets as a random mix of send() and send_burst() of 1..64 packets,
// each burst's answer checked against the contract.
void send_mixed(MultiQueueTx& tx, Pool::Cache& cache, const FrameTemplate& tmpl, int t,
                uint64_t count, const std::function<uint32_t(uint64_t seq)>& flow_of) {
  std::mt19937_64 rng(0xb0057 + static_cast<uint64_t>(t));
  Packet* burst[64];
  SendStatus status[64];
  for (uint64_t seq = 0; seq < count;) {
    if (rng() % 4 == 0) {
      EXPECT_NE(tx.send(make_packet(cache, tmpl, t, seq, flow_of(seq))), SendStatus::too_big);
      ++seq;
      continue;
    }
    const std::size_t n = std::min<uint64_t>(1 + rng() % 64, count - seq);
    for (std::size_t i = 0; i < n; ++i, ++seq) burst[i] = make_packet(cache, tmpl, t, seq, flow_of(seq));
    EXPECT_EQ(tx.send_burst({burst, n}, {status, n}), n);
    for (std::size_t i = 0; i < n; ++i) EXPECT_NE(status[i], SendStatus::too_big);
  }
}

class MultiQueueStress : public ::testing::TestWithParam<MqParam> {};

TEST_P(MultiQueueStress, InvariantsHoldOnEveryQueue) {
  const auto& prm = GetParam();
  std::vector<std::unique_ptr<Device>> queues;
  std::vector<FaultDevice*> faults;
  for (uint32_t q = 0; q < prm.queues; ++q) {
    FaultConfig f;
    f.busy_prob = 0.05;
    f.stop_prob = 0.01;
    f.max_stop_ns = 100'000;
    f.seed = 7 + q;
    auto d = std::make_unique<FaultDevice>(f);
    faults.push_back(d.get());
    queues.push_back(std::move(d));
  }
  NetDevice dev(std::move(queues), "fault:queues=" + std::to_string(prm.queues));
  if (prm.xps) {
    for (unsigned c = 0; c < dev.cpu_count(); ++c) {
      const std::vector<unsigned> one = {c};
      dev.set_xps_cpus(c % prm.queues, one);
    }
  }
  MultiQueueConfig cfg;
  cfg.queue.strategy = prm.strategy;
  cfg.queue.qdisc = "pfifo";
  cfg.queue.txqueuelen = 128;  // bursts overflow: drops happen
  auto tx = MultiQueueTx::create(dev, cfg);
  Pool pool(PoolConfig{.packets = 8192, .buffer_size = 256, .cache_size = 32});

  const uint64_t per_thread = kPacketsTotal / static_cast<uint64_t>(prm.threads) + 1;
  std::vector<std::thread> senders;
  std::atomic<int> started{0};
  for (int t = 0; t < prm.threads; ++t) {
    senders.emplace_back([&, t] {
      Pool::Cache cache(pool);
      const FrameTemplate tmpl;
      started.fetch_add(1, std::memory_order_relaxed);  // relaxed: a progress count
      const auto flow_of = [t](uint64_t seq) {
        return (static_cast<uint32_t>(t) * 8 + static_cast<uint32_t>(seq % 8) + 1) * 0x9E37'79B9u;
      };
      if (prm.bursts) {
        send_mixed(*tx, cache, tmpl, t, per_thread, flow_of);
        return;
      }
      for (uint64_t seq = 0; seq < per_thread; ++seq)
        EXPECT_NE(tx->send(make_packet(cache, tmpl, t, seq, flow_of(seq))), SendStatus::too_big);
    });
  }
  if (prm.xps) {  // once the senders run, every CPU moves to the next queue
    while (started.load(std::memory_order_relaxed) < prm.threads) std::this_thread::yield();
    dev.clear_xps();
    for (unsigned c = 0; c < dev.cpu_count(); ++c) {
      const std::vector<unsigned> one = {c};
      dev.set_xps_cpus((c + 1) % prm.queues, one);
    }
  }
  for (auto& s : senders) s.join();
  ASSERT_TRUE(tx->drain(20s)) << "packets stranded: " << tx->stats().queued << " still queued";

  const TxQueueStats total = tx->stats();
  EXPECT_EQ(total.submitted, per_thread * static_cast<uint64_t>(prm.threads));
  EXPECT_EQ(total.submitted, total.sent + total.dropped);
  EXPECT_EQ(total.queued, 0u);
  uint64_t sent = 0;
  for (uint32_t q = 0; q < prm.queues; ++q) {
    const TxQueueStats s = tx->queue(q).stats();
    EXPECT_EQ(s.submitted, s.sent + s.dropped) << "queue " << q;
    EXPECT_EQ(s.queued, 0u) << "queue " << q;
    EXPECT_EQ(faults[q]->order_violations(), 0u) << "queue " << q << ": sent twice or out of order";
    EXPECT_EQ(faults[q]->stats().tx_packets, s.sent) << "queue " << q;
    sent += s.sent;
  }
  EXPECT_EQ(sent, total.sent);
  EXPECT_EQ(dev.flows_in_flight(), 0u) << "a flow slot still counts a packet that left";
  tx.reset();
  EXPECT_EQ(pool.free_count(), pool.capacity()) << "a buffer never came back to the pool";
}

std::vector<MqParam> mq_params() {
  std::vector<MqParam> out;
  for (const std::string& strategy : strategy_names()) {
    if (strategy == "peer:ck_ring") continue;  // not preemption-safe with many threads (test_stress)
    for (uint32_t queues : {2u, 4u}) out.push_back({strategy, queues, 16, queues == 4});
    if (!is_peer(strategy)) out.push_back({strategy, 3, 3, true});
    out.push_back({strategy, 3, 16, false, true});  // bursts, split into runs per queue
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllStrategies, MultiQueueStress, ::testing::ValuesIn(mq_params()),
                         [](const auto& info) {
                           std::string s = info.param.strategy;
                           std::replace(s.begin(), s.end(), ':', '_');
                           return s + "_q" + std::to_string(info.param.queues) + "_t" +
                                  std::to_string(info.param.threads) +
                                  (info.param.xps ? "_xps" : "_hash") +
                                  (info.param.bursts ? "_burst" : "");
                         });

}  // namespace
}  // namespace txpath
