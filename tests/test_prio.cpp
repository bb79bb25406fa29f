// SPDX-License-Identifier: MIT
// Tests of the classful prio qdisc (src/qdisc/prio.*): spec parsing and errors, tc output,
// classification (priomap, low 4 bits, foreign classids, the handle-major path), strict
// priority, per-band FIFO order, child drops, graft/reset accounting, the watchdog, and a
// multi-sender run through TxQueue with a faulty device.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "device/fault_device.hpp"
#include "qdisc/fifo.hpp"
#include "qdisc/prio.hpp"
#include "txpath/error.hpp"
#include "txpath/frame.hpp"
#include "txpath/packet.hpp"
#include "txpath/pool.hpp"
#include "support/senders.hpp"
#include "support/test_child_qdisc.hpp"
#include "support/packet_arena.hpp"
#include "txpath/qdisc.hpp"
#include "txpath/txqueue.hpp"
#include "txpath/tc.hpp"

using namespace std::chrono_literals;

namespace txpath {
namespace {

// Test packets backed by local buffers (no Pool), identified by index.
class Packets : public test::PacketArena {
 public:
  using PacketArena::PacketArena;
  Packet* with(std::size_t i, uint32_t len, uint32_t priority) {
    Packet* p = (*this)[i];
    p->len = len;
    p->priority = priority;
    return p;
  }
};

std::vector<std::size_t> drain(Packets& pk, Qdisc& q) {
  std::vector<std::size_t> out;
  while (Packet* p = q.dequeue()) out.push_back(pk.id(p));
  return out;
}

std::vector<std::size_t> ids(const Packets& pk, const PacketList& l) {
  std::vector<std::size_t> out;
  l.for_each([&](const Packet* p) { out.push_back(pk.id(p)); });
  return out;
}

PrioQdisc& as_prio(Qdisc& q) { return dynamic_cast<PrioQdisc&>(q); }

// qdisc.hpp's invariant for prio: its qlen/backlog are the sums over its children.
void expect_sums(const PrioQdisc& q, uint64_t qlen, uint64_t backlog) {
  uint64_t cq = 0, cb = 0;
  for (std::size_t b = 0; b < q.bands(); ++b) {
    cq += q.band_child(b).qlen();
    cb += q.band_child(b).backlog();
  }
  EXPECT_EQ(q.qlen(), qlen);
  EXPECT_EQ(q.backlog(), backlog);
  EXPECT_EQ(cq, qlen);
  EXPECT_EQ(cb, backlog);
  EXPECT_EQ(q.stats().qlen, qlen);
  EXPECT_EQ(q.stats().backlog, backlog);
}

// The error message of a bad spec, or "" if it was accepted.
std::string error_of(const std::string& spec) {
  try {
    make_qdisc(spec);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

using TestChild = test::TestChildQdisc;

// ---------------------------------------------------------------------------------------------
// Spec parsing and tc output

TEST(PrioSpec, DefaultsAndTcOutput) {
  auto q = make_qdisc("prio");
  EXPECT_EQ(q->kind(), "prio");
  EXPECT_EQ(txpath::tc::options_text(*q), "bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1");
  EXPECT_FALSE(q->can_bypass());
  EXPECT_EQ(q->watchdog_ns(), 0u);
  PrioQdisc& p = as_prio(*q);
  EXPECT_EQ(p.bands(), 3u);
  EXPECT_EQ(p.handle_major(), 0u);
  for (std::size_t b = 0; b < 3; ++b) {
    EXPECT_EQ(p.band_child(b).kind(), "pfifo");
    EXPECT_EQ(txpath::tc::options_text(p.band_child(b)), "limit 1000p");  // default env txqueuelen
  }
  QdiscEnv env;
  env.txqueuelen = 7;
  auto q7 = make_qdisc("prio bands 2 priomap 0 1 1 1 0 1 0 0 0 0 0 0 0 0 0 0", env);
  EXPECT_EQ(txpath::tc::options_text(as_prio(*q7).band_child(1)), "limit 7p");
}

TEST(PrioSpec, BandsAndPriomap) {
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("prio bands 4 priomap 1 1 2 2 3 3 0 0 1 2 3 0 0 0 0 0")),
            "bands 4 priomap 1 1 2 2 3 3 0 0 1 2 3 0 0 0 0 0");
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("prio  bands 8 priomap 1 1 2 2 3 3 4 4 5 5 6 6 7 7 0 0")),
            "bands 8 priomap 1 1 2 2 3 3 4 4 5 5 6 6 7 7 0 0");
  auto q16 = make_qdisc("prio bands 16 priomap 15 14 13 12 11 10 9 8 7 6 5 4 3 2 1 0");
  EXPECT_EQ(txpath::tc::options_text(*q16), "bands 16 priomap 15 14 13 12 11 10 9 8 7 6 5 4 3 2 1 0");
  EXPECT_EQ(as_prio(*q16).bands(), 16u);
  // Bands alone keep the default map; priomap may come before bands.
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("prio bands 5")), "bands 5 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1");
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("prio priomap 3 3 3 3 3 3 3 3 3 3 3 3 3 3 3 3 bands 4")),
            "bands 4 priomap 3 3 3 3 3 3 3 3 3 3 3 3 3 3 3 3");
  // A short priomap overrides the first entries only (tc starts from the default map).
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("prio priomap 0 0")),
            "bands 3 priomap 0 0 2 2 1 2 0 0 1 1 1 1 1 1 1 1");
}

