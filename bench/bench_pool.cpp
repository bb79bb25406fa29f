// SPDX-License-Identifier: MIT
// The packet pool:
//  * BM_PoolCacheGetPut:     Pool::Cache get + put of one packet (the sender's fast path; stays
//                            inside the thread-private cache).
//  * BM_PoolCacheBurst/K:    K gets then K puts through a Cache (capacity 64): K = 32 stays in
//                            the cache, K = 256 refills/flushes half-caches from/to the shared
//                            stack. Items = packets.
//  * BM_PoolSharedGetPut:    Pool::get + Pool::put (the shared stack under its spinlock).
//  * BM_FreePackets32:       free_packets() of a 32-packet chain (what a device completion or a
//                            to_free list does). Manual timing: only the free_packets() call is
//                            timed (with now_ns(), ~10 ns per pair of reads), the 32 Cache gets
//                            that build the chain are not. Items = packets.
//  * BM_CacheGet32FreePackets: the whole round trip, 32 Cache gets + free_packets(), all timed.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "bench_common.hpp"
#include "base/clock.hpp"
#include "txpath/packet.hpp"
#include "txpath/pool.hpp"

namespace {

using txpath::Packet;
using txpath::PacketList;
using txpath::Pool;

constexpr std::size_t kPoolPackets = 4096;
constexpr int kChain = 32;

void BM_PoolCacheGetPut(benchmark::State& state) {
  Pool pool(txpath::PoolConfig{.packets = kPoolPackets});
  {
    Pool::Cache cache(pool);
    for (auto _ : state) {
      Packet* p = cache.get();
      benchmark::DoNotOptimize(std::as_const(p));
      cache.put(p);
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  txpath::bench::expect_pool_full(state, pool);
}
BENCHMARK(BM_PoolCacheGetPut);

void BM_PoolCacheBurst(benchmark::State& state) {
  const auto burst = static_cast<std::size_t>(state.range(0));
  Pool pool(txpath::PoolConfig{.packets = kPoolPackets});
  {
    Pool::Cache cache(pool);
    std::vector<Packet*> held(burst);
    for (auto _ : state) {
      for (Packet*& p : held) p = cache.get();
      benchmark::DoNotOptimize(held.data());
      for (Packet* p : held) cache.put(p);
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * burst));
  txpath::bench::expect_pool_full(state, pool);
}
BENCHMARK(BM_PoolCacheBurst)->Arg(32)->Arg(256);

void BM_PoolSharedGetPut(benchmark::State& state) {
  Pool pool(txpath::PoolConfig{.packets = kPoolPackets});
  for (auto _ : state) {
    Packet* p = pool.get();
    benchmark::DoNotOptimize(std::as_const(p));
    pool.put(p);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  txpath::bench::expect_pool_full(state, pool);
}
BENCHMARK(BM_PoolSharedGetPut);

void BM_FreePackets32(benchmark::State& state) {
  Pool pool(txpath::PoolConfig{.packets = kPoolPackets});
  (void)txpath::now_ns();  // calibrate the clock before the first timed iteration
  {
    Pool::Cache cache(pool);
    for (auto _ : state) {
      PacketList chain;
      for (int i = 0; i < kChain; ++i) chain.push_back(cache.get());
      const uint64_t t0 = txpath::now_ns();
      txpath::free_packets(std::move(chain));
      const uint64_t t1 = txpath::now_ns();
      state.SetIterationTime(static_cast<double>(t1 - t0) * 1e-9);
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kChain));
  txpath::bench::expect_pool_full(state, pool);
}
BENCHMARK(BM_FreePackets32)->UseManualTime();

void BM_CacheGet32FreePackets(benchmark::State& state) {
  Pool pool(txpath::PoolConfig{.packets = kPoolPackets});
  {
    Pool::Cache cache(pool);
    for (auto _ : state) {
      PacketList chain;
      for (int i = 0; i < kChain; ++i) chain.push_back(cache.get());
      txpath::free_packets(std::move(chain));
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kChain));
  txpath::bench::expect_pool_full(state, pool);
}
BENCHMARK(BM_CacheGet32FreePackets);

}  // namespace
