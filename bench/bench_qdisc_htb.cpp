// SPDX-License-Identifier: MIT
// htb hot path: one enqueue + one dequeue per iteration through the Qdisc interface, with N leaf
// classes (the benchmark argument: 1, 64, 1024) under one root class, and 2 packets per leaf
// standing in the queue. Packet i goes to leaf i mod N (priority = its classid), so dequeue
// walks the DRR rows and classes keep activating and deactivating. Items = packets.
//
// The qdisc reads a simulated clock that advances 1 us per iteration; every leaf's rate is
// 100 Gbit / N and the root's 100 Gbit, so a class's bucket refills faster than the
// round-robin comes back to it and nothing is ever throttled: what is measured is the
// classification, DRR and token accounting, not waiting.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench_common.hpp"
#include "txpath/frame.hpp"
#include "txpath/packet.hpp"
#include "txpath/pool.hpp"
#include "txpath/qdisc.hpp"
#include "tc/qdisc_spec.hpp"
#include "txpath/error.hpp"

namespace {

using txpath::Packet;
using txpath::PacketList;

uint64_t g_bench_now = 0;
uint64_t bench_clock() { return g_bench_now; }

void add_class(txpath::Qdisc& q, uint16_t minor, uint16_t parent, const std::string& opts,
               const txpath::QdiscEnv& env) {
  std::vector<std::string_view> toks;
  for (std::size_t i = 0; i < opts.size();) {
    const std::size_t sp = opts.find(' ', i);
    const std::size_t end = sp == std::string::npos ? opts.size() : sp;
    toks.push_back(std::string_view(opts).substr(i, end - i));
    i = end + 1;
  }
  txpath::QdiscOptions o(toks, [](const std::string& what, bool) {
    throw txpath::ConfigError("bench htb class: " + what);
  });
  txpath::add_class(q, minor, parent, o, env);
}

void BM_Htb(benchmark::State& state) {
  const auto leaves = static_cast<uint32_t>(state.range(0));
  const std::size_t standing = std::size_t{leaves} * 2;
  txpath::Pool pool(txpath::PoolConfig{.packets = standing + 16});
  {
    g_bench_now = 1'000'000'000;
    txpath::QdiscEnv env;
    env.clock = &bench_clock;
    env.handle_major = 1;
    env.txqueuelen = 4096;
    std::unique_ptr<txpath::Qdisc> q = txpath::make_qdisc("htb", env);
    add_class(*q, 1, 0, "rate 100gbit burst 1mb cburst 1mb", env);
    const uint64_t leaf_kbit = 100'000'000 / leaves;
    for (uint32_t i = 0; i < leaves; ++i)
      add_class(*q, static_cast<uint16_t>(0x10 + i), 1,
                "rate " + std::to_string(leaf_kbit) + "kbit ceil 100gbit burst 64k cburst 64k", env);
    const txpath::FrameTemplate frame;
    PacketList to_free;
    uint64_t seq = 0;
    uint32_t next = 0;
    auto next_class = [&]() -> uint32_t {
      const uint32_t prio = 0x10000u | (0x10 + next);
      next = next + 1 == leaves ? 0 : next + 1;
      return prio;
    };
    auto fresh = [&]() {
      Packet* p = pool.get();  // cannot fail: the pool holds N * 2 + 16 packets
      p->len = static_cast<uint32_t>(frame.write(p->buffer(), 0, seq++));
      p->priority = next_class();
      return p;
    };
    for (std::size_t i = 0; i < standing; ++i) q->enqueue(fresh(), to_free);
    Packet* spare = fresh();

    for (auto _ : state) {
      g_bench_now += 1000;
      spare->priority = next_class();
      const txpath::Verdict v = q->enqueue(spare, to_free);
      benchmark::DoNotOptimize(v);
      spare = q->dequeue();
      benchmark::DoNotOptimize(std::as_const(spare));
      if (!spare) break;  // throttled: reported below
    }

    const txpath::QdiscStats st = q->stats();
    if (!to_free.empty() || st.drops != 0 || st.qlen != standing || spare == nullptr ||
        st.overlimits != 0) {
      state.SkipWithError("htb left its steady state (drop, throttle or lost packet)");
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));

    q->reset(to_free);
    q->take_dequeue_drops(to_free);
    if (spare) to_free.push_back(spare);
    txpath::free_packets(std::move(to_free));
  }
  txpath::bench::expect_pool_full(state, pool);
}

BENCHMARK(BM_Htb)->Arg(1)->Arg(64)->Arg(1024);

}  // namespace
