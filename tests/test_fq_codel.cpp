// SPDX-License-Identifier: MIT
// Unit tests for fq_codel and its fixed-point CoDel (src/qdisc/fq_codel.*, src/qdisc/codel.hpp).
// Oracles: the kernel's CoDel drop schedule (include/net/codel_impl.h, computed by
// emulating its fixed-point code) and the tc option text of the tdc fq_codel cases.
// Time is a simulated clock (QdiscEnv::clock), so nothing here depends on real timing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "qdisc/codel.hpp"
#include "qdisc/fq_codel.hpp"
#include "txpath/error.hpp"
#include "txpath/frame.hpp"
#include "txpath/packet.hpp"
#include "support/packet_arena.hpp"
#include "txpath/qdisc.hpp"
#include "txpath/tc.hpp"

namespace txpath {
namespace {

uint64_t g_now_ns = 0;
uint64_t fake_clock() { return g_now_ns; }

QdiscEnv sim_env() {
  QdiscEnv env;
  env.clock = &fake_clock;
  return env;
}

std::unique_ptr<FqCodelQdisc> make(const std::string& spec) {
  std::unique_ptr<Qdisc> q = make_qdisc(spec, sim_env());
  auto* fq = dynamic_cast<FqCodelQdisc*>(q.get());
  if (fq == nullptr) return nullptr;
  q.release();
  return std::unique_ptr<FqCodelQdisc>(fq);
}

// The smallest hash that classify() maps to `flow` out of `flows`.
uint32_t hash_for(uint32_t flow, uint32_t flows) {
  return static_cast<uint32_t>(((uint64_t{flow} << 32) + flows - 1) / flows);
}

constexpr uint32_t kBuf = 2048;

// Packets backed by local buffers (no Pool), identified by index.
class Packets : public test::PacketArena {
 public:
  using PacketArena::PacketArena;
  Packet* with(std::size_t i, uint32_t len, uint32_t hash) {
    Packet* p = (*this)[i];
    p->len = len;
    p->flow_hash = hash;
    return p;
  }
};

// ---- fixed point ----------------------------------------------------------------------------

TEST(CodelFixedPoint, TimeUnitsAreNsShiftedBy10) {
  EXPECT_EQ(codel::from_us(5000), 4882u);      // MS2TIME(5)
  EXPECT_EQ(codel::from_us(100000), 97656u);   // MS2TIME(100)
  EXPECT_EQ(codel::to_us(4882), 4999u);        // what tc -j shows for target 5ms
  EXPECT_EQ(codel::to_us(97656), 99999u);
  EXPECT_TRUE(codel::after(5, 0xFFFFFFF0u));   // wrap-safe
  EXPECT_TRUE(codel::before(0xFFFFFFF0u, 5));
}

TEST(CodelFixedPoint, NewtonStepConvergesToInverseSqrt) {
  codel::Vars v;
  v.rec_inv_sqrt = codel::kRecInvSqrtOne;
  v.count = 2;
  codel::newton_step(v);
  // One step from ~1.0 with count 2 gives 0.5 (docs/background.md, "CoDel's schedule": the 2nd gap is 50 ms).
  EXPECT_NEAR(v.rec_inv_sqrt / 65536.0, 0.5, 1.0 / 65536 * 2);
  for (uint32_t count = 3; count < 200; ++count) {
    v.count = count;
    codel::newton_step(v);
  }
  // Repeated steps track 1/sqrt(count) closely once count changes slowly.
  for (int i = 0; i < 8; ++i) codel::newton_step(v);
  EXPECT_NEAR(v.rec_inv_sqrt / 65536.0, 1.0 / std::sqrt(199.0), 0.002);
}

TEST(CodelFixedPoint, ControlLawScalesIntervalByInvSqrt) {
  EXPECT_EQ(codel::control_law(1000, 97656, codel::kRecInvSqrtOne), 1000u + 97654u);
  EXPECT_EQ(codel::control_law(1000, 97656, 0x8000), 1000u + 97656u / 2);
}

// ---- options ---------------------------------------------------------------------------------

TEST(FqCodelSpec, DefaultsPrintLikeTc) {
  auto q = make("fq_codel");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->kind(), "fq_codel");
  EXPECT_EQ(txpath::tc::options_text(*q),
            "limit 10240p flows 1024 quantum 1514 target 5ms interval 100ms memory_limit 32Mb ecn "
            "drop_batch 64");
  EXPECT_TRUE(q->can_bypass());
  EXPECT_EQ(q->config().quantum, QdiscEnv{}.psched_mtu());
}

TEST(FqCodelSpec, OptionsTextFollowsTc) {
  const std::string tail = " memory_limit 32Mb ecn drop_batch 64";
  EXPECT_EQ(txpath::tc::options_text(*make("fq_codel limit 1000")),
            "limit 1000p flows 1024 quantum 1514 target 5ms interval 100ms" + tail);
  EXPECT_EQ(txpath::tc::options_text(*make("fq_codel memory_limit 100000")),
            "limit 10240p flows 1024 quantum 1514 target 5ms interval 100ms memory_limit 100000b "
            "ecn drop_batch 64");
  EXPECT_EQ(txpath::tc::options_text(*make("fq_codel target 2000")),
            "limit 10240p flows 1024 quantum 1514 target 2ms interval 100ms" + tail);
  EXPECT_EQ(txpath::tc::options_text(*make("fq_codel interval 5000")),
            "limit 10240p flows 1024 quantum 1514 target 5ms interval 5ms" + tail);
  EXPECT_EQ(txpath::tc::options_text(*make("fq_codel quantum 9000")),
            "limit 10240p flows 1024 quantum 9000 target 5ms interval 100ms" + tail);
  EXPECT_EQ(txpath::tc::options_text(*make("fq_codel noecn")),
            "limit 10240p flows 1024 quantum 1514 target 5ms interval 100ms memory_limit 32Mb "
            "drop_batch 64");
  EXPECT_EQ(txpath::tc::options_text(*make("fq_codel ce_threshold 1024000")),
            "limit 10240p flows 1024 quantum 1514 target 5ms ce_threshold 1.02s interval 100ms" +
                tail);
  EXPECT_EQ(txpath::tc::options_text(*make("fq_codel limit 1000 flows 256 drop_batch 100")),
            "limit 1000p flows 256 quantum 1514 target 5ms interval 100ms memory_limit 32Mb ecn "
            "drop_batch 100");
  EXPECT_EQ(make("fq_codel noecn ecn")->config().ecn, true);  // last one wins, as in tc
  // tc sends no target or interval of 0: the kernel's defaults stay.
  EXPECT_EQ(txpath::tc::options_text(*make("fq_codel target 0 interval 0")),
            "limit 10240p flows 1024 quantum 1514 target 5ms interval 100ms" + tail);
}

TEST(FqCodelSpec, ClampsLikeTheKernel) {
  EXPECT_EQ(make("fq_codel quantum 100")->config().quantum, 256u);
  EXPECT_EQ(make("fq_codel drop_batch 0")->config().drop_batch, 1u);
  EXPECT_EQ(make("fq_codel memory_limit 3g")->config().memory_limit, 1u << 31);
  EXPECT_EQ(make("fq_codel flows 65536")->config().flows, 65536u);
  EXPECT_EQ(make("fq_codel flows 1")->config().flows, 1u);
  EXPECT_FALSE(make("fq_codel limit 0")->can_bypass());
}

void expect_error(const std::string& spec, const std::string& needle) {
  try {
    make_qdisc(spec, sim_env());
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_EQ(msg.rfind("qdisc \"", 0), 0u) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
    return;
  }
  ADD_FAILURE() << "no ConfigError for " << spec;
}

TEST(FqCodelSpec, ErrorsAreOneLine) {
  expect_error("fq_codel flows 0", "out of range (1..65536)");
  expect_error("fq_codel flows 65537", "out of range (1..65536)");
  expect_error("fq_codel quantum 1048577", "quantum \"1048577\" is out of range");
  expect_error("fq_codel limit", "Command line is not complete. Try option \"help\"");
  expect_error("fq_codel limit 10x", "invalid limit \"10x\"");
  expect_error("fq_codel limit 4294967296", "out of range");
  expect_error("fq_codel target 5parsecs", "invalid target \"5parsecs\"");
  expect_error("fq_codel memory_limit lots", "invalid memory_limit \"lots\"");
  expect_error("fq_codel memory_limit 4g", "invalid memory_limit \"4g\"");  // tc's get_size: 32 bits
  expect_error("fq_codel bogus 1", "unknown option \"bogus\"");
  expect_error("fq_codel ce_threshold_selector 0x01/0x03", "unknown option");
}

// ---- CoDel schedule --------------------------------------------------------------------------

// docs/background.md, "CoDel's schedule": offsets of the drops (or marks) from the first one, in ms.
const double kScheduleMs[] = {0,      99.998, 150.0,  206.25, 255.03, 299.18,
                              339.58, 377.10, 412.25, 445.43, 476.94, 506.99};

// One flow, kept ~10000 packets deep so the sojourn stays ~10 ms (>= target) and the backlog far
// above one MTU; one enqueue and one dequeue per CoDel time unit (1.024 us). Returns the CoDel
// times of the first 12 actions (drops, or marks with ECT frames).
struct ScheduleRun {
  std::vector<codel::Time> actions;
  codel::Time first_above = 0;
  uint64_t drops = 0, marks = 0, delivered_marked_ok = 0;
};

ScheduleRun run_schedule(bool ect) {
  constexpr std::size_t kDepth = 10000;
  constexpr std::size_t kPackets = kDepth + 64;
  FrameSpec fs;
  fs.payload = 158;  // 200-byte frames
  fs.tos = ect ? 2 : 0;
  const FrameTemplate tmpl(fs);
  Packets pk(kPackets, static_cast<uint32_t>(tmpl.size()));
  uint64_t seq = 0;
  auto fresh = [&](Packet* p) {
    p->len = static_cast<uint32_t>(tmpl.write(p->buffer(), 1, seq++));
    return p;
  };

  auto q = make("fq_codel");
  ScheduleRun r;
  std::vector<Packet*> spare;
  const uint64_t base = uint64_t{1024} * 1000000;  // a multiple of the time unit
  g_now_ns = base;
  PacketList to_free;
  for (std::size_t i = 0; i < kDepth; ++i) EXPECT_EQ(q->enqueue(fresh(pk[i]), to_free), Verdict::success);
  for (std::size_t i = kDepth; i < kPackets; ++i) spare.push_back(pk[i]);

  // The first dequeue is 20 ms after the fill: above target from the start.
  g_now_ns = base + 20 * 1000 * 1000 / 1024 * 1024;
  r.first_above = codel::from_ns(g_now_ns);
  const uint64_t limit_ns = g_now_ns + 700ull * 1000 * 1000;
  while (r.actions.size() < std::size(kScheduleMs) && g_now_ns < limit_ns) {
    const uint64_t drops0 = q->stats().drops;
    const uint32_t marks0 = q->detail_xstats().ecn_mark;
    Packet* p = q->dequeue();
    if (p == nullptr) {
      ADD_FAILURE() << "queue ran dry";
      break;
    }
    const uint64_t nd = q->stats().drops - drops0;
    const uint32_t nm = q->detail_xstats().ecn_mark - marks0;
    EXPECT_LE(nd + nm, 1u) << "one action per dequeue at this rate";
    if (nd + nm) r.actions.push_back(codel::from_ns(g_now_ns));
    r.drops += nd;
    r.marks += nm;
    if (nm) {
      const auto f = p->frame();
      const bool ce = (std::to_integer<uint8_t>(f[15]) & 3) == 3;
      if (ce && parse_frame(f).has_value()) ++r.delivered_marked_ok;  // checksum still valid
    }
    spare.push_back(p);
    for (Packet* d = q->take_dropped().front(); d;) {  // recycle CoDel victims
      Packet* next = d->next;
      spare.push_back(d);
      d = next;
    }
    g_now_ns += 1024;
    Packet* n = spare.back();
    spare.pop_back();
    EXPECT_EQ(q->enqueue(fresh(n), to_free), Verdict::success);
    EXPECT_TRUE(to_free.empty());
  }
  PacketList rest;
  q->reset(rest);
  return r;
}

void expect_schedule(const ScheduleRun& r) {
  ASSERT_EQ(r.actions.size(), std::size(kScheduleMs));
  // First action: the first dequeue strictly after first_above_time = t0 + interval.
  EXPECT_EQ(r.actions[0], r.first_above + codel::from_us(100000) + 1);
  for (std::size_t i = 0; i < r.actions.size(); ++i) {
    const double ms = (r.actions[i] - r.actions[0]) * 1.024 / 1000;
    // The oracle is rounded to 0.01 ms; plus one time unit.
    EXPECT_NEAR(ms, kScheduleMs[i], 0.005 + 0.001024) << "action " << i;
  }
}

TEST(FqCodelCodel, DropScheduleMatchesKernelFixedPoint) {
  const ScheduleRun r = run_schedule(/*ect=*/false);
  expect_schedule(r);
  EXPECT_EQ(r.drops, std::size(kScheduleMs));
  EXPECT_EQ(r.marks, 0u);
}

TEST(FqCodelCodel, EcnMarksAtTheSameInstants) {
  const ScheduleRun r = run_schedule(/*ect=*/true);
  expect_schedule(r);
  EXPECT_EQ(r.drops, 0u);
  EXPECT_EQ(r.marks, std::size(kScheduleMs));
  EXPECT_EQ(r.delivered_marked_ok, r.marks);
}

TEST(FqCodelCodel, NoActionWhileBacklogAtMostOneMtu) {
  auto q = make("fq_codel");
  Packets pk(4, 500);
  PacketList to_free;
  g_now_ns = 1ull << 30;
  for (std::size_t i = 0; i < 3; ++i) q->enqueue(pk[i], to_free);  // 1500 <= 1514
  g_now_ns += 1000ull * 1000 * 1000;  // 1 s sojourn: far above target
  for (std::size_t i = 0; i < 3; ++i) ASSERT_EQ(q->dequeue(), pk[i]);
  EXPECT_EQ(q->stats().drops, 0u);
  EXPECT_EQ(q->flow_stats(0).ldelay_us, codel::to_us(codel::from_ns(1000ull * 1000 * 1000)));
}

TEST(FqCodelCodel, CeThresholdMarksOnlyEctPackets) {
  auto q = make("fq_codel ce_threshold 1ms");
  FrameSpec ect;
  ect.tos = 1;  // ECT(1)
  FrameSpec plain;
  Packets pk(2, 0);
  pk[0]->len = static_cast<uint32_t>(FrameTemplate(ect).write(pk[0]->buffer(), 0, 0));
  pk[1]->len = static_cast<uint32_t>(FrameTemplate(plain).write(pk[1]->buffer(), 0, 1));
  PacketList to_free;
  g_now_ns = 1ull << 30;
  q->enqueue(pk[0], to_free);
  q->enqueue(pk[1], to_free);
  g_now_ns += 2 * 1000 * 1000;
  ASSERT_EQ(q->dequeue(), pk[0]);
  EXPECT_EQ(q->detail_xstats().ce_mark, 1u);
  EXPECT_EQ(std::to_integer<uint8_t>(pk[0]->frame()[15]) & 3, 3);
  EXPECT_TRUE(parse_frame(pk[0]->frame()).has_value());
  ASSERT_EQ(q->dequeue(), pk[1]);
  EXPECT_EQ(q->detail_xstats().ce_mark, 1u);  // Not-ECT: left alone
  EXPECT_EQ(std::to_integer<uint8_t>(pk[1]->frame()[15]) & 3, 0);
}

// ---- flow queueing ---------------------------------------------------------------------------

TEST(FqCodelFq, SparseFlowGoesBeforeBulkFlowsNextQuantum) {
  auto q = make("fq_codel");
  const uint32_t flows = q->config().flows;
  Packets pk(21, 1000);
  PacketList to_free;
  g_now_ns = 1ull << 30;
  for (std::size_t i = 0; i < 20; ++i) q->enqueue(pk.with(i, 1000, hash_for(3, flows)), to_free);
  EXPECT_EQ(q->classify(*pk[0]), 3u);
  EXPECT_EQ(q->detail_xstats().new_flows_len, 1u);
  // Serve the bulk flow until it has used its first quantum and sits on the old list.
  while (q->detail_xstats().old_flows_len == 0) ASSERT_NE(q->dequeue(), nullptr);
  EXPECT_EQ(q->detail_xstats().new_flows_len, 0u);
  Packet* sparse = pk.with(20, 100, hash_for(700, flows));
  q->enqueue(sparse, to_free);
  EXPECT_EQ(q->detail_xstats().new_flow_count, 2u);
  EXPECT_EQ(q->dequeue(), sparse);
  EXPECT_EQ(q->stats().drops, 0u);
}

TEST(FqCodelFq, DrrSharesBytesBetweenBulkFlows) {
  auto q = make("fq_codel");
  const uint32_t flows = q->config().flows;
  const uint32_t quantum = q->config().quantum;
  Packets pk(400);
  PacketList to_free;
  g_now_ns = 1ull << 30;
  for (std::size_t i = 0; i < 200; ++i) {
    q->enqueue(pk.with(2 * i, 1000, hash_for(1, flows)), to_free);
    q->enqueue(pk.with(2 * i + 1, 300, hash_for(2, flows)), to_free);
  }
  uint64_t bytes[2] = {0, 0};
  std::size_t left[2] = {200, 200};
  while (left[0] && left[1]) {
    Packet* p = q->dequeue();
    ASSERT_NE(p, nullptr);
    const std::size_t f = pk.id(p) % 2;
    bytes[f] += p->len;
    --left[f];
    const auto gap = static_cast<int64_t>(bytes[0]) - static_cast<int64_t>(bytes[1]);
    // DRR: while both are backlogged, neither gets ahead by more than a quantum + a packet.
    EXPECT_LE(std::llabs(gap), int64_t{quantum} + 1000) << "after " << bytes[0] + bytes[1];
  }
  EXPECT_GT(bytes[1], 200u * 300 / 2);  // the small-packet flow got its share
}

// ---- overlimit -------------------------------------------------------------------------------

TEST(FqCodelOverlimit, FatFlowLosesHalfItsBacklog) {
  auto q = make("fq_codel limit 100");
  const uint32_t flows = q->config().flows;
  Packets pk(102, 1000);
  PacketList to_free;
  g_now_ns = 1ull << 30;
  for (std::size_t i = 0; i < 100; ++i)
    ASSERT_EQ(q->enqueue(pk.with(i, 1000, hash_for(5, flows)), to_free), Verdict::success);
  // The 101st: 101 packets > limit; half of 101000 bytes = 50500 -> 51 packets from the head.
  EXPECT_EQ(q->enqueue(pk.with(100, 1000, hash_for(5, flows)), to_free), Verdict::congestion);
  ASSERT_EQ(to_free.size(), 51u);
  std::size_t expect_id = 0;
  to_free.for_each([&](const Packet* p) { EXPECT_EQ(pk.id(p), expect_id++); });
  EXPECT_EQ(q->qlen(), 50u);
  EXPECT_EQ(q->backlog(), 50u * 1000);
  EXPECT_EQ(q->stats().drops, 51u);
  EXPECT_EQ(q->detail_xstats().drop_overlimit, 51u);
  EXPECT_EQ(q->detail_xstats().drop_overmemory, 0u);
  EXPECT_EQ(q->flow_stats(5).count, 51u);  // the flow's CoDel count absorbs the drops
  PacketList rest;
  q->reset(rest);
}

TEST(FqCodelOverlimit, DropBatchCapsTheLossAndOtherFlowsSucceed) {
  auto q = make("fq_codel limit 200");
  const uint32_t flows = q->config().flows;
  Packets pk(203, 1000);
  PacketList to_free;
  g_now_ns = 1ull << 30;
  for (std::size_t i = 0; i < 200; ++i)
    ASSERT_EQ(q->enqueue(pk.with(i, 1000, hash_for(9, flows)), to_free), Verdict::success);
  // Half of 201 packets would be 101: capped at drop_batch 64.
  EXPECT_EQ(q->enqueue(pk.with(200, 1000, hash_for(9, flows)), to_free), Verdict::congestion);
  EXPECT_EQ(to_free.size(), 64u);
  EXPECT_EQ(q->detail_xstats().drop_overlimit, 64u);
  EXPECT_EQ(q->qlen(), 201u - 64);
  // A packet of another flow arriving over the limit: the fat flow pays, the arrival succeeds.
  auto q2 = make("fq_codel limit 3 drop_batch 1");
  PacketList tf3;
  ASSERT_EQ(q2->enqueue(pk.with(0, 1000, hash_for(1, flows)), tf3), Verdict::success);
  ASSERT_EQ(q2->enqueue(pk.with(1, 1000, hash_for(1, flows)), tf3), Verdict::success);
  ASSERT_EQ(q2->enqueue(pk.with(2, 1000, hash_for(1, flows)), tf3), Verdict::success);
  EXPECT_EQ(q2->enqueue(pk.with(3, 100, hash_for(2, flows)), tf3), Verdict::success);
  ASSERT_EQ(tf3.size(), 1u);
  EXPECT_EQ(tf3.front(), pk[0]);
  EXPECT_EQ(q2->qlen(), 3u);
  PacketList rest;
  q->reset(rest);
  q2->reset(rest);
}

TEST(FqCodelOverlimit, ArrivalThatIsItsOwnFatFlowIsDropped) {
  auto q = make("fq_codel limit 0");
  Packets pk(1, 500);
  PacketList to_free;
  EXPECT_EQ(q->enqueue(pk[0], to_free), Verdict::drop);
  EXPECT_EQ(to_free.front(), pk[0]);
  EXPECT_EQ(q->qlen(), 0u);
  EXPECT_EQ(q->stats().drops, 1u);
  EXPECT_EQ(q->dequeue(), nullptr);
}

TEST(FqCodelOverlimit, MemoryLimitDropsCountAsOvermemory) {
  // Packets of capacity kBuf: truesize = kBuf + sizeof(Packet).
  const uint64_t truesize = kBuf + sizeof(Packet);
  const uint64_t limit = truesize * 4 + truesize / 2;  // room for 4
  auto q = make("fq_codel memory_limit " + std::to_string(limit));
  Packets pk(5, 100);
  PacketList to_free;
  for (std::size_t i = 0; i < 4; ++i) ASSERT_EQ(q->enqueue(pk[i], to_free), Verdict::success);
  EXPECT_EQ(q->detail_xstats().memory_used, 4 * truesize);
  // 5th: over memory -> half of 500 bytes = 250 -> 3 packets of 100.
  EXPECT_EQ(q->enqueue(pk[4], to_free), Verdict::congestion);
  EXPECT_EQ(to_free.size(), 3u);
  EXPECT_EQ(q->detail_xstats().drop_overmemory, 3u);
  EXPECT_EQ(q->detail_xstats().drop_overlimit, 3u);
  EXPECT_EQ(q->detail_xstats().memory_used, 2 * truesize);
  PacketList rest;
  q->reset(rest);
}

// ---- accounting ------------------------------------------------------------------------------

TEST(FqCodel, AccountingInvariantHoldsAtEveryStep) {
  auto q = make("fq_codel limit 40 flows 16 quantum 300 target 1ms interval 10ms");
  constexpr std::size_t kN = 4000;
  Packets pk(kN);
  std::mt19937 rng(12345);
  std::vector<int> state(kN, 0);  // 0 unsent, 1 queued, 2 delivered, 3 freed
  uint64_t sent_bytes = 0, queued_bytes = 0, queued_truesize = 0;
  std::size_t next = 0, queued = 0, delivered = 0, freed = 0;
  const uint64_t truesize = kBuf + sizeof(Packet);
  auto take_freed = [&](PacketList& l) {
    // Victims of enqueue (overlimit) and of dequeue (CoDel, via take_dropped()).
    while (Packet* p = l.pop_front()) {
      const std::size_t id = pk.id(p);
      ASSERT_EQ(state[id], 1) << "freed twice or never queued: " << id;
      --queued;
      queued_bytes -= p->len;
      queued_truesize -= truesize;
      state[id] = 3;
      ++freed;
    }
  };
  g_now_ns = 1ull << 30;
  uint64_t parked_seen = 0;
  for (int step = 0; step < 20000 && (next < kN || queued); ++step) {
    g_now_ns += rng() % 400000;  // up to 0.4 ms per step: sojourns cross target
    const unsigned op = rng() % 10;
    const unsigned enqueue_share = (step / 500) % 2 == 0 ? 8 : 3;  // bursts, then drains
    if (op < enqueue_share && next < kN) {
      Packet* p = pk.with(next, 64 + rng() % 1400, hash_for(rng() % 6, 16) + (rng() % 3));
      state[next++] = 1;
      ++queued;
      queued_bytes += p->len;
      queued_truesize += truesize;
      PacketList to_free;
      const Verdict v = q->enqueue(p, to_free);
      take_freed(to_free);
      if (v == Verdict::drop) {
        EXPECT_EQ(state[pk.id(p)], 3);
      }
    } else if (op == 9) {
      const uint64_t drops0 = q->stats().drops;
      Packet* p = q->peek();  // may run CoDel (the peeked packet is dequeued from its flow)
      ASSERT_EQ(q->dropped_pending(), q->stats().drops - drops0);
      parked_seen += q->dropped_pending();
      PacketList d = q->take_dropped();
      take_freed(d);
      EXPECT_EQ(p == nullptr, q->qlen() == 0);
    } else {
      const uint64_t drops0 = q->stats().drops;
      Packet* p = q->dequeue();
      if (p) {
        const std::size_t id = pk.id(p);
        ASSERT_EQ(state[id], 1) << "dequeued a packet not queued: " << id;
        state[id] = 2;
        --queued;
        queued_bytes -= p->len;
        queued_truesize -= truesize;
        ++delivered;
        sent_bytes += p->len;
      }
      // CoDel victims, already counted as drops, are handed out at once here.
      ASSERT_EQ(q->dropped_pending(), q->stats().drops - drops0);
      parked_seen += q->dropped_pending();
      PacketList d = q->take_dropped();
      take_freed(d);
    }
    // The invariant, at every step.
    const QdiscStats s = q->stats();
    ASSERT_EQ(s.drops, freed) << "step " << step;
    ASSERT_EQ(s.packets, delivered);
    ASSERT_EQ(s.bytes, sent_bytes);
    ASSERT_EQ(s.qlen, queued);
    ASSERT_EQ(s.backlog, queued_bytes);
    ASSERT_EQ(next, delivered + freed + q->qlen());
    // memory_used excludes a peeked packet (it left its flow), as backlog_ does.
    const uint64_t peeked_truesize = q->peek_held() ? truesize : 0;
    ASSERT_EQ(q->detail_xstats().memory_used + peeked_truesize, queued_truesize);
  }
  PacketList rest;
  q->reset(rest);
  EXPECT_EQ(q->qlen(), 0u);
  EXPECT_EQ(q->backlog(), 0u);
  EXPECT_GT(parked_seen, 0u) << "the run should exercise CoDel drops";
  EXPECT_GT(q->detail_xstats().drop_overlimit, 0u) << "the run should exercise overlimit drops";
}

TEST(FqCodel, ParkedVictimsLeaveWithTheNextEnqueue) {
  auto q = make("fq_codel");
  Packets pk(40, 1000);
  PacketList to_free;
  g_now_ns = 1ull << 30;
  for (std::size_t i = 0; i < 39; ++i) q->enqueue(pk[i], to_free);
  const uint64_t start = g_now_ns + 500ull * 1000 * 1000;
  // Dequeue every 50 ms: above target for an interval, then CoDel drops.
  for (int i = 0; i < 30 && q->stats().drops == 0; ++i) {
    g_now_ns = start + uint64_t(i) * 50 * 1000 * 1000;
    ASSERT_NE(q->dequeue(), nullptr);
  }
  const std::size_t pending = q->dropped_pending();
  ASSERT_GT(pending, 0u);
  EXPECT_EQ(q->stats().drops, pending);  // counted at once
  EXPECT_EQ(q->enqueue(pk[39], to_free), Verdict::success);
  EXPECT_EQ(to_free.size(), pending);  // and handed out by the next enqueue
  EXPECT_EQ(q->dropped_pending(), 0u);
  PacketList rest;
  q->reset(rest);
}

TEST(FqCodel, ResetHandsBackEverything) {
  auto q = make("fq_codel");
  const uint32_t flows = q->config().flows;
  Packets pk(30, 1000);
  PacketList to_free;
  g_now_ns = 1ull << 30;
  for (std::size_t i = 0; i < 30; ++i) q->enqueue(pk.with(i, 1000, hash_for(i % 3, flows)), to_free);
  g_now_ns += 500ull * 1000 * 1000;  // long sojourn: CoDel drops on the next dequeues
  for (int i = 0; i < 3; ++i) ASSERT_NE(q->dequeue(), nullptr);
  ASSERT_NE(q->peek(), nullptr);
  const std::size_t pending = q->dropped_pending();
  const uint64_t qlen = q->qlen();
  PacketList rest;
  q->reset(rest);
  EXPECT_EQ(rest.size(), qlen + pending);
  EXPECT_EQ(q->qlen(), 0u);
  EXPECT_EQ(q->backlog(), 0u);
  EXPECT_EQ(q->dropped_pending(), 0u);
  const FqCodelXstats x = q->detail_xstats();
  EXPECT_EQ(x.memory_used, 0u);
  EXPECT_EQ(x.new_flows_len, 0u);
  EXPECT_EQ(x.old_flows_len, 0u);
  EXPECT_EQ(q->dequeue(), nullptr);
  EXPECT_EQ(q->peek(), nullptr);
  // Usable again: a packet is a new flow again.
  Packet* p = rest.pop_front();
  EXPECT_EQ(q->enqueue(p, to_free), Verdict::success);
  EXPECT_EQ(q->detail_xstats().new_flows_len, 1u);
  EXPECT_EQ(q->dequeue(), p);
}

TEST(FqCodel, PeekedPacketIsTheNextDequeued) {
  auto q = make("fq_codel");
  Packets pk(3, 100);
  PacketList to_free;
  for (std::size_t i = 0; i < 3; ++i) q->enqueue(pk[i], to_free);
  Packet* p = q->peek();
  EXPECT_EQ(p, pk[0]);
  EXPECT_EQ(q->peek(), p);
  EXPECT_EQ(q->qlen(), 3u);  // a peeked packet is still held
  EXPECT_EQ(q->dequeue(), p);
  EXPECT_EQ(q->qlen(), 2u);
  EXPECT_EQ(q->stats().packets, 1u);
}

}  // namespace
}  // namespace txpath
