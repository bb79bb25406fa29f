// SPDX-License-Identifier: MIT
// Unit tests for the codel qdisc (src/qdisc/codel.cpp, src/tc/qdisc_codel.cpp) and the CoDel
// state machine it shares with fq_codel (src/qdisc/codel.hpp, codel::dequeue).
// Oracles: the control law of RFC 8289 (drop gaps of interval / sqrt(count)), the kernel's
// count carry-over rule, fq_codel's schedule for one flow (tested against the kernel's fixed
// point in test_fq_codel.cpp), and the text iproute2's q_codel.c prints.
// Time is a simulated clock (QdiscEnv::clock): nothing here depends on real timing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "qdisc/codel.hpp"
#include "qdisc/codel_qdisc.hpp"
#include "qdisc/fq_codel.hpp"
#include "support/packet_arena.hpp"
#include "txpath/error.hpp"
#include "txpath/frame.hpp"
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

template <class Q>
std::unique_ptr<Q> make_as(const std::string& spec) {
  std::unique_ptr<Qdisc> q = make_qdisc(spec, sim_env());
  auto* typed = dynamic_cast<Q*>(q.get());
  if (typed == nullptr) return nullptr;
  q.release();
  return std::unique_ptr<Q>(typed);
}

std::unique_ptr<CodelQdisc> make(const std::string& spec) { return make_as<CodelQdisc>(spec); }

constexpr uint64_t kUnit = 1024;  // one CoDel time unit, ns
constexpr uint64_t kMs = 1000 * 1000;

// ---- options and text ----------------------------------------------------------------------

TEST(CodelSpec, DefaultsPrintLikeTc) {
  auto q = make("codel");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->kind(), "codel");
  EXPECT_EQ(txpath::tc::options_text(*q), "limit 1000p target 5ms interval 100ms");
  EXPECT_EQ(txpath::tc::options_json(*q), R"({"limit":1000,"target":4999,"interval":99999})");
  EXPECT_FALSE(q->config().ecn);  // codel's default, unlike fq_codel's
  EXPECT_TRUE(q->can_bypass());
  EXPECT_EQ(q->params().mtu, QdiscEnv{}.psched_mtu());
}

TEST(CodelSpec, OptionsTextFollowsTc) {
  // The tdc codel cases' texts.
  EXPECT_EQ(txpath::tc::options_text(*make("codel limit 1500")), "limit 1500p target 5ms interval 100ms");
  EXPECT_EQ(txpath::tc::options_text(*make("codel target 100ms")), "limit 1000p target 100ms interval 100ms");
  EXPECT_EQ(txpath::tc::options_text(*make("codel interval 20ms")), "limit 1000p target 5ms interval 20ms");
  EXPECT_EQ(txpath::tc::options_text(*make("codel ecn")), "limit 1000p target 5ms interval 100ms ecn");
  EXPECT_EQ(txpath::tc::options_text(*make("codel ce_threshold 20ms")),
            "limit 1000p target 5ms ce_threshold 20ms interval 100ms");
  EXPECT_EQ(txpath::tc::options_json(*make("codel ce_threshold 20ms ecn")),
            R"({"limit":1000,"target":4999,"ce_threshold":19999,"interval":99999,"ecn":true})");
  EXPECT_EQ(make("codel ecn noecn")->config().ecn, false);  // the last one wins
  EXPECT_EQ(make("codel limit 0x10")->config().limit, 16u);  // tc's get_unsigned reads C prefixes
  EXPECT_EQ(make("codel limit 0")->config().limit, 1000u);   // tc does not send a 0 limit
  EXPECT_EQ(txpath::tc::options_text(*make("codel target 0")), "limit 1000p target 5ms interval 100ms");
}

