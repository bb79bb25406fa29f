// SPDX-License-Identifier: MIT
// The parts of a run that do not depend on its row (bench/measure.hpp): where senders are pinned,
// the process's CPU time, sleeps that wake for a stop, fairness, and a run's numbers from its TX
// queues' counters once its senders stopped (conservation_holds(), bench.hpp, included).
#include "bench/measure.hpp"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/topology.hpp"
#include "txpath/multiqueue.hpp"
#include "txpath/txqueue.hpp"

namespace txpath::bench_detail {

uint64_t process_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

int cpu_for_sender(int i, int nodes_in_use) {
  const auto& nodes = topology().cores_by_node;
  const std::size_t n = std::max<std::size_t>(
      1, nodes_in_use > 0 ? std::min<std::size_t>(static_cast<std::size_t>(nodes_in_use), nodes.size())
                          : nodes.size());
  const auto& node = nodes[static_cast<std::size_t>(i) % n];
  if (node.empty()) return -1;
  return node[(static_cast<std::size_t>(i) / n) % node.size()];
}

std::vector<unsigned> sender_cpus(const BenchConfig& cfg, int threads) {
  std::vector<unsigned> cpus;
  if (!cfg.pin) return cpus;
  for (int t = 0; t < threads; ++t) {
    const int cpu = cpu_for_sender(t, cfg.nodes);
    if (cpu >= 0 && std::find(cpus.begin(), cpus.end(), static_cast<unsigned>(cpu)) == cpus.end())
      cpus.push_back(static_cast<unsigned>(cpu));
  }
  return cpus;
}

void pin_to(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);  // best effort
}

double jain_index(const std::vector<uint64_t>& xs) {
  double sum = 0, sum_sq = 0;
  for (uint64_t x : xs) {
    sum += static_cast<double>(x);
    sum_sq += static_cast<double>(x) * static_cast<double>(x);
  }
  if (xs.empty() || sum_sq == 0) return 0;
  return sum * sum / (static_cast<double>(xs.size()) * sum_sq);
}

bool stop_requested(const BenchConfig& cfg) {
  // relaxed: a flag that only steers loops (its writer, a signal handler, publishes nothing else)
  return cfg.stop != nullptr && cfg.stop->load(std::memory_order_relaxed);
}

bool sleep_unless_stopped(const BenchConfig& cfg, std::chrono::duration<double> d) {
  constexpr auto kPoll = std::chrono::milliseconds(5);  // how soon a stop is seen
  const auto end = std::chrono::steady_clock::now() +
                   std::chrono::duration_cast<std::chrono::steady_clock::duration>(d);
  while (!stop_requested(cfg)) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= end) return true;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(end - now, kPoll));
  }
  return false;
}

std::vector<Sender> make_senders(int threads) {
  return std::vector<Sender>(static_cast<std::size_t>(threads));
}

namespace {

// The sum of every TX queue's counters (MultiQueueTx::stats()'s sum, from one sample).
TxQueueStats total_of(const std::vector<TxQueueStats>& queues) {
  TxQueueStats sum;
  for (const TxQueueStats& q : queues) add_stats(sum, q);
  return sum;
}

}  // namespace

Run summarize_run(std::string_view lock, bool drained, const std::vector<TxQueueStats>& end,
                  const std::vector<Sender>& senders, const Window<std::vector<TxQueueStats>>& w) {
  Run r;
  r.lock = std::string(lock);
  r.drained = drained;
  const TxQueueStats total = total_of(end);
  const TxQueueStats start = total_of(w.start), stop = total_of(w.end);
  fill_window_figures(r, stop.sent - start.sent, w, senders);
  r.window_doorbells = stop.device.doorbells - start.device.doorbells;
  r.submitted = total.submitted;
  r.sent = total.sent;
  r.dropped = total.dropped;
  r.requeues = total.requeues;
  r.doorbells = total.device.doorbells;
  r.lock_waits = stop.lock_waits - start.lock_waits;
  r.lock_wait_ns = stop.lock_wait_ns - start.lock_wait_ns;
  r.conserved = r.drained && conservation_holds(total.submitted, total.sent, total.dropped, total.queued);
  for (std::size_t i = 0; i < end.size(); ++i) {
    const TxQueueStats& q = end[i];
    QueueRun qr{.submitted = q.submitted, .sent = q.sent, .dropped = q.dropped,
                .doorbells = q.device.doorbells,
                .window_sent = w.end[i].sent - w.start[i].sent,
                .window_doorbells = w.end[i].device.doorbells - w.start[i].device.doorbells,
                .conserved = r.drained && conservation_holds(q.submitted, q.sent, q.dropped, q.queued)};
    r.conserved = r.conserved && qr.conserved;
    r.per_queue.push_back(qr);
  }
  return r;
}

}  // namespace txpath::bench_detail

namespace txpath {

bool conservation_holds(uint64_t submitted, uint64_t sent, uint64_t dropped, uint64_t queued) {
  return queued == 0 && submitted == sent + dropped;
}

}  // namespace txpath