TEST(PrioSpec, ErrorsAreOneLine) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"prio bands 1 priomap 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0", "bands 1 is out of range (2..16)"},
      {"prio bands 17", "bands 17 is out of range (2..16)"},
      {"prio bands 1024 priomap 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16",
       "bands 1024 is out of range (2..16)"},
      {"prio bands 0", "bands 0 is out of range (2..16)"},
      {"prio bands 4 priomap 1 1 2 2 7 5 0 0 1 2 3 0 0 0 0 0",
       "priomap entry 4 is band 7, not below bands 4"},
      {"prio bands 4 priomap 1 1 2 2 3 3 0 0 1 2 3 0 0 0 0 0 1 1", "priomap has more than 16 entries"},
      {"prio bands 2", "default priomap entry 1 is band 2, not below bands 2"},  // default map needs 3
      {"prio priomap 99999999999999999999", "priomap entry 0 is band 1000, not below bands 3"},
      {"prio foorbar", "unknown option \"foorbar\" (known: bands, priomap)"},
      {"prio multiqueue", "unknown option \"multiqueue\" (known: bands, priomap)"},
      {"prio bands", "Command line is not complete. Try option \"help\""},
      {"prio bands x4", "invalid bands \"x4\""},
      {"prio bands -3", "invalid bands \"-3\""},
      {"prio priomap", "\"priomap\" needs at least one band number"},
      {"prio priomap bands 3", "\"priomap\" needs at least one band number"},
      {"prio bands 3 bands 3", "duplicated option \"bands\""},
      {"prio priomap 1 priomap 1", "duplicated option \"priomap\""},
      {"prio bands 4 f\x01o", "unknown option \"f\\x01o\" (known: bands, priomap)"},
  };
  for (const auto& [spec, what] : cases) {
    const std::string msg = error_of(spec);
    ASSERT_FALSE(msg.empty()) << "accepted: " << spec;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_EQ(msg.rfind("qdisc \"", 0), 0u) << msg;
    EXPECT_NE(msg.find("\": " + what), std::string::npos) << "spec: " << spec << "\nmessage: " << msg;
  }
}

// ---------------------------------------------------------------------------------------------
// Classification

