// SPDX-License-Identifier: MIT
// The uncontended end-to-end path, packet by packet, beside the harness's floor (issue 15).
//
//  * BM_Send/<strategy>: one sender on the null device, as `txpath bench --device null
//    --threads 1` runs it: a TxQueue with the strategy's defaults (pfifo_fast, ticket lock,
//    service thread on), and per packet a Pool::Cache get, FrameTemplate::write and send().
//  * BM_SendBurst32/<strategy>: the same with 32 packets per TxQueue::send_burst() call
//    (`txpath bench --burst 32`).
//  * BM_Floor: the bench's floor row with one sender: 64 cache gets and frame writes, then the
//    64 packets handed straight to the null device under its tx lock, the doorbell (more =
//    false) with the last; no strategy, no qdisc.
//
// Time is the process's CPU time (MeasureProcessCPUTime: the service thread and a strategy's own
// threads count, as in the bench's cpu_ns_per_pkt); cpu/pkt is that CPU time per packet, the
// figure to set side by side. Counters: dropped/pkt (the qdisc dropped what a hand-off strategy's
// backlog could not hold). Every packet comes back: the queue is drained and the pool must be
// full again at the end.
#include <benchmark/benchmark.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>

#include "bench_common.hpp"
#include "txpath/device.hpp"
#include "txpath/frame.hpp"
#include "txpath/packet.hpp"
#include "txpath/pool.hpp"
#include "txpath/txqueue.hpp"

namespace {

using txpath::Packet;
using txpath::Pool;

// The bench's pool for one sender on one TX queue (src/bench/bench.cpp, pool_config()).
txpath::PoolConfig bench_pool() { return {.packets = 16384, .buffer_size = 256, .cache_size = 64}; }

// A packet from `cache` holding the next frame, or nullptr when every buffer is in flight.
Packet* next_frame(Pool::Cache& cache, const txpath::FrameTemplate& frame, uint64_t& seq) {
  Packet* p = cache.get();
  if (p) p->len = static_cast<uint32_t>(frame.write(p->buffer(), 0, seq++));
  return p;
}

void set_per_packet_counters(benchmark::State& state, uint64_t packets, uint64_t dropped) {
  state.SetItemsProcessed(static_cast<int64_t>(packets));
  // Seconds of CPU per packet, which the console prints with its SI prefix ("19.9ns").
  state.counters["cpu/pkt"] = benchmark::Counter(static_cast<double>(packets),
                                                 benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["dropped/pkt"] =
      packets ? static_cast<double>(dropped) / static_cast<double>(packets) : 0.0;
}

// Drains and tears down the queue and the device, then checks that every packet came back.
void finish(benchmark::State& state, Pool& pool, std::unique_ptr<txpath::TxQueue>& txq,
            std::unique_ptr<txpath::Device>& device, uint64_t packets) {
  if (!txq->drain(std::chrono::seconds(10))) state.SkipWithError("the queue did not drain");
  set_per_packet_counters(state, packets, txq->stats().dropped);
  txq.reset();
  device.reset();
  txpath::bench::expect_pool_full(state, pool);
}

// `burst` packets per call: send() for 1, send_burst() otherwise.
void BM_Send(benchmark::State& state, const std::string& strategy, std::size_t burst) {
  Pool pool(bench_pool());
  auto device = txpath::make_device("null");
  txpath::TxQueueConfig config;  // the defaults, as the bench runs them
  config.strategy = strategy;
  auto txq = txpath::TxQueue::create(*device, config);
  const txpath::FrameTemplate frame;
  uint64_t seq = 0, packets = 0;
  {
    Pool::Cache cache(pool);
    std::array<Packet*, 32> batch{};
    std::array<txpath::SendStatus, 32> status{};
    for (auto _ : state) {
      std::size_t n = 0;
      while (n < burst) {
        Packet* p = next_frame(cache, frame, seq);
        if (p) batch[n++] = p;
        else std::this_thread::yield();  // every buffer queued or in flight: completions first
      }
      if (burst == 1) benchmark::DoNotOptimize(txq->send(batch[0]));
      else txq->send_burst(std::span(batch.data(), n), std::span(status.data(), n));
      packets += n;
    }
  }
  finish(state, pool, txq, device, packets);
}

void BM_Floor(benchmark::State& state) {
  constexpr std::size_t kBatch = 64;  // txpath::kFloorBatch
  Pool pool(bench_pool());
  auto device = txpath::make_device("null");
  const txpath::FrameTemplate frame;
  uint64_t seq = 0, packets = 0;
  {
    Pool::Cache cache(pool);
    std::array<Packet*, kBatch> batch{};
    for (auto _ : state) {
      for (Packet*& p : batch) p = next_frame(cache, frame, seq);  // the null device frees at once
      std::lock_guard tx(device->tx_lock());
      for (std::size_t i = 0; i < kBatch; ++i) {
        if (device->xmit(batch[i], i + 1 < kBatch) != txpath::XmitResult::ok) {
          state.SkipWithError("the null device refused a packet");
          return;
        }
      }
      packets += kBatch;
    }
  }
  set_per_packet_counters(state, packets, 0);
  device.reset();
  txpath::bench::expect_pool_full(state, pool);
}
BENCHMARK(BM_Floor)->MeasureProcessCPUTime();

// One BM_Send and one BM_SendBurst32 per registered strategy.
[[maybe_unused]] const bool registered = [] {
  for (const std::string& s : txpath::strategy_names()) {
    benchmark::RegisterBenchmark(("BM_Send/" + s).c_str(), BM_Send, s, std::size_t{1})
        ->MeasureProcessCPUTime();
    benchmark::RegisterBenchmark(("BM_SendBurst32/" + s).c_str(), BM_Send, s, std::size_t{32})
        ->MeasureProcessCPUTime();
  }
  return true;
}();

}  // namespace
