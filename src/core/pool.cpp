// SPDX-License-Identifier: MIT
#include "txpath/pool.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <string>

#include "base/cpu_relax.hpp"
#include "sync/park.hpp"
#include "sync/ttas_lock.hpp"
#include "txpath/error.hpp"

namespace txpath {

namespace {
constexpr std::size_t kBufferAlign = 64;
constexpr std::size_t kChunk = 64;  // pointers gathered outside the lock per put_list() step
}  // namespace

// The shared free stack: packets_[i] pointers in stack[0, top). Critical sections are a memcpy
// of at most one batch, so a TTAS spinlock (spin, back off, then yield) fits better than a
// futex mutex, whose sleep/wake syscalls dominated under contention.
struct Pool::Shared {
  TtasLock lock;
  std::vector<Packet*> stack;  // capacity = pool size, sized once
  std::size_t top = 0;         // guarded by lock
  // wait_for_free()'s futex word and waiter count: put_batch() bumps `returns` after each batch
  // it stacks and wakes the parked waiters (a Dekker pair, see put_batch()).
  std::atomic<uint32_t> returns{0};
  std::atomic<uint32_t> parked{0};
  std::atomic<std::size_t> wake_at{1};  // the free packets a parked waiter waits for
};

Pool::Pool(const PoolConfig& config)
    : buffer_size_(rounded_buffer_size(config.buffer_size)),
      cache_size_(std::max<std::size_t>(config.cache_size, 2)),
      shared_(std::make_unique<Shared>()) {
  if (config.packets == 0) throw ConfigError("pool: packet count must be positive");
  if (config.buffer_size == 0) throw ConfigError("pool: buffer size must be positive");
  memory_ = std::make_unique<std::byte[]>(config.packets * buffer_size_);
  region_ = {memory_.get(), config.packets * buffer_size_};
  carve(config.packets, config.buffer_size);
}

namespace {

// Why `region` cannot hold a pool of `frame_size`-byte frames; empty when it can.
std::string region_problem(std::span<const std::byte> region, std::size_t frame_size) {
  const auto where = reinterpret_cast<std::uintptr_t>(region.data());
  if (frame_size == 0 || frame_size % kBufferAlign != 0 || frame_size > UINT32_MAX)
    return "frame size " + std::to_string(frame_size) + " is not a positive multiple of " +
           std::to_string(kBufferAlign) + " below 4 GiB";
  if (region.empty() || region.data() == nullptr) return "the region is empty";
  if (where % kBufferAlign != 0)
    return "the region does not start on a " + std::to_string(kBufferAlign) + "-byte boundary";
  if (region.size() % frame_size != 0)
    return "the region's " + std::to_string(region.size()) + " bytes are not a whole number of " +
           std::to_string(frame_size) + "-byte frames";
  return {};
}

}  // namespace

Pool::Pool(std::span<std::byte> region, std::size_t frame_size, std::size_t cache_size)
    : buffer_size_(frame_size),
      cache_size_(std::max<std::size_t>(cache_size, 2)),
      region_(region),
      shared_(std::make_unique<Shared>()) {
  if (const std::string problem = region_problem(region, frame_size); !problem.empty())
    throw ConfigError("pool: " + problem);
  carve(region.size() / frame_size, frame_size);
}

void Pool::carve(std::size_t packets, std::size_t capacity) {
  packets_.resize(packets);
  shared_->stack.resize(packets);
  // Stacked so that the first get() returns packet 0 (nicer to debug).
  for (std::size_t i = 0; i < packets_.size(); ++i) {
    Packet& p = packets_[i];
    p.data = region_.data() + i * buffer_size_;
    p.capacity = static_cast<uint32_t>(capacity);
    p.pool = this;
    shared_->stack[packets_.size() - 1 - i] = &p;
  }
  shared_->top = packets_.size();
}

Pool::~Pool() = default;

std::size_t Pool::rounded_buffer_size(std::size_t buffer_size) noexcept {
  return (buffer_size + kBufferAlign - 1) / kBufferAlign * kBufferAlign;
}

void Pool::reset(Packet* p) noexcept {
  p->next = nullptr;
  p->len = 0;
  p->priority = 0;
  p->flow_hash = 0;
  p->enqueue_ns = 0;
  p->tstamp_ns = 0;
  p->pacing_rate = 0;
  p->tx_queue = kAnyTxQueue;
  p->flow_in_flight = nullptr;
  // Handed out again: the packet may be submitted once more (src/engine/admission.hpp). relaxed:
  // the pool's hand-over to the caller (its lock, or this thread's own cache) orders it before
  // the caller's submission; atomic because a stale pointer's second send() may read it now.
  std::atomic_ref<bool>(p->in_flight).store(false, std::memory_order_relaxed);
}

namespace {

// The packet leaves the transmit path: its flow slot's in-flight count drops (the ooo_okay rule,
// txpath/netdev.hpp).
inline void release_flow_slot(Packet* p) noexcept {
  if (std::atomic<uint64_t>* slot = p->flow_in_flight) {
    p->flow_in_flight = nullptr;
    // release: pairs with the acquire load in NetDevice's pick: a pick that sees the count at 0
    // (and moves the flow to another queue) sees this packet's transmission or drop done.
    slot->fetch_sub(1, std::memory_order_release);
  }
}

// The calling thread's caches (Pool::Cache registers itself here on the thread that makes it):
// a packet freed on a thread that has a cache of the packet's pool goes into that cache, without
// the pool's lock — the role of the kernel's per-CPU skb cache fed by napi_consume_skb(). A lone
// sender that completes its own packets (the null device's doorbell, a real device's poll on the
// sending thread) then gets them back from its cache, and the shared stack is touched only when
// a cache overflows or runs dry, half a cache at a time.
// Pools a thread sends from at once; a fifth cache on one thread takes the locked path.
constexpr std::size_t kThreadCaches = 4;
thread_local std::array<Pool::Cache*, kThreadCaches> tls_caches{};

}  // namespace

Pool::Cache* Pool::thread_cache() const noexcept {
  for (Cache* c : tls_caches)
    if (c != nullptr && &c->pool_ == this) return c;
  return nullptr;
}

Packet* Pool::get() noexcept {
  Packet* p = nullptr;
  if (get_batch(&p, 1) == 0) return nullptr;
  reset(p);
  return p;
}

void Pool::put(Packet* p) noexcept {
  // One packet (a lone sender's doorbell on a device that completes inline): into this thread's
  // cache with no list to walk. A free hook sees it as a list of one, through put_list().
  Cache* const cache = free_hook_ ? nullptr : thread_cache();
  if (cache != nullptr) {
    cache->push(p);
    return;
  }
  PacketList one;
  one.push_back(p);
  put_list(std::move(one));
}

void Pool::put_list(PacketList&& list) noexcept {
  if (list.empty()) return;
  if (free_hook_) [[unlikely]] free_hook_(list);
  Packet* chain = list.release();
  if (Cache* cache = thread_cache()) {
    while (chain) {
      Packet* next = chain->next;  // read before the packet becomes someone else's
      cache->push(chain);
      chain = next;
    }
    return;
  }
  put_chain_shared(chain);
}

void Pool::put_chain_shared(Packet* chain) noexcept {
  std::array<Packet*, kChunk> gathered;
  std::size_t n = 0;
  for (Packet* p = chain; p;) {
    Packet* next = p->next;  // read before the packet becomes someone else's
    release_flow_slot(p);
    gathered[n++] = p;
    p = next;
    if (n == kChunk || !p) {
      put_batch(gathered.data(), n);
      n = 0;
    }
  }
}

std::size_t Pool::free_count() const {
  shared_->lock.lock();
  const std::size_t n = shared_->top;
  shared_->lock.unlock();
  return n;
}

std::size_t Pool::get_batch(Packet** out, std::size_t n) noexcept {
  Shared& s = *shared_;
  s.lock.lock();
  const std::size_t got = std::min(n, s.top);
  s.top -= got;
  std::memcpy(out, s.stack.data() + s.top, got * sizeof(Packet*));
  s.lock.unlock();
  return got;
}

void Pool::put_batch(Packet* const* in, std::size_t n) noexcept {
  Shared& s = *shared_;
  s.lock.lock();
  // More packets than the pool owns means a double free: a bug in the caller. Debug builds stop
  // here; release builds keep the stack in bounds (the duplicate is not stored twice).
  const std::size_t room = s.stack.size() - s.top;
  assert(n <= room && "Pool: double free");
  const std::size_t take = std::min(n, room);
  std::memcpy(s.stack.data() + s.top, in, take * sizeof(Packet*));
  s.top += take;
  const std::size_t top = s.top;
  s.lock.unlock();
  // seq_cst RMW, then the loads of `parked` and `wake_at`: pairs with wait_for_free()'s seq_cst
  // RMW of `parked` and its load of `returns` — either the waiter sees this batch's bump (and
  // looks again) or we see it counted, with the threshold it stored before counting itself.
  // One locked instruction per batch (up to kChunk packets or half a cache), none per packet.
  s.returns.fetch_add(1, std::memory_order_seq_cst);
  if (s.parked.load(std::memory_order_seq_cst) != 0 &&
      top >= s.wake_at.load(std::memory_order_relaxed))  // relaxed: published by the RMW of parked
    futex_wake_all(s.returns);
}

void Pool::wait_for_free(std::size_t at_least, uint64_t timeout_ns) noexcept {
  Shared& s = *shared_;
  at_least = std::clamp<std::size_t>(at_least, 1, s.stack.size());
  // acquire: pairs with put_batch()'s RMW; a bump seen means a batch was stacked since.
  uint32_t seen = s.returns.load(std::memory_order_acquire);
  if (free_count() >= at_least) return;
  // A short spin first: completions reaped in batches often come back within microseconds.
  for (unsigned spin = 0; spin < kSpinBeforePark; ++spin) {
    // relaxed: a hint; what counts is the stack, read under the lock.
    if (s.returns.load(std::memory_order_relaxed) != seen) {
      if (free_count() >= at_least) return;
      seen = s.returns.load(std::memory_order_acquire);
    }
    cpu_relax();
  }
  // relaxed: published by the seq_cst RMW of `parked` right after (put_batch() reads it only
  // once it sees that count).
  s.wake_at.store(at_least, std::memory_order_relaxed);
  // seq_cst RMW, then the load of `returns`: the other half of put_batch()'s pair.
  s.parked.fetch_add(1, std::memory_order_seq_cst);
  seen = s.returns.load(std::memory_order_seq_cst);
  // A batch stacked after `seen` was read changes the word: the futex wait then returns at once.
  if (free_count() < at_least) futex_wait_for(s.returns, seen, timeout_ns);
  // relaxed: a count; a waker that still sees it only makes one futex call too many.
  s.parked.fetch_sub(1, std::memory_order_relaxed);
}

Pool::Cache::Cache(Pool& pool) : pool_(pool), slots_(pool.cache_size_) {
  if (pool_.thread_cache() != nullptr) return;  // this thread has one for the pool: it stays
  for (Cache*& slot : tls_caches) {
    if (slot == nullptr) {
      slot = this;
      registered_ = true;
      return;
    }
  }
}

Pool::Cache::~Cache() {
  if (registered_) {
    // The thread that made the cache destroys it (see pool.hpp): it is in this thread's table.
    const auto it = std::find(tls_caches.begin(), tls_caches.end(), this);
    assert(it != tls_caches.end() && "Pool::Cache destroyed on another thread");
    if (it != tls_caches.end()) *it = nullptr;
  }
  pool_.put_batch(slots_.data(), count_);
}

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
  push(p);
}

void Pool::Cache::push(Packet* p) noexcept {
  release_flow_slot(p);
  if (count_ == slots_.size()) {
    const std::size_t half = slots_.size() / 2;
    pool_.put_batch(slots_.data() + (count_ - half), half);
    count_ -= half;
  }
  slots_[count_++] = p;
}

void free_nonempty_packets(PacketList&& list) noexcept {
  // The common case, one pool: the whole list in one call.
  Pool* const first = list.front()->pool;
  const Packet* p = list.front();
  while (p && p->pool == first) p = p->next;
  if (!p) {
    first->put_list(std::move(list));
    return;
  }
  PacketList rest(std::move(list));
  while (!rest.empty()) {
    // Gather a run of packets from the same pool and return it in one call.
    Pool* pool = rest.front()->pool;
    PacketList run;
    while (!rest.empty() && rest.front()->pool == pool) run.push_back(rest.pop_front());
    pool->put_list(std::move(run));
  }
}

}  // namespace txpath
