// SPDX-License-Identifier: MIT
// PtrRing<T> (sync/ptr_ring.hpp): layout, the batch rule, FIFO order, "full" as seen by the
// producer under lazy zeroing, wrap-around against a model, and one consumer against N
// producers (run under TSan in the sanitizer build).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <thread>
#include <vector>

#include "sync/ptr_ring.hpp"

namespace txpath {
namespace {

uintptr_t line_of(const void* p) { return reinterpret_cast<uintptr_t>(p) / 64; }

TEST(PtrRing, ProducerConsumerAndReadMostlyFieldsLiveOnThreeCacheLines) {
  PtrRing<int> r(64);
  const auto prod = line_of(r.producer_line());
  const auto cons = line_of(r.consumer_line());
  const auto ro = line_of(r.read_mostly_line());
  EXPECT_NE(prod, cons);
  EXPECT_NE(prod, ro);
  EXPECT_NE(cons, ro);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(r.producer_line()) % 64, 0u);
}

TEST(PtrRing, BatchIsTwoCacheLinesOfPointersUnlessThatExceedsHalfTheRing) {
  static_assert(PtrRing<int>::kDefaultBatch == 2 * 64 / sizeof(void*));
  EXPECT_EQ(PtrRing<int>::batch_for(0), 1u);
  EXPECT_EQ(PtrRing<int>::batch_for(1), 1u);
  EXPECT_EQ(PtrRing<int>::batch_for(31), 1u);   // 16 > 31 / 2 = 15
  EXPECT_EQ(PtrRing<int>::batch_for(32), 16u);  // 16 == 32 / 2
  EXPECT_EQ(PtrRing<int>::batch_for(1000), 16u);
  EXPECT_EQ(PtrRing<int>(1000).batch(), 16u);
  EXPECT_EQ(PtrRing<int>(1000).size(), 1000u);
}

TEST(PtrRing, ZeroSizedRingRefusesEverything) {
  PtrRing<int> r(0);
  int x = 1;
  EXPECT_FALSE(r.produce(&x));
  EXPECT_EQ(r.consume(), nullptr);
  EXPECT_EQ(r.peek(), nullptr);
  EXPECT_TRUE(r.empty());
}

TEST(PtrRing, FifoOrderAndFullWhenEverySlotIsTaken) {
  PtrRing<int> r(4);  // batch 1: consumed slots are zeroed at once
  std::vector<int> v(6);
  EXPECT_TRUE(r.empty());
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(r.produce(&v[i])) << i;
  EXPECT_FALSE(r.produce(&v[4])) << "4 slots, 4 entries: full";
  EXPECT_FALSE(r.empty());
  EXPECT_EQ(r.peek(), &v[0]);
  EXPECT_EQ(r.consume(), &v[0]);
  EXPECT_TRUE(r.produce(&v[4])) << "batch 1: the consumed slot is free again";
  EXPECT_FALSE(r.produce(&v[5]));
  for (int i = 1; i < 5; ++i) EXPECT_EQ(r.consume(), &v[i]);
  EXPECT_EQ(r.consume(), nullptr);
  EXPECT_TRUE(r.empty());
}

TEST(PtrRing, ConsumedSlotsAreZeroedLazilyInBatches) {
  PtrRing<int> r(64);  // batch 16
  ASSERT_EQ(r.batch(), 16u);
  std::vector<int> v(64 + 32);
  for (int i = 0; i < 64; ++i) ASSERT_TRUE(r.produce(&v[i]));
  EXPECT_FALSE(r.produce(&v[64]));
  // Fewer than a batch consumed: the slots still look full to the producer.
  for (int i = 0; i < 15; ++i) ASSERT_EQ(r.consume(), &v[i]);
  EXPECT_FALSE(r.produce(&v[64])) << "15 consumed slots are not zeroed yet";
  // The 16th completes the batch: all 16 are zeroed together.
  ASSERT_EQ(r.consume(), &v[15]);
  for (int i = 64; i < 80; ++i) EXPECT_TRUE(r.produce(&v[i])) << i;
  EXPECT_FALSE(r.produce(&v[80]));
  // Everything comes out in order.
  for (int i = 16; i < 80; ++i) ASSERT_EQ(r.consume(), &v[i]) << i;
  EXPECT_EQ(r.consume(), nullptr);
}

TEST(PtrRing, TheEndOfTheArrayFlushesAPartialBatch) {
  PtrRing<int> r(40);  // batch 16; 40 is not a multiple of it
  std::vector<int> v(200);
  int next_in = 0, next_out = 0;
  // Fill, then drain exactly to the end of the array: reaching the end zeroes the last 8
  // consumed slots (a partial batch) and wraps, so the ring takes 40 again.
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(r.produce(&v[next_in++]));
  for (int i = 0; i < 40; ++i) ASSERT_EQ(r.consume(), &v[next_out++]);
  EXPECT_TRUE(r.empty());
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(r.produce(&v[next_in++])) << i;
  EXPECT_FALSE(r.produce(&v[next_in]));
  for (int i = 0; i < 40; ++i) ASSERT_EQ(r.consume(), &v[next_out++]);
}

// A deterministic mix of produce/consume bursts checked against a FIFO model; the ring may
// refuse a produce only when it is full or at most batch-1 consumed slots are still unzeroed.
TEST(PtrRing, WrapAroundAgainstAModel) {
  for (const uint32_t size : {1u, 2u, 3u, 7u, 32u, 33u, 100u}) {
    PtrRing<uint64_t> r(size);
    std::vector<uint64_t> values(20000);
    std::deque<uint64_t*> model;
    uint64_t rng = 0x243f6a8885a308d3ULL ^ size;
    std::size_t next = 0;
    const uint32_t unzeroed_max = r.batch() - 1;
    for (int round = 0; round < 2000 && next < values.size(); ++round) {
      rng ^= rng << 13;
      rng ^= rng >> 7;
      rng ^= rng << 17;
      const int produce = static_cast<int>(rng % (2 * size + 2));
      const int consume = static_cast<int>((rng >> 20) % (2 * size + 2));
      for (int i = 0; i < produce && next < values.size(); ++i) {
        uint64_t* p = &values[next];
        if (r.produce(p)) {
          model.push_back(p);
          ++next;
        } else {
          ASSERT_GE(model.size() + unzeroed_max, size)
              << "size " << size << ": refused with only " << model.size() << " queued";
          break;
        }
      }
      ASSERT_LE(model.size(), size);
      for (int i = 0; i < consume; ++i) {
        uint64_t* got = r.consume();
        if (model.empty()) {
          ASSERT_EQ(got, nullptr);
          ASSERT_TRUE(r.empty());
          break;
        }
        ASSERT_EQ(got, model.front()) << "size " << size;
        model.pop_front();
      }
      ASSERT_EQ(r.empty(), model.empty());
    }
  }
}

// One consumer, N producers, every producer's items arrive exactly once and in its order.
TEST(PtrRing, OneConsumerManyProducersKeepPerProducerOrder) {
#if defined(TXPATH_TSAN) || defined(TXPATH_ASAN)
  constexpr uint64_t kPerProducer = 5000;
#else
  constexpr uint64_t kPerProducer = 100000;
#endif
  for (const int producers : {1, 2, 4, 8}) {
    struct Item {
      uint32_t producer;
      uint64_t seq;
    };
    PtrRing<Item> r(64);
    std::vector<std::vector<Item>> items(static_cast<std::size_t>(producers),
                                         std::vector<Item>(kPerProducer));
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < producers; ++t) {
      threads.emplace_back([&, t] {
        // acquire: pairs with the release store below.
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        uint64_t seq = 0;
        for (Item& it : items[static_cast<std::size_t>(t)]) {
          // Plain writes, published by produce()'s release store (TSan checks the pairing).
          it = Item{static_cast<uint32_t>(t), seq++};
          while (!r.produce(&it)) std::this_thread::yield();  // full: wait for the consumer
        }
      });
    }
    go.store(true, std::memory_order_release);
    std::vector<uint64_t> next(static_cast<std::size_t>(producers), 0);
    uint64_t got = 0, errors = 0;
    const uint64_t total = kPerProducer * static_cast<uint64_t>(producers);
    while (got < total) {
      Item* it = r.consume();
      if (!it) {
        std::this_thread::yield();
        continue;
      }
      if (it->seq != next[it->producer]) ++errors;  // reads the producer's plain writes
      next[it->producer] = it->seq + 1;
      ++got;
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(errors, 0u) << producers << " producers";
    EXPECT_EQ(r.consume(), nullptr);
    for (int t = 0; t < producers; ++t) EXPECT_EQ(next[static_cast<std::size_t>(t)], kPerProducer);
  }
}

}  // namespace
}  // namespace txpath
