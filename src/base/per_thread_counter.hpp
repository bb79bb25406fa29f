// SPDX-License-Identifier: MIT
// A counter that many threads add to and one sums on read (Linux per-CPU stats, userspace form).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace txpath {

// Each thread gets a small slot index on first use (round-robin); threads beyond kSlots share
// slots, which stays correct because slots are atomics — it only costs sharing a cache line.
inline std::size_t thread_slot() noexcept {
  static std::atomic<std::size_t> next{0};
  // relaxed: only uniqueness of the ticket matters; nothing is published through it.
  thread_local const std::size_t slot = next.fetch_add(1, std::memory_order_relaxed);
  return slot;
}

class PerThreadCounter {
 public:
  static constexpr std::size_t kSlots = 64;

  void add(uint64_t n) noexcept {
    // relaxed: a statistic; exactness is only required at quiescent points, where the join or
    // lock hand-off that made the point quiescent orders every add before the read.
    slots_[thread_slot() % kSlots].v.fetch_add(n, std::memory_order_relaxed);
  }
  uint64_t sum() const noexcept {
    uint64_t s = 0;
    // relaxed: see add().
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
