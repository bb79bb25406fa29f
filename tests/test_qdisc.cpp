// SPDX-License-Identifier: MIT
// Unit tests for the basic qdiscs: pfifo_fast, pfifo, bfifo, pfifo_head_drop, and make_qdisc().
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "qdisc/fifo.hpp"
#include "qdisc/pfifo_fast.hpp"
#include "tc/tc_units.hpp"
#include "txpath/error.hpp"
#include "txpath/packet.hpp"
#include "support/packet_arena.hpp"
#include "txpath/qdisc.hpp"
#include "txpath/tc.hpp"

namespace txpath {
namespace {

// A fixed set of test packets backed by local buffers (no Pool). Packets are identified by their
// index in `pkts`.
class Packets : public test::PacketArena {
 public:
  using PacketArena::PacketArena;
  Packet* with(std::size_t i, uint32_t len, uint32_t priority = 0) {
    Packet* p = (*this)[i];
    p->len = len;
    p->priority = priority;
    return p;
  }
};

std::vector<std::size_t> ids(const Packets& pk, const PacketList& l) {
  std::vector<std::size_t> out;
  l.for_each([&](const Packet* p) { out.push_back(pk.id(p)); });
  return out;
}

std::vector<std::size_t> drain(Packets& pk, Qdisc& q) {
  std::vector<std::size_t> out;
  while (Packet* p = q.dequeue()) out.push_back(pk.id(p));
  return out;
}

// The accounting invariant of qdisc.hpp, checked against the qdisc's own view.
void expect_consistent(const Qdisc& q, uint64_t qlen, uint64_t backlog) {
  EXPECT_EQ(q.qlen(), qlen);
  EXPECT_EQ(q.backlog(), backlog);
  const QdiscStats s = q.stats();
  EXPECT_EQ(s.qlen, qlen);
  EXPECT_EQ(s.backlog, backlog);
  EXPECT_EQ(s.requeues, 0u);
}

const uint8_t kExpectedBand[16] = {1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};

// ---------------------------------------------------------------------------------------------
// pfifo_fast

TEST(PfifoFast, PriomapAll16Priorities) {
  for (uint32_t prio = 0; prio < 16; ++prio) {
    EXPECT_EQ(PfifoFastQdisc::band_of(prio), kExpectedBand[prio]) << "priority " << prio;
  }
  // Through enqueue: each packet lands in its band.
  Packets pk(16);
  PfifoFastQdisc q(100);
  PacketList to_free;
  for (uint32_t prio = 0; prio < 16; ++prio) {
    std::size_t before[3] = {q.band_qlen(0), q.band_qlen(1), q.band_qlen(2)};
    ASSERT_EQ(q.enqueue(pk.with(prio, 100, prio), to_free), Verdict::success);
    for (unsigned b = 0; b < 3; ++b)
      EXPECT_EQ(q.band_qlen(b), before[b] + (b == kExpectedBand[prio] ? 1 : 0)) << "prio " << prio;
  }
  EXPECT_EQ(q.band_qlen(0), 2u);   // 6, 7
  EXPECT_EQ(q.band_qlen(1), 10u);  // 0, 4, 8..15
  EXPECT_EQ(q.band_qlen(2), 4u);   // 1, 2, 3, 5
  EXPECT_TRUE(to_free.empty());
  // Dequeue: band 0 (6, 7), band 1 (0, 4, 8..15), band 2 (1, 2, 3, 5), FIFO inside each band.
  EXPECT_EQ(drain(pk, q), (std::vector<std::size_t>{6, 7, 0, 4, 8, 9, 10, 11, 12, 13, 14, 15, 1,
                                                    2, 3, 5}));
}

TEST(PfifoFast, PriorityUsesLowFourBitsOnly) {
  for (uint32_t prio = 0; prio < 16; ++prio) {
    EXPECT_EQ(PfifoFastQdisc::band_of(prio + 16), kExpectedBand[prio]);
    EXPECT_EQ(PfifoFastQdisc::band_of(prio + 0x100), kExpectedBand[prio]);
    EXPECT_EQ(PfifoFastQdisc::band_of(0xFFFFFFF0u | prio), kExpectedBand[prio]);
  }
  Packets pk(3);
  PfifoFastQdisc q(10);
  PacketList to_free;
  q.enqueue(pk.with(0, 100, 16 + 1), to_free);   // -> band 2
  q.enqueue(pk.with(1, 100, 32 + 0), to_free);   // -> band 1
  q.enqueue(pk.with(2, 100, 0x10007), to_free);  // -> band 0
  EXPECT_EQ(q.band_qlen(0), 1u);
  EXPECT_EQ(q.band_qlen(1), 1u);
  EXPECT_EQ(q.band_qlen(2), 1u);
  EXPECT_EQ(drain(pk, q), (std::vector<std::size_t>{2, 1, 0}));
}

TEST(PfifoFast, StrictBandOrderAndFifoWithinBand) {
  Packets pk(9);
  PfifoFastQdisc q(100);
  PacketList to_free;
  // Interleave arrivals: band 2 (prio 1), band 1 (prio 0), band 0 (prio 6).
  const uint32_t prios[9] = {1, 0, 6, 1, 0, 6, 1, 0, 6};
  for (std::size_t i = 0; i < 9; ++i) q.enqueue(pk.with(i, 100, prios[i]), to_free);
  EXPECT_EQ(drain(pk, q), (std::vector<std::size_t>{2, 5, 8, 1, 4, 7, 0, 3, 6}));
  EXPECT_EQ(q.dequeue(), nullptr);
  EXPECT_EQ(q.peek(), nullptr);
}

TEST(PfifoFast, HigherBandArrivalOvertakesBacklog) {
  Packets pk(4);
  PfifoFastQdisc q(100);
  PacketList to_free;
  q.enqueue(pk.with(0, 100, 1), to_free);  // band 2
  q.enqueue(pk.with(1, 100, 0), to_free);  // band 1
  EXPECT_EQ(pk.id(q.dequeue()), 1u);
  q.enqueue(pk.with(2, 100, 7), to_free);  // band 0
  q.enqueue(pk.with(3, 100, 0), to_free);  // band 1
  EXPECT_EQ(drain(pk, q), (std::vector<std::size_t>{2, 3, 0}));
}

TEST(PfifoFast, PerBandLimitDropsOnlyInFullBand) {
  constexpr uint32_t kLimit = 4;
  Packets pk(20, 64);
  PfifoFastQdisc q(kLimit);
  PacketList to_free;
  // Fill band 1 (priority 0) to its limit.
  for (std::size_t i = 0; i < kLimit; ++i)
    EXPECT_EQ(q.enqueue(pk.with(i, 64, 0), to_free), Verdict::success);
  // The next band-1 packets are tail-dropped.
  EXPECT_EQ(q.enqueue(pk.with(4, 64, 0), to_free), Verdict::drop);
  EXPECT_EQ(q.enqueue(pk.with(5, 64, 8), to_free), Verdict::drop);  // prio 8 is also band 1
  EXPECT_EQ(ids(pk, to_free), (std::vector<std::size_t>{4, 5}));
  EXPECT_EQ(q.stats().drops, 2u);
  // Bands 0 and 2 still accept, each up to the limit.
  for (std::size_t i = 0; i < kLimit; ++i) {
    EXPECT_EQ(q.enqueue(pk.with(6 + i, 64, 6), to_free), Verdict::success);   // band 0
    EXPECT_EQ(q.enqueue(pk.with(10 + i, 64, 2), to_free), Verdict::success);  // band 2
  }
  EXPECT_EQ(q.enqueue(pk.with(14, 64, 7), to_free), Verdict::drop);  // band 0 now full
  EXPECT_EQ(q.enqueue(pk.with(15, 64, 3), to_free), Verdict::drop);  // band 2 now full
  EXPECT_EQ(q.stats().drops, 4u);
  EXPECT_EQ(to_free.size(), 4u);
  // Total capacity is 3 * limit.
  expect_consistent(q, 3 * kLimit, 3 * kLimit * 64);
  // Freeing one slot in band 0 lets one more band-0 packet in; band 1 stays full.
  EXPECT_EQ(pk.id(q.dequeue()), 6u);
  EXPECT_EQ(q.enqueue(pk.with(16, 64, 0), to_free), Verdict::drop);
  EXPECT_EQ(q.enqueue(pk.with(17, 64, 6), to_free), Verdict::success);
  EXPECT_EQ(q.stats().drops, 5u);
}

TEST(PfifoFast, ZeroBandLimitDropsEverything) {
  Packets pk(3);
  PfifoFastQdisc q(0);
  PacketList to_free;
  const uint32_t prios[3] = {0, 1, 6};  // one per band
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(q.enqueue(pk.with(i, 10, prios[i]), to_free), Verdict::drop);
  EXPECT_EQ(ids(pk, to_free), (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(q.stats().drops, 3u);
  expect_consistent(q, 0, 0);
}

TEST(PfifoFast, PeekReturnsNextDequeueWithoutRemoving) {
  Packets pk(3);
  PfifoFastQdisc q(10);
  PacketList to_free;
  EXPECT_EQ(q.peek(), nullptr);
  q.enqueue(pk.with(0, 10, 1), to_free);  // band 2
  EXPECT_EQ(q.peek(), pk[0]);
  q.enqueue(pk.with(1, 20, 0), to_free);  // band 1
  EXPECT_EQ(q.peek(), pk[1]);
  EXPECT_EQ(q.peek(), pk[1]);
  expect_consistent(q, 2, 30);
  q.enqueue(pk.with(2, 40, 6), to_free);  // band 0
  while (q.qlen() > 0) {
    Packet* next = q.peek();
    EXPECT_EQ(q.dequeue(), next);
  }
  EXPECT_EQ(q.peek(), nullptr);
}

TEST(PfifoFast, AccountingAfterMixedOperations) {
  Packets pk(10);
  PfifoFastQdisc q(2);
  PacketList to_free;
  q.enqueue(pk.with(0, 100, 0), to_free);   // band 1
  q.enqueue(pk.with(1, 200, 0), to_free);   // band 1
  q.enqueue(pk.with(2, 300, 0), to_free);   // band 1 full -> drop
  q.enqueue(pk.with(3, 400, 6), to_free);   // band 0
  q.enqueue(pk.with(4, 500, 2), to_free);   // band 2
  expect_consistent(q, 4, 1200);
  EXPECT_EQ(pk.id(q.dequeue()), 3u);        // 400
  EXPECT_EQ(pk.id(q.dequeue()), 0u);        // 100
  expect_consistent(q, 2, 700);
  QdiscStats s = q.stats();
  EXPECT_EQ(s.packets, 2u);
  EXPECT_EQ(s.bytes, 500u);
  EXPECT_EQ(s.drops, 1u);
  EXPECT_EQ(s.overlimits, 0u);
  q.count_bypass(*pk.with(5, 60, 0));
  s = q.stats();
  EXPECT_EQ(s.packets, 3u);
  EXPECT_EQ(s.bytes, 560u);
  expect_consistent(q, 2, 700);  // bypass does not touch the queue
}

TEST(PfifoFast, ResetMovesEverythingToFreeWithoutDrops) {
  Packets pk(6);
  PfifoFastQdisc q(10);
  PacketList to_free;
  const uint32_t prios[6] = {1, 0, 6, 2, 4, 7};
  for (std::size_t i = 0; i < 6; ++i) q.enqueue(pk.with(i, 10 * (i + 1), prios[i]), to_free);
  EXPECT_EQ(pk.id(q.dequeue()), 2u);
  const QdiscStats before = q.stats();
  PacketList freed;
  q.reset(freed);
  EXPECT_EQ(freed.size(), 5u);
  EXPECT_EQ(freed.bytes(), 10u + 20 + 40 + 50 + 60);
  // Band order: band 0 (5), band 1 (1, 4), band 2 (0, 3).
  EXPECT_EQ(ids(pk, freed), (std::vector<std::size_t>{5, 1, 4, 0, 3}));
  expect_consistent(q, 0, 0);
  const QdiscStats after = q.stats();
  EXPECT_EQ(after.drops, before.drops);
  EXPECT_EQ(after.packets, before.packets);
  EXPECT_EQ(after.bytes, before.bytes);
  EXPECT_EQ(q.dequeue(), nullptr);
  EXPECT_EQ(q.peek(), nullptr);
  // Usable again after reset.
  EXPECT_EQ(q.enqueue(freed.pop_front(), to_free), Verdict::success);
  expect_consistent(q, 1, 60);
}

TEST(PfifoFast, KindOptionsBypass) {
  PfifoFastQdisc q(1000);
  EXPECT_EQ(q.kind(), "pfifo_fast");
  EXPECT_EQ(txpath::tc::options_text(q), "bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1");
  EXPECT_TRUE(q.can_bypass());
  EXPECT_EQ(q.band_limit(), 1000u);
}

// ---------------------------------------------------------------------------------------------
// pfifo

TEST(Pfifo, AcceptsExactlyLimitThenTailDrops) {
  for (uint32_t limit : {1u, 2u, 5u, 17u}) {
    Packets pk(limit + 4, 100);
    PfifoQdisc q(limit);
    PacketList to_free;
    for (uint32_t i = 0; i < limit; ++i) EXPECT_EQ(q.enqueue(pk[i], to_free), Verdict::success);
    EXPECT_TRUE(to_free.empty());
    expect_consistent(q, limit, uint64_t{limit} * 100);
    EXPECT_EQ(q.enqueue(pk[limit], to_free), Verdict::drop);
    ASSERT_EQ(to_free.size(), 1u);
    EXPECT_EQ(to_free.front(), pk[limit]);
    EXPECT_EQ(q.stats().drops, 1u);
    EXPECT_EQ(q.enqueue(pk[limit + 1], to_free), Verdict::drop);
    EXPECT_EQ(q.stats().drops, 2u);
    expect_consistent(q, limit, uint64_t{limit} * 100);
    // One dequeue frees exactly one slot.
    EXPECT_EQ(q.dequeue(), pk[0]);
    EXPECT_EQ(q.enqueue(pk[limit + 2], to_free), Verdict::success);
    EXPECT_EQ(q.enqueue(pk[limit + 3], to_free), Verdict::drop);  // full again
    EXPECT_EQ(q.stats().drops, 3u);
    EXPECT_EQ(drain(pk, q).size(), limit);
  }
}

TEST(Pfifo, BackToBackEnqueuesDropMaxZeroNMinusLimit) {
  for (uint32_t limit : {0u, 1u, 10u}) {
    for (uint32_t n : {0u, 1u, 9u, 10u, 11u, 25u}) {
      Packets pk(n);
      PfifoQdisc q(limit);
      PacketList to_free;
      for (uint32_t i = 0; i < n; ++i) q.enqueue(pk[i], to_free);
      const uint32_t expected_drops = n > limit ? n - limit : 0;
      EXPECT_EQ(q.stats().drops, expected_drops) << "limit " << limit << " n " << n;
      EXPECT_EQ(to_free.size(), expected_drops);
      EXPECT_EQ(q.qlen(), n - expected_drops);
    }
  }
}

TEST(Pfifo, LimitZeroDropsEverything) {
  Packets pk(3);
  PfifoQdisc q(0);
  PacketList to_free;
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(q.enqueue(pk[i], to_free), Verdict::drop);
  EXPECT_EQ(ids(pk, to_free), (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(q.stats().drops, 3u);
  expect_consistent(q, 0, 0);
  EXPECT_EQ(q.dequeue(), nullptr);
  EXPECT_FALSE(q.can_bypass());
}

TEST(Pfifo, FifoOrderPeekAndAccounting) {
  Packets pk(4);
  PfifoQdisc q(10);
  PacketList to_free;
  q.enqueue(pk.with(0, 60), to_free);
  q.enqueue(pk.with(1, 1514), to_free);
  q.enqueue(pk.with(2, 0), to_free);
  q.enqueue(pk.with(3, 99), to_free);
  expect_consistent(q, 4, 60 + 1514 + 0 + 99);
  EXPECT_EQ(q.peek(), pk[0]);
  EXPECT_EQ(q.dequeue(), pk[0]);
  EXPECT_EQ(q.peek(), pk[1]);
  EXPECT_EQ(q.dequeue(), pk[1]);
  expect_consistent(q, 2, 99);
  const QdiscStats s = q.stats();
  EXPECT_EQ(s.packets, 2u);
  EXPECT_EQ(s.bytes, 60u + 1514);
  EXPECT_EQ(s.drops, 0u);
  EXPECT_EQ(drain(pk, q), (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(q.stats().packets, 4u);
  EXPECT_EQ(q.stats().bytes, 60u + 1514 + 99);
  expect_consistent(q, 0, 0);
}

TEST(Pfifo, ResetDoesNotCountDrops) {
  Packets pk(4);
  PfifoQdisc q(3);
  PacketList to_free;
  for (std::size_t i = 0; i < 4; ++i) q.enqueue(pk.with(i, 10 + i), to_free);
  EXPECT_EQ(q.stats().drops, 1u);
  PacketList freed;
  q.reset(freed);
  EXPECT_EQ(ids(pk, freed), (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(q.stats().drops, 1u);
  EXPECT_EQ(q.stats().packets, 0u);
  expect_consistent(q, 0, 0);
  EXPECT_EQ(q.peek(), nullptr);
  // Fully usable afterwards.
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(q.enqueue(freed.pop_front(), to_free), Verdict::success);
  expect_consistent(q, 3, 10 + 11 + 12);
}

TEST(Pfifo, KindOptionsBypass) {
  EXPECT_EQ(txpath::tc::options_text(PfifoQdisc(100)), "limit 100p");
  EXPECT_EQ(txpath::tc::options_text(PfifoQdisc(0)), "limit 0p");
  EXPECT_EQ(txpath::tc::options_text(PfifoQdisc(4294967295u)), "limit 4294967295p");
  EXPECT_EQ(PfifoQdisc(1).kind(), "pfifo");
  EXPECT_FALSE(PfifoQdisc(0).can_bypass());
  EXPECT_TRUE(PfifoQdisc(1).can_bypass());
  EXPECT_EQ(PfifoQdisc(7).limit(), 7u);
}

// ---------------------------------------------------------------------------------------------
// bfifo

TEST(Bfifo, ByteAccurateCutoff) {
  Packets pk(8);
  BfifoQdisc q(1000, 1514);
  PacketList to_free;
  EXPECT_EQ(q.enqueue(pk.with(0, 400), to_free), Verdict::success);  // 400
  EXPECT_EQ(q.enqueue(pk.with(1, 500), to_free), Verdict::success);  // 900
  EXPECT_EQ(q.enqueue(pk.with(2, 101), to_free), Verdict::drop);     // 1001 > 1000
  EXPECT_EQ(q.enqueue(pk.with(3, 100), to_free), Verdict::success);  // 1000 == limit: accepted
  EXPECT_EQ(q.enqueue(pk.with(4, 1), to_free), Verdict::drop);       // one byte over
  EXPECT_EQ(q.enqueue(pk.with(5, 0), to_free), Verdict::success);    // 0-byte frame still fits
  EXPECT_EQ(ids(pk, to_free), (std::vector<std::size_t>{2, 4}));
  EXPECT_EQ(q.stats().drops, 2u);
  expect_consistent(q, 4, 1000);
  // Dequeue 400 bytes: now exactly 400 more fit, 401 do not.
  EXPECT_EQ(q.dequeue(), pk[0]);
  EXPECT_EQ(q.enqueue(pk.with(6, 401), to_free), Verdict::drop);
  EXPECT_EQ(q.enqueue(pk.with(7, 400), to_free), Verdict::success);
  expect_consistent(q, 4, 1000);
  EXPECT_EQ(q.stats().drops, 3u);
  EXPECT_EQ(drain(pk, q), (std::vector<std::size_t>{1, 3, 5, 7}));
  EXPECT_EQ(q.stats().bytes, 400u + 500 + 100 + 0 + 400);
  EXPECT_EQ(q.stats().packets, 5u);
}

TEST(Bfifo, PacketLargerThanLimitDroppedEvenWhenEmpty) {
  Packets pk(2);
  BfifoQdisc q(1000, 1514);
  PacketList to_free;
  EXPECT_EQ(q.enqueue(pk.with(0, 1001), to_free), Verdict::drop);
  EXPECT_EQ(q.enqueue(pk.with(1, 1000), to_free), Verdict::success);
  expect_consistent(q, 1, 1000);
}

TEST(Bfifo, LimitZeroAcceptsOnlyEmptyFrames) {
  Packets pk(2);
  BfifoQdisc q(0, 1514);
  PacketList to_free;
  EXPECT_EQ(q.enqueue(pk.with(0, 1), to_free), Verdict::drop);
  EXPECT_EQ(q.enqueue(pk.with(1, 0), to_free), Verdict::success);  // 0 + 0 <= 0
  EXPECT_FALSE(q.can_bypass());
}

TEST(Bfifo, LargeLimitNoOverflow) {
  Packets pk(3);
  BfifoQdisc q(4294967295u, 1514);
  PacketList to_free;
  EXPECT_EQ(q.enqueue(pk.with(0, 4294967295u), to_free), Verdict::success);
  EXPECT_EQ(q.enqueue(pk.with(1, 1), to_free), Verdict::drop);  // would exceed 2^32-1
  EXPECT_EQ(q.enqueue(pk.with(2, 0), to_free), Verdict::success);
  expect_consistent(q, 2, 4294967295u);
}

TEST(Bfifo, BypassNeedsRoomForOneFullFrame) {
  EXPECT_FALSE(BfifoQdisc(1513, 1514).can_bypass());
  EXPECT_TRUE(BfifoQdisc(1514, 1514).can_bypass());
  EXPECT_TRUE(BfifoQdisc(1000000, 1514).can_bypass());
  EXPECT_FALSE(BfifoQdisc(9013, 9014).can_bypass());
  EXPECT_TRUE(BfifoQdisc(9014, 9014).can_bypass());
}

TEST(Bfifo, KindAndOptions) {
  EXPECT_EQ(txpath::tc::options_text(BfifoQdisc(151400, 1514)), "limit 151400b");
  EXPECT_EQ(txpath::tc::options_text(BfifoQdisc(1514000, 1514)), "limit 1514000b");
  EXPECT_EQ(txpath::tc::options_text(BfifoQdisc(30720, 1514)), "limit 30Kb");
  EXPECT_EQ(txpath::tc::options_text(BfifoQdisc(2 * 1048576, 1514)), "limit 2Mb");
  EXPECT_EQ(BfifoQdisc(1, 1514).kind(), "bfifo");
}

TEST(TcSize, PrinterRule) {
  EXPECT_EQ(tc::format_size(0), "0b");
  EXPECT_EQ(tc::format_size(1), "1b");
  EXPECT_EQ(tc::format_size(1023), "1023b");
  EXPECT_EQ(tc::format_size(1024), "1Kb");
  EXPECT_EQ(tc::format_size(1025), "1Kb");  // within 16 B of 1 KiB, as tc rounds
  EXPECT_EQ(tc::format_size(1536), "1536b");
  EXPECT_EQ(tc::format_size(2048), "2Kb");
  EXPECT_EQ(tc::format_size(1048575), "1024Kb");
  EXPECT_EQ(tc::format_size(1040), "1040b");
  EXPECT_EQ(tc::format_size(1039), "1Kb");
  EXPECT_EQ(tc::format_size(65535), "64Kb");
  EXPECT_EQ(tc::format_size(1048000), "1048000b");
  EXPECT_EQ(tc::format_size(1047553), "1023Kb");
  EXPECT_EQ(tc::format_size(1049599), "1Mb");
  EXPECT_EQ(tc::format_size(1048576), "1Mb");
  EXPECT_EQ(tc::format_size(1048576 + 1024), "1025Kb");
  EXPECT_EQ(tc::format_size(3 * 1048576), "3Mb");
  EXPECT_EQ(tc::format_size(1024ull * 1048576), "1024Mb");
  EXPECT_EQ(tc::format_size(4294966272ull), "4194303Kb");
  EXPECT_EQ(tc::format_size(4294967295ull), "4096Mb");
}

// ---------------------------------------------------------------------------------------------
// pfifo_head_drop

TEST(PfifoHeadDrop, DropsOldestAndQueuesNew) {
  Packets pk(6);
  PfifoHeadDropQdisc q(3);
  PacketList to_free;
  EXPECT_EQ(q.enqueue(pk.with(0, 10), to_free), Verdict::success);
  EXPECT_EQ(q.enqueue(pk.with(1, 20), to_free), Verdict::success);
  EXPECT_EQ(q.enqueue(pk.with(2, 30), to_free), Verdict::success);
  expect_consistent(q, 3, 60);
  EXPECT_EQ(q.enqueue(pk.with(3, 40), to_free), Verdict::congestion);
  EXPECT_EQ(ids(pk, to_free), (std::vector<std::size_t>{0}));
  EXPECT_EQ(q.stats().drops, 1u);
  expect_consistent(q, 3, 20 + 30 + 40);
  EXPECT_EQ(q.enqueue(pk.with(4, 50), to_free), Verdict::congestion);
  EXPECT_EQ(ids(pk, to_free), (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(q.stats().drops, 2u);
  expect_consistent(q, 3, 30 + 40 + 50);
  EXPECT_EQ(q.peek(), pk[2]);
  EXPECT_EQ(drain(pk, q), (std::vector<std::size_t>{2, 3, 4}));
  EXPECT_EQ(q.stats().packets, 3u);
  EXPECT_EQ(q.stats().bytes, 120u);
  EXPECT_EQ(q.stats().drops, 2u);
  expect_consistent(q, 0, 0);
  // Empty again: plain success.
  EXPECT_EQ(q.enqueue(pk.with(5, 1), to_free), Verdict::success);
}

TEST(PfifoHeadDrop, LimitOneKeepsNewest) {
  Packets pk(4);
  PfifoHeadDropQdisc q(1);
  PacketList to_free;
  EXPECT_EQ(q.enqueue(pk[0], to_free), Verdict::success);
  EXPECT_EQ(q.enqueue(pk[1], to_free), Verdict::congestion);
  EXPECT_EQ(q.enqueue(pk[2], to_free), Verdict::congestion);
  EXPECT_EQ(ids(pk, to_free), (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(drain(pk, q), (std::vector<std::size_t>{2}));
  EXPECT_TRUE(q.can_bypass());
}

TEST(PfifoHeadDrop, LimitZeroDropsNewPacket) {
  Packets pk(2);
  PfifoHeadDropQdisc q(0);
  PacketList to_free;
  EXPECT_EQ(q.enqueue(pk[0], to_free), Verdict::drop);
  EXPECT_EQ(q.enqueue(pk[1], to_free), Verdict::drop);
  EXPECT_EQ(ids(pk, to_free), (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(q.stats().drops, 2u);
  expect_consistent(q, 0, 0);
  EXPECT_FALSE(q.can_bypass());
}

TEST(PfifoHeadDrop, ResetAndOptions) {
  Packets pk(3);
  PfifoHeadDropQdisc q(2);
  PacketList to_free;
  for (std::size_t i = 0; i < 3; ++i) q.enqueue(pk.with(i, 5), to_free);
  PacketList freed;
  q.reset(freed);
  EXPECT_EQ(ids(pk, freed), (std::vector<std::size_t>{1, 2}));
  EXPECT_EQ(q.stats().drops, 1u);
  expect_consistent(q, 0, 0);
  EXPECT_EQ(q.kind(), "pfifo_head_drop");
  EXPECT_EQ(txpath::tc::options_text(q), "limit 2p");
}

// ---------------------------------------------------------------------------------------------
// make_qdisc

TEST(Registry, BuildsEachKindWithDefaults) {
  QdiscEnv env;
  env.txqueuelen = 100;
  env.mtu = 1500;
  auto fast = make_qdisc("pfifo_fast", env);
  EXPECT_EQ(fast->kind(), "pfifo_fast");
  EXPECT_EQ(txpath::tc::options_text(*fast), "bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1");
  EXPECT_TRUE(fast->can_bypass());
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("pfifo", env)), "limit 100p");
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("pfifo_head_drop", env)), "limit 100p");
  auto b = make_qdisc("bfifo", env);
  EXPECT_EQ(b->kind(), "bfifo");
  EXPECT_EQ(txpath::tc::options_text(*b), "limit 151400b");  // 100 * (1500 + 14)
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("bfifo")), "limit 1514000b");  // default env: 1000 * 1514
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("pfifo")), "limit 1000p");
}

TEST(Registry, PfifoFastBandLimitIsTxqueuelen) {
  QdiscEnv env;
  env.txqueuelen = 2;
  auto q = make_qdisc("pfifo_fast", env);
  Packets pk(4);
  PacketList to_free;
  EXPECT_EQ(q->enqueue(pk.with(0, 10, 0), to_free), Verdict::success);
  EXPECT_EQ(q->enqueue(pk.with(1, 10, 0), to_free), Verdict::success);
  EXPECT_EQ(q->enqueue(pk.with(2, 10, 0), to_free), Verdict::drop);
  EXPECT_EQ(q->enqueue(pk.with(3, 10, 6), to_free), Verdict::success);
}

TEST(Registry, BfifoDefaultClampsToU32) {
  QdiscEnv env;
  env.txqueuelen = 4000000;
  env.mtu = 9000;
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("bfifo", env)), "limit 4096Mb");  // tc's rounding
}

TEST(Registry, ExplicitLimitsAndWhitespace) {
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("pfifo limit 5")), "limit 5p");
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("  pfifo \t limit\n 7  ")), "limit 7p");
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("pfifo limit 0")), "limit 0p");
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("pfifo limit 007")), "limit 7p");
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("pfifo limit 4294967295")), "limit 4294967295p");
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("pfifo_head_drop limit 5")), "limit 5p");
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("bfifo limit 30000")), "limit 30000b");
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("bfifo limit 0")), "limit 0b");
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("bfifo limit 4294967295")), "limit 4096Mb");
  // The limit given is the limit used.
  auto q = make_qdisc("pfifo limit 2");
  Packets pk(3);
  PacketList to_free;
  q->enqueue(pk[0], to_free);
  q->enqueue(pk[1], to_free);
  EXPECT_EQ(q->enqueue(pk[2], to_free), Verdict::drop);
}

