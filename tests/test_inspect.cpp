// SPDX-License-Identifier: MIT
// TxQueue::inspect_qdisc(): a function run on the root qdisc in its serialised context (the
// driver-loop owner's, root lock held), so that tc -s reads consistent statistics of a running
// queue. For every strategy with a qdisc: served on an idle queue (by a deferred run), under load
// with a refusing device (the qdisc does not move while fn runs, and its counters agree with a
// walk of its classes), by service() or send() without the service thread, concurrently from
// several threads, withdrawn on timeout, refused at shutdown; the peer baselines answer false.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "device/fault_device.hpp"
#include "device/null_device.hpp"
#include "engine/queue_base.hpp"
#include "qdisc/fifo_nolock.hpp"
#include "txpath/frame.hpp"
#include "txpath/pool.hpp"
#include "txpath/qdisc.hpp"
#include "txpath/txqueue.hpp"

using namespace std::chrono_literals;

namespace txpath {
namespace {

#if defined(TXPATH_TSAN) || defined(TXPATH_ASAN)
constexpr int kInspectsPerThread = 15;  // sanitizers slow everything 3-15x
#else
constexpr int kInspectsPerThread = 40;
#endif

bool is_peer(const std::string& strategy) { return strategy.rfind("peer:", 0) == 0; }

std::vector<std::string> qdisc_strategies() {
  std::vector<std::string> out;
  for (const std::string& s : strategy_names())
    if (!is_peer(s)) out.push_back(s);
  return out;
}

// prio (classes to walk) everywhere; nolock runs only the fifos.
std::string qdisc_for(const std::string& strategy) {
  return strategy == "nolock" ? "pfifo_fast" : "prio";
}

// prio's default priomap = pfifo_fast's: order is promised per sender within a band.
uint32_t band_of(uint32_t priority) {
  static constexpr uint8_t kPrio2Band[16] = {1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
  return kPrio2Band[priority & 15];
}

// Packets the qdisc has handed out (dequeued or bypassed): only the loop owner changes it.
uint64_t dequeued(const Qdisc& q) {
  uint64_t n = q.stats().packets;
  if (const auto* l = dynamic_cast<const NolockFifoQdisc*>(&q)) n += l->lockless_stats().packets;
  return n;
}

class Inspect : public ::testing::TestWithParam<std::string> {
 protected:
  TxQueueConfig config(bool service_thread = true) const {
    TxQueueConfig cfg;
    cfg.strategy = GetParam();
    cfg.qdisc = qdisc_for(GetParam());
    cfg.service_thread = service_thread;
    return cfg;
  }
};

TEST_P(Inspect, IdleQueueIsServedByADeferredRunAndSeesAnEmptyQdisc) {
  NullDevice dev;
  auto q = TxQueue::create(dev, config());
  int calls = 0;
  uint64_t qlen = 99, backlog = 99;
  std::string kind;
  const std::thread::id caller = std::this_thread::get_id();
  bool on_caller = true;
  ASSERT_TRUE(q->inspect_qdisc(
      [&](const Qdisc& qd) {
        ++calls;
        qlen = qd.qlen();
        backlog = qd.backlog();
        kind = std::string(qd.kind());
        on_caller = std::this_thread::get_id() == caller;
      },
      2s));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(qlen, 0u);
  EXPECT_EQ(backlog, 0u);
  EXPECT_EQ(kind, GetParam() == "nolock" ? "pfifo_fast" : "prio");
  EXPECT_FALSE(on_caller) << "fn must run in the queue's context, not the caller's";
  EXPECT_EQ(q->qdisc(), q->qdisc());  // still there; and a second call works too
  EXPECT_TRUE(q->inspect_qdisc([&](const Qdisc&) { ++calls; }, 2s));
  EXPECT_EQ(calls, 2);
}

// What one inspection saw; written by fn (on a queue thread, under the request slot's mutex),
// read by the inspecting thread after inspect_qdisc() returned.
struct Seen {
  int calls = 0;
  int moved = 0;        // the qdisc changed while fn ran: not serialised
  int walk_differs = 0;  // root qlen/backlog != the sum over its classes
  int overlapping = 0;   // two fn ran at once
  uint64_t max_qlen = 0;
};

TEST_P(Inspect, UnderLoadTheQdiscStandsStillWhileFnRuns) {
  const std::string strategy = GetParam();
  Pool pool(PoolConfig{.packets = 4096, .buffer_size = 256, .cache_size = 32});
  FaultConfig fcfg;
  fcfg.busy_prob = 0.05;
  fcfg.stop_prob = 0.01;
  fcfg.max_stop_ns = 100'000;
  fcfg.seed = 7;
  fcfg.order_key = [](const Packet& p) { return band_of(p.priority); };
  FaultDevice dev(fcfg);
  TxQueueConfig cfg = config();
  cfg.txqueuelen = 256;  // small enough that bursts overflow
  auto q = TxQueue::create(dev, cfg);

  constexpr int kSenders = 4;  // more threads than cores on the CI machines
  std::atomic<bool> stop{false};
  std::vector<std::thread> senders;
  for (int t = 0; t < kSenders; ++t) {
    senders.emplace_back([&, t] {
      Pool::Cache cache(pool);
      FrameTemplate tmpl;
      // relaxed: a stop request; nothing is published with it.
      for (uint64_t seq = 0; !stop.load(std::memory_order_relaxed); ++seq) {
        Packet* p = cache.get();
        while (!p && !stop.load(std::memory_order_relaxed)) {  // relaxed: as above
          std::this_thread::yield();  // buffers are in flight
          p = cache.get();
        }
        if (!p) break;
        p->len = static_cast<uint32_t>(tmpl.write(p->buffer(), static_cast<uint32_t>(t), seq));
        p->priority = static_cast<uint32_t>((seq * 7 + static_cast<uint64_t>(t)) % 16);
        EXPECT_NE(q->send(p), SendStatus::too_big);
      }
    });
  }

  std::atomic<int> in_fn{0};
  auto inspector = [&](Seen& seen, int& failed) {
    for (int i = 0; i < kInspectsPerThread; ++i) {
      const bool ok = q->inspect_qdisc(
          [&](const Qdisc& qd) {
            // relaxed: only counts overlaps; fn runs under the slot's mutex anyway.
            if (in_fn.fetch_add(1, std::memory_order_relaxed) != 0) ++seen.overlapping;
            ++seen.calls;
            const uint64_t qlen = qd.qlen(), backlog = qd.backlog(), out = dequeued(qd);
            if (qlen > seen.max_qlen) seen.max_qlen = qlen;
            if (const ClassOps* ops = qd.class_ops(); ops && !ops->classes().empty()) {
              uint64_t sum_qlen = 0, sum_backlog = 0;
              for (const QdiscClassInfo& c : ops->classes()) {
                const QdiscStats cs = ops->class_stats(c.minor);
                sum_qlen += cs.qlen;
                sum_backlog += cs.backlog;
              }
              if (sum_qlen != qlen || sum_backlog != backlog) ++seen.walk_differs;
            }
            if (qd.stats().qlen != qlen || qd.stats().backlog != backlog) ++seen.walk_differs;
            // Give the senders and the device time to move things, were they not excluded: a
            // short spin and a few yields (not many: each may cost a time slice while the qdisc
            // is held, on a loaded machine).
            const auto until = std::chrono::steady_clock::now() + 20us;
            while (std::chrono::steady_clock::now() < until) {
            }
            for (int k = 0; k < 3; ++k) std::this_thread::yield();
            // nolock: senders' enqueues into the rings are not excluded (as in Linux); the
            // driver loop is. Everyone else: the whole qdisc stands still.
            const bool enqueues_excluded = strategy != "nolock";
            if (dequeued(qd) != out ||
                (enqueues_excluded && (qd.qlen() != qlen || qd.backlog() != backlog)))
              ++seen.moved;
            in_fn.fetch_sub(1, std::memory_order_relaxed);  // relaxed: as above
          },
          10s);
      if (!ok) ++failed;
      std::this_thread::sleep_for(200us);
    }
  };
  Seen seen_a, seen_b;
  int failed_a = 0, failed_b = 0;
  std::thread ia([&] { inspector(seen_a, failed_a); });
  std::thread ib([&] { inspector(seen_b, failed_b); });
  ia.join();
  ib.join();
  stop.store(true, std::memory_order_relaxed);  // relaxed: see the senders' loop
  for (auto& s : senders) s.join();

  EXPECT_EQ(failed_a + failed_b, 0) << "inspect_qdisc timed out under load";
  EXPECT_EQ(seen_a.calls + seen_b.calls, 2 * kInspectsPerThread);
  EXPECT_EQ(seen_a.overlapping + seen_b.overlapping, 0);
  EXPECT_EQ(seen_a.moved + seen_b.moved, 0) << "the qdisc moved while fn ran";
  EXPECT_EQ(seen_a.walk_differs + seen_b.walk_differs, 0);

  ASSERT_TRUE(q->drain(20s));
  const TxQueueStats s = q->stats();
  EXPECT_GT(s.sent, 0u);
  EXPECT_EQ(s.queued, 0u);
  EXPECT_EQ(s.submitted, s.sent + s.dropped);
  EXPECT_EQ(dev.order_violations(), 0u);
  EXPECT_GT(s.device.busy, 0u) << "the device never refused: the test lost its point";
  // Still served once everything is idle again.
  uint64_t qlen = 99;
  EXPECT_TRUE(q->inspect_qdisc([&](const Qdisc& qd) { qlen = qd.qlen(); }, 5s));
  EXPECT_EQ(qlen, 0u);
}

TEST_P(Inspect, WithoutTheServiceThreadAServiceLoopServesIt) {
  NullDevice dev;
  auto q = TxQueue::create(dev, config(/*service_thread=*/false));
  std::atomic<bool> stop{false};
  std::thread service([&] {
    // relaxed: a stop request; nothing is published with it.
    while (!stop.load(std::memory_order_relaxed)) {
      q->service();
      std::this_thread::yield();
    }
  });
  int calls = 0;
  uint64_t qlen = 99;
  const bool ok = q->inspect_qdisc(
      [&](const Qdisc& qd) {
        ++calls;
        qlen = qd.qlen();
      },
      2s);
  stop.store(true, std::memory_order_relaxed);  // relaxed: as above
  service.join();
  EXPECT_TRUE(ok);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(qlen, 0u);
}

TEST_P(Inspect, WithoutTheServiceThreadASendServesIt) {
  Pool pool(PoolConfig{.packets = 256, .buffer_size = 256, .cache_size = 0});
  NullDevice dev;
  auto q = TxQueue::create(dev, config(/*service_thread=*/false));
  std::atomic<bool> done{false};
  int calls = 0;
  bool ok = false;
  std::thread inspector([&] {
    ok = q->inspect_qdisc([&](const Qdisc&) { ++calls; }, 20s);
    done.store(true, std::memory_order_release);  // release: publishes ok/calls to the loop
  });
  // No service() at all: only the driver loop of a send() (or the drainer thread it wakes) can
  // serve the request. Send until it has been served (the request may not be posted yet).
  int sent = 0;
  // acquire: pairs with the release store above.
  while (!done.load(std::memory_order_acquire) && sent < 10000) {
    Packet* p = pool.get();
    if (p) {
      p->len = 60;
      q->send(p);
      ++sent;
    }
    std::this_thread::sleep_for(1ms);
  }
  inspector.join();
  EXPECT_TRUE(ok);
  EXPECT_EQ(calls, 1);
}

TEST_P(Inspect, TimeoutWithdrawsTheRequest) {
  NullDevice dev;
  auto q = TxQueue::create(dev, config(/*service_thread=*/false));
  int calls = 0;
  // Nobody runs the queue: the request times out ...
  EXPECT_FALSE(q->inspect_qdisc([&](const Qdisc&) { ++calls; }, 20ms));
  // ... and is withdrawn: a later run does not call fn.
  for (int i = 0; i < 10; ++i) q->service();
  EXPECT_EQ(calls, 0);
  // A new request is served by the next service() call.
  std::atomic<bool> stop{false};
  std::thread service([&] {
    while (!stop.load(std::memory_order_relaxed)) {  // relaxed: a stop request
      q->service();
      std::this_thread::yield();
    }
  });
  EXPECT_TRUE(q->inspect_qdisc([&](const Qdisc&) { ++calls; }, 5s));
  stop.store(true, std::memory_order_relaxed);  // relaxed: as above
  service.join();
  EXPECT_EQ(calls, 1);
}

TEST_P(Inspect, AnExceptionFromFnReachesTheCaller) {
  NullDevice dev;
  auto q = TxQueue::create(dev, config());
  EXPECT_THROW(q->inspect_qdisc([](const Qdisc&) { throw std::runtime_error("boom"); }, 5s),
               std::runtime_error);
  int calls = 0;
  EXPECT_TRUE(q->inspect_qdisc([&](const Qdisc&) { ++calls; }, 5s));
  EXPECT_EQ(calls, 1);
}

TEST_P(Inspect, ShutdownWakesAWaitingInspect) {
  // Every strategy, drainer included: QueueBase::shutdown() stops the strategy's own threads
  // first (stop_workers()).
  NullDevice dev;
  auto q = TxQueue::create(dev, config(/*service_thread=*/false));
  auto* base = dynamic_cast<QueueBase*>(q.get());
  ASSERT_NE(base, nullptr);
  bool ok = true;
  int calls = 0;
  std::chrono::steady_clock::duration waited{};
  std::thread inspector([&] {
    const auto start = std::chrono::steady_clock::now();
    ok = q->inspect_qdisc([&](const Qdisc&) { ++calls; }, 120s);  // nobody serves it
    waited = std::chrono::steady_clock::now() - start;
  });
  std::this_thread::sleep_for(50ms);  // usually waiting by now; if not, it is refused at once
  base->shutdown();
  inspector.join();
  EXPECT_FALSE(ok);
  EXPECT_EQ(calls, 0);
  EXPECT_LT(waited, 60s) << "shutdown() did not wake the waiting inspect";
  EXPECT_FALSE(q->inspect_qdisc([&](const Qdisc&) { ++calls; }, 1s)) << "closed for good";
}

INSTANTIATE_TEST_SUITE_P(Strategies, Inspect, ::testing::ValuesIn(qdisc_strategies()),
                         [](const auto& info) { return info.param; });

TEST(InspectPeer, PeerBaselinesHaveNoQdiscAndAnswerFalse) {
  for (const std::string& s : strategy_names()) {
    if (!is_peer(s)) continue;
    NullDevice dev;
    TxQueueConfig cfg;
    cfg.strategy = s;
    auto q = TxQueue::create(dev, cfg);
    int calls = 0;
    EXPECT_FALSE(q->inspect_qdisc([&](const Qdisc&) { ++calls; }, 100ms)) << s;
    EXPECT_EQ(calls, 0) << s;
  }
}

}  // namespace
}  // namespace txpath