TEST(Prio, PriomapClassificationUsesLow4Bits) {
  const uint8_t kDefault[16] = {1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
  PrioQdisc q(3, PrioQdisc::kDefaultPriomap, 100);
  for (uint32_t prio = 0; prio < 16; ++prio) {
    EXPECT_EQ(q.classify(prio), kDefault[prio]) << prio;
    EXPECT_EQ(q.classify(prio + 16), kDefault[prio]) << prio + 16;        // low 4 bits
    EXPECT_EQ(q.classify(prio + 0xfff0), kDefault[prio]) << prio + 0xfff0;
  }
  // A classid of another qdisc (major != 0, no handle here) -> priomap[0].
  EXPECT_EQ(q.classify(0x00020007u), 1u);
  EXPECT_EQ(q.classify(0xffff0006u), 1u);

  // Through enqueue: every packet lands in its band's child.
  auto qp = make_qdisc("prio bands 4 priomap 3 2 1 0 3 2 1 0 3 2 1 0 3 2 1 0");
  PrioQdisc& p4 = as_prio(*qp);
  Packets pk(40);
  PacketList to_free;
  for (uint32_t i = 0; i < 40; ++i) {
    const uint32_t prio = i * 5;  // 0..195
    const std::size_t band = 3 - (prio & 3);
    const uint64_t before = p4.band_child(band).qlen();
    ASSERT_EQ(p4.enqueue(pk.with(i, 100, prio), to_free), Verdict::success);
    EXPECT_EQ(p4.band_child(band).qlen(), before + 1) << "priority " << prio;
  }
  expect_sums(p4, 40, 4000);
}

TEST(Prio, HandleMajorClassification) {
  PrioQdisc::Priomap map = {3, 2, 1, 0, 3, 2, 1, 0, 3, 2, 1, 0, 3, 2, 1, 0};
  PrioQdisc q(4, map, 100, /*handle_major=*/1);
  EXPECT_EQ(q.handle_major(), 1u);
  EXPECT_EQ(q.classify(0x00010001u), 0u);  // 1:1 -> band 0
  EXPECT_EQ(q.classify(0x00010002u), 1u);
  EXPECT_EQ(q.classify(0x00010004u), 3u);  // 1:4 -> band 3
  EXPECT_EQ(q.classify(0x00010000u), 3u);  // minor 0 -> priomap[0]
  EXPECT_EQ(q.classify(0x00010005u), 3u);  // past the last band -> priomap[0]
  EXPECT_EQ(q.classify(0x00020002u), 3u);  // someone else's classid -> priomap[0]
  EXPECT_EQ(q.classify(2u), 1u);           // plain priority -> priomap[2]

  Packets pk(3);
  PacketList to_free;
  ASSERT_EQ(q.enqueue(pk.with(0, 10, 0x00010003u), to_free), Verdict::success);
  ASSERT_EQ(q.enqueue(pk.with(1, 20, 0x00010001u), to_free), Verdict::success);
  ASSERT_EQ(q.enqueue(pk.with(2, 30, 0x00010009u), to_free), Verdict::success);
  EXPECT_EQ(q.band_child(2).qlen(), 1u);
  EXPECT_EQ(q.band_child(0).qlen(), 1u);
  EXPECT_EQ(q.band_child(3).qlen(), 1u);
  expect_sums(q, 3, 60);
  EXPECT_EQ(drain(pk, q), (std::vector<std::size_t>{1, 0, 2}));

  // Without a handle (major 0) the classid path never matches, not even for major 0.
  PrioQdisc nohandle(4, map, 100);
  EXPECT_EQ(nohandle.classify(0x00010001u), 3u);
  EXPECT_EQ(nohandle.classify(1u), 2u);
}

// ---------------------------------------------------------------------------------------------
// Queueing

TEST(Prio, StrictPriorityAndFifoWithinBand) {
  auto qp = make_qdisc("prio");
  PrioQdisc& q = as_prio(*qp);
  Packets pk(9);
  PacketList to_free;
  // priority 2 -> band 2, 0 -> band 1, 6 -> band 0; interleaved.
  const uint32_t prios[9] = {2, 0, 6, 2, 0, 6, 2, 0, 6};
  uint64_t backlog = 0;
  for (std::size_t i = 0; i < 9; ++i) {
    const uint32_t len = 60 + static_cast<uint32_t>(i);
    backlog += len;
    ASSERT_EQ(q.enqueue(pk.with(i, len, prios[i]), to_free), Verdict::success);
  }
  EXPECT_TRUE(to_free.empty());
  expect_sums(q, 9, backlog);
  ASSERT_NE(q.peek(), nullptr);
  EXPECT_EQ(pk.id(q.peek()), 2u);
  expect_sums(q, 9, backlog);  // peek changes nothing
  // Dequeue one, then add a band-0 packet: it overtakes everything still in bands 1 and 2.
  Packet* first = q.dequeue();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(pk.id(first), 2u);
  std::vector<std::size_t> order = drain(pk, q);
  EXPECT_EQ(order, (std::vector<std::size_t>{5, 8, 1, 4, 7, 0, 3, 6}));
  expect_sums(q, 0, 0);
  EXPECT_EQ(q.peek(), nullptr);
  EXPECT_EQ(q.dequeue(), nullptr);
  const QdiscStats s = q.stats();
  EXPECT_EQ(s.packets, 9u);
  EXPECT_EQ(s.bytes, backlog);
  EXPECT_EQ(s.drops, 0u);
  // Per-class statistics are the children's, and add up to prio's.
  EXPECT_EQ(q.band_stats(0).packets, 3u);
  EXPECT_EQ(q.band_stats(1).packets, 3u);
  EXPECT_EQ(q.band_stats(2).packets, 3u);
  EXPECT_EQ(q.band_stats(0).bytes, 62u + 65u + 68u);
}

TEST(Prio, LateHighPriorityOvertakes) {
  auto qp = make_qdisc("prio");
  Packets pk(4);
  PacketList to_free;
  qp->enqueue(pk.with(0, 100, 0), to_free);  // band 1
  qp->enqueue(pk.with(1, 100, 2), to_free);  // band 2
  EXPECT_EQ(pk.id(qp->dequeue()), 0u);
  qp->enqueue(pk.with(2, 100, 2), to_free);  // band 2
  qp->enqueue(pk.with(3, 100, 7), to_free);  // band 0 (TC_PRIO_CONTROL)
  EXPECT_EQ(drain(pk, *qp), (std::vector<std::size_t>{3, 1, 2}));
}

TEST(Prio, ChildLimitDropsCountInChildAndPrio) {
  QdiscEnv env;
  env.txqueuelen = 2;
  auto qp = make_qdisc("prio", env);
  PrioQdisc& q = as_prio(*qp);
  Packets pk(7);
  PacketList to_free;
  std::vector<Verdict> v;
  for (std::size_t i = 0; i < 5; ++i) v.push_back(q.enqueue(pk.with(i, 100, 6), to_free));  // band 0
  v.push_back(q.enqueue(pk.with(5, 50, 0), to_free));                                    // band 1
  EXPECT_EQ(v, (std::vector<Verdict>{Verdict::success, Verdict::success, Verdict::drop,
                                     Verdict::drop, Verdict::drop, Verdict::success}));
  EXPECT_EQ(ids(pk, to_free), (std::vector<std::size_t>{2, 3, 4}));
  EXPECT_EQ(q.stats().drops, 3u);
  EXPECT_EQ(q.band_stats(0).drops, 3u);
  EXPECT_EQ(q.band_stats(1).drops, 0u);
  expect_sums(q, 3, 250);
  EXPECT_EQ(drain(pk, q), (std::vector<std::size_t>{0, 1, 5}));
  expect_sums(q, 0, 0);
}

TEST(Prio, HeadDropChildCongestionCountsAsDrop) {
  auto qp = make_qdisc("prio");
  PrioQdisc& q = as_prio(*qp);
  PacketList to_free;
  q.graft_band(1, make_qdisc("pfifo_head_drop limit 1"), to_free);
  Packets pk(3);
  EXPECT_EQ(q.enqueue(pk.with(0, 100, 0), to_free), Verdict::success);
  EXPECT_EQ(q.enqueue(pk.with(1, 300, 0), to_free), Verdict::congestion);  // drops packet 0
  EXPECT_EQ(ids(pk, to_free), (std::vector<std::size_t>{0}));
  EXPECT_EQ(q.stats().drops, 1u);
  EXPECT_EQ(q.band_stats(1).drops, 1u);
  expect_sums(q, 1, 300);  // one packet left, of the new length
  EXPECT_EQ(drain(pk, q), (std::vector<std::size_t>{1}));
  expect_sums(q, 0, 0);
}

TEST(Prio, GraftPurgesOldChildAndKeepsAccounting) {
  auto qp = make_qdisc("prio");
  PrioQdisc& q = as_prio(*qp);
  Packets pk(10);
  PacketList to_free;
  for (std::size_t i = 0; i < 6; ++i) q.enqueue(pk.with(i, 100 + static_cast<uint32_t>(i), i % 2 ? 6 : 2), to_free);
  // bands: 0 <- 1,3,5 (101+103+105); 2 <- 0,2,4 (100+102+104)
  expect_sums(q, 6, 615);
  q.graft_band(2, make_qdisc("pfifo limit 1"), to_free);
  EXPECT_EQ(ids(pk, to_free), (std::vector<std::size_t>{0, 2, 4}));
  EXPECT_EQ(q.stats().drops, 0u);  // purged, not dropped
  EXPECT_EQ(txpath::tc::options_text(q.band_child(2)), "limit 1p");
  expect_sums(q, 3, 309);
  // The new child's limit applies.
  EXPECT_EQ(q.enqueue(pk.with(6, 10, 2), to_free), Verdict::success);
  EXPECT_EQ(q.enqueue(pk.with(7, 10, 2), to_free), Verdict::drop);
  EXPECT_EQ(q.stats().drops, 1u);
  expect_sums(q, 4, 319);

  // A child that already holds packets brings them into prio's counts.
  auto full = make_qdisc("pfifo limit 10");
  PacketList scratch;
  full->enqueue(pk.with(8, 40, 0), scratch);
  full->enqueue(pk.with(9, 41, 0), scratch);
  to_free = PacketList();
  q.graft_band(1, std::move(full), to_free);
  EXPECT_TRUE(to_free.empty());
  expect_sums(q, 6, 400);
  EXPECT_EQ(drain(pk, q), (std::vector<std::size_t>{1, 3, 5, 8, 9, 6}));
  expect_sums(q, 0, 0);

  // A null child installs a default pfifo; a bad band throws and changes nothing.
  q.graft_band(0, nullptr, to_free);
  EXPECT_EQ(q.band_child(0).kind(), "pfifo");
  EXPECT_EQ(txpath::tc::options_text(q.band_child(0)), "limit 1000p");
  EXPECT_THROW(q.graft_band(3, make_qdisc("pfifo"), to_free), std::out_of_range);
  expect_sums(q, 0, 0);
}

TEST(Prio, ResetEmptiesEveryBand) {
  auto qp = make_qdisc("prio bands 4 priomap 3 2 1 0 3 2 1 0 3 2 1 0 3 2 1 0");
  PrioQdisc& q = as_prio(*qp);
  Packets pk(8);
  PacketList to_free;
  for (uint32_t i = 0; i < 8; ++i) q.enqueue(pk.with(i, 70, i), to_free);
  expect_sums(q, 8, 560);
  q.reset(to_free);
  EXPECT_EQ(to_free.size(), 8u);
  expect_sums(q, 0, 0);
  EXPECT_EQ(q.stats().drops, 0u);
  EXPECT_EQ(q.dequeue(), nullptr);
  // Usable afterwards.
  PacketList more;
  q.enqueue(to_free.pop_front(), more);
  expect_sums(q, 1, 70);
}

TEST(Prio, ChildDequeueDropsShrinkPrio) {
  PrioQdisc q(2, PrioQdisc::Priomap{}, 100);  // every priority -> band 0
  PacketList to_free;
  auto owned = std::make_unique<TestChild>();
  TestChild& c = *owned;
  q.graft_band(0, std::move(owned), to_free);
  Packets pk(5);
  for (std::size_t i = 0; i < 5; ++i) q.enqueue(pk.with(i, 10 * (static_cast<uint32_t>(i) + 1), 0), to_free);
  expect_sums(q, 5, 150);
  c.drop_on_dequeue = 2;  // an AQM drops packets 0 and 1 inside dequeue
  Packet* p = q.dequeue();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(pk.id(p), 2u);
  EXPECT_EQ(ids(pk, c.dropped), (std::vector<std::size_t>{0, 1}));
  expect_sums(q, 2, 90);
  EXPECT_EQ(q.stats().packets, 1u);
  EXPECT_EQ(q.stats().bytes, 30u);
  EXPECT_EQ(q.stats().drops, 2u);  // as Linux's qdisc_tree_reduce_backlog(): prio's too
  EXPECT_EQ(c.stats().drops, 2u);
  // Dropping everything that remains while returning nothing also reaches prio.
  c.drop_on_dequeue = 5;
  EXPECT_EQ(q.dequeue(), nullptr);
  expect_sums(q, 0, 0);
}

TEST(Prio, WatchdogIsEarliestChildWatchdog) {
  PrioQdisc q(3, PrioQdisc::kDefaultPriomap, 100);
  PacketList to_free;
  std::vector<TestChild*> kids;
  for (std::size_t b = 0; b < 3; ++b) {
    auto c = std::make_unique<TestChild>();
    kids.push_back(c.get());
    q.graft_band(b, std::move(c), to_free);
  }
  EXPECT_EQ(q.watchdog_ns(), 0u);
  kids[2]->watchdog = 5000;
  EXPECT_EQ(q.watchdog_ns(), 5000u);
  kids[0]->watchdog = 7000;
  EXPECT_EQ(q.watchdog_ns(), 5000u);
  kids[1]->watchdog = 3000;
  EXPECT_EQ(q.watchdog_ns(), 3000u);
  // A throttled band is skipped by dequeue; lower bands still go out.
  Packets pk(2);
  kids[0]->throttled = true;
  q.enqueue(pk.with(0, 10, 6), to_free);  // band 0 (throttled)
  q.enqueue(pk.with(1, 10, 0), to_free);  // band 1
  EXPECT_EQ(pk.id(q.dequeue()), 1u);
  EXPECT_EQ(q.dequeue(), nullptr);
  expect_sums(q, 1, 10);
  kids[0]->throttled = false;
  EXPECT_EQ(pk.id(q.dequeue()), 0u);
  expect_sums(q, 0, 0);
}

// Random enqueue/dequeue/peek/graft/reset against a model: prio's counters always equal the
// children's sums, nothing is lost or duplicated, and per-band order is FIFO.
TEST(Prio, RandomOpsKeepInvariant) {
  constexpr std::size_t kN = 3000;
  Packets pk(kN);
  auto qp = make_qdisc("prio bands 5 priomap 4 3 2 1 0 4 3 2 1 0 4 3 2 1 0 0", QdiscEnv{.txqueuelen = 20});
  PrioQdisc& q = as_prio(*qp);
  std::mt19937 rng(12345);
  PacketList freed;
  std::vector<std::vector<std::size_t>> model(5);
  std::size_t next = 0, out = 0, dropped_or_purged = 0;
  while (next < kN) {
    const unsigned op = rng() % 100;
    if (op < 60) {
      const uint32_t prio = rng() % 64;
      const std::size_t band = q.classify(prio);
      const std::size_t id = next++;
      const std::size_t before = freed.size();
      const Verdict v = q.enqueue(pk.with(id, 1 + rng() % 1500, prio), freed);
      if (v == Verdict::success) model[band].push_back(id);
      else if (v == Verdict::drop) ASSERT_EQ(freed.size(), before + 1);
      else if (v == Verdict::congestion) { model[band].erase(model[band].begin()); model[band].push_back(id); }
    } else if (op < 90) {
      Packet* head = q.peek();
      Packet* p = q.dequeue();
      ASSERT_EQ(head, p);
      std::size_t b = 0;
      while (b < 5 && model[b].empty()) ++b;
      if (b == 5) {
        ASSERT_EQ(p, nullptr);
      } else {
        ASSERT_NE(p, nullptr);
        ASSERT_EQ(pk.id(p), model[b].front()) << "band " << b;
        model[b].erase(model[b].begin());
        ++out;
      }
    } else if (op < 97) {
      const std::size_t b = rng() % 5;
      q.graft_band(b, make_qdisc(rng() % 2 ? "pfifo limit 10" : "pfifo_head_drop limit 3"), freed);
      model[b].clear();
    } else {
      q.reset(freed);
      for (auto& m : model) m.clear();
    }
    uint64_t mq = 0, mb = 0;
    for (auto& m : model)
      for (std::size_t id : m) {
        ++mq;
        mb += pk[id]->len;
      }
    ASSERT_EQ(q.qlen(), mq);
    ASSERT_EQ(q.backlog(), mb);
    uint64_t cq = 0;
    for (std::size_t b = 0; b < 5; ++b) cq += q.band_child(b).qlen();
    ASSERT_EQ(cq, mq);
  }
  dropped_or_purged = freed.size();
  EXPECT_EQ(out + dropped_or_purged + q.qlen(), kN);
  EXPECT_EQ(q.stats().packets, out);
  EXPECT_GT(q.stats().drops, 0u);  // the limits were hit
}

// ---------------------------------------------------------------------------------------------
// Through TxQueue: several senders, a device that answers Busy and stops/wakes its queue.

#if defined(TXPATH_TSAN) || defined(TXPATH_ASAN)
constexpr uint64_t kStressPackets = 3000;
#else
constexpr uint64_t kStressPackets = 30000;
#endif

class PrioStress : public ::testing::TestWithParam<std::string> {};

TEST_P(PrioStress, InvariantsHoldUnderFaults) {
  const std::string strategy = GetParam();
  const auto names = strategy_names();
  ASSERT_NE(std::find(names.begin(), names.end(), strategy), names.end())
      << "strategy " << strategy << " is not registered";
  static constexpr uint8_t kMap[16] = {3, 2, 1, 0, 3, 2, 1, 0, 3, 2, 1, 0, 3, 2, 1, 0};
  constexpr int kThreads = 6;
  Pool pool(PoolConfig{.packets = 4096, .buffer_size = 256, .cache_size = 32});
  FaultConfig fcfg;
  fcfg.busy_prob = 0.05;
  fcfg.stop_prob = 0.01;
  fcfg.max_stop_ns = 100'000;
  fcfg.seed = 7;
  fcfg.order_key = [](const Packet& p) { return static_cast<uint32_t>(kMap[p.priority & 15]); };
  FaultDevice dev(fcfg);

  TxQueueConfig cfg;
  cfg.strategy = strategy;
  cfg.qdisc = "prio bands 4 priomap 3 2 1 0 3 2 1 0 3 2 1 0 3 2 1 0";
  cfg.txqueuelen = 64;  // small: bursts overflow a band and drops happen
  auto txq = TxQueue::create(dev, cfg);
  ASSERT_NE(txq->qdisc(), nullptr);
  EXPECT_EQ(txq->qdisc()->kind(), "prio");

  const uint64_t per_thread = kStressPackets / kThreads + 1;
  const std::vector<uint64_t> refused =
      test::send_from_threads(*txq, pool, kThreads, per_thread, [](Packet& p, int t, uint64_t seq) {
        p.priority = static_cast<uint32_t>((seq * 5 + static_cast<uint64_t>(t)) % 16);
      });

  ASSERT_TRUE(txq->drain(20s)) << "packets stranded: " << txq->stats().queued << " still queued";
  const TxQueueStats s = txq->stats();
  const uint64_t submitted = per_thread * kThreads;
  for (auto r : refused) EXPECT_EQ(r, 0u);
  EXPECT_EQ(s.submitted, submitted);
  EXPECT_EQ(s.queued, 0u);
  EXPECT_EQ(s.submitted, s.sent + s.dropped);
  EXPECT_EQ(dev.order_violations(), 0u) << "a packet was sent twice or out of order in a band";
  EXPECT_EQ(dev.unparsable(), 0u);
  EXPECT_EQ(s.device.tx_packets, s.sent);
  EXPECT_GT(s.sent, 0u);
  EXPECT_EQ(txq->qdisc()->qlen(), 0u);
  EXPECT_EQ(txq->qdisc()->backlog(), 0u);
  EXPECT_GT(s.device.busy, 0u);  // the faults really happened
  EXPECT_EQ(s.bypassed, 0u);  // prio never allows the empty-queue bypass
  EXPECT_GE(s.qdisc.packets, s.sent);
  EXPECT_LE(s.qdisc.drops, s.dropped);
  txq.reset();
  EXPECT_EQ(pool.free_count(), pool.capacity()) << "a buffer never came back to the pool";
}

INSTANTIATE_TEST_SUITE_P(PrioTxQueue, PrioStress, ::testing::Values("busylock", "drainer"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace txpath
