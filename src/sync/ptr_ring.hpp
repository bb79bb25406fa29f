// SPDX-License-Identifier: MIT
// PtrRing<T>: a bounded ring of T* for many producers and ONE consumer at a time — the ring under
// Linux's lockless pfifo_fast (ptr_ring / skb_array, include/linux/ptr_ring.h, used by pfifo_fast
// since c5ad119fb6c0, John Fastabend's lockless qdisc series, v4.16). Written from the semantics
// of include/linux/ptr_ring.h as docs/background.md ("ptr_ring") describes them, not copied.
//
// Idea: a slot is FULL iff it holds a non-null pointer. Producers and the consumer never compare
// a shared head with a shared tail: a producer only looks at the slot under its own index, the
// consumer only at the slot under its own index. The two sides meet on the slots themselves.
//
// Layout: three cache lines so the two sides do not share one.
//   line 1 (producers)   producer lock word + producer index (+ contention counters);
//   line 2 (consumer)    consumer_head (next slot to read) + consumer_tail (next slot to zero);
//   line 3 (read-mostly) size, batch, the slot array pointer.
// The slot array is allocated once (64-byte aligned, in 8-slot lines) by the constructor.
//
// Operations:
//   produce(p)  under the producer lock: fail (ring full) if slot[producer] is non-null; else
//               publish p in it and advance producer (wrapping).
//   consume()   consumer only: read slot[consumer_head]; null -> empty. Otherwise advance
//               consumer_head but do NOT zero the slot yet: consumed slots are zeroed lazily, in
//               batches of `batch` (or when consumer_head reaches the end of the array), from
//               the newest back to the oldest — the producer, which waits for the OLDEST of
//               them (slot[producer]), is the last to see its line written. Fewer writes to
//               lines the producers are reading; the price is that up to batch-1 consumed slots
//               still look full, so a ring of size N holds between N-batch+1 and N entries.
//   batch       = 2 * 64 / sizeof(void*) (16 on 64-bit), forced to 1 if that exceeds size/2.
//   empty()     slot[consumer_head] == null: exact on the consumer, a hint anywhere else.
// Single consumer: consume() and peek() are NOT safe concurrently with each other; the user
// serialises them (the lockless qdisc: its seqlock, see qdisc/fifo_nolock.hpp). Any number of
// producers may run concurrently with the consumer.
//
// Invariants (with the consumer not running):
//   * slots [consumer_tail, consumer_head) are consumed but not yet zeroed (non-null, stale);
//   * slots from consumer_head going forward up to (not including) producer are the queued
//     entries, oldest first; every other slot is null;
//   * consumer_head never points at a consumed-but-not-zeroed slot (reaching the end of the
//     array zeroes everything before wrapping), so slot[consumer_head] == null iff empty.
//
// Memory ordering per operation:
//   producer lock:      exchange(1) acquire / store(0) release (a test-and-test-and-set lock
//                       with SpinWait: a critical section is a handful of instructions, and the
//                       waiter yields if the holder is preempted); orders producers' indices.
//   produce, check:     slot load relaxed: coherence on the slot is enough — if it reads the
//                       consumer's null, the consumer's earlier read of the old pointer cannot see
//                       the pointer we are about to store.
//   produce, publish:   slot store RELEASE; pairs with consume()'s acquire load, so the consumer
//                       sees the packet's contents written before produce().
//   consume, read:      slot load ACQUIRE (pairs with the publish above).
//   consume, zeroing:   slot stores relaxed (see "produce, check").
//   consumer_head:      store relaxed by the consumer, load relaxed elsewhere: only empty()
//                       hints read it without the consumer's serialisation; the next consumer
//                       gets it through that serialisation (the seqlock's acquire/release).
//   consumer_tail:      plain; touched only by the (serialised) consumer.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/clock.hpp"
#include "base/cpu_relax.hpp"
#include "txpath/counter.hpp"

namespace txpath {

template <class T>
class PtrRing {
 public:
  static constexpr std::size_t kCacheLine = 64;
  static constexpr uint32_t kSlotsPerLine = kCacheLine / sizeof(void*);
  // 2 * SMP_CACHE_BYTES / sizeof(void*): zero two cache lines of slots at a time.
  static constexpr uint32_t kDefaultBatch = 2 * kCacheLine / sizeof(void*);

  // size 0 is allowed: every produce() fails, consume() always returns nullptr.
  explicit PtrRing(uint32_t size)
      : ro_{size, batch_for(size),
            std::make_unique<SlotLine[]>((std::size_t{size} + kSlotsPerLine - 1) / kSlotsPerLine)} {}
  PtrRing(const PtrRing&) = delete;
  PtrRing& operator=(const PtrRing&) = delete;

  static constexpr uint32_t batch_for(uint32_t size) noexcept {
    return kDefaultBatch > size / 2 ? 1 : kDefaultBatch;
  }

  uint32_t size() const noexcept { return ro_.size; }
  uint32_t batch() const noexcept { return ro_.batch; }

  // Any thread. False when the slot at the producer index is still occupied (ring full, or not
  // yet zeroed by the consumer's lazy batch): the caller keeps p.
  bool produce(T* p) noexcept {
    lock_producer();
    const uint32_t i = prod_.index;
    // relaxed: see "produce, check" in the header comment.
    if (ro_.size == 0 || slot(i).load(std::memory_order_relaxed) != nullptr) {
      unlock_producer();
      return false;
    }
    // release: pairs with the acquire load in consume()/peek(); publishes *p.
    slot(i).store(p, std::memory_order_release);
    prod_.index = i + 1 == ro_.size ? 0 : i + 1;
    unlock_producer();
    return true;
  }

