// SPDX-License-Identifier: MIT
// Per-thread state of one object, found without a lock: a thread_local cache keyed by an
// instance id. Used where every sender thread has its own piece of a shared object — its shard
// (strategy sharded), its SPSC ring (strategy drainer), its spare node (sync/ccsynch.hpp) — and
// must find it on every call, on the hot path.
//
//  * Instance ids, not addresses: an object's address is reused after it is destroyed, so an
//    entry keyed by address could hand a new object the old one's state; an id is never reused
//    (64 bits) and never 0, so an empty entry (id 0) never matches.
//  * The cache is direct-mapped (id % kEntries), constant-initialised and trivially destructible:
//    reading it needs no TLS init guard and no wrapper call. A miss is the user's slow path (it
//    finds or creates the state, usually under its own mutex, and store()s it).
//  * Thread ordinals: 1, 2, 3 ... in the order threads first ask, never reused; for users that
//    spread threads round-robin (sharded) or key a per-thread map (ccsynch).
//
// Each user names its own Tag, so users share neither entries nor counters: a user's ids and
// ordinals are what they would be if it were alone in the process.
#pragma once

#include <atomic>
#include <cstdint>

namespace txpath {

template <class Tag, class Value, unsigned kEntries = 1>
class InstanceCache {
  static_assert(kEntries > 0);

 public:
  // A new instance id: unique for the process lifetime, never 0.
  static uint64_t new_instance_id() noexcept {
    // relaxed: only uniqueness matters; nothing is published through it.
    return next_id_.fetch_add(1, std::memory_order_relaxed);
  }

  // The calling thread's ordinal among the threads that have asked (from 1).
  static uint64_t thread_ordinal() noexcept {
    // relaxed: only uniqueness and arrival order matter; nothing is published through it.
    if (t_ordinal_ == 0) t_ordinal_ = next_ordinal_.fetch_add(1, std::memory_order_relaxed);
    return t_ordinal_;
  }

  // The calling thread's cached value for instance `id`, or nullptr on a miss.
  static Value* find(uint64_t id) noexcept {
    Entry& e = t_entries_[id % kEntries];
    return e.id == id ? &e.value : nullptr;
  }

  // Caches `value` for instance `id` (evicting whatever shared its entry).
  static void store(uint64_t id, Value value) noexcept { t_entries_[id % kEntries] = {id, value}; }

  // Forgets every entry of the calling thread (e.g. as it exits: its state goes to others).
  static void clear() noexcept {
    for (Entry& e : t_entries_) e = {};
  }

 private:
  struct Entry {
    uint64_t id = 0;  // 0: empty (ids start at 1)
    Value value{};
  };

  static inline std::atomic<uint64_t> next_id_{1};
  static inline std::atomic<uint64_t> next_ordinal_{1};
  static inline constinit thread_local Entry t_entries_[kEntries]{};
  static inline constinit thread_local uint64_t t_ordinal_ = 0;  // 0: not assigned yet
};

}  // namespace txpath
