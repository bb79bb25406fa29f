// SPDX-License-Identifier: MIT
#include "bench/sender_pools.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

#include "bench/pcap_source.hpp"
#include "txpath/error.hpp"
#include "txpath/frame.hpp"

namespace txpath::bench_detail {

namespace {

constexpr std::size_t kCacheSize = 64;  // each sender's Pool::Cache

// No budget: enough buffers for every place a packet can wait — each TX queue's 3 bands and
// ring, the senders' caches and the bursts (or floor batches) they hold.
PoolConfig shared_pool_config(const BenchConfig& cfg, int threads, uint32_t queues, std::size_t buffer) {
  PoolConfig c;
  c.cache_size = kCacheSize;
  const std::size_t per_sender =
      c.cache_size * 2 + std::max<std::size_t>(static_cast<std::size_t>(cfg.burst), kFloorBatch);
  c.packets = std::max<std::size_t>(16384, (4 * static_cast<std::size_t>(cfg.txqueuelen) + 4096) * queues +
                                               static_cast<std::size_t>(threads) * per_sender);
  c.buffer_size = buffer;
  return c;
}

}  // namespace

std::size_t packet_truesize(std::size_t buffer_size) noexcept {
  return Pool::rounded_buffer_size(buffer_size) + sizeof(Packet);
}

std::size_t sender_buffer_size(const BenchConfig& cfg, const Capture* capture) noexcept {
  return std::max<std::size_t>({256, kHeadersLen + cfg.payload, capture ? capture->max_len : 0});
}

std::size_t check_send_budget(const BenchConfig& cfg, const Capture* capture) {
  if (cfg.sndbuf == 0) return 0;
  // Each sender's pool is allocated when its run starts: the budgets of a thread count's senders
  // together stay within kMaxSendBudgetTotal (a division: the library's sndbuf may be any value).
  for (const int t : cfg.threads) {
    const uint64_t threads = static_cast<uint64_t>(std::max(t, 1));
    if (cfg.sndbuf > kMaxSendBudgetTotal / threads)
      throw ConfigError("sndbuf " + std::to_string(cfg.sndbuf) + " times " + std::to_string(threads) +
                        (threads == 1 ? " sender" : " senders") + " is over the limit of " +
                        std::to_string(kMaxSendBudgetTotal >> 20) +
                        " MiB of send buffers in total (at most " + std::to_string(kMaxSendBudgetTotal / threads) +
                        " per sender at " + std::to_string(threads) + (threads == 1 ? " thread)" : " threads)"));
  }
  const std::size_t truesize = packet_truesize(sender_buffer_size(cfg, capture));
  const std::size_t packets = cfg.sndbuf / truesize;
  if (packets == 0)
    throw ConfigError("sndbuf " + std::to_string(cfg.sndbuf) + " holds no packet of " +
                      std::to_string(truesize) + " bytes (buffer and descriptor)");
  return packets;
}

SenderPools::SenderPools(const BenchConfig& cfg, int threads, uint32_t queues, const Capture* capture) {
  const std::size_t buffer = sender_buffer_size(cfg, capture);
  budget_packets_ = check_send_budget(cfg, capture);
  if (budget_packets_ == 0) {
    pools_.push_back(std::make_unique<Pool>(shared_pool_config(cfg, threads, queues, buffer)));
    return;
  }
  PoolConfig c;
  c.cache_size = kCacheSize;
  c.packets = budget_packets_;
  c.buffer_size = buffer;
  pools_.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) pools_.push_back(std::make_unique<Pool>(c));
}

}  // namespace txpath::bench_detail
