// SPDX-License-Identifier: MIT
// CC-Synch / H-Synch combining primitive (sync/ccsynch.hpp): exclusion (a plain counter reaches
// the exact total), every request served exactly once and in per-thread order, combining
// actually batches under contention, the batch bound h, H-Synch with two fake NUMA nodes, and
// instance create/destroy churn with reused threads (the thread_local node cache).
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "sync/ccsynch.hpp"
#include "base/cpu_relax.hpp"
#include "sync/locks.hpp"

namespace txpath {
namespace {

#if defined(TXPATH_TSAN) || defined(TXPATH_ASAN)
constexpr uint64_t kOps = 20'000;  // total requests per run; sanitizers are 3-15x slower
#else
constexpr uint64_t kOps = 200'000;
#endif

// Two fake NUMA nodes: a thread's node is its (test-assigned) parity, switched now and then so
// a thread's node moves between lists (its spare node migrates with it).
constinit thread_local unsigned t_fake_node = 0;
unsigned fake_node() noexcept { return t_fake_node; }

CcSynchConfig flat(unsigned h = 64) { return CcSynchConfig{.h = h, .lists = 1, .node_of = nullptr}; }
CcSynchConfig two_nodes(unsigned h = 64) {
  return CcSynchConfig{.h = h, .lists = 2, .node_of = &fake_node};
}

// Runs `threads` threads, each doing `per_thread` requests that bump a plain (non-atomic)
// counter and append (thread, seq) to a plain log; checks exact totals, exactly-once, order.
template <class Section>
void check_counter_and_order(Section& cs, unsigned threads, uint64_t per_thread) {
  uint64_t counter = 0;  // plain on purpose: only the combining section touches it
  struct Entry {
    uint32_t thread;
    uint32_t seq;
  };
  std::vector<Entry> log;
  log.reserve(threads * per_thread);
  std::vector<uint64_t> seen_by_request(threads * per_thread, 0);
  std::vector<uint64_t> results(threads, 0);
  // Overlap detector: two threads inside the section at once (e.g. two H-Synch combiners without
  // the global lock) are counted, independently of whether the plain counter lost an update.
  std::atomic<unsigned> inside{0};
  std::atomic<uint64_t> overlaps{0};
  auto enter = [&] {
    // relaxed, both: only the count matters; a violation is any overlap at all.
    if (inside.fetch_add(1, std::memory_order_relaxed) != 0)
      overlaps.fetch_add(1, std::memory_order_relaxed);
  };
  auto leave = [&] { inside.fetch_sub(1, std::memory_order_relaxed); };  // relaxed: as enter
  std::barrier start(static_cast<std::ptrdiff_t>(threads));
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      t_fake_node = t & 1;
      start.arrive_and_wait();
      uint64_t last = 0;
      for (uint64_t i = 0; i < per_thread; ++i) {
        if (i % 97 == 0) t_fake_node ^= 1;  // move between lists
        uint64_t got = 0;
        cs.execute(
            [&](bool) noexcept {
              enter();
              got = ++counter;
              log.push_back({t, static_cast<uint32_t>(i)});
              ++seen_by_request[t * per_thread + i];
              // A little work inside, so an overlap has a window to show.
              for (int k = 0; k < 8; ++k) cpu_relax();
              leave();
            },
            [&]() noexcept {
              enter();
              leave();
            });
        // The value we got is ours alone and increases along our own requests.
        EXPECT_GT(got, last);
        last = got;
      }
      results[t] = last;
    });
  }
  for (auto& th : pool) th.join();
  EXPECT_EQ(overlaps.load(), 0u) << "two threads were inside the section at once";
  EXPECT_EQ(counter, threads * per_thread);
  ASSERT_EQ(log.size(), threads * per_thread);
  for (uint64_t n : seen_by_request) ASSERT_EQ(n, 1u) << "a request was served twice or never";
  std::vector<int64_t> next(threads, 0);
  for (const Entry& e : log) {
    ASSERT_EQ(static_cast<int64_t>(e.seq), next[e.thread]) << "thread " << e.thread << " out of order";
    ++next[e.thread];
  }
  const CcSynchStats s = cs.stats();
  EXPECT_EQ(s.requests, threads * per_thread);
  EXPECT_LE(s.max_batch, cs.h());
  EXPECT_GE(s.batches * cs.h(), s.requests);  // no batch above h
  EXPECT_LE(s.batches, s.requests);
}

