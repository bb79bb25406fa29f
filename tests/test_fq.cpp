// SPDX-License-Identifier: MIT
// Unit tests for fq (src/qdisc/fq.hpp): tc option grammar, tc's text for options and xstats,
// kernel refusals vs parse errors, and the behaviour on a simulated clock (QdiscEnv::clock):
// pacing at len/rate or max(len, quantum)/rate in exact nanoseconds, EDT, horizon, limits, DRR
// fairness, band WRR, gc, and a random model test of accounting and of the watchdog.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "qdisc/fq.hpp"
#include "txpath/error.hpp"
#include "txpath/packet.hpp"
#include "support/packet_arena.hpp"
#include "txpath/qdisc.hpp"
#include "txpath/tc.hpp"

namespace txpath {
namespace {

uint64_t g_now = 0;
uint64_t fake_clock() { return g_now; }

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kT0 = 1'000'000'000'000;  // simulated start: 1000 s

QdiscEnv fake_env() {
  QdiscEnv env;
  env.clock = &fake_clock;
  return env;
}

std::unique_ptr<FqQdisc> make(const std::string& opts) {
  g_now = kT0;
  std::unique_ptr<Qdisc> q = make_qdisc("fq " + opts, fake_env());
  auto* f = dynamic_cast<FqQdisc*>(q.get());
  if (!f) return nullptr;
  q.release();
  return std::unique_ptr<FqQdisc>(f);
}

std::string text(const std::string& opts) { return txpath::tc::options_text(*make_qdisc("fq " + opts, fake_env())); }

const std::string kDefault =
    "limit 10000p flow_limit 100p buckets 1024 orphan_mask 1023 bands 3 priomap 1 2 2 2 1 2 0 0 "
    "1 1 1 1 1 1 1 1 weights 589824 196608 65536 quantum 3028b initial_quantum 15140b "
    "low_rate_threshold 550Kbit refill_delay 40ms timer_slack 10us horizon 10s horizon_drop";

std::string with(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  if (at == std::string::npos) return "<" + from + " not in defaults>";
  return s.replace(at, from.size(), to);
}

// Packets backed by local buffers, recycled through a free list.
class Packets : public test::PacketArena {
 public:
  using PacketArena::PacketArena;
  Packet* get(uint32_t len, uint32_t flow, uint64_t pacing_rate = 0, uint64_t tstamp = 0,
              uint32_t priority = 0) {
    Packet* p = take(len);
    if (!p) return nullptr;
    p->flow_hash = flow;
    p->pacing_rate = pacing_rate;
    p->tstamp_ns = tstamp;
    p->priority = priority;
    return p;
  }
};

// Dequeues until `n` packets left, following the watchdog whenever nothing is eligible (the
// driver loop's behaviour). Returns the departure time of each packet; fails the test if the
// qdisc ever holds packets with nothing eligible and no watchdog time in the future.
struct Departure {
  uint64_t t;
  uint32_t flow;
  uint32_t len;
};
std::vector<Departure> drain(FqQdisc& q, Packets& pk, std::size_t n) {
  std::vector<Departure> out;
  for (std::size_t guard = 0; out.size() < n && guard < 100000; ++guard) {
    Packet* p = q.dequeue();
    if (p) {
      EXPECT_GE(g_now, p->tstamp_ns) << "left before its EDT";
      out.push_back({g_now, p->flow_hash, p->len});
      pk.put(p);
      continue;
    }
    const uint64_t w = q.watchdog_ns();
    if (w <= g_now) {
      ADD_FAILURE() << "stranded: qlen " << q.qlen() << " watchdog " << w << " now " << g_now;
      break;
    }
    g_now = w;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Options

TEST(FqSpec, DefaultsPrintLikeTc) {
  EXPECT_EQ(text(""), kDefault);
  EXPECT_EQ(txpath::tc::options_json(*make_qdisc("fq", fake_env())),
            "{\"limit\":10000,\"flow_limit\":100,\"buckets\":1024,\"orphan_mask\":1023,"
            "\"bands\":3,\"priomap \":[1,2,2,2,1,2,0,0,1,1,1,1,1,1,1,1],"
            "\"weights \":[589824,196608,65536],\"quantum\":3028,\"initial_quantum\":15140,"
            "\"low_rate_threshold\":68750,\"refill_delay\":40000,\"timer_slack\":10000,"
            "\"horizon\":10000000,\"horizon_drop\":null}");
  auto q = make("");
  const FqConfig& c = q->config();
  EXPECT_EQ(c.maxrate, FqConfig::kUnlimited);
  EXPECT_TRUE(c.pacing);
  EXPECT_EQ(c.ce_threshold_us, FqConfig::kUnlimited);
  // Defaults follow the device MTU (2 and 10 psched_mtu).
  QdiscEnv jumbo = fake_env();
  jumbo.mtu = 9000;
  EXPECT_EQ(txpath::tc::options_text(*make_qdisc("fq", jumbo)),
            with(with(kDefault, "quantum 3028b", "quantum 18028b"), "initial_quantum 15140b",
                 "initial_quantum 90140b"));
}

TEST(FqSpec, EachOptionPrintsLikeTc) {
  EXPECT_EQ(text("limit 3000"), with(kDefault, "limit 10000p", "limit 3000p"));
  EXPECT_EQ(text("flow_limit 300"), with(kDefault, "flow_limit 100p", "flow_limit 300p"));
  EXPECT_EQ(text("quantum 9000"), with(kDefault, "quantum 3028b", "quantum 9000b"));
  EXPECT_EQ(text("initial_quantum 900000"),
            with(kDefault, "initial_quantum 15140b", "initial_quantum 900000b"));
  EXPECT_EQ(text("maxrate 100000"),
            with(kDefault, "15140b low", "15140b maxrate 100Kbit low"));
  EXPECT_EQ(text("nopacing"), with(kDefault, "1023 bands", "1023 nopacing bands"));
  EXPECT_EQ(text("pacing"), kDefault);
  EXPECT_EQ(text("refill_delay 100ms"), with(kDefault, "refill_delay 40ms", "refill_delay 100ms"));
  EXPECT_EQ(text("low_rate_threshold 10000"),
            with(kDefault, "low_rate_threshold 550Kbit", "low_rate_threshold 10Kbit"));
  EXPECT_EQ(text("low_rate_threshold 0"), with(kDefault, " low_rate_threshold 550Kbit", ""));
  EXPECT_EQ(text("orphan_mask 255"), with(kDefault, "orphan_mask 1023", "orphan_mask 255"));
  EXPECT_EQ(text("timer_slack 100"), with(kDefault, "timer_slack 10us", "timer_slack 100ns"));
  EXPECT_EQ(text("timer_slack 2ms"), with(kDefault, "timer_slack 10us", "timer_slack 2ms"));
  EXPECT_EQ(text("timer_slack 1500ns"), with(kDefault, "timer_slack 10us", "timer_slack 1.5us"));
  EXPECT_EQ(text("ce_threshold 100"), with(kDefault, "40ms timer", "40ms ce_threshold 100us timer"));
  EXPECT_EQ(text("horizon 100"), with(kDefault, "horizon 10s", "horizon 100us"));
  EXPECT_EQ(text("horizon_cap"), with(kDefault, "horizon_drop", "horizon_cap"));
  EXPECT_EQ(text("horizon_cap horizon_drop"), kDefault);
  EXPECT_EQ(text("buckets 1000"), with(kDefault, "buckets 1024", "buckets 1024"));
  EXPECT_EQ(text("buckets 2"), with(kDefault, "buckets 1024", "buckets 2"));
  EXPECT_EQ(text("buckets 262144"), with(kDefault, "buckets 1024", "buckets 262144"));
  EXPECT_EQ(text("buckets 0"), kDefault);  // tc sends nothing for 0
  EXPECT_EQ(text("bands 3 priomap 0 0 0 0 0 0 0 0 1 1 1 1 2 2 2 2 weights 16384 20000 30000"),
            with(with(kDefault, "1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1", "0 0 0 0 0 0 0 0 1 1 1 1 2 2 2 2"),
                 "589824 196608 65536", "16384 20000 30000"));
  // get_unsigned base 0: hex and octal.
  EXPECT_EQ(text("limit 0x10 flow_limit 010"),
            with(with(kDefault, "limit 10000p", "limit 16p"), "flow_limit 100p", "flow_limit 8p"));
  EXPECT_EQ(text("initial_quantum 0x7fffffff"),
            with(kDefault, "initial_quantum 15140b", "initial_quantum 2048Mb"));
  const std::string json = txpath::tc::options_json(*make_qdisc("fq nopacing maxrate 1mbit ce_threshold 2ms horizon_cap",
                                      fake_env()));
  EXPECT_NE(json.find("\"orphan_mask\":1023,\"pacing\":false,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"maxrate\":125000,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"ce_threshold\":2000,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"horizon_cap\":null}"), std::string::npos) << json;
}

// Returns the exception's message and whether it was a kernel refusal; fails if none is thrown.
struct Thrown {
  std::string msg;
  bool rejected = false;
  bool thrown = false;
};
Thrown thrown_by(const std::string& spec) {
  Thrown t;
  try {
    make_qdisc(spec, fake_env());
  } catch (const ConfigRejected& e) {
    t = {e.what(), true, true};
  } catch (const ConfigError& e) {
    t = {e.what(), false, true};
  }
  return t;
}

void expect_refused(const std::string& spec, bool rejected, const std::string& needle) {
  const Thrown t = thrown_by(spec);
  ASSERT_TRUE(t.thrown) << "no error for " << spec;
  EXPECT_EQ(t.rejected, rejected) << spec << ": " << t.msg;
  EXPECT_EQ(t.msg.find('\n'), std::string::npos) << t.msg;
  EXPECT_EQ(t.msg.rfind("qdisc \"", 0), 0u) << t.msg;
  EXPECT_NE(t.msg.find(needle), std::string::npos) << t.msg;
}

TEST(FqSpec, KernelRefusalsAreRejected) {
  expect_refused("fq initial_quantum 0x80000000", true, "invalid initial_quantum \"0x80000000\"");
  expect_refused("fq quantum 0", true, "invalid quantum");
  expect_refused("fq quantum 1048577", true, "invalid quantum");
  EXPECT_FALSE(thrown_by("fq quantum 1048576").thrown);
  expect_refused("fq buckets 1", true, "invalid buckets \"1\"");
  expect_refused("fq buckets 262145", true, "invalid buckets");
  expect_refused("fq buckets 0xffffffff", true, "invalid buckets");
}

TEST(FqSpec, ParseErrorsFail) {
  expect_refused("fq foorbar", false, "unknown option \"foorbar\"");
  expect_refused("fq limit", false, "Command line is not complete. Try option \"help\"");
  expect_refused("fq limit foo-bar", false, "invalid limit \"foo-bar\"");
  expect_refused("fq limit -1", false, "invalid limit");
  expect_refused("fq limit 4294967296", false, "invalid limit");
  expect_refused("fq limit 0x", false, "invalid limit");
  expect_refused("fq flow_limit 09", false, "invalid flow_limit");  // octal
  expect_refused("fq maxrate 1xyz", false, "invalid maxrate");
  expect_refused("fq maxrate 40gbit", false, "out of range");
  expect_refused("fq refill_delay 5parsecs", false, "invalid refill_delay");
  expect_refused("fq timer_slack 1ps", false, "invalid timer_slack");
  expect_refused("fq timer_slack 5s", false, "timer_slack \"5s\" is out of range");
  expect_refused("fq bands 2 priomap 0 1", false, "\"bands\" must be 3");
  expect_refused("fq bands 3 weights", false, "\"priomap\" expected");
  expect_refused("fq bands 3 priomap 1 2", false, "not enough elements in priomap");
  expect_refused("fq bands 3 priomap 1 2 3 0 0 0 0 0 0 0 0 0 0 0 0 0", false, "too big");
  expect_refused("fq weights 1 2 3", false, "too small");
  expect_refused("fq weights 20000 20000", false, "not enough elements in weights");
  expect_refused("fq defrate 1mbit", false, "unknown option \"defrate\"");
  expect_refused(std::string("fq limit 1\x01"), false, "\\x01");
}

// ---------------------------------------------------------------------------------------------
// Pacing (docs/background.md, "fq pacing"): exact inter-departure times on the simulated clock.

// One flow of `n` packets of `len` bytes, all enqueued at kT0; returns departure offsets from kT0.
std::vector<uint64_t> paced(const std::string& opts, uint32_t len, uint64_t pacing_rate,
                            std::size_t n = 12) {
  auto q = make(opts);
  Packets pk(n);
  PacketList to_free;
  for (std::size_t i = 0; i < n; ++i)
    EXPECT_EQ(q->enqueue(pk.get(len, 7, pacing_rate), to_free), Verdict::success);
  std::vector<uint64_t> out;
  for (const Departure& d : drain(*q, pk, n)) out.push_back(d.t - kT0);
  EXPECT_EQ(out.size(), n);
  EXPECT_EQ(q->qlen(), 0u);
  return out;
}

TEST(FqPacing, AboveThresholdPacesMaxLenQuantumOnceCreditIsSpent) {
  // 1e6 B/s (> 68750): 1500 B >= quantum 1000 -> 1.5 ms per packet after the initial 3000 B.
  const auto d = paced("quantum 1000 initial_quantum 3000", 1500, 1'000'000);
  ASSERT_EQ(d.size(), 12u);
  EXPECT_EQ(d[0], 0u);
  EXPECT_EQ(d[1], 0u);  // initial credit: two packets at once
  for (std::size_t k = 2; k < d.size(); ++k) EXPECT_EQ(d[k], (k - 1) * 1'500'000) << k;
}

TEST(FqPacing, SmallPacketsGoInQuantumSizedBursts) {
  // 1000 B < quantum 3000: a packet that spends the credit is paced by quantum/rate = 3 ms, so
  // packets leave in threes every 3 ms (max(len, quantum)/rate).
  const auto d = paced("quantum 3000 initial_quantum 3000", 1000, 1'000'000);
  for (std::size_t k = 0; k < d.size(); ++k) EXPECT_EQ(d[k], (k / 3) * 3 * kMs) << k;
}

TEST(FqPacing, BelowLowRateThresholdEveryPacketIsPacedByLen) {
  // 50000 B/s <= 68750: credit is zeroed, every packet waits len/rate = 20 ms.
  const auto d = paced("", 1000, 50'000);
  for (std::size_t k = 0; k < d.size(); ++k) EXPECT_EQ(d[k], k * 20 * kMs) << k;
  // Raising the threshold below the rate restores the credit: 15140 B initial quantum first.
  const auto e = paced("low_rate_threshold 10000", 1000, 50'000, 20);
  for (std::size_t k = 0; k < 16; ++k) EXPECT_EQ(e[k], 0u) << k;  // credit 15140 -> -860
  EXPECT_EQ(e[16], 3028 * kMs / 50);  // max(1000, 3028)/50000 s = 60.56 ms
}

TEST(FqPacing, MaxrateAppliesToUnpacedFlowsAndCapsTheSocketRate) {
  // maxrate 8mbit = 1e6 B/s, no socket rate: as above.
  auto d = paced("maxrate 8mbit quantum 1000 initial_quantum 3000", 1500, 0);
  for (std::size_t k = 2; k < d.size(); ++k) EXPECT_EQ(d[k], (k - 1) * 1'500'000) << k;
  // A faster socket is capped at maxrate; a slower one keeps its own rate.
  d = paced("maxrate 8mbit quantum 1000 initial_quantum 3000", 1500, 5'000'000);
  for (std::size_t k = 2; k < d.size(); ++k) EXPECT_EQ(d[k], (k - 1) * 1'500'000) << k;
  d = paced("maxrate 8mbit quantum 1000 initial_quantum 3000", 1500, 500'000);
  for (std::size_t k = 2; k < d.size(); ++k) EXPECT_EQ(d[k], (k - 1) * 3'000'000) << k;
  // maxrate below the threshold: per packet, len/rate (400kbit = 50000 B/s).
  d = paced("maxrate 400kbit", 1000, 0);
  for (std::size_t k = 0; k < d.size(); ++k) EXPECT_EQ(d[k], k * 20 * kMs) << k;
}

TEST(FqPacing, UnpacedAndNopacingLeaveAtOnce) {
  for (const Departure& d : [] {
         auto q = make("");
         Packets pk(50);
         PacketList to_free;
         for (int i = 0; i < 50; ++i) q->enqueue(pk.get(1500, 1, 0), to_free);
         return drain(*q, pk, 50);
       }())
    EXPECT_EQ(d.t, kT0);
  const auto d = paced("nopacing maxrate 8kbit", 1500, 1000);
  for (uint64_t t : d) EXPECT_EQ(t, 0u);
}

TEST(FqPacing, DelayIsCappedAtOneSecond) {
  auto q = make("maxrate 8kbit");  // 1000 B/s: 1500 B would take 1.5 s
  Packets pk(3);
  PacketList to_free;
  for (int i = 0; i < 3; ++i) q->enqueue(pk.get(1500, 1), to_free);
  const auto d = drain(*q, pk, 3);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[1].t - d[0].t, 1'000'000'000u);
  EXPECT_EQ(d[2].t - d[1].t, 1'000'000'000u);
  EXPECT_EQ(q->detail_xstats().pkts_too_long, 3u);
}

TEST(FqPacing, LateDequeueEarnsBackUpToHalfTheDelay) {
  auto q = make("maxrate 400kbit");  // 50000 B/s, 1000 B -> 20 ms per packet
  Packets pk(4);
  PacketList to_free;
  for (int i = 0; i < 4; ++i) q->enqueue(pk.get(1000, 9), to_free);
  FqQdisc::FlowView v{};
  pk.put(q->dequeue());
  ASSERT_TRUE(q->flow_view(9, v));
  EXPECT_EQ(v.time_next_packet, kT0 + 20 * kMs);
  g_now = kT0 + 25 * kMs;  // 5 ms late
  pk.put(q->dequeue());
  ASSERT_TRUE(q->flow_view(9, v));
  EXPECT_EQ(v.time_next_packet, g_now + 15 * kMs);
  g_now += 15 * kMs + 50 * kMs;  // 50 ms late: at most half (10 ms) is earned back
  pk.put(q->dequeue());
  ASSERT_TRUE(q->flow_view(9, v));
  EXPECT_EQ(v.time_next_packet, g_now + 10 * kMs);
}

// ---------------------------------------------------------------------------------------------
// EDT and horizon

TEST(FqEdt, PacketsLeaveAtTheirTimestampInTimeOrder) {
  auto q = make("");
  Packets pk(4);
  PacketList to_free;
  const uint64_t ts[] = {kT0 + 5 * kMs, kT0 + 2 * kMs, kT0 + 8 * kMs, kT0 + 2 * kMs};
  for (uint64_t t : ts) ASSERT_EQ(q->enqueue(pk.get(100 + (t - kT0) / kMs, 3, 0, t), to_free),
                                  Verdict::success);
  EXPECT_EQ(q->dequeue(), nullptr);
  EXPECT_EQ(q->watchdog_ns(), kT0 + 2 * kMs);
  EXPECT_EQ(q->detail_xstats().throttled_flows, 1u);
  const auto d = drain(*q, pk, 4);
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0].t, kT0 + 2 * kMs);
  EXPECT_EQ(d[1].t, kT0 + 2 * kMs);
  EXPECT_EQ(d[2].t, kT0 + 5 * kMs);
  EXPECT_EQ(d[3].t, kT0 + 8 * kMs);
  EXPECT_EQ(q->watchdog_ns(), 0u);
}

TEST(FqEdt, PastTimestampsLeaveNowAndMaxrateStillApplies) {
  auto q = make("maxrate 8mbit");  // 1e6 B/s; EDT packets are paced by len/maxrate
  Packets pk(3);
  PacketList to_free;
  for (int i = 0; i < 3; ++i) q->enqueue(pk.get(1000, 3, 0, kT0 - 1), to_free);
  const auto d = drain(*q, pk, 3);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].t, kT0);
  EXPECT_EQ(d[1].t, kT0 + kMs);
  EXPECT_EQ(d[2].t, kT0 + 2 * kMs);
}

TEST(FqEdt, HorizonDropsOrCaps) {
  auto q = make("horizon 1000");  // 1 ms
  Packets pk(4);
  PacketList to_free;
  EXPECT_EQ(q->enqueue(pk.get(100, 1, 0, kT0 + kMs + 1), to_free), Verdict::drop);
  EXPECT_EQ(to_free.size(), 1u);
  EXPECT_EQ(q->enqueue(pk.get(100, 1, 0, kT0 + kMs), to_free), Verdict::success);
  EXPECT_EQ(q->detail_xstats().horizon_drops, 1u);
  EXPECT_EQ(q->stats().drops, 1u);
  pk.put(to_free);

  auto c = make("horizon 1000 horizon_cap");
  Packet* p = pk.get(100, 1, 0, kT0 + 10 * kMs);
  EXPECT_EQ(c->enqueue(p, to_free), Verdict::success);
  EXPECT_EQ(p->tstamp_ns, kT0 + kMs);
  EXPECT_EQ(c->detail_xstats().horizon_caps, 1u);
  const auto d = drain(*c, pk, 1);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].t, kT0 + kMs);
  EXPECT_EQ(c->stats().drops, 0u);
  q->reset(to_free);
  pk.put(to_free);
}

// ---------------------------------------------------------------------------------------------
// Limits

TEST(FqLimits, FlowLimitDropsThe101stPacketOfAFlow) {
  auto q = make("");
  Packets pk(200);
  PacketList to_free;
  for (int i = 0; i < 100; ++i) ASSERT_EQ(q->enqueue(pk.get(100, 5), to_free), Verdict::success);
  EXPECT_EQ(q->enqueue(pk.get(100, 5), to_free), Verdict::drop);
  EXPECT_EQ(q->enqueue(pk.get(100, 6), to_free), Verdict::success);  // another flow is fine
  EXPECT_EQ(q->detail_xstats().flows_plimit, 1u);
  EXPECT_EQ(q->stats().drops, 1u);
  EXPECT_EQ(q->qlen(), 101u);
  EXPECT_EQ(to_free.size(), 1u);
  pk.put(to_free);
  q->reset(to_free);
  pk.put(to_free);
}

TEST(FqLimits, LimitCountsPacketsPerBand) {
  auto q = make("limit 5");
  Packets pk(20);
  PacketList to_free;
  for (uint32_t i = 0; i < 5; ++i) ASSERT_EQ(q->enqueue(pk.get(100, i), to_free), Verdict::success);
  EXPECT_EQ(q->enqueue(pk.get(100, 99), to_free), Verdict::drop);  // band 1 full
  EXPECT_EQ(q->enqueue(pk.get(100, 99, 0, 0, 6), to_free), Verdict::success);  // band 0
  const FqXstats x = q->detail_xstats();
  EXPECT_EQ(x.band_drops[1], 1u);
  EXPECT_EQ(x.band_pkts[0], 1u);
  EXPECT_EQ(x.band_pkts[1], 5u);
  pk.put(to_free);
  q->reset(to_free);
  pk.put(to_free);
}

// ---------------------------------------------------------------------------------------------
// Scheduling

std::string order_of(FqQdisc& q, Packets& pk, std::size_t n) {
  std::string s;
  for (const Departure& d : drain(q, pk, n)) s += static_cast<char>('A' + d.flow);
  return s;
}

TEST(FqSchedule, BulkFlowsShareByQuantum) {
  auto q = make("quantum 3000 initial_quantum 3000");
  Packets pk(24);
  PacketList to_free;
  for (int i = 0; i < 12; ++i) {
    q->enqueue(pk.get(1000, 0), to_free);
    q->enqueue(pk.get(1000, 1), to_free);
  }
  EXPECT_EQ(order_of(*q, pk, 24), "AAABBBAAABBBAAABBBAAABBB");

  // Byte fairness with unequal packet sizes: in every prefix, served bytes differ by at most
  // quantum + the largest packet.
  auto r = make("quantum 1500 initial_quantum 1500 flow_limit 1000");
  Packets pk2(400);
  for (int i = 0; i < 100; ++i) r->enqueue(pk2.get(1500, 0), to_free);
  for (int i = 0; i < 300; ++i) r->enqueue(pk2.get(500, 1), to_free);
  int64_t a = 0, b = 0;
  for (const Departure& d : drain(*r, pk2, 300)) {
    (d.flow == 0 ? a : b) += d.len;
    EXPECT_LE(std::abs(a - b), 3000) << a << " " << b;
  }
}

TEST(FqSchedule, NewFlowGoesBeforeTheBulkFlow) {
  auto q = make("quantum 1000 initial_quantum 1000");
  Packets pk(20);
  PacketList to_free;
  for (int i = 0; i < 10; ++i) q->enqueue(pk.get(1000, 0), to_free);
  pk.put(q->dequeue());
  pk.put(q->dequeue());
  q->enqueue(pk.get(100, 2), to_free);
  Packet* p = q->dequeue();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->flow_hash, 2u);
  pk.put(p);
  q->reset(to_free);
  pk.put(to_free);
}

TEST(FqSchedule, BandsAreServedByWeight) {
  // 1024-byte packets: band credits 589824 / 196608 / 65536 = 576 / 192 / 64 packets per round.
  auto q = make("flow_limit 2000");
  Packets pk(3600);
  PacketList to_free;
  const uint32_t prio_of_band[] = {6, 0, 2};  // pfifo_fast map: bands 0, 1, 2
  for (int i = 0; i < 1200; ++i)
    for (uint32_t b = 0; b < 3; ++b)
      ASSERT_EQ(q->enqueue(pk.get(1024, b, 0, 0, prio_of_band[b]), to_free), Verdict::success);
  std::string runs;
  uint32_t last = 99, count = 0;
  for (const Departure& d : drain(*q, pk, 2 * 832)) {
    if (d.flow != last && count) {
      runs += std::to_string(last) + "x" + std::to_string(count) + " ";
      count = 0;
    }
    last = d.flow;
    ++count;
  }
  runs += std::to_string(last) + "x" + std::to_string(count);
  EXPECT_EQ(runs, "0x576 1x192 2x64 0x576 1x192 2x64");
  q->reset(to_free);
  pk.put(to_free);
}

// ---------------------------------------------------------------------------------------------
// Flow table

TEST(FqFlows, IdleDetachedFlowsAreCollectedAfterThreeSeconds) {
  auto q = make("buckets 2");  // gc once flows >= 4 and more than half are inactive
  Packets pk(20);
  PacketList to_free;
  for (uint32_t f = 0; f < 10; ++f) q->enqueue(pk.get(100, f), to_free);
  EXPECT_EQ(drain(*q, pk, 10).size(), 10u);
  EXPECT_EQ(q->dequeue(), nullptr);  // walks the empty flows: all detached now
  FqXstats x = q->detail_xstats();
  EXPECT_EQ(x.flows, 10u);
  EXPECT_EQ(x.inactive_flows, 10u);
  g_now += 2 * 1'000'000'000ull;
  q->enqueue(pk.get(100, 100), to_free);
  EXPECT_EQ(q->detail_xstats().gc_flows, 0u);  // not old enough
  g_now += 2 * 1'000'000'000ull;
  q->enqueue(pk.get(100, 101), to_free);
  x = q->detail_xstats();
  EXPECT_EQ(x.gc_flows, 8u);  // at most 8 per lookup
  EXPECT_EQ(x.flows, 4u);     // 10 + 2 - 8
  q->reset(to_free);
  pk.put(to_free);
}

TEST(FqFlows, ManyShortFlowsNeverRunOutOfSlots) {
  // limit 2 and buckets 2: a pool of 6 + 4 + 1 slots; new flows keep arriving while empty flows
  // wait on the old lists. The idle ones are reclaimed; nothing is dropped.
  auto q = make("limit 2 buckets 2");
  ASSERT_EQ(q->pool_size(), 11u);
  Packets pk(8);
  PacketList to_free;
  for (uint32_t f = 0; f < 1000; ++f) {
    ASSERT_EQ(q->enqueue(pk.get(100, f), to_free), Verdict::success) << f;
    Packet* p = q->dequeue();
    ASSERT_NE(p, nullptr);
    pk.put(p);
  }
  const FqXstats x = q->detail_xstats();
  EXPECT_EQ(x.allocation_errors, 0u);
  EXPECT_GT(x.gc_flows, 900u);
  EXPECT_LE(x.flows, 11u);
  EXPECT_EQ(q->stats().drops, 0u);
}

TEST(FqFlows, RefillDelayRestoresAQuantumToAnIdleFlow) {
  auto q = make("quantum 1000 initial_quantum 1000 nopacing");
  Packets pk(8);
  PacketList to_free;
  q->enqueue(pk.get(1500, 4), to_free);
  drain(*q, pk, 1);
  // The empty flow is refilled once (-500 + 1000) on its way to the old list, then detached.
  EXPECT_EQ(q->dequeue(), nullptr);
  FqQdisc::FlowView v{};
  ASSERT_TRUE(q->flow_view(4, v));
  EXPECT_EQ(v.credit, 500);
  g_now = kT0 + 40 * kMs;  // not longer than refill_delay: no refill
  q->enqueue(pk.get(100, 4), to_free);
  ASSERT_TRUE(q->flow_view(4, v));
  EXPECT_EQ(v.credit, 500);
  drain(*q, pk, 1);
  EXPECT_EQ(q->dequeue(), nullptr);
  ASSERT_TRUE(q->flow_view(4, v));
  const int64_t credit = v.credit;
  g_now += 40 * kMs + 1;
  q->enqueue(pk.get(100, 4), to_free);
  ASSERT_TRUE(q->flow_view(4, v));
  EXPECT_EQ(v.credit, std::max<int64_t>(credit, 1000));
  q->reset(to_free);
  pk.put(to_free);
}

// ---------------------------------------------------------------------------------------------
// CE marking, peek, reset, xstats text

// An IPv4 frame with ECT(0), header checksum filled in.
void write_ipv4_ect0(Packet& p) {
  std::fill(p.data, p.data + 34, std::byte{0});
  p.data[12] = std::byte{0x08};
  p.data[14] = std::byte{0x45};
  p.data[15] = std::byte{0x02};
  uint32_t sum = 0;
  for (int i = 14; i < 34; i += 2)
    sum += std::to_integer<uint32_t>(p.data[i]) << 8 | std::to_integer<uint32_t>(p.data[i + 1]);
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  const auto hc = static_cast<uint16_t>(~sum);
  p.data[24] = std::byte{static_cast<uint8_t>(hc >> 8)};
  p.data[25] = std::byte{static_cast<uint8_t>(hc & 0xFF)};
}

bool ipv4_checksum_ok(const Packet& p) {
  uint32_t sum = 0;
  for (int i = 14; i < 34; i += 2)
    sum += std::to_integer<uint32_t>(p.data[i]) << 8 | std::to_integer<uint32_t>(p.data[i + 1]);
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return sum == 0xFFFF;
}

TEST(FqCe, PacketsLateByMoreThanCeThresholdAreMarked) {
  auto q = make("ce_threshold 1000");  // 1 ms
  Packets pk(2);
  PacketList to_free;
  Packet* a = pk.get(100, 1);
  Packet* b = pk.get(100, 2);
  write_ipv4_ect0(*a);
  write_ipv4_ect0(*b);
  q->enqueue(a, to_free);
  g_now += kMs;  // exactly ce_threshold late: not marked
  EXPECT_EQ(q->dequeue(), a);
  EXPECT_EQ(std::to_integer<int>(a->data[15]) & 3, 2);
  q->enqueue(b, to_free);
  g_now += kMs + 1;
  EXPECT_EQ(q->dequeue(), b);
  EXPECT_EQ(std::to_integer<int>(b->data[15]) & 3, 3);
  EXPECT_TRUE(ipv4_checksum_ok(*b));
  EXPECT_EQ(q->detail_xstats().ce_mark, 1u);
}

TEST(Fq, PeekedPacketIsTheNextDequeuedAndResetReturnsEverything) {
  auto q = make("");
  Packets pk(10);
  PacketList to_free;
  for (uint32_t i = 0; i < 5; ++i) q->enqueue(pk.get(100 + i, i % 2, 0, i == 4 ? kT0 + kMs : 0), to_free);
  Packet* p = q->peek();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(q->peek(), p);
  EXPECT_EQ(q->qlen(), 5u);
  EXPECT_EQ(q->dequeue(), p);
  EXPECT_EQ(q->qlen(), 4u);
  pk.put(p);
  EXPECT_NE(q->peek(), nullptr);
  q->reset(to_free);
  EXPECT_EQ(to_free.size(), 4u);
  EXPECT_EQ(q->qlen(), 0u);
  EXPECT_EQ(q->backlog(), 0u);
  EXPECT_EQ(q->stats().drops, 0u);
  EXPECT_EQ(q->detail_xstats().flows, 0u);
  EXPECT_EQ(q->watchdog_ns(), 0u);
  pk.put(to_free);
  EXPECT_EQ(pk.free_count(), 10u);
}

TEST(FqXstats, PrintLikeTc) {
  auto q = make("horizon 1000");
  EXPECT_EQ(txpath::tc::xstats_text(*q, q->xstats()),
            "  flows 0 (inactive 0 throttled 0) band0_pkts 0 band1_pkts 0 band2_pkts 0\n"
            "  gc 0 highprio 0 throttled 0\n");
  Packets pk(200);
  PacketList to_free;
  q->enqueue(pk.get(100, 7, 0, kT0 + kMs), to_free);  // EDT: throttled by the first dequeue
  for (int i = 0; i < 101; ++i) q->enqueue(pk.get(100, 5), to_free);
  q->enqueue(pk.get(100, 6, 0, kT0 + 10 * kMs), to_free);  // beyond the horizon
  EXPECT_EQ(q->dequeue()->flow_hash, 5u);
  q->enqueue(pk.get(100, 8), to_free);
  const Xstats x = q->xstats();
  EXPECT_EQ(x.front().first, "flows");
  EXPECT_EQ(txpath::tc::xstats_text(*q, x),
            "  flows 3 (inactive 0 throttled 1) band0_pkts 0 band1_pkts 101 band2_pkts 0"
            " next_packet_delay 1ms\n"
            "  gc 0 highprio 0 throttled 1 flows_plimit 1\n"
            " horizon_drops 1\n");
  pk.put(to_free);
  q->reset(to_free);
  pk.put(to_free);
}

// ---------------------------------------------------------------------------------------------
// Random model test: conservation, accounting, EDT respected, per-flow order, nothing stranded.

TEST(Fq, RandomTrafficKeepsAccountingAndNeverStrands) {
  for (const char* opts : {"", "limit 50 flow_limit 10 quantum 1000 initial_quantum 2000",
                           "maxrate 10mbit buckets 4 limit 20 horizon 5000 horizon_cap",
                           "nopacing low_rate_threshold 1mbit flow_limit 5"}) {
    SCOPED_TRACE(opts);
    auto q = make(opts);
    Packets pk(400);
    std::mt19937_64 rng(42);
    PacketList to_free;
    uint64_t enq = 0, deq = 0, dropped = 0, bytes_in = 0, bytes_out = 0;
    std::map<uint32_t, uint64_t> last_tts;  // per flow: time_to_send of its last departure
    std::map<const Packet*, uint64_t> seq;  // arrival sequence, for per-flow order among equals
    std::map<uint32_t, uint64_t> last_seq;
    uint64_t next_seq = 0;
    for (int step = 0; step < 20000; ++step) {
      const int op = static_cast<int>(rng() % 10);
      if (op < 5 && pk.free_count() > 0) {
        const uint32_t flow = static_cast<uint32_t>(rng() % 40);
        const uint64_t rate = (rng() % 3 == 0) ? 0 : 20'000 + rng() % 2'000'000;
        const uint64_t ts = (rng() % 4 == 0) ? g_now + rng() % (20 * kMs) : 0;
        const auto len = static_cast<uint32_t>(60 + rng() % 1440);
        Packet* p = pk.get(len, flow, rate, ts, static_cast<uint32_t>(rng() % 16));
        seq[p] = next_seq++;
        const Verdict v = q->enqueue(p, to_free);
        ++enq;
        if (v == Verdict::success) bytes_in += len;
        else ++dropped;
        while (Packet* f = to_free.pop_front()) {
          seq.erase(f);
          pk.put(f);
        }
      } else if (op < 9) {
        Packet* p = q->dequeue();
        if (p) {
          ++deq;
          bytes_out += p->len;
          EXPECT_GE(g_now, p->enqueue_ns);  // time_to_send
          EXPECT_GE(g_now, p->tstamp_ns);
          // In a flow, packets leave in time_to_send order, arrival order among equal times.
          auto [it, fresh] = last_tts.try_emplace(p->flow_hash, p->enqueue_ns);
          if (!fresh) {
            EXPECT_GE(p->enqueue_ns, it->second);
            if (p->enqueue_ns == it->second) {
              EXPECT_GT(seq[p], last_seq[p->flow_hash]);
            }
            it->second = p->enqueue_ns;
          }
          last_seq[p->flow_hash] = seq[p];
          seq.erase(p);
          pk.put(p);
        } else if (q->qlen() > 0) {
          const uint64_t w = q->watchdog_ns();
          ASSERT_GT(w, g_now) << "held packets, nothing eligible, no watchdog";
          if (rng() % 2) g_now = w;
        }
      } else {
        g_now += rng() % (2 * kMs);
      }
      ASSERT_EQ(enq, deq + dropped + q->qlen());
      ASSERT_EQ(bytes_in, bytes_out + q->backlog());
      const QdiscStats s = q->stats();
      ASSERT_EQ(s.drops, dropped);
      ASSERT_EQ(s.packets, deq);
      const FqXstats x = q->detail_xstats();
      ASSERT_EQ(uint64_t{x.band_pkts[0]} + x.band_pkts[1] + x.band_pkts[2], q->qlen());
      ASSERT_LE(x.flows - x.inactive_flows, q->qlen());
      ASSERT_LE(x.throttled_flows, x.flows);
      ASSERT_LE(x.flows, q->pool_size());
      ASSERT_EQ(x.allocation_errors, 0u);
    }
    // Everything still queued leaves by following the watchdog.
    const std::size_t held = q->qlen();
    EXPECT_EQ(drain(*q, pk, held).size(), held);
    EXPECT_EQ(q->qlen(), 0u);
    EXPECT_EQ(pk.free_count(), 400u);
  }
}

}  // namespace
}  // namespace txpath