  // Any thread: produce() for items[0..n), in order, under ONE producer-lock round. Stops at
  // the first slot still occupied; returns how many were produced (the caller keeps the rest).
  uint32_t produce_burst(T* const* items, uint32_t n) noexcept {
    if (ro_.size == 0 || n == 0) return 0;
    lock_producer();
    uint32_t i = prod_.index;
    uint32_t done = 0;
    // relaxed: see "produce, check" in the header comment.
    for (; done < n && slot(i).load(std::memory_order_relaxed) == nullptr; ++done) {
      // release: pairs with the acquire load in consume()/peek(); publishes *items[done].
      slot(i).store(items[done], std::memory_order_release);
      i = i + 1 == ro_.size ? 0 : i + 1;
    }
    prod_.index = i;
    unlock_producer();
    return done;
  }

  // Consumer only. The oldest entry, or nullptr if the ring is empty.
  T* consume() noexcept {
    if (ro_.size == 0) return nullptr;
    // relaxed: written only by the consumer, and consumers are serialised by the caller.
    const uint32_t head = cons_.head.load(std::memory_order_relaxed);
    // acquire: pairs with the release store in produce().
    T* p = slot(head).load(std::memory_order_acquire);
    if (p) advance(head);
    return p;
  }

  // Consumer only. The oldest entry without removing it, or nullptr.
  T* peek() const noexcept {
    if (ro_.size == 0) return nullptr;
    // relaxed / acquire: as in consume().
    return slot(cons_.head.load(std::memory_order_relaxed)).load(std::memory_order_acquire);
  }

  // Exact on the consumer; from any other thread a hint that may be stale either way.
  bool empty() const noexcept {
    if (ro_.size == 0) return true;
    // relaxed, twice: a hint for non-consumers (see the header comment); the consumer's own
    // head is current, and a null slot there is all "empty" means.
    return slot(cons_.head.load(std::memory_order_relaxed)).load(std::memory_order_relaxed) ==
           nullptr;
  }

  // Producer-lock acquisitions that found the lock held, and the ns spent waiting in them.
  uint64_t producer_waits() const noexcept { return prod_.waits.get(); }
  uint64_t producer_wait_ns() const noexcept { return prod_.wait_ns.get(); }

 private:
  struct alignas(kCacheLine) SlotLine {
    std::atomic<T*> s[kSlotsPerLine]{};  // value-initialised: every slot starts empty (null)
  };

  std::atomic<T*>& slot(uint32_t i) const noexcept {
    return ro_.lines[i / kSlotsPerLine].s[i % kSlotsPerLine];
  }

  // The consumer has just read slot[head]: move past it, zeroing a batch of consumed slots when
  // one is complete or the array ends.
  void advance(uint32_t head) noexcept {
    uint32_t next = head + 1;
    if (next - cons_.tail >= ro_.batch || next >= ro_.size) {
      // Newest first: slot[tail], the one a blocked producer is waiting on, is written last.
      for (uint32_t i = next; i-- > cons_.tail;)
        slot(i).store(nullptr, std::memory_order_relaxed);  // relaxed: see "consume, zeroing"
      cons_.tail = next;
      if (next >= ro_.size) next = cons_.tail = 0;
    }
    // relaxed: see "consumer_head" in the header comment.
    cons_.head.store(next, std::memory_order_relaxed);
  }

  void lock_producer() noexcept {
    // acquire: pairs with the release store in unlock_producer() of the previous holder.
    if (prod_.lock.exchange(1, std::memory_order_acquire) == 0) return;
    const uint64_t t0 = now_ns();
    SpinWait wait;
    for (;;) {
      wait.once();
      // relaxed: only decides whether the exchange is worth trying; the exchange acquires.
      if (prod_.lock.load(std::memory_order_relaxed) == 0 &&
          prod_.lock.exchange(1, std::memory_order_acquire) == 0)  // acquire: as above
        break;
    }
    prod_.waits.add(1);  // under the lock, which serialises the counters' writers
    prod_.wait_ns.add(now_ns() - t0);
  }
  void unlock_producer() noexcept {
    // release: pairs with the acquire exchange in lock_producer() of the next holder.
    prod_.lock.store(0, std::memory_order_release);
  }

  struct alignas(kCacheLine) ProducerLine {
    std::atomic<uint32_t> lock{0};  // producer_lock
    uint32_t index = 0;             // producer: next slot to fill; under `lock`
    SingleWriterCounter waits, wait_ns;
  };
  struct alignas(kCacheLine) ConsumerLine {
    std::atomic<uint32_t> head{0};  // consumer_head: next slot to read
    uint32_t tail = 0;              // consumer_tail: oldest consumed slot not yet zeroed
  };
  struct alignas(kCacheLine) ReadMostly {
    uint32_t size;
    uint32_t batch;
    std::unique_ptr<SlotLine[]> lines;
  };

  ProducerLine prod_;
  ConsumerLine cons_;
  ReadMostly ro_;

  static_assert(sizeof(ProducerLine) == kCacheLine && sizeof(ConsumerLine) == kCacheLine &&
                sizeof(ReadMostly) == kCacheLine && sizeof(SlotLine) == kCacheLine);

 public:
  // For the layout test: the three parts, each on its own cache line.
  const void* producer_line() const noexcept { return &prod_; }
  const void* consumer_line() const noexcept { return &cons_; }
  const void* read_mostly_line() const noexcept { return &ro_; }
};

}  // namespace txpath