TEST(Registry, BfifoSizeUnits) {
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("bfifo limit 100b")), "limit 100b");
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("bfifo limit 10k")), "limit 10Kb");
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("bfifo limit 10kb")), "limit 10Kb");
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("bfifo limit 10KB")), "limit 10Kb");
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("bfifo limit 2m")), "limit 2Mb");
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("bfifo limit 2Mb")), "limit 2Mb");
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("bfifo limit 1g")), "limit 1024Mb");
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("bfifo limit 3GB")), "limit 3072Mb");
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("bfifo limit 8kbit")), "limit 1Kb");     // 8 * 128
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("bfifo limit 1kbit")), "limit 128b");
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("bfifo limit 8mbit")), "limit 1Mb");     // 8 * 131072
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("bfifo limit 1gbit")), "limit 128Mb");
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("bfifo limit 0k")), "limit 0b");
  auto q = make_qdisc("bfifo limit 1k");
  Packets pk(2);
  PacketList to_free;
  EXPECT_EQ(q->enqueue(pk.with(0, 1024), to_free), Verdict::success);
  EXPECT_EQ(q->enqueue(pk.with(1, 1), to_free), Verdict::drop);
}

std::string config_error(const std::string& spec, const QdiscEnv& env = {}) {
  try {
    make_qdisc(spec, env);
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ConfigError for spec \"" << spec << "\"";
  return {};
}

// Expects a one-line ConfigError equal to `expected`.
void expect_error(const std::string& spec, const std::string& expected, const QdiscEnv& env = {}) {
  const std::string msg = config_error(spec, env);
  EXPECT_EQ(msg, expected) << "spec: " << spec;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\r'), std::string::npos) << msg;
}

TEST(Registry, EmptySpec) {
  const std::string m = "empty spec (known kinds: pfifo_fast, pfifo, bfifo, pfifo_head_drop, prio, tbf, fq_codel, codel, red, htb, fq, mq, mqprio)";
  expect_error("", "qdisc \"\": " + m);
  expect_error("   \t\n ", "qdisc \"\": " + m);
}

TEST(Registry, UnknownKind) {
  expect_error("foo", "qdisc \"foo\": unknown qdisc kind \"foo\" (known: pfifo_fast, pfifo, bfifo, "
                      "pfifo_head_drop, prio, tbf, fq_codel, codel, red, htb, fq, mq, mqprio)");
  expect_error("PFIFO limit 3", "qdisc \"PFIFO limit 3\": unknown qdisc kind \"PFIFO\" (known: "
                                "pfifo_fast, pfifo, bfifo, pfifo_head_drop, prio, tbf, fq_codel, codel, red, htb, fq, mq, mqprio)");
  expect_error("limit 5", "qdisc \"limit 5\": unknown qdisc kind \"limit\" (known: pfifo_fast, "
                          "pfifo, bfifo, pfifo_head_drop, prio, tbf, fq_codel, codel, red, htb, fq, mq, mqprio)");
}

TEST(Registry, LimitNeedsValue) {
  const std::string incomplete = ": Command line is not complete. Try option \"help\"";
  expect_error("pfifo limit", "qdisc \"pfifo limit\"" + incomplete);
  expect_error("bfifo limit  ", "qdisc \"bfifo limit\"" + incomplete);
  expect_error("pfifo_head_drop limit", "qdisc \"pfifo_head_drop limit\"" + incomplete);
}

// tc's number grammar (get_size: strtod, then a size unit; 0 <= value < 2^32, truncated), for
// pfifo's packets as for bfifo's bytes.
TEST(Registry, LimitTakesTcNumbers) {
  const std::pair<const char*, const char*> cases[] = {
      {"pfifo limit 10kb", "limit 10240p"}, {"pfifo limit 1.5", "limit 1p"},
      {"pfifo limit 1e3", "limit 1000p"},   {"pfifo limit 0x10", "limit 16p"},
      {"pfifo limit +5", "limit 5p"},       {"pfifo limit -0", "limit 0p"},
      {"pfifo limit 0.5", "limit 0p"},      {"pfifo limit 10KB", "limit 10240p"},
      {"pfifo limit 1 limit 2", "limit 2p"}, {"pfifo limit 4294967295", "limit 4294967295p"},
      {"bfifo limit 1.5k", "limit 1536b"},  {"pfifo_head_drop limit 7e0", "limit 7p"},
      {"bfifo limit 10kbit", "limit 1280b"}, {"pfifo limit 0x1p4", "limit 16p"},
  };
  for (const auto& [spec, shown] : cases) EXPECT_EQ(txpath::tc::options_text(*make_qdisc(spec)), shown) << spec;
}

TEST(Registry, InvalidLimit) {
  for (const char* bad : {"x", "-1", "-0.5", "5p", "1e", "0x", "inf", "nan", "10kib", "4gb",
                          "4294967296", "99999999999999999999999999"}) {
    const std::string spec = std::string("pfifo limit ") + bad;
    EXPECT_EQ(config_error(spec), "qdisc \"" + spec + "\": pfifo: Illegal value for \"limit\": \"" + bad + "\"");
  }
  expect_error("pfifo limit 1 0", "qdisc \"pfifo limit 1 0\": pfifo: unknown parameter \"0\"");
  expect_error("pfifo_head_drop limit abc",
               "qdisc \"pfifo_head_drop limit abc\": pfifo_head_drop: Illegal value for \"limit\": \"abc\"");
  for (const char* bad : {"x", "k", "10q", "10kbps", "-5", "4g", "4194304k", "32gbit"}) {
    const std::string spec = std::string("bfifo limit ") + bad;
    EXPECT_EQ(config_error(spec), "qdisc \"" + spec + "\": bfifo: Illegal value for \"limit\": \"" + bad + "\"");
  }
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("bfifo limit 4194303k")), "limit 4194303Kb");
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("bfifo limit 31gbit")), "limit 3968Mb");
}