TEST(CcSynch, SingleThreadIsItsOwnCombiner) {
  CcSynch<> cs(flat());
  uint64_t counter = 0;
  int epilogues = 0;
  for (int i = 0; i < 1000; ++i)
    cs.execute([&](bool more) noexcept {
      EXPECT_FALSE(more);
      ++counter;
    }, [&]() noexcept { ++epilogues; });
  EXPECT_EQ(counter, 1000u);
  EXPECT_EQ(epilogues, 1000);  // alone, every request is a batch of one
  const CcSynchStats s = cs.stats();
  EXPECT_EQ(s.requests, 1000u);
  EXPECT_EQ(s.batches, 1000u);
  EXPECT_EQ(s.max_batch, 1u);
  EXPECT_EQ(s.waits, 0u);
  EXPECT_EQ(cs.nodes_allocated(), 2u);  // the list's first Tail + this thread's spare
}

TEST(CcSynch, ExactCountOrderAndExactlyOnceWithMoreThreadsThanCores) {
  for (unsigned threads : {2u, 8u, 64u}) {
    SCOPED_TRACE(threads);
    CcSynch<> cs(flat());
    check_counter_and_order(cs, threads, kOps / threads + 1);
    EXPECT_EQ(cs.nodes_allocated(), threads + 1);  // one node per thread, plus the list's
  }
}

TEST(CcSynch, HSynchTwoFakeNodes) {
  for (unsigned threads : {2u, 8u, 64u}) {
    SCOPED_TRACE(threads);
    CcSynch<McsLock> cs(two_nodes());
    EXPECT_EQ(cs.lists(), 2u);
    check_counter_and_order(cs, threads, kOps / threads + 1);
    EXPECT_EQ(cs.nodes_allocated(), threads + 2);  // nodes migrate between lists, none is added
  }
}

TEST(CcSynch, HSynchWithEveryLockKind) {
  auto one = [&]<class L>() {
    CcSynch<L> cs(two_nodes(8));
    check_counter_and_order(cs, 8, kOps / 40);
  };
  one.template operator()<TicketLock>();
  one.template operator()<TtasLock>();
  one.template operator()<MutexLock>();
}

// Batches larger than one form under contention: while the combiner is inside a request, the
// others' requests pile up behind it. Made certain without timing: the first combiner's request
// waits (inside the section) until every other thread has called execute() and then for a fixed
// number of yields; every request also yields once, so the others keep arriving. Counted by the
// primitive (max_batch, batches < requests).
template <class Section>
void check_batches_form(Section& cs, unsigned threads) {
  std::atomic<unsigned> entered{0};
  std::atomic<bool> first{true};
  uint64_t counter = 0;
  std::vector<std::thread> pool;
  constexpr uint64_t kPer = 200;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      t_fake_node = t & 1;
      for (uint64_t i = 0; i < kPer; ++i) {
        // relaxed: a progress count read by the first request below, synchronises nothing.
        if (i == 0) entered.fetch_add(1, std::memory_order_relaxed);
        cs.execute(
            [&](bool) noexcept {
              ++counter;
              // relaxed: the flag is only tested and cleared inside the section.
              if (first.exchange(false, std::memory_order_relaxed)) {
                // relaxed: as above.
                while (entered.load(std::memory_order_relaxed) < threads) std::this_thread::yield();
                for (int k = 0; k < 1000; ++k) std::this_thread::yield();
              }
              std::this_thread::yield();
            },
            [] {});
      }
    });
  }
  for (auto& th : pool) th.join();
  EXPECT_EQ(counter, threads * kPer);
  const CcSynchStats s = cs.stats();
  EXPECT_EQ(s.requests, threads * kPer);
  EXPECT_GT(s.max_batch, 1u) << "no request was ever served by another thread's combiner";
  EXPECT_LT(s.batches, s.requests);
  EXPECT_GT(s.waits, 0u);
}

TEST(CcSynch, BatchesFormUnderContention) {
  CcSynch<> cs(flat());
  check_batches_form(cs, 8);
}

TEST(CcSynch, HSynchBatchesFormUnderContention) {
  CcSynch<> cs(two_nodes());
  check_batches_form(cs, 8);
}

