// SPDX-License-Identifier: MIT
// Counters that the hot path updates and any thread may read.
#pragma once

#include <atomic>
#include <cstdint>

namespace txpath {

// A counter with one writer at a time: writers are serialised by some lock or by ownership
// (root lock, RUNNING ownership, the device tx lock), which already orders successive writers,
// so updates are a relaxed load + relaxed store — no locked read-modify-write on the hot path.
// Readers on other threads (stats, the bench) load it relaxed: they get some recent value, and
// an exact one at a quiescent point (after the threads that wrote it were joined or released
// the serialising lock).
class SingleWriterCounter {
 public:
  // always_inline: on every packet's path, where GCC otherwise keeps an out-of-line copy.
  [[gnu::always_inline]] void add(uint64_t n) noexcept {
    // relaxed: the serialising lock/ownership of the writer orders this against other writers.
    v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  [[gnu::always_inline]] void sub(uint64_t n) noexcept {
    // relaxed: as add().
    v_.store(v_.load(std::memory_order_relaxed) - n, std::memory_order_relaxed);
  }
  void set(uint64_t n) noexcept { v_.store(n, std::memory_order_relaxed); }
  // relaxed: a statistic; exact at quiescent points (see above).
  uint64_t get() const noexcept { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

}  // namespace txpath