TEST(Registry, UnknownOptionsAndHelp) {
  expect_error("pfifo foo 1", "qdisc \"pfifo foo 1\": pfifo: unknown parameter \"foo\"");
  expect_error("bfifo limit 10 burst 5", "qdisc \"bfifo limit 10 burst 5\": bfifo: unknown parameter \"burst\"");
  expect_error("pfifo LIMIT 5", "qdisc \"pfifo LIMIT 5\": pfifo: unknown parameter \"LIMIT\"");
  expect_error("pfifo help", "qdisc \"pfifo help\": Usage: ... <[p|b]fifo | pfifo_head_drop> [ limit NUMBER ]");
  expect_error("pfifo_fast limit 5", "qdisc \"pfifo_fast limit 5\": qdisc 'pfifo_fast' does not support option parsing");
}

TEST(Registry, PfifoFastNeedsNonZeroTxqueuelen) {
  QdiscEnv env;
  env.txqueuelen = 0;
  expect_error("pfifo_fast",
               "qdisc \"pfifo_fast\": pfifo_fast needs a device txqueuelen of at least 1 (got 0)", env);
  // The fifos take txqueuelen 0 as their default limit (and then drop everything).
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("pfifo", env)), "limit 0p");
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("bfifo", env)), "limit 0b");
}

