// SPDX-License-Identifier: MIT
// A fixed buffer pool: every packet and its buffer are allocated once, at construction.
//
// Hot path: a sender thread owns a Pool::Cache and gets/puts packets from it without touching
// shared state; the cache refills from / flushes to the shared free stack in batches. The shared
// free stack is an array of pointers under a short spinlock: a batch moves with one memcpy, and
// no descriptor's cache line is touched inside the lock. Completions and to_free lists return
// whole chains with put_list(): into the freeing thread's own cache when it has one for the pool
// (no lock), else to the shared stack (the chain is walked outside the lock, in chunks). Nothing
// here allocates after construction.
//
// Memory: a pool allocates its buffers itself (Pool(PoolConfig)), or carves them out of a region
// the application or a device registered (Pool(region, frame_size): a DPDK-style mempool area,
// an AF_XDP UMEM). Such a pool does not own the region; whoever does keeps it mapped for the
// pool's lifetime. region(), offset_of() and packet_at() translate between a packet and its
// place in the memory, as a device whose descriptors carry offsets needs (afxdp: the UMEM address).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "txpath/packet.hpp"

namespace txpath {

struct PoolConfig {
  std::size_t packets = 16384;     // descriptors (and buffers) in the pool
  std::size_t buffer_size = 2048;  // bytes per buffer; the largest frame a packet can hold
  std::size_t cache_size = 64;     // per-thread cache capacity; refills/flushes move half of it
};

class Pool {
 public:
  explicit Pool(const PoolConfig& config = {});
  // A pool over `region`, which it does not own: region.size() / frame_size packets, packet i's
  // buffer at byte i * frame_size, frame_size bytes each (no headroom). Throws ConfigError (one
  // line) unless the region is non-empty, starts on a 64-byte boundary and holds a whole number
  // of frames, and frame_size is a positive multiple of 64 below 4 GiB.
  Pool(std::span<std::byte> region, std::size_t frame_size, std::size_t cache_size = 64);
  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  // A thread-private cache. Not thread-safe; create one per thread, on that thread, and destroy
  // it there (RAII: flushes on destruction). While it lives, packets of this pool freed on its
  // thread (put_list, free_packets: e.g. completions reaped by the sender itself) go into it
  // without the pool's lock, and its get() hands them out again.
  class Cache {
   public:
    explicit Cache(Pool& pool);
    ~Cache();
    Cache(const Cache&) = delete;
    Cache& operator=(const Cache&) = delete;

    // A fresh packet (len 0, priority 0, next null), or nullptr if the pool is exhausted.
    Packet* get() noexcept;
    void put(Packet* p) noexcept;

   private:
    friend class Pool;
    // Takes a packet of this pool (put() without the pool check).
    void push(Packet* p) noexcept;

    Pool& pool_;
    std::vector<Packet*> slots_;  // sized once in the constructor
    std::size_t count_ = 0;
    bool registered_ = false;  // listed in its thread's cache table (pool.cpp)
  };

  // get(): from the shared list (the pool's spinlock, a TTAS lock: src/core/pool.cpp), for cold
  // paths. put()/put_list(): into the calling thread's cache of this pool if it has one (no
  // lock), else onto the shared list.
  Packet* get() noexcept;
  void put(Packet* p) noexcept;
  void put_list(PacketList&& list) noexcept;

  // Called on the freeing thread with each chain about to return through put_list()/put() —
  // for tests and tracing (e.g. "no lock is held while dropped packets are freed"). Set before
  // the pool is shared between threads.
  void set_free_hook(std::function<void(const PacketList&)> hook) { free_hook_ = std::move(hook); }

  std::size_t capacity() const noexcept { return packets_.size(); }
  // The bytes Pool(PoolConfig) sets aside per buffer of `buffer_size`: rounded up to 64.
  static std::size_t rounded_buffer_size(std::size_t buffer_size) noexcept;
  std::size_t buffer_size() const noexcept { return buffer_size_; }

  // The memory every buffer lies in: the registered region, or the pool's own allocation.
  std::span<std::byte> region() const noexcept { return region_; }
  // Where packet `p` of this pool starts in region() (its buffer, Packet::data, is region() +
  // offset_of(p)): the address a device's descriptor carries.
  uint64_t offset_of(const Packet& p) const noexcept {
    return static_cast<uint64_t>(p.data - region_.data());
  }
  // The packet whose buffer holds byte `offset` of region(), or nullptr past its end: the way
  // back from a descriptor's address to the packet.
  Packet* packet_at(uint64_t offset) noexcept {
    const uint64_t i = offset / buffer_size_;
    return i < packets_.size() ? &packets_[i] : nullptr;
  }
  // Packets in the shared free list (excludes those sitting in thread caches).
  std::size_t free_count() const;
  // For a thread whose cache came back empty because every packet is queued, in flight or in
  // another thread's cache — the sender whose pool is its send budget (a socket's send buffer,
  // docs/bench.md, "Send budgets"): returns once the shared free list holds `at_least`
  // packets (clamped to 1..capacity()), or after `timeout_ns` (a device that never completes
  // cannot hang the caller, who looks again either way), or on a signal. Spins briefly, then
  // sleeps in the kernel (futex) until put()/put_list() stacks enough. A socket's writer sleeps
  // until half its send buffer is free (Linux sock_writeable()), and wakes to a burst's worth of
  // room rather than once per freed batch. The pool keeps one threshold: waiters of one pool
  // should ask for the same (one that asks for less than another may sleep until its timeout).
  void wait_for_free(std::size_t at_least, uint64_t timeout_ns) noexcept;

 private:
  static void reset(Packet* p) noexcept;
  // The calling thread's cache of this pool, or nullptr (pool.cpp).
  Cache* thread_cache() const noexcept;
  void carve(std::size_t packets, std::size_t capacity);  // packets_ over region_, all free
  std::size_t get_batch(Packet** out, std::size_t n) noexcept;
  void put_batch(Packet* const* in, std::size_t n) noexcept;
  // put_list() without a thread cache: to the shared stack, in chunks (out of line: its buffer
  // would cost the cached path a stack frame).
  [[gnu::noinline]] void put_chain_shared(Packet* chain) noexcept;

  std::size_t buffer_size_;
  std::size_t cache_size_;
  std::unique_ptr<std::byte[]> memory_;  // empty for a pool over a registered region
  std::span<std::byte> region_;
  std::vector<Packet> packets_;
  struct Shared;                    // the free stack and its lock (pool.cpp)
  std::unique_ptr<Shared> shared_;
  std::function<void(const PacketList&)> free_hook_;
};

// Returns every packet of `list` to its own pool (a list may mix pools). An empty list (most
// to_free lists) costs one test, inline.
void free_nonempty_packets(PacketList&& list) noexcept;
inline void free_packets(PacketList&& list) noexcept {
  if (!list.empty()) free_nonempty_packets(std::move(list));
}

}  // namespace txpath
