// SPDX-License-Identifier: MIT
#include "txpath/pool.hpp"

#include <algorithm>

#include "txpath/error.hpp"

namespace txpath {

namespace {
constexpr std::size_t kBufferAlign = 64;
}

Pool::Pool(const PoolConfig& config)
    : buffer_size_((config.buffer_size + kBufferAlign - 1) / kBufferAlign * kBufferAlign),
      cache_size_(std::max<std::size_t>(config.cache_size, 2)) {
  if (config.packets == 0) throw ConfigError("pool: packet count must be positive");
  if (config.buffer_size == 0) throw ConfigError("pool: buffer size must be positive");
  memory_ = std::make_unique<std::byte[]>(config.packets * buffer_size_);
  packets_.resize(config.packets);
  for (std::size_t i = 0; i < packets_.size(); ++i) {
    Packet& p = packets_[i];
    p.data = memory_.get() + i * buffer_size_;
    p.capacity = static_cast<uint32_t>(config.buffer_size);
    p.pool = this;
    free_.push_back(&p);
  }
}

Pool::~Pool() = default;

void Pool::reset(Packet* p) noexcept {
  p->next = nullptr;
  p->len = 0;
  p->priority = 0;
  p->flow_hash = 0;
  p->enqueue_ns = 0;
}

Packet* Pool::get() noexcept {
  Packet* p = nullptr;
  {
    std::lock_guard lock(mutex_);
    p = free_.pop_front();
  }
  if (p) reset(p);
  return p;
}

void Pool::put(Packet* p) noexcept {
  p->len = 0;  // keeps the byte count of free_ meaningless but bounded
  std::lock_guard lock(mutex_);
  free_.push_back(p);
}

void Pool::put_list(PacketList&& list) noexcept {
  if (list.empty()) return;
  PacketList local(std::move(list));
  if (free_hook_) free_hook_(local);
  std::lock_guard lock(mutex_);
  free_.splice_back(local);
}

std::size_t Pool::free_count() const {
  std::lock_guard lock(mutex_);
  return free_.size();
}

std::size_t Pool::get_batch(Packet** out, std::size_t n) noexcept {
  std::size_t got = 0;
  std::lock_guard lock(mutex_);
  while (got < n) {
    Packet* p = free_.pop_front();
    if (!p) break;
    out[got++] = p;
  }
  return got;
}

void Pool::put_batch(Packet* const* in, std::size_t n) noexcept {
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < n; ++i) free_.push_back(in[i]);
}

Pool::Cache::Cache(Pool& pool) : pool_(pool), slots_(pool.cache_size_) {}

Pool::Cache::~Cache() { pool_.put_batch(slots_.data(), count_); }

Packet* Pool::Cache::get() noexcept {
  if (count_ == 0) {
    count_ = pool_.get_batch(slots_.data(), slots_.size() / 2);
    if (count_ == 0) return nullptr;
  }
  Packet* p = slots_[--count_];
  reset(p);
  return p;
}

void Pool::Cache::put(Packet* p) noexcept {
  if (p->pool != &pool_) {
    p->pool->put(p);
    return;
  }
  if (count_ == slots_.size()) {
    const std::size_t half = slots_.size() / 2;
    pool_.put_batch(slots_.data() + (count_ - half), half);
    count_ -= half;
  }
  slots_[count_++] = p;
}

void free_packets(PacketList&& list) noexcept {
  PacketList rest(std::move(list));
  while (!rest.empty()) {
    // Gather a run of packets from the same pool and return it with one lock acquisition.
    Pool* pool = rest.front()->pool;
    PacketList run;
    while (!rest.empty() && rest.front()->pool == pool) run.push_back(rest.pop_front());
    pool->put_list(std::move(run));
  }
}

}  // namespace txpath