TEST(Registry, MessagesStayOnOneLine) {
  // Newlines between tokens are collapsed; control characters inside a token are escaped.
  expect_error("pfifo\nlimit\nx", "qdisc \"pfifo limit x\": pfifo: Illegal value for \"limit\": \"x\"");
  expect_error(std::string("pfifo limit 1\x01"),
               "qdisc \"pfifo limit 1\\x01\": pfifo: Illegal value for \"limit\": \"1\\x01\"");
  expect_error(std::string("fo\x1bo"),
               "qdisc \"fo\\x1bo\": unknown qdisc kind \"fo\\x1bo\" (known: pfifo_fast, pfifo, "
               "bfifo, pfifo_head_drop, prio, tbf, fq_codel, codel, red, htb, fq, mq, mqprio)");
  expect_error("pfifo limit \"5\"",
               "qdisc \"pfifo limit \\\"5\\\"\": pfifo: Illegal value for \"limit\": \"\\\"5\\\"\"");
}

TEST(Registry, ErrorsAreConfigErrors) {
  EXPECT_THROW(make_qdisc("nope"), ConfigError);
  EXPECT_THROW(make_qdisc(""), ConfigError);
  EXPECT_NO_THROW(make_qdisc("pfifo_fast"));
}

}  // namespace
}  // namespace txpath