TEST(CodelSpec, ErrorsAreOneLine) {
  auto expect_error = [](const std::string& spec, const std::string& part) {
    try {
      make_qdisc(spec, sim_env());
      ADD_FAILURE() << spec << " was accepted";
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(part), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  };
  expect_error("codel limit", "Command line is not complete");
  expect_error("codel limit 10x", "invalid limit \"10x\"");
  expect_error("codel limit 4294967296", "invalid limit");
  expect_error("codel target soon", "invalid target \"soon\"");
  expect_error("codel flows 10", "unknown option \"flows\"");
  expect_error("codel \x1b[31m", "unknown option \"\\x1b[31m\"");
}

TEST(CodelXstats, PrintLikeTc) {
  auto q = make("codel");
  EXPECT_EQ(txpath::tc::xstats_text(*q, q->xstats()),
            "  count 0 lastcount 0 ldelay 0us drop_next 0us\n"
            "  maxpacket 0 ecn_mark 0 drop_overlimit 0\n");
  const Xstats dropping = {{"count", 7},       {"lastcount", 2},  {"ldelay", 12000},
                           {"dropping", 1},    {"drop_next", -1500}, {"maxpacket", 1514},
                           {"ecn_mark", 3},    {"drop_overlimit", 4}, {"ce_mark", 5}};
  EXPECT_EQ(txpath::tc::xstats_text(*q, dropping),
            "  count 7 lastcount 2 ldelay 12ms dropping drop_next -1.5ms\n"
            "  maxpacket 1514 ecn_mark 3 drop_overlimit 4 ce_mark 5\n");
  EXPECT_EQ(txpath::tc::xstats_text(*q, {}), "");
}

// ---- the queue -------------------------------------------------------------------------------

TEST(Codel, OverLimitArrivalsAreDroppedAndCounted) {
  auto q = make("codel limit 2");
  test::PacketArena pk(3);
  PacketList to_free;
  g_now_ns = 1ull << 30;
  EXPECT_EQ(q->enqueue(pk[0], to_free), Verdict::success);
  EXPECT_EQ(q->enqueue(pk[1], to_free), Verdict::success);
  EXPECT_EQ(q->enqueue(pk[2], to_free), Verdict::drop);
  EXPECT_EQ(to_free.front(), pk[2]);
  EXPECT_EQ(q->stats().drops, 1u);
  EXPECT_EQ(q->detail_xstats().drop_overlimit, 1u);
  EXPECT_EQ(q->qlen(), 2u);
  EXPECT_EQ(q->peek(), pk[0]);
  EXPECT_EQ(q->qlen(), 2u);  // the peeked packet stays counted
  EXPECT_EQ(q->dequeue(), pk[0]);
  EXPECT_EQ(q->dequeue(), pk[1]);
  EXPECT_EQ(q->dequeue(), nullptr);
  EXPECT_EQ(q->stats().packets, 2u);
  EXPECT_EQ(q->backlog(), 0u);
}

TEST(Codel, ResetHandsBackEverythingAndRestartsTheState) {
  auto q = make("codel");
  test::PacketArena pk(3);
  PacketList to_free;
  g_now_ns = 1ull << 30;
  for (std::size_t i = 0; i < 3; ++i) q->enqueue(pk[i], to_free);
  ASSERT_EQ(q->peek(), pk[0]);
  PacketList out;
  q->reset(out);
  EXPECT_EQ(out.size(), 3u);
  EXPECT_EQ(q->qlen(), 0u);
  EXPECT_EQ(q->backlog(), 0u);
  EXPECT_EQ(q->stats().drops, 0u);  // handed back, not dropped
  EXPECT_EQ(q->dequeue(), nullptr);
}

// A CoDel run over one queue kept `depth` packets deep: one dequeue and one enqueue per CoDel
// time unit, so the sojourn stays ~depth units (above target for depth 10000) and the backlog far
// above one MTU. Records the CoDel time of every drop (or mark) until `actions` of them.
struct SteadyRun {
  std::vector<codel::Time> actions;
  codel::Time first_above = 0;
};

class Feeder {
 public:
  Feeder(Qdisc& q, std::size_t depth, bool ect) : q_(q), pk_(depth + 64, 0) {
    FrameSpec fs;
    fs.payload = 158;  // 200-byte frames
    fs.tos = ect ? 2 : 0;
    tmpl_ = std::make_unique<FrameTemplate>(fs);
    for (std::size_t i = 0; i < pk_.size(); ++i) spare_.push_back(pk_[i]);
  }
  void fill(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) push();
  }
  void push() {
    Packet* p = spare_.back();
    spare_.pop_back();
    p->len = static_cast<uint32_t>(tmpl_->write(p->buffer(), 1, seq_++));
    PacketList to_free;
    EXPECT_EQ(q_.enqueue(p, to_free), Verdict::success);
    EXPECT_TRUE(to_free.empty());
  }
  // One dequeue; returns the drops + marks it caused (ecn_mark read through `marks`).
  Packet* pop() {
    Packet* p = q_.dequeue();
    if (p) spare_.push_back(p);
    PacketList victims;
    q_.take_dequeue_drops(victims);
    while (Packet* d = victims.pop_front()) spare_.push_back(d);
    return p;
  }

 private:
  Qdisc& q_;
  test::PacketArena pk_;
  std::unique_ptr<FrameTemplate> tmpl_;
  std::vector<Packet*> spare_;
  uint64_t seq_ = 0;
};

