// SPDX-License-Identifier: MIT
#include "txpath/bench.hpp"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "sync/cpu_relax.hpp"
#include "txpath/device.hpp"
#include "txpath/error.hpp"
#include "txpath/frame.hpp"
#include "txpath/pool.hpp"
#include "txpath/topology.hpp"
#include "txpath/txqueue.hpp"

namespace txpath {

namespace {

uint64_t process_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

// Sender i's CPU: round-robin over nodes first (spread), then over the cores of that node.
int cpu_for_sender(int i) {
  const auto& nodes = topology().cores_by_node;
  const std::size_t n = nodes.size();
  const auto& node = nodes[static_cast<std::size_t>(i) % n];
  if (node.empty()) return -1;
  return node[(static_cast<std::size_t>(i) / n) % node.size()];
}

void pin_to(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);  // best effort
}

BenchPoint run_point(const BenchConfig& cfg, const std::string& strategy, int threads) {
  // Enough buffers for every place a packet can wait: 3 bands, the ring, the senders' caches.
  PoolConfig pool_cfg;
  pool_cfg.cache_size = 64;
  pool_cfg.packets = std::max<std::size_t>(
      16384, 4 * static_cast<std::size_t>(cfg.txqueuelen) + 4096 +
                 static_cast<std::size_t>(threads) * pool_cfg.cache_size * 2);
  pool_cfg.buffer_size = std::max<std::size_t>(256, kHeadersLen + cfg.payload);
  Pool pool(pool_cfg);
  auto device = make_device(cfg.device);  // after the pool: destroyed first, it returns its ring

  TxQueueConfig qcfg;
  qcfg.strategy = strategy;
  qcfg.lock = cfg.lock;
  qcfg.qdisc = cfg.qdisc;
  qcfg.txqueuelen = cfg.txqueuelen;
  auto txq = TxQueue::create(*device, qcfg);

  FrameSpec spec;
  spec.payload = cfg.payload;
  const FrameTemplate tmpl(spec);

  std::atomic<bool> stop{false};
  std::atomic<int> ready{0};
  std::vector<std::thread> senders;
  senders.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    senders.emplace_back([&, t] {
      if (cfg.pin) pin_to(cpu_for_sender(t));
      Pool::Cache cache(pool);
      ready.fetch_add(1, std::memory_order_relaxed);  // relaxed: a start-up head count only
      uint64_t seq = 0;
      // relaxed: the flag only ends the loop; the join below orders everything after it.
      while (!stop.load(std::memory_order_relaxed)) {
        Packet* p = cache.get();
        if (!p) {  // every buffer is queued or in flight: back off until completions return some
          std::this_thread::yield();
          continue;
        }
        p->len = static_cast<uint32_t>(tmpl.write(p->buffer(), static_cast<uint32_t>(t), seq++));
        txq->send(p);
      }
    });
  }
  // relaxed: see above.
  while (ready.load(std::memory_order_relaxed) < threads) std::this_thread::yield();

  const auto warmup = std::chrono::duration<double>(std::min(0.2, cfg.duration_s * 0.1));
  std::this_thread::sleep_for(warmup);
  const TxQueueStats s0 = txq->stats();
  const uint64_t cpu0 = process_cpu_ns();
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(cfg.duration_s));
  const TxQueueStats s1 = txq->stats();
  const uint64_t cpu1 = process_cpu_ns();
  const auto t1 = std::chrono::steady_clock::now();
  stop.store(true, std::memory_order_relaxed);  // relaxed: see above
  for (auto& s : senders) s.join();

  BenchPoint pt;
  pt.strategy = strategy;
  pt.lock = std::string(txq->lock_kind());
  pt.threads = threads;
  pt.drained = txq->drain(std::chrono::seconds(10));
  const TxQueueStats end = txq->stats();
  const double secs = std::chrono::duration<double>(t1 - t0).count();
  const uint64_t window_sent = s1.sent - s0.sent;
  pt.mpps = secs > 0 ? static_cast<double>(window_sent) / secs / 1e6 : 0;
  pt.cpu_ns_per_pkt =
      window_sent > 0 ? static_cast<double>(cpu1 - cpu0) / static_cast<double>(window_sent) : 0;
  pt.submitted = end.submitted;
  pt.sent = end.sent;
  pt.dropped = end.dropped;
  pt.requeues = end.requeues;
  pt.doorbells = end.device.doorbells;
  pt.conserved = pt.drained && conservation_holds(end.submitted, end.sent, end.dropped, end.queued);
  return pt;
}

}  // namespace

bool conservation_holds(uint64_t submitted, uint64_t sent, uint64_t dropped, uint64_t queued) {
  return queued == 0 && submitted == sent + dropped;
}

std::vector<int> default_thread_counts() {
  const int cores = topology().cores;
  std::vector<int> counts{1, cores, 2 * cores, 8 * cores};
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  return counts;
}

BenchConfig resolve_bench_config(const BenchConfig& config) {
  BenchConfig cfg = config;
  if (cfg.strategies.empty()) cfg.strategies = strategy_names();
  if (cfg.threads.empty()) cfg.threads = default_thread_counts();
  if (!(cfg.duration_s > 0)) throw ConfigError("duration must be positive");
  for (int t : cfg.threads)
    if (t < 1 || t > 4096) throw ConfigError("thread count " + std::to_string(t) + " out of range 1..4096");
  // Validate everything up front, so a typo fails before minutes of measuring.
  {
    auto device = make_device(cfg.device);
    for (const auto& s : cfg.strategies) {
      TxQueueConfig q;
      q.strategy = s;
      q.lock = cfg.lock;
      q.qdisc = cfg.qdisc;
      q.txqueuelen = cfg.txqueuelen;
      q.service_thread = false;
      TxQueue::create(*device, q);
    }
    FrameSpec spec;
    spec.payload = cfg.payload;
    const FrameTemplate tmpl(spec);
    if (tmpl.size() > device->max_frame_len())
      throw ConfigError("payload " + std::to_string(cfg.payload) + " makes a " +
                        std::to_string(tmpl.size()) + "-byte frame, over the device's maximum of " +
                        std::to_string(device->max_frame_len()));
  }
  return cfg;
}

std::vector<BenchPoint> run_bench(const BenchConfig& config,
                                  const std::function<void(const std::string&)>& progress) {
  const BenchConfig cfg = resolve_bench_config(config);
  std::vector<BenchPoint> points;
  const std::size_t total = cfg.threads.size() * cfg.strategies.size();
  // Same thread count side by side (A B A B ...), so ratios hold when the machine drifts.
  for (int threads : cfg.threads) {
    for (const auto& strategy : cfg.strategies) {
      if (progress)
        progress("[" + std::to_string(points.size() + 1) + "/" + std::to_string(total) + "] " +
                 strategy + " threads=" + std::to_string(threads));
      points.push_back(run_point(cfg, strategy, threads));
    }
  }
  return points;
}

}  // namespace txpath
