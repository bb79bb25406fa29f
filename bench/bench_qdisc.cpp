// SPDX-License-Identifier: MIT
// Qdisc hot path: one enqueue + one dequeue per iteration, with N packets standing in the queue
// (N = the benchmark argument: 1, 64, 1000). Items = packets through the qdisc.
//
// The qdisc is built with make_qdisc() and called through the Qdisc interface, as the strategies
// call it. Limits are raised (txqueuelen 4096) so that no case ever drops: the steady state
// oscillates between N and N+1 queued packets. Packets come from a Pool and carry real frames
// written by FrameTemplate.
//
// pfifo_fast_mixed: each enqueued packet gets the next of the priorities 6, 0, 2 (bands 0, 1, 2),
// so dequeue has to find the first non-empty band. (Band 0 is always served first, so in steady
// state the standing packets end up in band 2 and the band-0/1 packets pass through them.)
#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <memory>
#include <utility>

#include "bench_common.hpp"
#include "txpath/frame.hpp"
#include "txpath/packet.hpp"
#include "txpath/pool.hpp"
#include "txpath/qdisc.hpp"

namespace {

using txpath::Packet;
using txpath::PacketList;

constexpr std::array<uint32_t, 3> kMixedPriorities = {6, 0, 2};  // -> bands 0, 1, 2

void BM_QdiscEnqueueDequeue(benchmark::State& state, const char* spec, bool mixed) {
  const auto standing = static_cast<std::size_t>(state.range(0));
  txpath::Pool pool(txpath::PoolConfig{.packets = standing + 16});
  {
    txpath::QdiscEnv env;
    env.txqueuelen = 4096;  // above N + 1 for every case: no drops, no head drops
    std::unique_ptr<txpath::Qdisc> q = txpath::make_qdisc(spec, env);
    const txpath::FrameTemplate frame;
    PacketList to_free;
    uint64_t seq = 0;
    std::size_t next_prio = 0;
    auto next_priority = [&]() -> uint32_t {
      if (!mixed) return 0;
      const uint32_t prio = kMixedPriorities[next_prio];
      next_prio = next_prio + 1 == kMixedPriorities.size() ? 0 : next_prio + 1;
      return prio;
    };
    auto fresh = [&]() {
      Packet* p = pool.get();  // cannot fail: the pool holds N + 16 packets
      p->len = static_cast<uint32_t>(frame.write(p->buffer(), 0, seq++));
      p->priority = next_priority();
      return p;
    };

    for (std::size_t i = 0; i < standing; ++i) q->enqueue(fresh(), to_free);
    Packet* spare = fresh();

    for (auto _ : state) {
      spare->priority = next_priority();
      const txpath::Verdict v = q->enqueue(spare, to_free);
      benchmark::DoNotOptimize(v);
      spare = q->dequeue();
      benchmark::DoNotOptimize(std::as_const(spare));
    }

    const txpath::QdiscStats st = q->stats();
    if (!to_free.empty() || st.drops != 0 || st.qlen != standing || spare == nullptr) {
      state.SkipWithError("qdisc left its steady state (drop or lost packet)");
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));

    q->reset(to_free);
    if (spare) to_free.push_back(spare);
    txpath::free_packets(std::move(to_free));
  }
  txpath::bench::expect_pool_full(state, pool);
}

// Flow-aware qdiscs with F active flows: packet i carries flow i mod F (flow hashes spread over
// the 32-bit space, so fq_codel's (hash * flows) >> 32 puts them in F distinct buckets), with
// F * 4 packets standing. Items = packets through the qdisc (one enqueue + one dequeue each).
void BM_QdiscFlows(benchmark::State& state, const char* spec) {
  const auto flows = static_cast<uint32_t>(state.range(0));
  const std::size_t standing = std::size_t{flows} * 4;
  txpath::Pool pool(txpath::PoolConfig{.packets = standing + 16});
  {
    txpath::QdiscEnv env;
    env.txqueuelen = 1 << 20;
    std::unique_ptr<txpath::Qdisc> q = txpath::make_qdisc(spec, env);
    const txpath::FrameTemplate frame;
    PacketList to_free;
    uint64_t seq = 0;
    const uint32_t stride = flows > 1 ? static_cast<uint32_t>((uint64_t{1} << 32) / flows) : 0;
    auto fresh = [&]() {
      Packet* p = pool.get();
      p->len = static_cast<uint32_t>(frame.write(p->buffer(), 0, seq));
      p->flow_hash = static_cast<uint32_t>(seq % flows) * stride + stride / 2;
      ++seq;
      return p;
    };
    for (std::size_t i = 0; i < standing; ++i) q->enqueue(fresh(), to_free);
    Packet* spare = fresh();
    for (auto _ : state) {
      spare->flow_hash = static_cast<uint32_t>(seq++ % flows) * stride + stride / 2;
      const txpath::Verdict v = q->enqueue(spare, to_free);
      benchmark::DoNotOptimize(v);
      spare = q->dequeue();
      benchmark::DoNotOptimize(std::as_const(spare));
    }
    q->take_dequeue_drops(to_free);
    if (!to_free.empty() || q->stats().drops != 0 || spare == nullptr)
      state.SkipWithError("qdisc dropped or lost a packet");
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
    q->reset(to_free);
    if (spare) to_free.push_back(spare);
    txpath::free_packets(std::move(to_free));
  }
  txpath::bench::expect_pool_full(state, pool);
}

// CoDel off in effect (target far above any sojourn here), so only the FQ/DRR work is measured.
BENCHMARK_CAPTURE(BM_QdiscFlows, fq_codel, "fq_codel limit 100000 flows 1024 target 10s interval 100s")
    ->Arg(1)->Arg(64)->Arg(1024);
BENCHMARK_CAPTURE(BM_QdiscEnqueueDequeue, prio, "prio", false)->Arg(1)->Arg(64)->Arg(1000);
BENCHMARK_CAPTURE(BM_QdiscEnqueueDequeue, prio_mixed, "prio", true)->Arg(1)->Arg(64)->Arg(1000);
// A bucket no packet ever empties: the cost of the token arithmetic, not of waiting.
BENCHMARK_CAPTURE(BM_QdiscEnqueueDequeue, tbf, "tbf rate 100gbit burst 100mb limit 100mb", false)
    ->Arg(1)->Arg(64)->Arg(1000);

BENCHMARK_CAPTURE(BM_QdiscEnqueueDequeue, pfifo_fast, "pfifo_fast", false)->Arg(1)->Arg(64)->Arg(1000);
BENCHMARK_CAPTURE(BM_QdiscEnqueueDequeue, pfifo_fast_mixed, "pfifo_fast", true)->Arg(1)->Arg(64)->Arg(1000);
BENCHMARK_CAPTURE(BM_QdiscEnqueueDequeue, pfifo, "pfifo", false)->Arg(1)->Arg(64)->Arg(1000);
BENCHMARK_CAPTURE(BM_QdiscEnqueueDequeue, bfifo, "bfifo", false)->Arg(1)->Arg(64)->Arg(1000);
BENCHMARK_CAPTURE(BM_QdiscEnqueueDequeue, pfifo_head_drop, "pfifo_head_drop", false)->Arg(1)->Arg(64)->Arg(1000);

}  // namespace