template <class MarksFn>
SteadyRun run_steady(Qdisc& q, Feeder& f, std::size_t actions, MarksFn marks) {
  SteadyRun r;
  r.first_above = codel::from_ns(g_now_ns);
  const uint64_t limit_ns = g_now_ns + 2000 * kMs;
  while (r.actions.size() < actions && g_now_ns < limit_ns) {
    const uint64_t before = q.stats().drops + marks();
    if (f.pop() == nullptr) {
      ADD_FAILURE() << "queue ran dry";
      break;
    }
    const uint64_t acted = q.stats().drops + marks() - before;
    EXPECT_LE(acted, 1u) << "one action per dequeue at this rate";
    if (acted) r.actions.push_back(codel::from_ns(g_now_ns));
    g_now_ns += kUnit;
    f.push();
  }
  return r;
}

constexpr std::size_t kDepth = 10000;
constexpr uint64_t kBase = uint64_t{1024} * 1000000;  // a multiple of the time unit

// Fills `depth` packets at kBase; the first dequeue comes 20 ms later (above target at once).
void start(Feeder& f) {
  g_now_ns = kBase;
  f.fill(kDepth);
  g_now_ns = kBase + 20 * kMs / kUnit * kUnit;
}

TEST(CodelSchedule, ControlLawSpacesDropsByIntervalOverSqrtCount) {
  auto q = make("codel limit 20000");
  Feeder f(*q, kDepth, /*ect=*/false);
  start(f);
  const SteadyRun r = run_steady(*q, f, 12, [] { return 0; });
  ASSERT_EQ(r.actions.size(), 12u);
  // The first drop: the first dequeue strictly after first_above_time = t0 + interval.
  EXPECT_EQ(r.actions[0], r.first_above + codel::from_us(100000) + 1);
  // The gap before drop i is interval * rec_inv_sqrt(count = i), the Newton estimate of
  // 1/sqrt(i) refined once per drop: exact at count 1 (100 ms), 50 ms at count 2 (one step from
  // 1.0), within 3% of 100/sqrt(i) from count 3 on and closing in.
  EXPECT_NEAR((r.actions[1] - r.actions[0]) * 1.024 / 1000, 100.0, 0.004);  // Q0.16: 0xFFFF, not 1
  EXPECT_NEAR((r.actions[2] - r.actions[1]) * 1.024 / 1000, 50.0, 0.004);
  for (std::size_t i = 3; i < r.actions.size(); ++i) {
    const double gap_ms = (r.actions[i] - r.actions[i - 1]) * 1.024 / 1000;
    const double law_ms = 100.0 / std::sqrt(static_cast<double>(i));
    EXPECT_NEAR(gap_ms, law_ms, law_ms * (i < 6 ? 0.03 : 0.012)) << "gap before drop " << i;
  }
  const CodelXstats x = q->detail_xstats();
  EXPECT_TRUE(x.dropping);
  EXPECT_EQ(x.count, 12u);
  EXPECT_EQ(x.lastcount, 1u);
  EXPECT_EQ(x.maxpacket, 200u);
  EXPECT_GT(x.ldelay_us, 5000u);
  EXPECT_GT(x.drop_next_us, 0);
  EXPECT_EQ(q->stats().drops, 12u);
}

