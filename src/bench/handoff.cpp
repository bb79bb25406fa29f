// SPDX-License-Identifier: MIT
// The cache-line and lock hand-off between two pinned threads (bench/handoff.hpp).
#include "bench/handoff.hpp"

#include <atomic>
#include <thread>
#include <utility>

#include "base/clock.hpp"
#include "base/cpu_relax.hpp"
#include "bench/measure.hpp"

namespace txpath::bench_detail {

namespace {

// What both threads touch, each on its own line (alignas), so that only the line under test
// bounces: `turn` (the line hand-off), `lock` and `owner` (the lock hand-off, one line as a
// qdisc's lock and the state it guards), `stop`.
struct Shared {
  alignas(64) std::atomic<uint64_t> turn{0};
  alignas(64) std::atomic<uint32_t> lock{0};
  std::atomic<uint32_t> owner{2};  // the last holder (0 or 1; 2: none yet), written under `lock`
  alignas(64) std::atomic<bool> stop{false};
  alignas(64) std::atomic<int> ready{0};
};

// The line: thread `me` waits until `turn` has its parity, then writes the next value; each
// write hands the line to the other thread. Returns this thread's writes.
uint64_t pass_line(Shared& s, uint64_t me) {
  uint64_t writes = 0;
  // relaxed everywhere: the value itself is the message, nothing else is published with it.
  for (uint64_t t = s.turn.load(std::memory_order_relaxed);
       !s.stop.load(std::memory_order_relaxed); t = s.turn.load(std::memory_order_relaxed)) {
    if ((t & 1) != me) {
      cpu_relax();
      continue;
    }
    s.turn.store(t + 1, std::memory_order_relaxed);
    ++writes;
  }
  return writes;
}

// The lock: a plain test-and-set lock, handed over on every acquisition. A thread that holds it
// and sees that it held it last too gives it back untouched and waits until the other thread
// has had it, so every counted acquisition moves the lock and the state it guards (`owner`, on
// the lock's line) from the other core. Returns {hand-offs, acquisitions} of this thread.
std::pair<uint64_t, uint64_t> pass_lock(Shared& s, uint32_t me) {
  uint64_t handoffs = 0, acquisitions = 0;
  while (!s.stop.load(std::memory_order_relaxed)) {  // relaxed: a flag, publishes nothing
    // acquire: pairs with the release store below of the previous holder (owner's value).
    if (s.lock.exchange(1, std::memory_order_acquire) != 0) {
      // relaxed: a hint, the exchange decides.
      while (s.lock.load(std::memory_order_relaxed) != 0 && !s.stop.load(std::memory_order_relaxed))
        cpu_relax();
      continue;
    }
    ++acquisitions;
    // relaxed: read and written under the lock only; atomic for the wait below.
    const bool mine_last = s.owner.load(std::memory_order_relaxed) == me;
    if (!mine_last) {
      ++handoffs;
      s.owner.store(me, std::memory_order_relaxed);
    }
    s.lock.store(0, std::memory_order_release);  // pairs with the exchange's acquire above
    if (mine_last)  // relaxed: a hint (the exchange above decides), the other's turn first
      while (s.owner.load(std::memory_order_relaxed) == me && !s.stop.load(std::memory_order_relaxed))
        cpu_relax();
  }
  return {handoffs, acquisitions};
}

// Starts `body(0)` on cpu_a and `body(1)` on cpu_b, lets them run `duration` once both are
// running, stops them; returns the elapsed ns of the measured part.
template <class Body>
uint64_t run_pair(Shared& s, int cpu_a, int cpu_b, std::chrono::nanoseconds duration, Body&& body) {
  const auto thread_main = [&](int me, int cpu) {
    pin_to(cpu);
    s.ready.fetch_add(1, std::memory_order_acq_rel);  // pairs with the wait below
    while (s.ready.load(std::memory_order_acquire) < 2) cpu_relax();  // pairs with the add
    body(me);
  };
  std::thread a(thread_main, 0, cpu_a);
  std::thread b(thread_main, 1, cpu_b);
  while (s.ready.load(std::memory_order_acquire) < 2) std::this_thread::yield();  // as above
  const uint64_t start = now_ns();
  std::this_thread::sleep_for(duration);
  s.stop.store(true, std::memory_order_relaxed);  // relaxed: the joins below order the rest
  a.join();
  b.join();
  return now_ns() - start;
}

}  // namespace

HandoffCost measure_handoff(int cpu_a, int cpu_b, std::chrono::nanoseconds duration) {
  HandoffCost cost{.cpu_a = cpu_a, .cpu_b = cpu_b};
  {
    Shared s;
    uint64_t writes[2] = {};
    const uint64_t elapsed = run_pair(s, cpu_a, cpu_b, duration, [&](int me) {
      writes[me] = pass_line(s, static_cast<uint64_t>(me));
    });
    cost.line_handoffs = writes[0] + writes[1];
    if (cost.line_handoffs) cost.line_ns = static_cast<double>(elapsed) / static_cast<double>(cost.line_handoffs);
  }
  {
    Shared s;
    std::pair<uint64_t, uint64_t> counts[2] = {};
    const uint64_t elapsed = run_pair(s, cpu_a, cpu_b, duration, [&](int me) {
      counts[me] = pass_lock(s, static_cast<uint32_t>(me));
    });
    cost.lock_handoffs = counts[0].first + counts[1].first;
    cost.lock_acquisitions = counts[0].second + counts[1].second;
    if (cost.lock_handoffs) cost.lock_ns = static_cast<double>(elapsed) / static_cast<double>(cost.lock_handoffs);
  }
  return cost;
}

}  // namespace txpath::bench_detail
