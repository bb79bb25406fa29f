// SPDX-License-Identifier: MIT
// The four lock kinds of src/sync/ (ticket, ttas, mcs, mutex):
//  * BM_LockUncontended<L>: lock + increment a counter + unlock on one thread, private lock.
//  * BM_LockContended<L>:   the same on 2 threads sharing one static lock and one counter
//    (real time: a waiter that yields or parks is still waiting). Items = critical sections
//    completed by all threads. After every run the counter must equal the iterations of both
//    threads together (a mutual-exclusion check); a mismatch aborts the program.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <utility>

#include "sync/locks.hpp"

namespace {

using txpath::McsLock;
using txpath::MutexLock;
using txpath::TicketLock;
using txpath::TtasLock;

template <class L>
void BM_LockUncontended(benchmark::State& state) {
  L lock;
  uint64_t counter = 0;
  for (auto _ : state) {
    lock.lock();
    ++counter;
    benchmark::DoNotOptimize(std::as_const(counter));
    lock.unlock();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

// One shared lock and counter per lock kind; the counter on its own cache line, as a root-lock
// critical section touches the lock's line and the qdisc's.
template <class L>
struct Shared {
  static inline L lock;
  struct alignas(64) Counter {
    uint64_t value = 0;  // guarded by lock
  };
  static inline Counter counter;
  static inline std::atomic<uint64_t> iterations{0};  // summed after each thread's loop
};

template <class L>
void contended_setup(const benchmark::State&) {
  Shared<L>::counter.value = 0;
  Shared<L>::iterations.store(0, std::memory_order_relaxed);  // no thread is running
}

template <class L>
void contended_teardown(const benchmark::State&) {
  // Every thread has been joined here, so both reads are exact.
  const uint64_t counted = Shared<L>::counter.value;
  const uint64_t expected = Shared<L>::iterations.load(std::memory_order_relaxed);
  if (counted != expected) {
    std::fprintf(stderr, "bench_locks: %.*s lost updates: counter %llu, iterations %llu\n",
                 static_cast<int>(L::kName.size()), L::kName.data(),
                 static_cast<unsigned long long>(counted),
                 static_cast<unsigned long long>(expected));
    std::abort();
  }
}

template <class L>
void BM_LockContended(benchmark::State& state) {
  using S = Shared<L>;
  for (auto _ : state) {
    S::lock.lock();
    ++S::counter.value;
    S::lock.unlock();
  }
  // relaxed: read only in teardown, after the threads are joined.
  S::iterations.fetch_add(state.iterations(), std::memory_order_relaxed);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

#define TXPATH_LOCK_BENCHMARKS(L)                                                       \
  BENCHMARK_TEMPLATE(BM_LockUncontended, L);                                            \
  BENCHMARK_TEMPLATE(BM_LockContended, L)                                               \
      ->Threads(2)                                                                      \
      ->UseRealTime()                                                                   \
      ->Setup(contended_setup<L>)                                                       \
      ->Teardown(contended_teardown<L>)

TXPATH_LOCK_BENCHMARKS(TicketLock);
TXPATH_LOCK_BENCHMARKS(TtasLock);
TXPATH_LOCK_BENCHMARKS(McsLock);
TXPATH_LOCK_BENCHMARKS(MutexLock);

}  // namespace