// codel and a one-flow fq_codel run the same state machine: the same instants, to the unit.
TEST(CodelSchedule, SameInstantsAsOneFlowOfFqCodel) {
  auto c = make("codel limit 20000");
  auto fq = make_as<FqCodelQdisc>("fq_codel noecn limit 20000 flows 1");
  Feeder fc(*c, kDepth, false), ff(*fq, kDepth, false);
  start(fc);
  const SteadyRun rc = run_steady(*c, fc, 12, [] { return 0; });
  start(ff);
  const SteadyRun rf = run_steady(*fq, ff, 12, [] { return 0; });
  EXPECT_EQ(rc.actions, rf.actions);
}

TEST(CodelSchedule, EcnMarksEctPacketsAtTheDropInstants) {
  auto drops = make("codel limit 20000");
  auto marks = make("codel limit 20000 ecn");
  Feeder fd(*drops, kDepth, /*ect=*/true), fm(*marks, kDepth, /*ect=*/true);
  start(fd);
  const SteadyRun rd = run_steady(*drops, fd, 8, [] { return 0; });
  start(fm);
  auto* m = marks.get();
  const SteadyRun rm = run_steady(*marks, fm, 8, [m] { return m->detail_xstats().ecn_mark; });
  EXPECT_EQ(rd.actions, rm.actions);
  EXPECT_EQ(marks->stats().drops, 0u);
  EXPECT_EQ(marks->detail_xstats().ecn_mark, 8u);
}

// Leaves the dropping state by emptying the queue at the current instant (no drop is due).
void drain(Feeder& f, CodelQdisc& q) {
  while (q.qlen() > 0) ASSERT_NE(f.pop(), nullptr);
  EXPECT_EQ(f.pop(), nullptr);
  EXPECT_FALSE(q.detail_xstats().dropping);
}

// Re-entering the dropping state within 16 intervals of the last drop resumes at
// count - lastcount (the kernel's carry-over), so the drop rate picks up where it was.
TEST(CodelSchedule, ReentrySoonAfterLeavingCarriesTheCountOver) {
  auto q = make("codel limit 20000");
  Feeder f(*q, kDepth, false);
  start(f);
  ASSERT_EQ(run_steady(*q, f, 6, [] { return 0; }).actions.size(), 6u);
  const CodelXstats before = q->detail_xstats();
  ASSERT_EQ(before.count, 6u);
  ASSERT_EQ(before.lastcount, 1u);
  drain(f, *q);
  start(f);  // 20 ms later than the fill: above target again
  const SteadyRun again = run_steady(*q, f, 1, [] { return 0; });
  ASSERT_EQ(again.actions.size(), 1u);
  const CodelXstats x = q->detail_xstats();
  EXPECT_TRUE(x.dropping);
  EXPECT_EQ(x.count, before.count - before.lastcount);  // 5
  EXPECT_EQ(x.lastcount, x.count);
}

TEST(CodelSchedule, ReentryAfterSixteenIntervalsStartsOver) {
  auto q = make("codel limit 20000");
  Feeder f(*q, kDepth, false);
  start(f);
  ASSERT_EQ(run_steady(*q, f, 6, [] { return 0; }).actions.size(), 6u);
  drain(f, *q);
  const uint64_t later = g_now_ns + 17 * 100 * kMs;  // past 16 intervals after drop_next
  g_now_ns = later;
  f.fill(kDepth);
  g_now_ns = later + 20 * kMs;
  ASSERT_EQ(run_steady(*q, f, 1, [] { return 0; }).actions.size(), 1u);
  EXPECT_EQ(q->detail_xstats().count, 1u);
  EXPECT_EQ(q->detail_xstats().lastcount, 1u);
}

