// SPDX-License-Identifier: MIT
// Lock kinds: mutual exclusion, try_lock semantics, nesting (busylock + root lock), MCS
// lock/try_lock stress, CNA's NUMA hand-off policy with fake NUMA nodes, every kind with
// spin-then-park off (spin-then-yield), and the LockKind plumbing.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "sync/locks.hpp"
#include "sync/park.hpp"
#include "txpath/spin.hpp"

namespace txpath {
namespace {

#ifdef TXPATH_TSAN
constexpr uint64_t kScale = 10;  // TSan runs ~10x slower
// Under TSan an oversubscribed FIFO lock's convoy is far slower still (TSan's own per-address
// sync state is taken on every atomic), so the widest run uses fewer threads there.
constexpr unsigned kManyThreads = 12;
constexpr unsigned kNestedThreads = 8;
#else
constexpr uint64_t kScale = 1;
constexpr unsigned kManyThreads = 32;
constexpr unsigned kNestedThreads = 16;
#endif

// Iterations per thread so that a run does about `total` lock/unlock pairs (at least 50 per
// thread).
uint64_t per_thread(uint64_t total, unsigned threads) {
  const uint64_t n = total / kScale / threads;
  return n < 50 ? 50 : n;
}

// Wall-clock budget per multi-threaded run. FIFO spinlocks (ticket, mcs) collapse when threads
// outnumber cores: once a waiter holding the next turn is preempted, every handoff waits for the
// scheduler to run it (up to a time slice each), so a fixed iteration count can take minutes.
// The stress loops therefore stop at whichever comes first, the iteration count or the budget,
// and check exclusion against the iterations actually done.
constexpr auto kBudget = std::chrono::milliseconds(200);

// Starts `n` threads together; thread t runs body(t, i) for i = 0, 1, ... until `iters` or the
// budget is spent (checked before every iteration). Returns the iterations each thread completed.
template <class Body>
std::vector<uint64_t> run_threads(unsigned n, uint64_t iters, Body body) {
  std::atomic<bool> go{false};
  std::vector<uint64_t> done(n, 0);
  std::vector<std::thread> threads;
  threads.reserve(n);
  const auto deadline = std::chrono::steady_clock::now() + kBudget;
  for (unsigned t = 0; t < n; ++t) {
    threads.emplace_back([&, t] {
      // acquire: pairs with the release store below (nothing to publish; just a start line).
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      uint64_t i = 0;
      for (; i < iters; ++i) {
        if (std::chrono::steady_clock::now() >= deadline) break;
        body(t, i);
      }
      done[t] = i;  // read after join
    });
  }
  // release: pairs with the acquire spin above.
  go.store(true, std::memory_order_release);
  for (auto& th : threads) th.join();
  return done;
}

uint64_t sum(const std::vector<uint64_t>& v) {
  uint64_t s = 0;
  for (const uint64_t x : v) s += x;
  return s;
}

// Detects two threads inside one critical section at once.
struct Occupancy {
  std::atomic<uint32_t> inside{0};
  std::atomic<uint64_t> violations{0};
  void enter() noexcept {
    // relaxed: a detector, not a synchroniser; the lock under test provides the ordering.
    if (inside.fetch_add(1, std::memory_order_relaxed) != 0) {
      violations.fetch_add(1, std::memory_order_relaxed);
    }
  }
  void leave() noexcept { inside.fetch_sub(1, std::memory_order_relaxed); }
};

// A free/busy check from another thread (a thread's own try_lock on a lock it holds is not
// meaningful for every kind).
template <class L>
bool try_lock_from_other_thread(L& lock) {
  bool got = false;
  std::thread([&] {
    got = lock.try_lock();
    if (got) lock.unlock();
  }).join();
  return got;
}

template <class L>
class LockTest : public ::testing::Test {};

struct LockNames {
  template <class L>
  static std::string GetName(int) {
    return std::string(L::kName);
  }
};

using LockTypes = ::testing::Types<TicketLock, TtasLock, McsLock, MutexLock, CnaLock>;
TYPED_TEST_SUITE(LockTest, LockTypes, LockNames);

TYPED_TEST(LockTest, LayoutOneCacheLine) {
  static_assert(SpinLockKind<TypeParam>);
  EXPECT_EQ(alignof(TypeParam), 64u);
  EXPECT_EQ(sizeof(TypeParam) % 64, 0u);
  TypeParam a, b;
  const auto pa = reinterpret_cast<uintptr_t>(&a);
  const auto pb = reinterpret_cast<uintptr_t>(&b);
  EXPECT_EQ(pa % 64, 0u);
  EXPECT_EQ(pb % 64, 0u);
}

template <class L>
void mutual_exclusion(unsigned threads, uint64_t total) {
  L lock;
  uint64_t counter = 0;  // deliberately not atomic: only the lock protects it
  Occupancy occ;
  const auto done = run_threads(threads, per_thread(total, threads), [&](unsigned, uint64_t) {
    lock.lock();
    occ.enter();
    ++counter;
    occ.leave();
    lock.unlock();
  });
  EXPECT_EQ(counter, sum(done));
  EXPECT_EQ(occ.violations.load(), 0u);
  EXPECT_TRUE(try_lock_from_other_thread(lock));  // left free
}

TYPED_TEST(LockTest, MutualExclusion2Threads) { mutual_exclusion<TypeParam>(2, 1'000'000); }
TYPED_TEST(LockTest, MutualExclusion8Threads) { mutual_exclusion<TypeParam>(8, 1'000'000); }
// 32 threads (12 under TSan) on a machine that may have 2 cores: heavily oversubscribed.
TYPED_TEST(LockTest, MutualExclusionManyThreads) {
  mutual_exclusion<TypeParam>(kManyThreads, 1'000'000);
}

TYPED_TEST(LockTest, TryLockSemantics) {
  TypeParam lock;
  ASSERT_TRUE(lock.try_lock());                   // free -> taken
  EXPECT_FALSE(try_lock_from_other_thread(lock));  // held -> fails elsewhere
  lock.unlock();
  EXPECT_TRUE(try_lock_from_other_thread(lock));  // free again
  lock.lock();
  EXPECT_FALSE(try_lock_from_other_thread(lock));
  lock.unlock();
  ASSERT_TRUE(lock.try_lock());
  lock.unlock();
}

// try_lock must fail while other threads wait on a held lock (ticket: outstanding tickets;
// mcs: pending bit / queue), and everything must drain once it is released.
TYPED_TEST(LockTest, TryLockFailsWhileContended) {
  TypeParam lock;
  lock.lock();
  std::atomic<unsigned> done{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < 3; ++i) {
    waiters.emplace_back([&] {
      lock.lock();
      lock.unlock();
      done.fetch_add(1, std::memory_order_relaxed);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // let it queue up
  }
  EXPECT_FALSE(try_lock_from_other_thread(lock));
  EXPECT_EQ(done.load(), 0u);
  lock.unlock();
  for (auto& w : waiters) w.join();
  EXPECT_EQ(done.load(), 3u);
  EXPECT_TRUE(try_lock_from_other_thread(lock));
}

// The __dev_xmit_skb pattern: senders take busylock, then the root lock, drop busylock while
// still holding root (non-LIFO release), then drop root; a "drainer" takes root alone.
bool drainer_step(unsigned t, uint64_t i) { return t == 0 || i % 4 == 3; }

template <class L>
void nested_busylock_root(unsigned threads, uint64_t total) {
  L busylock;
  L root;
  uint64_t under_busy = 0;  // protected by busylock
  uint64_t under_root = 0;  // protected by root
  Occupancy busy_occ, root_occ;
  const auto done = run_threads(threads, per_thread(total, threads), [&](unsigned t, uint64_t i) {
    if (drainer_step(t, i)) {
      root.lock();
      root_occ.enter();
      ++under_root;
      root_occ.leave();
      root.unlock();
      return;
    }
    busylock.lock();
    busy_occ.enter();
    ++under_busy;
    root.lock();
    root_occ.enter();
    ++under_root;
    busy_occ.leave();
    busylock.unlock();  // released before root, as in Linux
    ++under_root;
    root_occ.leave();
    root.unlock();
  });
  uint64_t expect_busy = 0, expect_root = 0;
  for (unsigned t = 0; t < threads; ++t) {
    for (uint64_t i = 0; i < done[t]; ++i) {
      if (drainer_step(t, i)) {
        expect_root += 1;
      } else {
        expect_busy += 1;
        expect_root += 2;
      }
    }
  }
  EXPECT_EQ(under_busy, expect_busy);
  EXPECT_EQ(under_root, expect_root);
  EXPECT_EQ(busy_occ.violations.load(), 0u);
  EXPECT_EQ(root_occ.violations.load(), 0u);
  EXPECT_TRUE(try_lock_from_other_thread(busylock));
  EXPECT_TRUE(try_lock_from_other_thread(root));
}

TYPED_TEST(LockTest, NestedBusylockRoot2Threads) { nested_busylock_root<TypeParam>(2, 500'000); }
TYPED_TEST(LockTest, NestedBusylockRootManyThreads) {
  nested_busylock_root<TypeParam>(kNestedThreads, 500'000);
}

// One thread holding several locks of the same kind at once, taken and released in both orders.
TYPED_TEST(LockTest, HoldManyAtOnce) {
  constexpr int kLocks = 8;  // more than the MCS per-thread node count
  std::unique_ptr<TypeParam[]> locks(new TypeParam[kLocks]);
  uint64_t counter = 0;
  const auto done = run_threads(4, per_thread(100'000, 4), [&](unsigned t, uint64_t i) {
    // Always ascending acquisition order (no deadlock); release order alternates.
    for (int k = 0; k < kLocks; ++k) locks[k].lock();
    ++counter;
    if ((i + t) % 2 == 0) {
      for (int k = 0; k < kLocks; ++k) locks[k].unlock();
    } else {
      for (int k = kLocks - 1; k >= 0; --k) locks[k].unlock();
    }
  });
  EXPECT_EQ(counter, sum(done));
  for (int k = 0; k < kLocks; ++k) EXPECT_TRUE(try_lock_from_other_thread(locks[k]));
}

// Mixed lock/try_lock stress, run for every kind but aimed at McsLock: try_lock (CAS 0->LOCKED)
// racing with the pending step and the queue head's final CAS.
template <class L>
void mixed_lock_trylock(unsigned threads, uint64_t total) {
  L lock;
  uint64_t counter = 0;
  std::atomic<uint64_t> entries{0};
  Occupancy occ;
  run_threads(threads, per_thread(total, threads), [&](unsigned t, uint64_t i) {
    if ((i + t) % 3 == 0) {
      if (!lock.try_lock()) {
        cpu_relax();
        return;
      }
    } else {
      lock.lock();
    }
    occ.enter();
    ++counter;
    occ.leave();
    lock.unlock();
    // relaxed: a tally read after join.
    entries.fetch_add(1, std::memory_order_relaxed);
  });
  EXPECT_EQ(counter, entries.load());
  EXPECT_GT(entries.load(), 0u);
  EXPECT_EQ(occ.violations.load(), 0u);
  EXPECT_TRUE(try_lock_from_other_thread(lock));
}

TYPED_TEST(LockTest, MixedLockTryLock3Threads) { mixed_lock_trylock<TypeParam>(3, 500'000); }
TYPED_TEST(LockTest, MixedLockTryLock12Threads) { mixed_lock_trylock<TypeParam>(12, 500'000); }

// Restores the process-wide spin-then-park policy at scope exit.
class SpinParkPolicy {
 public:
  explicit SpinParkPolicy(bool park) : saved_(spin_park()) { set_spin_park(park); }
  ~SpinParkPolicy() { set_spin_park(saved_); }
  SpinParkPolicy(const SpinParkPolicy&) = delete;
  SpinParkPolicy& operator=(const SpinParkPolicy&) = delete;

 private:
  bool saved_;
};

// The same oversubscribed runs with parking off: every wait spins, then yields (the old
// behaviour), and nothing may depend on a notify being acted upon.
TYPED_TEST(LockTest, SpinThenYieldWhenParkingIsOff) {
  SpinParkPolicy off(false);
  EXPECT_FALSE(spin_park());
  mutual_exclusion<TypeParam>(kManyThreads, 500'000);
  nested_busylock_root<TypeParam>(kNestedThreads, 200'000);
}

// Counts spin_then_park()'s parks (park.hpp) for its scope.
class CountParks {
 public:
  CountParks() { set_count_parks(true); }
  ~CountParks() { set_count_parks(false); }
  CountParks(const CountParks&) = delete;
  CountParks& operator=(const CountParks&) = delete;
};

// Whether L's waiters wait in spin_then_park() (MutexLock parks inside pthread instead).
template <class L>
constexpr bool kParksInSpinThenPark = !std::is_same_v<L, MutexLock>;

// Waits until parks_counted() exceeds `before`. The deadline only turns a waiter that never
// parks into a failure instead of a hang; a waiter parks within microseconds of its spin.
bool a_waiter_parked(uint64_t before) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (parks_counted() <= before) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// A waiter parks (parking on) when the holder keeps the lock past the spin phase, and the
// unlock must wake it: a missing notify hangs here. The holder unlocks only once a waiter has
// parked (counted by spin_then_park), so every round wakes a parked waiter.
TYPED_TEST(LockTest, ParkedWaitersAreWoken) {
  SpinParkPolicy on(true);
  CountParks counting;
  TypeParam lock;
  std::atomic<unsigned> done{0};
  for (int round = 0; round < 20; ++round) {
    lock.lock();
    const uint64_t parks_before = parks_counted();
    std::vector<std::thread> waiters;
    for (int i = 0; i < 3; ++i) {
      waiters.emplace_back([&] {
        lock.lock();
        lock.unlock();
        // relaxed: a tally read after join.
        done.fetch_add(1, std::memory_order_relaxed);
      });
    }
    bool parked = true;
    if constexpr (kParksInSpinThenPark<TypeParam>) {
      parked = a_waiter_parked(parks_before);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // long enough for them to park
    }
    lock.unlock();
    for (auto& w : waiters) w.join();
    ASSERT_TRUE(parked) << "round " << round << ": no waiter parked";
  }
  EXPECT_EQ(done.load(), 60u);
  EXPECT_TRUE(try_lock_from_other_thread(lock));
}

// --- McsLock specifically ------------------------------------------------------------------

void mcs_stress(unsigned threads) {
  McsLock busylock, root;
  uint64_t counter = 0;
  std::atomic<uint64_t> entries{0};
  Occupancy occ;
  run_threads(threads, per_thread(500'000, threads), [&](unsigned t, uint64_t i) {
    switch ((i + t) % 4) {
      case 0:  // try root
        if (!root.try_lock()) return;
        break;
      case 1:  // busylock then root, drop busylock first
        busylock.lock();
        root.lock();
        busylock.unlock();
        break;
      case 2:  // try busylock, then root
        if (!busylock.try_lock()) return;
        root.lock();
        busylock.unlock();
        break;
      default:
        root.lock();
        break;
    }
    occ.enter();
    ++counter;
    occ.leave();
    root.unlock();
    // relaxed: a tally read after join.
    entries.fetch_add(1, std::memory_order_relaxed);
  });
  EXPECT_EQ(counter, entries.load());
  EXPECT_GT(entries.load(), 0u);
  EXPECT_EQ(occ.violations.load(), 0u);
  EXPECT_TRUE(root.try_lock());
  root.unlock();
  EXPECT_TRUE(busylock.try_lock());
  busylock.unlock();
}

TEST(McsLockTest, StressLockTryLockNested2Threads) { mcs_stress(2); }
TEST(McsLockTest, StressLockTryLockNested8Threads) { mcs_stress(8); }

// Drives the state machine: a holder, then a pending waiter and queued waiters behind it; the
// order among them is not asserted (pending waiter vs. queue head is a race by design), that
// they all get through is.
TEST(McsLockTest, PendingAndQueueDrain) {
  McsLock lock;
  uint64_t counter = 0;
  for (int round = 0; round < 10; ++round) {
    lock.lock();
    std::vector<std::thread> waiters;
    for (int i = 0; i < 4; ++i) {  // one pending waiter, then three queued
      waiters.emplace_back([&] {
        lock.lock();
        ++counter;
        lock.unlock();
      });
      if (round % 2 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    EXPECT_FALSE(try_lock_from_other_thread(lock));
    lock.unlock();
    for (auto& w : waiters) w.join();
  }
  EXPECT_EQ(counter, 40u);
  EXPECT_TRUE(lock.try_lock());
  lock.unlock();
}

// --- CnaLock: the NUMA policy, with fake nodes ---------------------------------------------

// A NUMA-node source the test controls: each thread says which node it is on.
struct FakeNuma {
  static inline thread_local uint32_t node = 0;
  static uint32_t current() noexcept { return node; }
};

// The holder (this thread) takes `lock`; then one thread per entry of `nodes` queues up, in that
// order, each on the given fake node (the next starts only once the previous has queued and
// linked in); then the holder releases. Returns the order in which the waiters got the lock.
template <class L>
std::vector<int> handoff_order(const std::vector<uint32_t>& nodes) {
  L lock;
  std::vector<int> order;  // protected by `lock`
  FakeNuma::node = 0;
  lock.lock();
  std::vector<std::thread> waiters;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const uintptr_t before = lock.tail_for_testing();
    waiters.emplace_back([&, i] {
      FakeNuma::node = nodes[i];
      lock.lock();
      order.push_back(static_cast<int>(i));
      lock.unlock();
    });
    while (lock.tail_for_testing() == before) std::this_thread::yield();  // queued
    if (before != 0) {
      while (!L::linked_for_testing(before)) std::this_thread::yield();  // linked in
    }
  }
  lock.unlock();
  for (auto& w : waiters) w.join();
  EXPECT_TRUE(try_lock_from_other_thread(lock));
  return order;
}

TEST(CnaLockTest, OneNodeIsFifo) {
  const std::vector<int> fifo = {0, 1, 2, 3, 4, 5};
  EXPECT_EQ(handoff_order<BasicCnaLock<FakeNuma>>({0, 0, 0, 0, 0, 0}), fifo);
  EXPECT_EQ(handoff_order<BasicCnaLock<FakeNuma>>({1, 1, 1, 1, 1, 1}), fifo);
}

// Waiter 0 (node 0) heads the queue and gets the lock first. It passes over 1 and 2 (node 1),
// which go to the secondary queue, to 3 (node 0); 3 passes over 4 to 5; 5 is the last main node
// with no local successor, so the secondary queue (1, 2, 4) becomes the main queue, in order.
TEST(CnaLockTest, HandOffPrefersSameNodeWaiters) {
  EXPECT_EQ(handoff_order<BasicCnaLock<FakeNuma>>({0, 1, 1, 0, 1, 0}),
            (std::vector<int>{0, 3, 5, 1, 2, 4}));
  // Node 1 first: the node-1 waiters run together, then node 0's.
  EXPECT_EQ(handoff_order<BasicCnaLock<FakeNuma>>({1, 0, 1, 0, 1}),
            (std::vector<int>{0, 2, 4, 1, 3}));
}

// No local waiter left in the main queue but remote ones behind: the secondary queue goes in
// FRONT of the remaining main queue (its waiters are older).
TEST(CnaLockTest, NoLocalWaiterServesTheSecondaryQueueFirst) {
  // 0 passes over 1 (node 1) to 2 (node 0): secondary = {1}. 2's successors 3, 4 are node 2:
  // no local waiter, so 1 goes first, then 3 and 4 (1 finds no node-1 waiter either).
  EXPECT_EQ(handoff_order<BasicCnaLock<FakeNuma>>({0, 1, 0, 2, 2}),
            (std::vector<int>{0, 2, 1, 3, 4}));
}

// The fairness threshold: after kThreshold local hand-offs with a non-empty secondary queue, the
// passed-over waiters are served even though local waiters are still queued.
TEST(CnaLockTest, ThresholdServesPassedOverWaiters) {
  const std::vector<uint32_t> nodes = {0, 1, 0, 0, 0};
  // Default threshold (64K): every node-0 waiter first, the node-1 waiter last.
  EXPECT_EQ(handoff_order<BasicCnaLock<FakeNuma>>(nodes), (std::vector<int>{0, 2, 3, 4, 1}));
  // Threshold 2: 0 -> 2 (1 passed over, 1 local hand-off), 2 -> 3 (2), then 1 is due.
  EXPECT_EQ((handoff_order<BasicCnaLock<FakeNuma, 2>>(nodes)), (std::vector<int>{0, 2, 3, 1, 4}));
  // Threshold 1: 1 is served right after the first local hand-off.
  EXPECT_EQ((handoff_order<BasicCnaLock<FakeNuma, 1>>(nodes)), (std::vector<int>{0, 2, 1, 3, 4}));
}

// Many threads on three fake nodes, more threads than cores, a small threshold so that the
// secondary queue is built, flushed and spliced all the time: exclusion holds and every thread
// completes all its iterations (a waiter lost in the secondary queue would hang the join).
// Iteration counts are modest: once the waiters park, a FIFO hand-off to a parked thread costs
// about one context switch (a lock convoy), so on 2 cores this can take ~10 us per iteration.
template <class L>
void fake_node_stress(unsigned threads, uint64_t per_thread_iters, bool with_try_lock) {
  L lock;
  uint64_t counter = 0;  // protected by `lock`
  std::atomic<uint64_t> entries{0};
  Occupancy occ;
  std::atomic<bool> go{false};
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      FakeNuma::node = t % 3;
      // acquire: pairs with the release store below (a start line).
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      for (uint64_t i = 0; i < per_thread_iters; ++i) {
        if (with_try_lock && (i + t) % 3 == 0) {
          if (!lock.try_lock()) continue;
        } else {
          lock.lock();
        }
        occ.enter();
        ++counter;
        occ.leave();
        lock.unlock();
        // relaxed: a tally read after join.
        entries.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  // release: pairs with the acquire spin above.
  go.store(true, std::memory_order_release);
  for (auto& th : ts) th.join();
  EXPECT_EQ(counter, entries.load());
  if (!with_try_lock) {
    EXPECT_EQ(counter, threads * per_thread_iters);
  }
  EXPECT_EQ(occ.violations.load(), 0u);
  EXPECT_TRUE(try_lock_from_other_thread(lock));
}

TEST(CnaLockTest, FakeNodesStressManyThreads) {
  fake_node_stress<BasicCnaLock<FakeNuma, 4>>(kNestedThreads, 5'000 / kScale, false);
}
TEST(CnaLockTest, FakeNodesStressWithTryLock) {
  fake_node_stress<BasicCnaLock<FakeNuma, 4>>(kNestedThreads, 5'000 / kScale, true);
}
TEST(CnaLockTest, FakeNodesStressDefaultThreshold) {
  fake_node_stress<BasicCnaLock<FakeNuma>>(8, 5'000 / kScale, false);
}
TEST(CnaLockTest, FakeNodesStressParkingOff) {
  SpinParkPolicy off(false);
  fake_node_stress<BasicCnaLock<FakeNuma, 4>>(8, 5'000 / kScale, false);
}

// --- LockKind plumbing ---------------------------------------------------------------------

TEST(LockKindTest, NamesRoundTrip) {
  for (const LockKind k : kAllLockKinds) {
    const auto parsed = parse_lock_kind(lock_kind_name(k));
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(*parsed, k);
  }
  EXPECT_EQ(lock_kind_name(LockKind::ticket), "ticket");
  EXPECT_EQ(lock_kind_name(LockKind::ttas), "ttas");
  EXPECT_EQ(lock_kind_name(LockKind::mcs), "mcs");
  EXPECT_EQ(lock_kind_name(LockKind::mutex), "mutex");
  EXPECT_EQ(lock_kind_name(LockKind::cna), "cna");
  EXPECT_FALSE(parse_lock_kind("").has_value());
  EXPECT_FALSE(parse_lock_kind("MCS").has_value());
  EXPECT_FALSE(parse_lock_kind("spin").has_value());
  static_assert(parse_lock_kind("ttas") == LockKind::ttas);
}

TEST(LockKindTest, WithLockKindDispatches) {
  for (const LockKind k : kAllLockKinds) {
    const std::string_view name =
        with_lock_kind(k, []<class L>() -> std::string_view { return L::kName; });
    EXPECT_EQ(name, lock_kind_name(k));
  }
  // Non-const lvalue functor, returning a reference.
  int hits = 0;
  auto counting = [&hits]<class L>() -> int& {
    L lock;
    lock.lock();
    ++hits;
    lock.unlock();
    return hits;
  };
  int& r = with_lock_kind(LockKind::mcs, counting);
  EXPECT_EQ(&r, &hits);
  for (const LockKind k : kAllLockKinds) with_lock_kind(k, counting);
  EXPECT_EQ(hits, 1 + static_cast<int>(kAllLockKinds.size()));
}

}  // namespace
}  // namespace txpath
