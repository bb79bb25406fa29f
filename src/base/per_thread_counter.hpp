// SPDX-License-Identifier: MIT
// A counter that many threads add to and one sums on read (Linux per-CPU stats, userspace form).
//
// Slots. A thread takes a slot index on first use and gives it back when it exits, so that up to
// kThreadSlots live threads each own a slot alone: an add to an owned slot is a plain load and
// store (no atomic read-modify-write: a per-CPU counter in the kernel is a plain add with
// preemption off). Threads beyond that share the kSharedSlots slots after them, round-robin, and
// add with fetch_add; no exclusive slot is ever written by another thread. A slot
// given back keeps its value; the next owner takes it under the table's mutex, which orders the
// previous owner's last store before the new owner's first load.
#pragma once

#include <array>
#include <atomic>
#include <bitset>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace txpath {

inline constexpr std::size_t kThreadSlots = 64;  // slots a thread can own alone
inline constexpr std::size_t kSharedSlots = 8;   // slots the threads beyond those share
inline constexpr std::size_t kSlotCount = kThreadSlots + kSharedSlots;

struct ThreadSlot {
  std::size_t index;  // < kSlotCount
  bool exclusive;     // only this thread writes the slot while it lives
};

namespace thread_slot_detail {

struct Table {
  std::mutex mutex;
  std::bitset<kThreadSlots> owned;  // guarded by mutex
  std::size_t next_shared = 0;      // guarded by mutex: round-robin over the shared slots
};

inline Table& table() noexcept {
  static Table t;
  return t;
}

// The thread's slot, encoded +1 so that 0 means "none yet"; trivially destructible, so reading
// it on the hot path costs one TLS load.
inline thread_local std::size_t encoded = 0;
inline thread_local bool exclusive = false;

// Gives an exclusive slot back when its thread exits.
struct Owner {
  std::size_t index = kThreadSlots;
  ~Owner() {
    if (index >= kThreadSlots) return;
    Table& t = table();
    std::lock_guard lock(t.mutex);
    t.owned.reset(index);
    // Anything counted later in this thread's teardown goes to a shared slot, with fetch_add.
    encoded = kThreadSlots + index % kSharedSlots + 1;
    exclusive = false;
  }
};

inline ThreadSlot claim() noexcept {
  thread_local Owner owner;
  Table& t = table();
  std::lock_guard lock(t.mutex);
  for (std::size_t i = 0; i < kThreadSlots; ++i) {
    if (!t.owned.test(i)) {
      t.owned.set(i);
      owner.index = i;
      encoded = i + 1;
      exclusive = true;
      return {i, true};
    }
  }
  const std::size_t i = kThreadSlots + t.next_shared++ % kSharedSlots;
  encoded = i + 1;
  return {i, false};
}

}  // namespace thread_slot_detail

// The calling thread's slot (see the header comment).
inline ThreadSlot thread_slot() noexcept {
  namespace d = thread_slot_detail;
  if (d::encoded != 0) [[likely]] return {d::encoded - 1, d::exclusive};
  return d::claim();
}

// Adds n to `v`, a slot of `slot`'s: a plain load and store when the thread owns the slot alone,
// else fetch_add. relaxed either way: a statistic; exactness is only required at quiescent
// points, where the join or lock hand-off that made the point quiescent orders every add before
// the read.
inline void slot_add(std::atomic<uint64_t>& v, uint64_t n, ThreadSlot slot) noexcept {
  if (slot.exclusive) [[likely]]
    v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  else
    v.fetch_add(n, std::memory_order_relaxed);
}

class PerThreadCounter {
 public:
  static constexpr std::size_t kSlots = kSlotCount;

  void add(uint64_t n) noexcept {
    const ThreadSlot slot = thread_slot();
    slot_add(slots_[slot.index].v, n, slot);
  }
  uint64_t sum() const noexcept {
    uint64_t s = 0;
    // relaxed: see slot_add().
    for (const auto& slot : slots_) s += slot.v.load(std::memory_order_relaxed);
    return s;
  }

 private:
  struct alignas(64) Slot {
    std::atomic<uint64_t> v{0};
  };
  std::array<Slot, kSlots> slots_{};
};

}  // namespace txpath