TEST(CodelSchedule, NoActionWhileBacklogAtMostOneMtu) {
  auto q = make("codel");
  test::PacketArena pk(3, 500);
  PacketList to_free;
  g_now_ns = 1ull << 30;
  for (std::size_t i = 0; i < 3; ++i) q->enqueue(pk[i], to_free);  // 1500 <= 1514
  g_now_ns += 1000 * kMs;  // 1 s sojourn: far above target
  for (std::size_t i = 0; i < 3; ++i) ASSERT_EQ(q->dequeue(), pk[i]);
  EXPECT_EQ(q->stats().drops, 0u);
  EXPECT_EQ(q->detail_xstats().ldelay_us, codel::to_us(codel::from_ns(1000 * kMs)));
}

TEST(CodelSchedule, CeThresholdMarksEctPacketsAboveIt) {
  auto q = make("codel ce_threshold 1ms");
  FrameSpec ect;
  ect.tos = 1;
  test::PacketArena pk(2, 0);
  pk[0]->len = static_cast<uint32_t>(FrameTemplate(ect).write(pk[0]->buffer(), 0, 0));
  pk[1]->len = static_cast<uint32_t>(FrameTemplate(ect).write(pk[1]->buffer(), 0, 1));
  PacketList to_free;
  g_now_ns = 1ull << 30;
  q->enqueue(pk[0], to_free);
  ASSERT_EQ(q->dequeue(), pk[0]);  // no sojourn: unmarked
  EXPECT_EQ(q->detail_xstats().ce_mark, 0u);
  q->enqueue(pk[1], to_free);
  g_now_ns += 2 * kMs;
  ASSERT_EQ(q->dequeue(), pk[1]);
  EXPECT_EQ(q->detail_xstats().ce_mark, 1u);
  EXPECT_EQ(std::to_integer<uint8_t>(pk[1]->frame()[15]) & 3, 3);
  EXPECT_TRUE(parse_frame(pk[1]->frame()).has_value());  // checksum still valid
}

// submitted = sent + dropped + queued at every step, with CoDel drops parked in between.
TEST(Codel, AccountingInvariantHoldsAtEveryStep) {
  auto q = make("codel limit 50 target 1ms interval 10ms");
  test::PacketArena pk(3000);
  std::mt19937 rng(7);
  uint64_t submitted = 0, sent = 0, freed = 0;
  g_now_ns = 1ull << 30;
  for (int step = 0; step < 20000; ++step) {
    g_now_ns += rng() % 300000;
    const bool burst = (step / 400) % 2 == 0;
    if (rng() % 10 < (burst ? 8u : 3u)) {
      if (Packet* p = pk.take(64 + rng() % 1400)) {
        PacketList to_free;
        q->enqueue(p, to_free);
        ++submitted;
        freed += to_free.size();
        pk.put(to_free);
      }
    } else if (Packet* p = q->dequeue()) {
      ++sent;
      pk.put(p);
    }
    PacketList victims;
    if (rng() % 4 == 0) q->take_dequeue_drops(victims);
    freed += victims.size();
    pk.put(victims);
    ASSERT_LE(freed, q->stats().drops);  // parked victims are counted already
  }
  PacketList rest;
  q->take_dequeue_drops(rest);
  freed += rest.size();
  const uint64_t queued = q->qlen();
  EXPECT_EQ(submitted, sent + q->stats().drops + queued);
  EXPECT_EQ(freed, q->stats().drops);
  EXPECT_GT(q->stats().drops, q->detail_xstats().drop_overlimit);  // CoDel dropped some too
  EXPECT_EQ(q->stats().packets, sent);
}

}  // namespace
}  // namespace txpath
