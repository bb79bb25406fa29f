// SPDX-License-Identifier: MIT
// Unit tests for the red qdisc (src/qdisc/red.cpp, src/tc/qdisc_red.cpp).
// Oracles: the parameters tc derives (Wlog, Plog, Scell_log, the idle table, max_P: values
// computed independently from tc-red(8)'s formulas in floating point), RED's EWMA and marking
// probability (Floyd & Jacobson 1993), the idle decay and the kernel's mark/drop rules
// (include/net/red.h, sch_red.c), Adaptive RED's update (Floyd, Gummadi & Shenker 2001), and the
// text iproute2's q_red.c prints. Simulated clock, injected random numbers: nothing here depends
// on real timing or chance.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>

#include "qdisc/red.hpp"
#include "support/packet_arena.hpp"
#include "txpath/error.hpp"
#include "txpath/frame.hpp"
#include "txpath/qdisc.hpp"
#include "txpath/tc.hpp"

namespace txpath {
namespace {

uint64_t g_now_ns = 0;
uint64_t fake_clock() { return g_now_ns; }

constexpr uint64_t kMs = 1000 * 1000;
constexpr uint32_t kOnePercent = 42949673;  // round(2^32 / 100)

std::unique_ptr<RedQdisc> make(const std::string& spec) {
  QdiscEnv env;
  env.clock = &fake_clock;
  std::unique_ptr<Qdisc> q = make_qdisc(spec, env);
  auto* red = dynamic_cast<RedQdisc*>(q.get());
  if (red == nullptr) return nullptr;
  q.release();
  return std::unique_ptr<RedQdisc>(red);
}

// 1000-byte IPv4 frames, ECT(0) or Not-ECT, from a pool the test recycles.
class Frames {
 public:
  explicit Frames(std::size_t n) : pk_(n, 0) {}
  Packet* take(bool ect) {
    FrameSpec fs;
    fs.payload = 958;
    fs.tos = ect ? 2 : 0;
    Packet* p = pk_.take(0);
    if (p) p->len = static_cast<uint32_t>(FrameTemplate(fs).write(p->buffer(), 1, seq_++));
    return p;
  }
  void put(Packet* p) { pk_.put(p); }
  void put(PacketList& l) { pk_.put(l); }
  static bool ce(const Packet& p) { return (std::to_integer<uint8_t>(p.frame()[15]) & 3) == 3; }

