// SPDX-License-Identifier: MIT
// txpath's rows: the senders push frames through a TxQueue on the device (one TX queue, the seed
// experiment's path) or a MultiQueueTx over its TX queues, each running the row's strategy, lock
// and qdisc (or a tc configuration's trees); their send loop, and the wait of a sender whose send
// budget is spent. Measured by bench/measure.hpp.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/clock.hpp"
#include "bench/measure.hpp"
#include "bench/real_path.hpp"
#include "bench/sender_pools.hpp"
#include "bench/tc_final.hpp"
#include "txpath/device.hpp"
#include "txpath/error.hpp"
#include "txpath/multiqueue.hpp"
#include "txpath/netdev.hpp"
#include "txpath/pool.hpp"
#include "txpath/qdisc.hpp"
#include "txpath/spin.hpp"
#include "txpath/tc.hpp"
#include "txpath/txqueue.hpp"

namespace txpath::bench_detail {

namespace {

constexpr uint64_t kBudgetWaitNs = 1'000'000;    // a spent budget's sleep, at most, per look at the run
constexpr unsigned kBudgetYields = 256;          // a spent budget's yields before it sleeps

}  // namespace

TxQueueConfig queue_config(const BenchConfig& cfg, const std::string& strategy,
                           const std::shared_ptr<tc::Tree>& tc_tree) {
  TxQueueConfig qcfg;
  qcfg.strategy = strategy;
  qcfg.lock = cfg.lock;
  qcfg.qdisc = cfg.qdisc;
  qcfg.txqueuelen = cfg.txqueuelen;
  if (!cfg.tc_config.empty())
    qcfg.root_qdisc = tc::Config::load(cfg.tc_config).root_factory(cfg.tc_dev, tc_tree);
  return qcfg;
}

namespace {

// tc -s reads this run's counters while it runs. A second process on the same file cannot serve
// them (nor can a directory that is not private): `note` says why, and the run goes on.
std::unique_ptr<tc::LiveStats> serve_live_stats(const BenchConfig& cfg, TxQueue& txq,
                                                const std::shared_ptr<tc::Tree>& tc_tree,
                                                std::string& note) {
  if (cfg.tc_config.empty() || !txq.qdisc()) return nullptr;
  try {
    return std::make_unique<tc::LiveStats>(cfg.tc_config, cfg.tc_dev, txq, tc_tree);
  } catch (const ConfigError& e) {
    note = e.what();
    return nullptr;
  }
}

// When the next completion of `tx`'s device(s) is due (steady-clock ns); 0 when none is.
uint64_t next_completion_ns(TxQueue& tx) noexcept { return tx.device().next_poll_ns(); }
uint64_t next_completion_ns(MultiQueueTx& tx) noexcept {
  uint64_t first = 0;
  for (uint32_t q = 0; q < tx.device().num_tx_queues(); ++q) {
    const uint64_t at = tx.device().tx_queue(q).next_poll_ns();
    if (at != 0 && (first == 0 || at < first)) first = at;
  }
  return first;
}

// A sender whose send budget is spent (its pool's packets are all queued or in flight; with no
// budget, the shared pool's), for the `round`-th time in a row. First its queue's completion
// work, on this thread: reap what is due and perform the run a woken queue scheduled
// (TxQueue::service), as the floor's sender polls its device, and as the kernel does on the CPU
// that takes the queue's completion interrupt. Then, as the library's waits (spin, yield, park;
// --park off: yield only), it yields for a while — the floor's wait, so that a row's CPU per packet and the floor's count
// the same way — and only then sleeps: until half its budget is back (a socket's writer,
// sock_writeable()) or the device's next completion is due, whichever comes first.
template <class Tx>
void wait_for_budget(Tx& tx, Pool& pool, std::size_t budget, unsigned round) noexcept {
  tx.service();
  if (round < kBudgetYields || !spin_park()) {
    std::this_thread::yield();
    return;
  }
  uint64_t timeout = kBudgetWaitNs;
  if (const uint64_t due = next_completion_ns(tx); due != 0) {
    const uint64_t now = now_ns();
    timeout = due > now ? std::min(due - now, kBudgetWaitNs) : 0;
  }
  if (timeout > 0) pool.wait_for_free(std::max<std::size_t>(1, budget / 2), timeout);
}

// The send loop of txpath's rows: each sender takes buffers from `pool`, writes its frames
// (`traffic`: generated or a capture's, see traffic.hpp) and sends them through `tx` (a
// TxQueue, or a MultiQueueTx that picks the queue): one send() per packet, or with cfg.burst > 1
// one send_burst() per burst of up to cfg.burst packets (a MultiQueueTx hands each run of
// packets that picked the same TX queue to that queue); paced (pacer_for()), as many as are due.
template <class Tx>
auto txpath_send_loop(Tx& tx, bench_detail::SenderPools& pools,
                      const std::vector<bench_detail::SenderTraffic>& traffic, std::vector<Sender>& senders,
                      const BenchConfig& cfg, int threads) {
  return [&tx, &pools, &traffic, &senders, &cfg, threads](int t, RunFlags& flags) {
    Sender& me = senders[static_cast<std::size_t>(t)];
    const bench_detail::SenderTraffic& frames = traffic[static_cast<std::size_t>(t)];
    bench_detail::Pacer pacer = pacer_for(cfg, threads, frames);
    const auto burst = static_cast<uint64_t>(cfg.burst);
    Pool& pool = pools.of(t);
    Pool::Cache cache(pool);
    std::array<Packet*, kMaxBurst> packets{};
    std::array<SendStatus, kMaxBurst> status{};
    flags.started();
    if (frames.idle()) return idle_until_stopped(flags);
    pacer.start(now_ns());
    uint64_t seq = 0;
    unsigned dry_rounds = 0;  // looks in a row that found no free packet
    while (flags.running()) {
      const uint64_t want = due_now(pacer, burst, flags);
      std::size_t n = 0;
      for (; n < want; ++n) {
        Packet* p = cache.get();
        if (!p) break;
        frames.write(*p, seq + n);
        packets[n] = p;
      }
      if (n == 0) {  // every buffer is queued or in flight (the send budget is spent): wait for
                     // completions to return some, as a socket waits for its send buffer
        if (want > 0) wait_for_budget(tx, pool, pools.budget_packets(), dry_rounds++);
        continue;
      }
      dry_rounds = 0;
      pacer.take(n);
      const bool window = flags.in_window();
      if (burst == 1) {
        status[0] = me.timed(window, seq, [&] { return tx.send(packets[0]); }, 1, packets.data());
      } else {
        const auto burst_call = [&] {
          tx.send_burst(std::span(packets.data(), n), std::span(status.data(), n));
          return 0;
        };
        me.timed(window, seq, burst_call, n, packets.data());
      }
      if (window) {
        for (std::size_t i = 0; i < n; ++i)
          me.accepted_in_window += status[i] == SendStatus::queued || status[i] == SendStatus::congested;
      }
      seq += n;
    }
  };
}

}  // namespace

Run run_single_queue_once(const BenchConfig& cfg, const std::string& strategy, int threads,
                          Delivery& delivery) {
  bench_detail::SenderPools pools(cfg, threads, 1, delivery.capture);
  auto device = make_device(cfg.device);  // after the pools: destroyed first, it returns its ring
  bench_detail::use_zero_copy_pool(*device, pools);  // afxdp: its UMEM's, no copy
  LatencyHistogram queue_delay;
  device->set_departure_log(&queue_delay);

  auto tc_tree = std::make_shared<tc::Tree>();
  // The file is read and its endpoint opened under its shared lock: a change lands before the
  // read or reaches the endpoint, never in between (tc::ConfigReadLock).
  std::optional<tc::ConfigReadLock> file_lock;
  if (!cfg.tc_config.empty()) file_lock.emplace(cfg.tc_config);
  TxQueueConfig qcfg = queue_config(cfg, strategy, tc_tree);
  qcfg.service_cpus = sender_cpus(cfg, threads);  // the queue's "irq affinity" follows its senders
  auto txq = TxQueue::create(*device, qcfg);
  std::string live_note;
  std::unique_ptr<tc::LiveStats> live = serve_live_stats(cfg, *txq, tc_tree, live_note);
  file_lock.reset();
  const auto traffic = sender_traffic(cfg, frames_for(*device, cfg.payload), threads, false, delivery.capture);

  delivery.reset();
  auto senders = make_senders(threads);
  const auto w = measure(cfg, threads, delivery,
                         txpath_send_loop(*txq, pools, traffic, senders, cfg, threads),
                         [&] { return std::vector<TxQueueStats>{txq->stats()}; });

  const bool drained = txq->drain(std::chrono::seconds(10));
  Run r = summarize_run(txq->lock_kind(), drained, {txq->stats()}, senders, w);
  r.queue_delay = queue_delay;
  r.live_note = std::move(live_note);
  live.reset();  // no change after this one: the tree's configuration (tc_tree->config) is final
  r.tc_stats = bench_detail::final_tc_stats(cfg, *txq, *tc_tree);
  delivery.check(r.sent, r);
  // Nothing transmits once the queue is gone: the device's output (pcap:FILE) is complete.
  txq.reset();
  r.output_error = bench_detail::finish_output(*device);
  return r;
}

namespace {

// The per-queue trees of cfg.tc_config's device when it has `queues` TX queues (an mq or
// mqprio root, or a tree each queue runs a copy of): sets the device's traffic classes and
// returns mq's child factory, its nodes left in *trees. Empty when there is no tc configuration,
// or when its device has another queue count (then every queue runs a copy of its root tree:
// queue_config()'s root_qdisc).
std::function<std::unique_ptr<Qdisc>(uint32_t, const QdiscEnv&)> tc_queue_trees(
    const BenchConfig& cfg, NetDevice& device, const std::shared_ptr<tc::QueueTrees>& trees) {
  if (cfg.tc_config.empty()) return {};
  tc::Config::MultiQueueSetup setup = tc::Config::load(cfg.tc_config).multiqueue(cfg.tc_dev, trees);
  if (setup.tx_queues != device.num_tx_queues()) return {};
  if (setup.traffic_classes.num_tc > 0) device.set_traffic_classes(setup.traffic_classes);
  apply_tc_xps(device, setup.xps_cpus);
  return std::move(setup.queue_qdisc);
}

// tc -s reads a multi-queue run's counters (each queue's tree, mq's sums) while it runs; see
// serve_live_stats() for why it may not.
std::unique_ptr<tc::LiveStats> serve_live_stats(const BenchConfig& cfg, MultiQueueTx& tx,
                                                const std::shared_ptr<tc::QueueTrees>& trees,
                                                std::string& note) {
  try {
    return std::make_unique<tc::LiveStats>(cfg.tc_config, cfg.tc_dev, tx, trees);
  } catch (const ConfigError& e) {
    note = e.what();
    return nullptr;
  }
}

}  // namespace

Run run_multi_queue_once(const BenchConfig& cfg, const std::string& strategy, int threads,
                         uint32_t queues, Delivery& delivery) {
  bench_detail::SenderPools pools(cfg, threads, queues, delivery.capture);
  auto device = make_net_device(spec_with_queues(cfg.device, queues));  // after the pools, as above
  std::vector<LatencyHistogram> queue_delay(queues);
  log_departures(*device, queue_delay);
  apply_xps(*device, cfg);
  auto trees = std::make_shared<tc::QueueTrees>();
  std::optional<tc::ConfigReadLock> file_lock;  // as run_single_queue_once's
  if (!cfg.tc_config.empty()) file_lock.emplace(cfg.tc_config);
  MultiQueueConfig mq_cfg{.queue = queue_config(cfg, strategy, std::make_shared<tc::Tree>()),
                          .queue_qdisc = tc_queue_trees(cfg, *device, trees),
                          .service_on_xps_cpus = cfg.pin};  // as the single queue's, per queue
  const bool per_queue_trees = static_cast<bool>(mq_cfg.queue_qdisc);
  auto tx = MultiQueueTx::create(*device, mq_cfg);
  std::string live_note;
  std::unique_ptr<tc::LiveStats> live;
  if (per_queue_trees && tx->queue(0).qdisc()) live = serve_live_stats(cfg, *tx, trees, live_note);
  if (!cfg.tc_config.empty() && !per_queue_trees)
    live_note = "the tc device has another TX queue count than this run";
  file_lock.reset();
  const auto traffic = sender_traffic(cfg, frames_for(device->tx_queue(0), cfg.payload), threads, true, delivery.capture);

  delivery.reset();
  auto senders = make_senders(threads);
  const auto w = measure(cfg, threads, delivery,
                         txpath_send_loop(*tx, pools, traffic, senders, cfg, threads),
                         [&] { return tx->queue_stats(); });

  const bool drained = tx->drain(std::chrono::seconds(10));
  Run r = summarize_run(tx->queue(0).lock_kind(), drained, tx->queue_stats(), senders, w);
  for (const LatencyHistogram& q : queue_delay) r.queue_delay.merge(q);
  r.live_note = std::move(live_note);
  live.reset();  // no change after this one: trees->config is final
  r.tc_stats = bench_detail::final_tc_stats(cfg, *tx, per_queue_trees ? trees.get() : nullptr);
  delivery.check(r.sent, r);
  tx.reset();
  for (uint32_t q = 0; q < queues && r.output_error.empty(); ++q)
    r.output_error = bench_detail::finish_output(device->tx_queue(q));
  return r;
}

}  // namespace txpath::bench_detail