// h bounds a batch: with h = 1 every request is its own batch, and the role is handed over.
TEST(CcSynch, BatchBoundH) {
  CcSynch<> cs(flat(1));
  check_counter_and_order(cs, 8, kOps / 80);
  const CcSynchStats s = cs.stats();
  EXPECT_EQ(s.max_batch, 1u);
  EXPECT_EQ(s.batches, s.requests);
}

// The epilogue runs once per batch, by the combiner, after its requests and still exclusively;
// `more` is true exactly when another request of the same batch follows.
TEST(CcSynch, EpilogueOncePerBatchAndMoreHint) {
  CcSynch<> cs(flat(4));
  uint64_t in_batch = 0, batches = 0, requests = 0, hint_errors = 0;
  bool expect_more_done = true;  // the previous request said "more" and a request followed
  constexpr unsigned kThreads = 8;
  const uint64_t per = kOps / 80;
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < kThreads; ++t) {
    pool.emplace_back([&] {
      for (uint64_t i = 0; i < per; ++i) {
        cs.execute(
            [&](bool more) noexcept {
              ++requests;
              ++in_batch;
              expect_more_done = !more;  // if more, the epilogue must not come next
            },
            [&]() noexcept {
              if (!expect_more_done) ++hint_errors;
              ++batches;
              in_batch = 0;
              expect_more_done = true;
            });
      }
    });
  }
  for (auto& th : pool) th.join();
  EXPECT_EQ(requests, kThreads * per);
  EXPECT_EQ(hint_errors, 0u) << "a request said `more` but its batch ended after it";
  const CcSynchStats s = cs.stats();
  EXPECT_EQ(batches, s.batches);
  EXPECT_EQ(in_batch, 0u);
  EXPECT_LE(s.max_batch, 4u);
}

// Instances are created and destroyed many times by the same (reused) threads; a new instance
// may get a destroyed one's address. The thread_local cache is keyed by instance id, so a thread
// never uses a node of a dead instance (ASan would see it) and gets exactly one node per live
// instance it uses, even when it alternates between more instances than the cache holds.
TEST(CcSynch, InstanceChurnWithReusedThreads) {
  constexpr unsigned kThreads = 4;
#if defined(TXPATH_TSAN) || defined(TXPATH_ASAN)
  constexpr int kRounds = 100;
#else
  constexpr int kRounds = 1000;
#endif
  constexpr unsigned kLive = ccsynch_detail::kCacheEntries + 5;  // more than the cache holds
  std::vector<std::unique_ptr<CcSynch<>>> live(kLive);
  std::vector<uint64_t> counters(kLive, 0);
  std::barrier sync(kThreads + 1);
  std::atomic<bool> quit{false};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < kThreads; ++t) {
    pool.emplace_back([&, t] {
      t_fake_node = t & 1;
      for (;;) {
        sync.arrive_and_wait();  // main has (re)created the instances
        // relaxed: ordered by the barrier.
        if (quit.load(std::memory_order_relaxed)) return;
        for (int k = 0; k < 3; ++k)
          for (unsigned i = 0; i < kLive; ++i)
            live[i]->execute([&](bool) noexcept { ++counters[i]; }, [] {});
        sync.arrive_and_wait();  // done with this round's instances
      }
    });
  }
  bool ok = true;
  for (int r = 0; r < kRounds && ok; ++r) {
    for (unsigned i = 0; i < kLive; ++i) {
      // Half flat, half H-Synch; destroyed and recreated every round (addresses get reused).
      live[i] = std::make_unique<CcSynch<>>(i % 2 ? two_nodes() : flat());
      counters[i] = 0;
    }
    sync.arrive_and_wait();
    sync.arrive_and_wait();
    for (unsigned i = 0; i < kLive; ++i) {
      EXPECT_EQ(counters[i], 3u * kThreads) << "round " << r;
      EXPECT_EQ(live[i]->nodes_allocated(), live[i]->lists() + kThreads)
          << "round " << r << ": a thread got more than one node from one instance";
      ok = ok && counters[i] == 3u * kThreads &&
           live[i]->nodes_allocated() == live[i]->lists() + kThreads;
    }
  }
  quit.store(true, std::memory_order_relaxed);  // relaxed: the barrier orders it
  sync.arrive_and_wait();
  for (auto& th : pool) th.join();
}

}  // namespace
}  // namespace txpath
