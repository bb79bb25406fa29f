// SPDX-License-Identifier: MIT
// fq hot path: one enqueue + one dequeue per iteration with F active flows (F = the benchmark
// argument: 1, 64, 1024) and F * 4 packets standing, unpaced (Packet::pacing_rate 0, no EDT
// tstamp, no maxrate), so only classification (hash chain lookup), the per-flow FIFO, the DRR
// credit and the band round robin are measured. Items = packets through the qdisc.
//
// Packet i carries flow i mod F (distinct flow_hash values; fq hashes them into its buckets
// itself). Default options otherwise (buckets 1024, flow_limit 100 > 4 + 1, limit 10000 >
// 4 * 1024 + 1), and the real clock (now_ns() on every enqueue and dequeue, as in production).
// Packets come from a Pool and carry real frames written by FrameTemplate.
#include <benchmark/benchmark.h>

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

void BM_QdiscFqFlows(benchmark::State& state, const char* spec) {
  const auto flows = static_cast<uint32_t>(state.range(0));
  const std::size_t standing = std::size_t{flows} * 4;
  txpath::Pool pool(txpath::PoolConfig{.packets = standing + 16});
  {
    std::unique_ptr<txpath::Qdisc> q = txpath::make_qdisc(spec, txpath::QdiscEnv{});
    const txpath::FrameTemplate frame;
    PacketList to_free;
    uint64_t seq = 0;
    auto fresh = [&]() {
      Packet* p = pool.get();  // cannot fail: the pool holds N + 16 packets
      p->len = static_cast<uint32_t>(frame.write(p->buffer(), 0, seq));
      p->flow_hash = static_cast<uint32_t>(seq % flows) + 1;
      p->pacing_rate = 0;
      p->tstamp_ns = 0;
      ++seq;
      return p;
    };
    for (std::size_t i = 0; i < standing; ++i) q->enqueue(fresh(), to_free);
    Packet* spare = fresh();
    for (auto _ : state) {
      spare->flow_hash = static_cast<uint32_t>(seq++ % flows) + 1;
      spare->tstamp_ns = 0;
      const txpath::Verdict v = q->enqueue(spare, to_free);
      benchmark::DoNotOptimize(v);
      spare = q->dequeue();
      benchmark::DoNotOptimize(std::as_const(spare));
    }
    if (!to_free.empty() || q->stats().drops != 0 || spare == nullptr ||
        q->qlen() != standing)
      state.SkipWithError("fq dropped, throttled or lost a packet");
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
    q->reset(to_free);
    if (spare) to_free.push_back(spare);
    txpath::free_packets(std::move(to_free));
  }
  txpath::bench::expect_pool_full(state, pool);
}

BENCHMARK_CAPTURE(BM_QdiscFqFlows, fq, "fq")->Arg(1)->Arg(64)->Arg(1024);
// The same with 2^14 hash chains: chains of length ~1 at 1024 flows.
BENCHMARK_CAPTURE(BM_QdiscFqFlows, fq_buckets16k, "fq buckets 16384")->Arg(1024);

}  // namespace