 private:
  test::PacketArena pk_;
  uint64_t seq_ = 0;
};

// ---- options, derived parameters and text --------------------------------------------------

TEST(RedSpec, DerivesTheParametersTcDerives) {
  // The tdc red cases' configuration; bandwidth defaults to 10Mbit.
  auto q = make("red limit 1M avpkt 1500 min 100K max 300K");
  ASSERT_TRUE(q);
  const RedConfig& c = q->config();
  EXPECT_EQ(c.limit, 1048576u);
  EXPECT_EQ(c.qth_min, 102400u);
  EXPECT_EQ(c.qth_max, 307200u);
  EXPECT_EQ(c.wlog, 6);       // burst (2*min+max)/(3*avpkt) = 113
  EXPECT_EQ(c.plog, 24);
  EXPECT_EQ(c.scell_log, 17);
  EXPECT_EQ(c.max_p, 85899345u);  // 0.02 * 2^32
  EXPECT_EQ(c.stab[0], 0);
  EXPECT_EQ(c.stab[1], 0);
  EXPECT_EQ(c.stab[100], 11);
  EXPECT_EQ(c.stab[254], 27);
  EXPECT_EQ(c.stab[255], 31);
  EXPECT_FALSE(c.ecn || c.harddrop || c.nodrop || c.adaptive);

  auto r = make("red limit 400000 min 30000 max 90000 avpkt 1000 bandwidth 100mbit probability 0.1");
  EXPECT_EQ(r->config().wlog, 5);
  EXPECT_EQ(r->config().plog, 20);
  EXPECT_EQ(r->config().scell_log, 12);
  EXPECT_EQ(r->config().max_p, 429496729u);
  EXPECT_EQ(r->config().stab[100], 10);
  EXPECT_EQ(r->config().stab[254], 26);
}

TEST(RedSpec, DefaultThresholdsFollowFloyd) {
  auto q = make("red limit 400000 avpkt 1000");  // max = limit / 4, min = max / 3
  EXPECT_EQ(q->config().qth_max, 100000u);
  EXPECT_EQ(q->config().qth_min, 33333u);
  auto m = make("red limit 400000 avpkt 1000 min 20000");  // max = 3 * min
  EXPECT_EQ(m->config().qth_max, 60000u);
}

TEST(RedSpec, OptionsTextFollowsTc) {
  const std::string base = "red limit 1M avpkt 1500 min 100K max 300K";
  EXPECT_EQ(txpath::tc::options_text(*make(base)), "limit 1Mb min 100Kb max 300Kb");
  EXPECT_EQ(txpath::tc::options_text(*make(base + " adaptive")), "limit 1Mb min 100Kb max 300Kb adaptive");
  EXPECT_EQ(make(base + " adaptative")->config().adaptive, true);  // tc's old spelling
  EXPECT_EQ(txpath::tc::options_text(*make("red ecn adaptive limit 1M avpkt 1500 min 100K max 300K")),
            "limit 1Mb min 100Kb max 300Kb ecn adaptive");
  EXPECT_EQ(txpath::tc::options_text(*make("red nodrop harddrop ecn limit 1M avpkt 1500 min 100K max 300K")),
            "limit 1Mb min 100Kb max 300Kb ecn harddrop nodrop");
  EXPECT_EQ(txpath::tc::options_json(*make(base + " ecn")),
            R"({"limit":1048576,"min":102400,"max":307200,"ecn":true,"harddrop":false,)"
            R"("adaptive":false,"nodrop":false})");
  auto q = make(base);
  EXPECT_EQ(txpath::tc::options_text(*q, true), "limit 1Mb min 100Kb max 300Kb ewma 6 probability 0.02 Scell_log 17");  // tc -d
  // probability 1 wraps max_P to 0 in tc; the kernel then derives it from Plog (18):
  // (2^32-1 >> 18) * (max - min) = 16383 * 204800, and reports that.
  EXPECT_EQ(txpath::tc::options_text(*make(base + " probability 1"), true),
            "limit 1Mb min 100Kb max 300Kb ewma 6 probability 0.781202 Scell_log 17");
  EXPECT_EQ(txpath::tc::xstats_text(*q, q->xstats()), "  marked 0 early 0 pdrop 0 other 0 \n");
  EXPECT_EQ(txpath::tc::xstats_text(*q, {}), "");
}

TEST(RedSpec, ErrorsAreOneLineWithTcsExitClass) {
  auto expect = [](const std::string& spec, const std::string& part, bool rejected) {
    try {
      make(spec);
      ADD_FAILURE() << spec << " was accepted";
    } catch (const ConfigRejected& e) {  // the kernel refuses: exit 2
      EXPECT_TRUE(rejected) << spec << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    } catch (const ConfigError& e) {  // tc refuses: exit 1
      EXPECT_FALSE(rejected) << spec << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  };
  expect("red limit 1M min 100K max 300K", "required parameter (limit, avpkt)", false);
  expect("red avpkt 1000", "required parameter", false);
  expect("red nodrop limit 1M avpkt 1500 min 100K max 300K", "only meaningful with ECN", true);
  expect("red limit 1M avpkt 1500 min 100K max 300K burst 1", "burst 1 is too small (try burst 69)",
         false);
  // tc computes the EWMA constant first: a burst that fits, then the probability fails.
  expect("red limit 1M avpkt 1000 min 300K max 100K burst 1000", "min is above max", false);
  expect("red limit 1M avpkt 1000 probability 1.5", "out of range", false);
  expect("red limit 1M avpkt 1000 probability x", "illegal \"probability\"", false);
  expect("red limit 1M avpkt 1000 bandwidth 10%", "not supported", false);
  expect("red limit 1M avpkt 1000 bandwidth fast", "illegal \"bandwidth\"", false);
  expect("red limit 5G avpkt 1000", "illegal \"limit\"", false);
  expect("red limit 1M avpkt 1000 qevent mark block 1", "unknown option \"qevent\"", false);
  expect("red limit 1M avpkt 1000 min 100M max 300M burst 200000 probability 0.5",
         "do not fit 32 bits", true);  // Wlog 17: min and max need 29 + 17 bits
}

// ---- the average -----------------------------------------------------------------------------

TEST(RedAverage, FollowsTheBacklogAsAnEwmaOfWeightTwoToMinusWlog) {
  auto q = make("red limit 400000 min 300000 max 390000 avpkt 1000 burst 300");
  const int wlog = q->config().wlog;
  Frames f(300);
  PacketList to_free;
  g_now_ns = 1ull << 32;
  double avg = 0;  // the EWMA in floating point, seen by each arrival before it is queued
  for (int i = 0; i < 300; ++i) {
    const double backlog = static_cast<double>(q->backlog());
    ASSERT_EQ(q->enqueue(f.take(false), to_free), Verdict::success);
    avg = i == 0 ? 0 : avg + (backlog - avg) / (1 << wlog);  // the first arrival ends an idle start
    EXPECT_NEAR(static_cast<double>(q->qavg()) / (1 << wlog), avg, 1.0) << "arrival " << i;
  }
  EXPECT_FALSE(q->idling());
}

TEST(RedAverage, IdleTimeDecaysItThroughTcsTable) {
  auto q = make("red limit 400000 min 30000 max 90000 avpkt 1000 bandwidth 100mbit probability 0.1");
  const RedConfig& c = q->config();
  Frames f(40);
  PacketList to_free;
  auto fill_then_idle = [&] {
    g_now_ns += 1000 * kMs;
    for (int i = 0; i < 30; ++i) q->enqueue(f.take(false), to_free);
    while (Packet* p = q->dequeue()) f.put(p);  // the empty dequeue starts the idle period
    EXPECT_TRUE(q->idling());
    return q->qavg();
  };
  g_now_ns = 1ull << 32;
  // A short idle time (cell 0, table value 0): linear decay, qavg * idle_us / 2^Scell_log.
  uint64_t before = fill_then_idle();
  ASSERT_GT(before, 0u);
  g_now_ns += 100 * 1000;  // 100 us
  q->enqueue(f.take(false), to_free);
  EXPECT_EQ(q->qavg(), before - ((before * 100) >> c.scell_log));
  // Cell 100: the table's shift.
  before = fill_then_idle();
  g_now_ns += (uint64_t{100} << c.scell_log) * 1000;
  q->enqueue(f.take(false), to_free);
  EXPECT_EQ(q->qavg(), before >> c.stab[100]);
  // Idle past the table: shifted by 31, i.e. forgotten.
  before = fill_then_idle();
  g_now_ns += 10000 * kMs;
  q->enqueue(f.take(false), to_free);
  EXPECT_EQ(q->qavg(), before >> 31);
  f.put(to_free);
}

// ---- marking and dropping ----------------------------------------------------------------------

// A RED whose average follows the backlog fast (Wlog 1): above max after a few packets.
std::unique_ptr<RedQdisc> fast(const std::string& flags) {
  auto q = make("red limit 100000 min 2000 max 6000 avpkt 1000 burst 2 " + flags);
  EXPECT_EQ(q->config().wlog, 1);
  return q;
}

// Fills with Not-ECT packets until the average is at or above max (the filler that gets there
// meets a hard mark itself).
void fill_past_max(RedQdisc& q, Frames& f) {
  PacketList to_free;
  g_now_ns = 1ull << 32;
  while (q.qavg() < (uint64_t{q.config().qth_max} << q.config().wlog)) {
    if (q.enqueue(f.take(false), to_free) != Verdict::success) break;
  }
  f.put(to_free);
}

// One more arrival above max; *last is the packet.
Verdict one_more(RedQdisc& q, Frames& f, bool ect, Packet** last) {
  PacketList to_free;
  *last = f.take(ect);
  const Verdict v = q.enqueue(*last, to_free);
  f.put(to_free);
  return v;
}

Verdict past_max(RedQdisc& q, Frames& f, bool ect, Packet** last) {
  fill_past_max(q, f);
  return one_more(q, f, ect, last);
}

TEST(RedMark, AboveMaxDropsWithoutEcn) {
  auto q = fast("");
  Frames f(40);
  Packet* p = nullptr;
  fill_past_max(*q, f);
  const uint32_t forced = q->red_stats().forced_drop;
  const uint64_t overlimits = q->stats().overlimits;
  EXPECT_EQ(one_more(*q, f, /*ect=*/true, &p), Verdict::drop);  // ECT, but no ecn
  EXPECT_EQ(q->red_stats().forced_drop, forced + 1);
  EXPECT_EQ(q->red_stats().forced_mark, 0u);
  EXPECT_EQ(q->stats().overlimits, overlimits + 1);
  EXPECT_EQ(q->stats().drops, q->red_stats().forced_drop + q->red_stats().prob_drop);
}

TEST(RedMark, AboveMaxMarksEctWithEcnAndQueuesIt) {
  auto q = fast("ecn");
  Frames f(40);
  Packet* p = nullptr;
  fill_past_max(*q, f);
  const uint32_t drops = q->red_stats().forced_drop;
  EXPECT_EQ(one_more(*q, f, /*ect=*/true, &p), Verdict::success);
  EXPECT_TRUE(Frames::ce(*p));
  EXPECT_TRUE(parse_frame(p->frame()).has_value());  // the IPv4 checksum still holds
  EXPECT_EQ(q->red_stats().forced_mark, 1u);
  EXPECT_EQ(q->red_stats().forced_drop, drops);
  EXPECT_EQ(q->xstats()[0], (std::pair<std::string, int64_t>{"marked", 1}));
}

TEST(RedMark, EcnStillDropsNotEctAndHarddropDropsEct) {
  {
    auto q = fast("ecn");
    Frames f(40);
    Packet* p = nullptr;
    EXPECT_EQ(past_max(*q, f, /*ect=*/false, &p), Verdict::drop);
  }
  {
    auto q = fast("ecn harddrop");
    Frames f(40);
    Packet* p = nullptr;
    EXPECT_EQ(past_max(*q, f, /*ect=*/true, &p), Verdict::drop);
    EXPECT_EQ(q->red_stats().forced_mark, 0u);
  }
}

TEST(RedMark, NodropQueuesNotEctUnmarked) {
  auto q = fast("ecn nodrop");
  Frames f(40);
  Packet* p = nullptr;
  fill_past_max(*q, f);
  const uint64_t overlimits = q->stats().overlimits;
  EXPECT_EQ(one_more(*q, f, /*ect=*/false, &p), Verdict::success);
  EXPECT_FALSE(Frames::ce(*p));
  EXPECT_GT(q->stats().overlimits, overlimits);  // still a mark for the counters
  EXPECT_EQ(q->stats().drops, 0u);
}

TEST(RedMark, OverTheByteLimitIsPdrop) {
  auto q = make("red limit 2500 min 100000 max 300000 avpkt 1000");  // the average never reaches min
  Frames f(4);
  PacketList to_free;
  g_now_ns = 1ull << 32;
  EXPECT_EQ(q->enqueue(f.take(false), to_free), Verdict::success);
  EXPECT_EQ(q->enqueue(f.take(false), to_free), Verdict::success);
  EXPECT_EQ(q->enqueue(f.take(false), to_free), Verdict::drop);  // 3000 > 2500
  EXPECT_EQ(q->red_stats().pdrop, 1u);
  EXPECT_EQ(q->stats().drops, 1u);
  EXPECT_EQ(q->stats().overlimits, 0u);
  EXPECT_EQ(q->backlog(), 2000u);
  f.put(to_free);
}

// Holds the backlog at `backlog` bytes: an arrival, then a departure when the arrival was queued.
// Returns the marks among `n` arrivals after a warm-up long enough for the average to settle.
uint32_t marks_at(RedQdisc& q, uint32_t backlog, int n) {
  Frames f(backlog / 1000 + 4);
  PacketList to_free;
  g_now_ns = 1ull << 32;
  for (uint32_t b = 0; b < backlog; b += 1000) q.enqueue(f.take(false), to_free);
  uint32_t marks = 0;
  for (int i = -3000; i < n; ++i) {
    const uint32_t before = q.red_stats().prob_drop;
    if (q.enqueue(f.take(false), to_free) == Verdict::success) f.put(q.dequeue());
    f.put(to_free);
    if (i >= 0) marks += q.red_stats().prob_drop - before;
  }
  return marks;
}

TEST(RedMark, ProbableMarksFollowMaxPTimesTheAverageAboveMin) {
  // Average at the middle of [min, max]: p_b = max_P / 2 = 0.05. With qR uniform and the count
  // since the last mark, the gap between marks is uniform on 1 .. 1/p_b: a rate of ~1/(10.5).
  auto q = make("red limit 400000 min 30000 max 90000 avpkt 1000 probability 0.1");
  std::mt19937 rng(2026);
  q->set_random([&rng] { return static_cast<uint32_t>(rng()); });
  const int n = 40000;
  const uint32_t marks = marks_at(*q, 60000, n);
  EXPECT_NEAR(static_cast<double>(marks) / n, 1 / 10.5, 0.01);
  EXPECT_EQ(q->red_stats().forced_drop, 0u);  // never above max
  // Below min: no marks at all.
  auto low = make("red limit 400000 min 30000 max 90000 avpkt 1000 probability 0.1");
  EXPECT_EQ(marks_at(*low, 20000, 2000), 0u);
}

TEST(RedMark, TheRandomNumberDecidesTheSpacing) {
  // qR = 0: once drawn, every arrival between the thresholds is marked.
  auto all = make("red limit 400000 min 30000 max 90000 avpkt 1000 probability 0.1");
  all->set_random([] { return 0u; });
  EXPECT_EQ(marks_at(*all, 60000, 1000), 1000u);
  // qR at its largest: 2^32-1 / (max_P / (max - min)) = 600011 byte-packets; at 30000 bytes
  // above min a mark needs a count of 21 (30000 * 20 < 600011 <= 30000 * 21).
  auto sparse = make("red limit 400000 min 30000 max 90000 avpkt 1000 probability 0.1");
  sparse->set_random([] { return ~0u; });
  EXPECT_EQ(marks_at(*sparse, 60000, 2100), 100u);
}

// ---- Adaptive RED ------------------------------------------------------------------------------

TEST(RedAdaptive, MaxPRisesByAlphaWhileTheAverageIsAboveTheTargetBand) {
  g_now_ns = 1ull << 32;  // before the qdiscs exist: their first adaptive tick is 500 ms later
  auto q = make("red adaptive ecn limit 400000 min 30000 max 90000 avpkt 1000 probability 0.02");
  auto fixed = make("red ecn limit 400000 min 30000 max 90000 avpkt 1000 probability 0.02");
  Frames f(200);
  PacketList to_free;
  const uint64_t t0 = g_now_ns;
  for (RedQdisc* r : {q.get(), fixed.get()})
    for (int i = 0; i < 80; ++i) r->enqueue(f.take(false), to_free);  // avg heads to 80000 > 66000
  // 10 ms steps for 5.2 s: an arrival and a departure each, so the average stays ~80000.
  while (g_now_ns < t0 + 5200 * kMs) {
    g_now_ns += 10 * kMs;
    for (RedQdisc* r : {q.get(), fixed.get()}) {
      if (r->enqueue(f.take(false), to_free) == Verdict::success) f.put(r->dequeue());
      f.put(to_free);
    }
  }
  // The average passes the band's top (66000) within the first tick; then every tick adds
  // min(1%, max_P / 4).
  uint32_t expect = 85899345;  // 2%: alpha is max_P / 4 until max_P reaches 4%
  for (int tick = 0; tick < 10; ++tick) expect += std::min(kOnePercent, expect / 4);
  EXPECT_EQ(q->max_p(), expect);
  EXPECT_EQ(fixed->max_p(), 85899345u);  // without adaptive, max_P stays
}

TEST(RedAdaptive, MaxPFallsByBetaWhileIdleDownToOnePercent) {
  g_now_ns = 1ull << 32;  // before the qdisc exists, as above
  auto q = make("red adaptive limit 400000 min 30000 max 90000 avpkt 1000 probability 0.1");
  // Idle from creation, 30 s: the next call catches up on every tick (x 0.9 each, integer),
  // stopping once below 1%.
  g_now_ns += 30000 * kMs;
  EXPECT_EQ(q->dequeue(), nullptr);
  uint32_t expect = 429496729;
  while (expect >= kOnePercent) expect = (expect / 10) * 9;
  EXPECT_EQ(q->max_p(), expect);
}

// ---- accounting --------------------------------------------------------------------------------

TEST(Red, AccountingAndResetKeepEveryPacket) {
  auto q = make("red ecn limit 30000 min 5000 max 15000 avpkt 1000 probability 0.5");
  std::mt19937 rng(99);
  q->set_random([&rng] { return static_cast<uint32_t>(rng()); });
  Frames f(64);
  uint64_t submitted = 0, sent = 0, dropped = 0;
  g_now_ns = 1ull << 32;
  for (int step = 0; step < 20000; ++step) {
    g_now_ns += rng() % 200000;
    if (rng() % 10 < ((step / 300) % 2 ? 3u : 8u)) {
      if (Packet* p = f.take(rng() % 2 == 0)) {
        PacketList to_free;
        q->enqueue(p, to_free);
        ++submitted;
        dropped += to_free.size();
        f.put(to_free);
      }
    } else if (Packet* p = q->dequeue()) {
      ++sent;
      f.put(p);
    }
    ASSERT_EQ(submitted, sent + dropped + q->qlen());
  }
  const RedStats& s = q->red_stats();
  EXPECT_EQ(q->stats().drops, dropped);
  EXPECT_EQ(dropped, uint64_t{s.prob_drop} + s.forced_drop + s.pdrop);
  EXPECT_GT(s.prob_mark + s.forced_mark, 0u);
  PacketList rest;
  const uint64_t queued = q->qlen();
  q->reset(rest);
  EXPECT_EQ(rest.size(), queued);
  EXPECT_EQ(q->qlen(), 0u);
  EXPECT_EQ(q->backlog(), 0u);
  EXPECT_EQ(q->qavg(), 0u);
  EXPECT_EQ(q->stats().drops, dropped);  // handed back, not dropped
  f.put(rest);
}

}  // namespace
}  // namespace txpath
