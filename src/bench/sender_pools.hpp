// SPDX-License-Identifier: MIT
// The senders' buffers in a bench run, and the send budget they stand for.
//
// A UDP socket may hold at most sk_sndbuf bytes of packets not yet freed (sk_wmem_alloc: each
// skb's truesize, charged when it is built, uncharged when the driver frees it on completion or
// the qdisc drops it); a sender past its budget sleeps in sendmsg() until completions bring it
// back (docs/bench.md, "Send budgets"). The bench gives each sender its own Pool of
// budget / truesize packets, where a packet's truesize is its buffer plus its descriptor: a
// packet freed anywhere returns to its sender's pool, and a sender whose pool is spent waits
// (Pool::wait_for_free) as the socket does. Budget 0: one pool shared by every sender, sized for
// every place a packet can wait (no budget: a sender that outruns the device fills the qdisc
// and the rest is dropped).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "bench/bench.hpp"
#include "txpath/pool.hpp"

namespace txpath::bench_detail {

struct Capture;

class SenderPools {
 public:
  // `threads` senders on `queues` TX queues; `capture`: the replayed frames (their longest sets
  // the buffer size), or nullptr. Throws ConfigError when a budget cannot hold one packet.
  SenderPools(const BenchConfig& cfg, int threads, uint32_t queues, const Capture* capture);

  // Sender t's pool.
  Pool& of(int t) noexcept {
    if (shared_) return *shared_;
    return *pools_[pools_.size() == 1 ? 0 : static_cast<std::size_t>(t)];
  }
  // Every sender takes its packets from `pool` instead (a device's zero-copy pool, which must
  // outlive the senders): one budget, the pool's size, for all of them.
  void share(Pool& pool) noexcept {
    shared_ = &pool;
    budget_packets_ = 0;
  }
  // Packets each sender may hold (its pool's size); 0 when the pool is shared.
  std::size_t budget_packets() const noexcept { return budget_packets_; }

 private:
  std::vector<std::unique_ptr<Pool>> pools_;
  Pool* shared_ = nullptr;  // share()
  std::size_t budget_packets_ = 0;
};

// Bytes a packet of `buffer_size` charges to its sender's budget: the buffer and the descriptor.
std::size_t packet_truesize(std::size_t buffer_size) noexcept;

// The senders' buffer size: room for the run's frames (a capture's longest), at least 256 bytes.
std::size_t sender_buffer_size(const BenchConfig& cfg, const Capture* capture) noexcept;

// The send budgets of one thread count's senders together (cfg.sndbuf x threads), at most: each
// sender's pool is allocated when its run starts, so this bounds the run's buffers (1 GiB holds
// the default budget, Linux's wmem_default, for 4096 senders).
inline constexpr uint64_t kMaxSendBudgetTotal = uint64_t{1} << 30;

// Packets a sender's budget holds (cfg.sndbuf bytes at each packet's truesize); 0 without a
// budget. Throws ConfigError (one line) when a budget cannot hold a single packet, or when the
// budgets of a thread count's senders together exceed kMaxSendBudgetTotal.
std::size_t check_send_budget(const BenchConfig& cfg, const Capture* capture);

}  // namespace txpath::bench_detail
