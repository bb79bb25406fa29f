// SPDX-License-Identifier: MIT
#include "sync/park.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

namespace txpath {

namespace {
constexpr uint32_t kPark = 1;        // spin_park()
constexpr uint32_t kCountParks = 2;  // set_count_parks()
// relaxed (all accesses): a policy switch read on the slow path of waits; no data is published
// through it. Bits kPark and kCountParks, set and cleared with RMWs so that neither switch
// overwrites the other.
std::atomic<uint32_t> g_policy{kPark};
// relaxed: a statistic for tests, read after the waiters it counts are joined.
std::atomic<uint64_t> g_parks{0};

void set_bit(uint32_t bit, bool on) noexcept {
  if (on) {
    g_policy.fetch_or(bit, std::memory_order_relaxed);  // relaxed: see g_policy
  } else {
    g_policy.fetch_and(~bit, std::memory_order_relaxed);  // relaxed: see g_policy
  }
}
}  // namespace

void set_spin_park(bool park) noexcept { set_bit(kPark, park); }
bool spin_park() noexcept {
  return (g_policy.load(std::memory_order_relaxed) & kPark) != 0;  // relaxed: see g_policy
}

ParkPolicy park_policy() noexcept {
  const uint32_t p = g_policy.load(std::memory_order_relaxed);  // relaxed: see g_policy
  return ParkPolicy{.park = (p & kPark) != 0, .count_parks = (p & kCountParks) != 0};
}

void set_count_parks(bool on) noexcept { set_bit(kCountParks, on); }
uint64_t parks_counted() noexcept {
  return g_parks.load(std::memory_order_relaxed);  // relaxed: see g_parks
}
void count_park() noexcept {
  g_parks.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic (see g_parks)
}

void park_timed(const std::atomic<uint32_t>& word, uint32_t seen,
                std::atomic<uint32_t>& parked) noexcept {
  if (park_policy().count_parks) [[unlikely]] count_park();
  // seq_cst: a Dekker pair with the notifier's store of `word`, fence and load of `parked`
  // (wake_parked's caller): either it sees us counted and wakes us, or we see its store here.
  parked.fetch_add(1, std::memory_order_seq_cst);
  if (word.load(std::memory_order_seq_cst) == seen) {
    // The kernel re-checks the word against `seen` under its own lock, so a store that lands
    // now ends the wait at once. The timeout bounds the one case no fence covers (park.hpp).
    const timespec timeout{0, static_cast<long>(kParkTimeoutNs)};
    syscall(SYS_futex, reinterpret_cast<const uint32_t*>(&word), FUTEX_WAIT_PRIVATE, seen,
            &timeout, nullptr, 0);
  }
  // relaxed: the count only has to be up before the wait (above); leaving needs no order.
  parked.fetch_sub(1, std::memory_order_relaxed);
}

void futex_wait_for(const std::atomic<uint32_t>& word, uint32_t seen, uint64_t ns) noexcept {
  const timespec timeout{static_cast<time_t>(ns / 1'000'000'000),
                         static_cast<long>(ns % 1'000'000'000)};
  syscall(SYS_futex, reinterpret_cast<const uint32_t*>(&word), FUTEX_WAIT_PRIVATE, seen, &timeout,
          nullptr, 0);
}

void futex_wake_all(const std::atomic<uint32_t>& word) noexcept {
  syscall(SYS_futex, reinterpret_cast<const uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT_MAX,
          nullptr, nullptr, 0);
}

void wake_parked(const std::atomic<uint32_t>& word, const std::atomic<uint32_t>& parked) noexcept {
  // seq_cst fence: the other half of park_timed()'s Dekker pair (its seq_cst RMW of `parked`,
  // then its load of the word): either the waiter sees the caller's store, or we see it counted.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // relaxed: ordered by the fence above.
  if (parked.load(std::memory_order_relaxed) == 0) return;
  syscall(SYS_futex, reinterpret_cast<const uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT_MAX,
          nullptr, nullptr, 0);
}

}  // namespace txpath
