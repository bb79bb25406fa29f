// SPDX-License-Identifier: MIT
// Unit tests for the tbf shaper (src/qdisc/tbf.hpp): tc option grammar and errors, tc's text for
// the options, and the shaping behaviour on a simulated clock (QdiscEnv::clock).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "qdisc/tbf.hpp"
#include "txpath/error.hpp"
#include "txpath/packet.hpp"
#include "support/packet_arena.hpp"
#include "txpath/qdisc.hpp"
#include "txpath/tc.hpp"

namespace txpath {
namespace {

// The simulated clock every tbf in these tests reads.
uint64_t g_now = 0;
uint64_t fake_clock() { return g_now; }

QdiscEnv fake_env() {
  QdiscEnv env;
  env.clock = &fake_clock;
  return env;
}

std::unique_ptr<TbfQdisc> make(const std::string& opts, uint64_t start = 0) {
  g_now = start;
  std::unique_ptr<Qdisc> q = make_qdisc("tbf " + opts, fake_env());
  auto* t = dynamic_cast<TbfQdisc*>(q.get());
  if (!t) return nullptr;
  q.release();
  return std::unique_ptr<TbfQdisc>(t);
}

// Packets backed by local buffers, recycled through a free list.
class Packets : public test::PacketArena {
 public:
  explicit Packets(std::size_t n, uint32_t len = 1500) : PacketArena(n, len) {}
  Packet* get(uint32_t len) { return take(len); }
};

void expect_consistent(const Qdisc& q, uint64_t qlen, uint64_t backlog) {
  EXPECT_EQ(q.qlen(), qlen);
  EXPECT_EQ(q.backlog(), backlog);
  const QdiscStats s = q.stats();
  EXPECT_EQ(s.qlen, qlen);
  EXPECT_EQ(s.backlog, backlog);
}

// ---------------------------------------------------------------------------------------------
// Options

TEST(TbfOptions, KindAndTdcLikeText) {
  struct Case {
    const char* opts;
    const char* text;
  };
  const Case cases[] = {
      {"limit 1000 burst 1500 rate 10000", "rate 10Kbit burst 1500b limit 1000b"},
      {"limit 1000 burst 1500 rate 20000 mtu 2048", "rate 20Kbit burst 1500b limit 1000b"},
      {"limit 1000 burst 1500 rate 20000 mtu 1510 peakrate 30000",
       "rate 20Kbit burst 1500b peakrate 30Kbit minburst 1509b limit 1000b"},
      {"burst 1500 rate 20000 latency 100ms", "rate 20Kbit burst 1500b lat 100ms"},
      {"burst 1500 rate 20000 latency 200ms", "rate 20Kbit burst 1500b lat 200ms"},
      {"limit 1000 burst 1500 rate 20000 overhead 300",
       "rate 20Kbit burst 1800b limit 1000b overhead 300"},
      {"limit 1000 burst 1500 rate 20000 linklayer atm",
       "rate 20Kbit burst 1696b limit 1000b linklayer atm"},
      {"limit 1000 burst 1500 rate 20000 linklayer adsl",
       "rate 20Kbit burst 1696b limit 1000b linklayer atm"},
      {"limit 1000 burst 1500 rate 20000 linklayer ethernet", "rate 20Kbit burst 1500b limit 1000b"},
      {"rate 1mbit burst 10kb limit 20kb", "rate 1Mbit burst 10Kb lat 81.9ms"},
      {"rate 1mbit buffer 10kb/8 lat 50ms", "rate 1Mbit burst 10Kb lat 50ms"},
      {"rate 1mbit maxburst 10kb latency 1s", "rate 1Mbit burst 10Kb lat 1s"},
      // limit = 62.5 + 10240 truncated to 10302 B, as tc does, so 496 us remain.
      {"rate 1mbit burst 10kb latency 500us", "rate 1Mbit burst 10Kb lat 496us"},
      {"rate 1mbit burst 32mb limit 32mb", "rate 1Mbit burst 32Mb lat 0us"},
      {"rate 1mbit burst 10kb limit 20kb mpu 64", "rate 1Mbit burst 10Kb lat 81.9ms"},
  };
  for (const Case& c : cases) {
    auto q = make(c.opts);
    ASSERT_NE(q, nullptr) << c.opts;
    EXPECT_EQ(q->kind(), "tbf");
    EXPECT_EQ(txpath::tc::options_text(*q), c.text) << c.opts;
    EXPECT_FALSE(q->can_bypass());
  }
}

TEST(TbfOptions, ParsedValues) {
  auto q = make("rate 20000 burst 1500 latency 100ms");
  EXPECT_EQ(q->config().rate, 2500u);
  EXPECT_EQ(q->config().burst, 1500u);
  EXPECT_EQ(q->config().limit, 1750u);  // rate * latency + burst
  EXPECT_EQ(q->max_size(), 1500u);

  // With a peak rate the smaller of the two limits wins: min(2500*1+1500, 3750*1+1510).
  q = make("rate 20000 burst 1500 latency 1s peakrate 30000 minburst 1510");
  EXPECT_EQ(q->config().limit, 4000u);
  EXPECT_EQ(q->config().peakrate, 3750u);
  EXPECT_EQ(q->config().minburst, 1510u);
  q = make("rate 20000 burst 1500 latency 1s peakrate 3000000 mtu 1000");
  EXPECT_EQ(q->config().limit, 4000u);
  EXPECT_EQ(q->max_size(), 1000u);  // min(burst, mtu)

  q = make("rate 1mbit burst 10k limit 64k mpu 64 overhead 24 linklayer atm");
  EXPECT_EQ(q->config().mpu, 64u);
  EXPECT_EQ(q->config().overhead, 24u);
  EXPECT_TRUE(q->config().atm);
  EXPECT_EQ(q->config().limit, 65536u);

  // mtu without peakrate is accepted and has no effect.
  q = make("rate 1mbit burst 10k limit 64k mtu 100");
  EXPECT_EQ(q->config().peakrate, 0u);
  EXPECT_EQ(q->max_size(), 10240u);
}

TEST(TbfOptions, ErrorsAreOneLine) {
  struct Case {
    const char* opts;
    const char* want;
  };
  const Case cases[] = {
      // tc's messages (q_tbf.c's parser), the first one tc prints; 0 is "not given", as in tc.
      {"", "tbf: the \"rate\" parameter is mandatory."},
      {"burst 10k limit 10k", "tbf: the \"rate\" parameter is mandatory."},
      {"rate 1mbit limit 10k", "tbf: the \"burst\" parameter is mandatory."},
      {"rate 1mbit burst 10k", "tbf: either \"limit\" or \"latency\" is required."},
      {"rate 1mbit burst 10k latency 0ms", "tbf: either \"limit\" or \"latency\" is required."},
      {"rate 1mbit burst 10k limit 10k peakrate 2mbit", "when \"peakrate\" is specified, \"mtu\" must"},
      {"rate 1mbit burst 10k limit 10k peakrate 2mbit mtu 0", "\"mtu\" must also be specified."},
      {"rate 1mbit burst 10k limit 10k peakrate 1mbit mtu 1500",
       "RTNETLINK answers: Invalid argument (peakrate 1Mbit is not above rate 1Mbit)"},
      {"rate 2mbit burst 10k limit 10k peakrate 1mbit mtu 1500", "RTNETLINK answers: Invalid argument"},
      {"rate 1mbit burst 10k limit 10k latency 5ms", "tbf: specifying both \"limit\" and \"/latency\" is not allowed"},
      {"rate 1mbit burst 10k latency 5ms limit 10k", "tbf: specifying both \"latency\" and \"limit\" is not allowed"},
      {"rate 1mbit rate 2mbit burst 10k limit 10k", "tbf: duplicate \"rate\" specification"},
      {"rate 1mbit burst 10k buffer 10k limit 10k", "tbf: duplicate \"buffer/burst/maxburst\" specification"},
      {"rate 1mbit burst 10k limit 10k limit 20k", "tbf: duplicate \"limit\" specification"},
      {"rate 1xbit burst 10k limit 10k", "tbf: illegal value for \"rate\": \"1xbit\""},
      {"rate -1mbit burst 10k limit 10k", "tbf: illegal value for \"rate\": \"-1mbit\" (tc would wrap it)"},
      {"rate -1mbit burst 10k limit 10k foo 1", "tbf: unknown parameter \"foo\""},  // tc's error first
      {"rate -1 burst 10k limit 10k", "tbf: the \"rate\" parameter is mandatory."},  // -1/8 B/s is 0
      {"rate 0 burst 10k limit 10k", "tbf: the \"rate\" parameter is mandatory."},
      {"rate 1mbit burst 0 limit 10k", "tbf: the \"burst\" parameter is mandatory."},
      {"rate 1mbit burst 10k limit 0", "tbf: either \"limit\" or \"latency\" is required."},
      {"rate 1mbit burst 1500/3 limit 10k", "tbf: illegal value for \"burst\": \"1500/3\""},
      {"rate 1mbit buffer 1500/x limit 10k", "tbf: illegal value for \"buffer\": \"1500/x\""},
      {"rate 1mbit burst 10q limit 10k", "tbf: illegal value for \"burst\""},
      {"rate 1mbit burst 5g limit 10k", "tbf: illegal value for \"burst\": \"5g\""},
      {"rate 1mbit burst 10k limit 5g", "tbf: illegal value for \"limit\": \"5g\""},
      {"rate 1mbit burst 10k latency 5parsecs", "tbf: illegal value for \"latency\""},
      {"rate 1mbit burst 10k latency 100000s", "tbf: illegal value for \"latency\""},
      {"rate 40gbit burst 10k latency 1s", "gives a limit above 4294967295 bytes"},
      {"rate 1mbit burst 10k limit 10k linklayer foo", "tbf: illegal value for \"linklayer\": \"foo\""},
      {"rate 1mbit burst 10k limit 10k overhead 70000", "tbf: illegal value for \"overhead\""},
      {"rate 1mbit burst 10k limit 10k overhead -4", "tbf: illegal value for \"overhead\""},
      {"rate 1mbit burst 10k limit 10k mpu 70000", "tbf: illegal value for \"mpu\": \"70000\""},
      {"rate 1mbit burst 10k limit 10k foo 1", "tbf: unknown parameter \"foo\""},
      {"rate 1mbit burst 10k limit 10k help", "Usage: ... tbf limit BYTES burst BYTES[/BYTES] rate KBPS"},
      {"rate 1mbit burst 10k limit", "Command line is not complete. Try option \"help\""},
      {"rate", "Command line is not complete. Try option \"help\""},
  };
  for (const Case& c : cases) {
    const std::string spec = std::string("tbf ") + c.opts;
    try {
      make_qdisc(spec, fake_env());
      ADD_FAILURE() << "no error for: " << spec;
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      EXPECT_EQ(what.rfind("qdisc \"tbf", 0), 0u) << what;
      EXPECT_NE(what.find(c.want), std::string::npos) << "spec: " << spec << "\n got: " << what;
    }
  }
}

TEST(TbfOptions, UnknownKindListsTbf) {
  try {
    make_qdisc("tbff rate 1mbit");
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_TRUE(what.find(", tbf,") != std::string::npos || what.find(", tbf)") != std::string::npos)
        << what;
  }
}

// ---------------------------------------------------------------------------------------------
// Transmission time

TEST(TbfL2t, OverheadMpuAndAtm) {
  // 125000 B/s = 8000 ns per byte.
  auto q = make("rate 1mbit burst 10240 limit 100k");
  EXPECT_EQ(q->l2t_rate(1500), 12'000'000u);
  EXPECT_EQ(q->l2t_rate(100), 800'000u);
  EXPECT_EQ(q->buffer_ns(), 81'920'000u);
  EXPECT_EQ(q->l2t_peak(1500), 0u);

  q = make("rate 1mbit burst 10240 limit 100k overhead 24");
  EXPECT_EQ(q->wire_len(100), 124u);
  EXPECT_EQ(q->l2t_rate(100), 124u * 8000);
  EXPECT_EQ(q->buffer_ns(), (10240u + 24) * 8000);

  q = make("rate 1mbit burst 10240 limit 100k mpu 200");
  EXPECT_EQ(q->l2t_rate(100), 200u * 8000);
  EXPECT_EQ(q->l2t_rate(300), 300u * 8000);

  q = make("rate 1mbit burst 10240 limit 100k mpu 200 overhead 150");
  EXPECT_EQ(q->l2t_rate(10), 200u * 8000);   // 160 < mpu
  EXPECT_EQ(q->l2t_rate(100), 250u * 8000);  // overhead first, then mpu

  q = make("rate 1mbit burst 10240 limit 100k linklayer atm");
  EXPECT_EQ(q->wire_len(48), 53u);
  EXPECT_EQ(q->wire_len(49), 106u);
  EXPECT_EQ(q->l2t_rate(100), 159u * 8000);  // ceil(100/48) = 3 cells
  EXPECT_EQ(q->l2t_rate(1500), 1696u * 8000);

  q = make("rate 1mbit burst 10240 limit 100k linklayer atm overhead 44");
  EXPECT_EQ(q->l2t_rate(100), 159u * 8000);  // 144 bytes: exactly 3 cells
  EXPECT_EQ(q->l2t_rate(101), 212u * 8000);  // 145 bytes: 4 cells
}

TEST(TbfL2t, RoundsUp) {
  // 3 B/s: one byte takes 333333333.3 ns; the bucket is charged the next whole ns.
  auto q = make("rate 24bit burst 10 limit 100");
  EXPECT_EQ(q->l2t_rate(1), 333'333'334u);
  EXPECT_EQ(q->l2t_rate(3), 1'000'000'000u);
}

// ---------------------------------------------------------------------------------------------
// Behaviour on the simulated clock

TEST(TbfBehaviour, WorkedExample) {
  // 1 mbit = 125000 B/s, burst 10240 B, 1500 B packets: l2t = 12 ms, bucket 81.92 ms.
  auto q = make("rate 1mbit burst 10240 limit 1000000", 1'000'000'000);
  const uint64_t t0 = g_now;
  Packets pk(40);
  PacketList to_free;
  for (int i = 0; i < 30; ++i) ASSERT_EQ(q->enqueue(pk.get(1500), to_free), Verdict::success);
  expect_consistent(*q, 30, 30 * 1500);

  for (int i = 0; i < 6; ++i) ASSERT_NE(q->dequeue(), nullptr) << i;
  EXPECT_EQ(q->dequeue(), nullptr);
  EXPECT_EQ(q->watchdog_ns(), t0 + 2'080'000);
  EXPECT_EQ(q->stats().overlimits, 1u);

  g_now = t0 + 2'079'999;
  EXPECT_EQ(q->dequeue(), nullptr);
  EXPECT_EQ(q->watchdog_ns(), t0 + 2'080'000);
  EXPECT_EQ(q->stats().overlimits, 2u);

  uint64_t expect_at = t0 + 2'080'000;
  for (int i = 0; i < 10; ++i) {
    g_now = expect_at;
    ASSERT_NE(q->dequeue(), nullptr) << i;
    EXPECT_EQ(q->watchdog_ns(), 0u);
    EXPECT_EQ(q->dequeue(), nullptr);
    expect_at += 12'000'000;
    EXPECT_EQ(q->watchdog_ns(), expect_at) << i;
  }
  expect_consistent(*q, 14, 14 * 1500);
  EXPECT_EQ(q->stats().packets, 16u);
  EXPECT_EQ(q->stats().bytes, 16u * 1500);
}

TEST(TbfBehaviour, WatchdogZeroWhenEmptyOrNotThrottled) {
  auto q = make("rate 1mbit burst 3000 limit 100000", 5000);
  Packets pk(8);
  PacketList to_free;
  EXPECT_EQ(q->dequeue(), nullptr);  // empty
  EXPECT_EQ(q->watchdog_ns(), 0u);
  EXPECT_EQ(q->stats().overlimits, 0u);  // empty is not over the limit

  q->enqueue(pk.get(1500), to_free);
  q->enqueue(pk.get(1500), to_free);
  q->enqueue(pk.get(1500), to_free);
  ASSERT_NE(q->dequeue(), nullptr);
  EXPECT_EQ(q->watchdog_ns(), 0u);
  ASSERT_NE(q->dequeue(), nullptr);
  EXPECT_EQ(q->dequeue(), nullptr);  // bucket empty: throttled for a full 12 ms
  EXPECT_EQ(q->watchdog_ns(), 5000u + 12'000'000);
  EXPECT_GT(q->watchdog_ns(), g_now);

  g_now = q->watchdog_ns();
  ASSERT_NE(q->dequeue(), nullptr);
  EXPECT_EQ(q->watchdog_ns(), 0u);
  EXPECT_EQ(q->dequeue(), nullptr);  // now empty
  EXPECT_EQ(q->watchdog_ns(), 0u);
  EXPECT_EQ(q->stats().overlimits, 1u);
}

TEST(TbfBehaviour, IdleTimeEarnsAtMostOneBucket) {
  auto q = make("rate 1mbit burst 3000 limit 100000 peakrate 10mbit mtu 3000", 0);
  Packets pk(16);
  PacketList to_free;
  q->enqueue(pk.get(1500), to_free);
  ASSERT_NE(q->dequeue(), nullptr);
  g_now = 10'000'000'000;  // 10 s idle: credit is capped at the 24 ms bucket (and 2.4 ms peak)
  for (int i = 0; i < 8; ++i) q->enqueue(pk.get(1500), to_free);
  ASSERT_NE(q->dequeue(), nullptr);
  ASSERT_NE(q->dequeue(), nullptr);
  EXPECT_EQ(q->dequeue(), nullptr);
  EXPECT_EQ(q->watchdog_ns(), g_now + 12'000'000);
}

TEST(TbfBehaviour, PeekOnlyShowsAnEligibleHeadAndSpendsNothing) {
  auto q = make("rate 1mbit burst 3000 limit 100000", 0);
  Packets pk(8);
  PacketList to_free;
  EXPECT_EQ(q->peek(), nullptr);
  Packet* a = pk.get(1500);
  Packet* b = pk.get(1500);
  Packet* c = pk.get(1500);
  q->enqueue(a, to_free);
  q->enqueue(b, to_free);
  q->enqueue(c, to_free);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(q->peek(), a);
  EXPECT_EQ(q->dequeue(), a);
  EXPECT_EQ(q->peek(), b);
  EXPECT_EQ(q->dequeue(), b);
  EXPECT_EQ(q->peek(), nullptr);  // throttled
  EXPECT_EQ(q->watchdog_ns(), 12'000'000u);
  EXPECT_EQ(q->stats().overlimits, 0u);  // peeking is not a throttle event
  g_now = 12'000'000;
  EXPECT_EQ(q->peek(), c);
  EXPECT_EQ(q->dequeue(), c);
}

// Drives a saturating sender for `duration` simulated ns: the queue is kept topped up, every
// eligible packet is dequeued, and time jumps to the watchdog. Checks at every send that the
// bytes out in [start, now] never exceed burst + rate * (now - start) (+ rate * 1 ns for the
// whole-ns rounding of the bucket depth). Returns the bytes sent.
uint64_t saturate(TbfQdisc& q, Packets& pk, uint64_t start, uint64_t duration,
                  const std::vector<uint32_t>& sizes, uint64_t bound_bytes) {
  const uint64_t rate = q.config().rate;
  PacketList to_free;
  uint64_t sent = 0, submitted = 0;
  std::size_t next = 0;
  g_now = start;
  while (g_now <= start + duration) {
    while (Packet* p = pk.get(sizes[next % sizes.size()])) {
      ++next;
      ++submitted;
      if (q.enqueue(p, to_free) != Verdict::success) break;
    }
    pk.put(to_free);
    while (Packet* p = q.dequeue()) {
      sent += p->len;
      pk.put(p);
      const unsigned __int128 lhs = static_cast<unsigned __int128>(sent) * 1'000'000'000u;
      const unsigned __int128 rhs = static_cast<unsigned __int128>(bound_bytes) * 1'000'000'000u +
                                    static_cast<unsigned __int128>(rate) * (g_now - start + 1);
      if (lhs > rhs) {
        ADD_FAILURE() << "sent " << sent << " bytes by t=" << (g_now - start) << " ns";
        return sent;
      }
    }
    const uint64_t wd = q.watchdog_ns();
    if (wd == 0 || wd <= g_now) {
      ADD_FAILURE() << "saturated tbf not throttled: watchdog " << wd << " at " << g_now;
      return sent;
    }
    g_now = wd;
  }
  // submitted = sent + dropped + queued.
  const QdiscStats s = q.stats();
  EXPECT_EQ(submitted, s.packets + s.drops + s.qlen);
  EXPECT_EQ(s.bytes, sent);
  return sent;
}

TEST(TbfBehaviour, SaturatingSenderNeverBeatsBurstPlusRate) {
  const std::vector<uint32_t> mixed = {1500, 64, 576, 1500, 1000, 40, 1514, 300};
  {
    auto q = make("rate 1mbit burst 10240 limit 30000");
    Packets pk(64);
    saturate(*q, pk, 0, 2'000'000'000, mixed, 10240);
  }
  {
    // A rate with no whole number of ns per byte: 7 777 777 bit/s.
    auto q = make("rate 7777777 burst 20000 limit 60000", 123);
    Packets pk(64);
    saturate(*q, pk, 123, 2'000'000'000, mixed, 20000);
  }
  {
    // With a peak rate the bound is the peak bucket's: minburst + peakrate * T (smaller early).
    auto q = make("rate 1mbit burst 15000 limit 60000 peakrate 2mbit mtu 1514");
    Packets pk(64);
    saturate(*q, pk, 0, 1'000'000'000, mixed, 15000);
  }
}

TEST(TbfBehaviour, LongRunRateWithinOnePercent) {
  struct Case {
    const char* opts;
    uint64_t burst;
  };
  const Case cases[] = {
      {"rate 1mbit burst 10240 limit 30000", 10240},
      {"rate 10mbit burst 30000 limit 100000", 30000},
      {"rate 7777777 burst 20000 limit 60000", 20000},
      {"rate 1mbit burst 10240 limit 30000 peakrate 5mbit mtu 1514", 10240},
  };
  const std::vector<uint32_t> mixed = {1500, 64, 576, 1500, 1000, 40, 1514, 300};
  for (const Case& c : cases) {
    auto q = make(c.opts);
    Packets pk(128);
    const uint64_t T = 10'000'000'000;  // 10 s simulated
    const uint64_t sent = saturate(*q, pk, 0, T, mixed, c.burst);
    const double want = static_cast<double>(q->config().rate) * 10.0;
    const double got = static_cast<double>(sent - c.burst);
    EXPECT_NEAR(got / want, 1.0, 0.01) << c.opts << ": sent " << sent;
  }
}

TEST(TbfBehaviour, PeakrateLimitsTheBurst) {
  // Rate bucket alone: 10 x 1500 B go at once. Peak 2 mbit (250000 B/s), minburst 1500: one
  // packet per 6 ms.
  Packets pk(16);
  PacketList to_free;
  {
    auto q = make("rate 1mbit burst 15000 limit 60000");
    for (int i = 0; i < 10; ++i) q->enqueue(pk.get(1500), to_free);
    int n = 0;
    while (Packet* p = q->dequeue()) {
      ++n;
      pk.put(p);
    }
    EXPECT_EQ(n, 10);
  }
  auto q = make("rate 1mbit burst 15000 limit 60000 peakrate 2mbit mtu 1500");
  EXPECT_EQ(q->peak_buffer_ns(), 6'000'000u);
  for (int i = 0; i < 10; ++i) q->enqueue(pk.get(1500), to_free);
  ASSERT_NE(q->dequeue(), nullptr);
  EXPECT_EQ(q->dequeue(), nullptr);
  EXPECT_EQ(q->watchdog_ns(), 6'000'000u);
  for (uint64_t k = 1; k < 10; ++k) {
    g_now = k * 6'000'000 - 1;
    EXPECT_EQ(q->dequeue(), nullptr) << k;
    g_now = k * 6'000'000;
    ASSERT_NE(q->dequeue(), nullptr) << k;  // rate bucket: 120 ms - 12 k + 6 k >= 12 ms
  }
  // A packet above min(burst, mtu) can never be sent: dropped at enqueue.
  const uint64_t drops = q->stats().drops;
  EXPECT_EQ(q->enqueue(pk.get(1501), to_free), Verdict::drop);
  EXPECT_EQ(q->stats().drops, drops + 1);
  EXPECT_EQ(to_free.size(), 1u);
}

TEST(TbfBehaviour, OverheadChangesSpacing) {
  // Bucket = (1500 + 100) * 8000 ns = 12.8 ms; a 1000 B packet costs 1100 * 8000 = 8.8 ms.
  auto q = make("rate 1mbit burst 1500 limit 100000 overhead 100");
  Packets pk(4);
  PacketList to_free;
  q->enqueue(pk.get(1000), to_free);
  q->enqueue(pk.get(1000), to_free);
  ASSERT_NE(q->dequeue(), nullptr);
  EXPECT_EQ(q->dequeue(), nullptr);
  EXPECT_EQ(q->watchdog_ns(), 4'800'000u);

  // ATM: a 1000 B packet is 21 cells = 1113 B = 8.904 ms; bucket 1696 B = 13.568 ms.
  auto a = make("rate 1mbit burst 1500 limit 100000 linklayer atm");
  a->enqueue(pk.get(1000), to_free);
  a->enqueue(pk.get(1000), to_free);
  ASSERT_NE(a->dequeue(), nullptr);
  EXPECT_EQ(a->dequeue(), nullptr);
  EXPECT_EQ(a->watchdog_ns(), (1113u - (1696u - 1113u)) * 8000);
}

TEST(TbfBehaviour, ResetRefillsBuckets) {
  auto q = make("rate 1mbit burst 3000 limit 100000", 7);
  Packets pk(8);
  PacketList to_free;
  for (int i = 0; i < 4; ++i) q->enqueue(pk.get(1500), to_free);
  ASSERT_NE(q->dequeue(), nullptr);
  ASSERT_NE(q->dequeue(), nullptr);
  EXPECT_EQ(q->dequeue(), nullptr);
  EXPECT_NE(q->watchdog_ns(), 0u);

  const uint64_t drops = q->stats().drops;
  q->reset(to_free);
  EXPECT_EQ(to_free.size(), 2u);  // the two still queued, not counted as drops
  EXPECT_EQ(q->stats().drops, drops);
  expect_consistent(*q, 0, 0);
  EXPECT_EQ(q->watchdog_ns(), 0u);
  pk.put(to_free);

  // Same instant: the full burst is available again.
  for (int i = 0; i < 3; ++i) q->enqueue(pk.get(1500), to_free);
  ASSERT_NE(q->dequeue(), nullptr);
  ASSERT_NE(q->dequeue(), nullptr);
  EXPECT_EQ(q->dequeue(), nullptr);
}

TEST(TbfBehaviour, AccountingAndChildByteLimit) {
  // Child bfifo(3000): accept iff backlog + len <= 3000. max_size = burst = 2000.
  auto q = make("rate 1mbit burst 2000 limit 3000");
  Packets pk(16);
  PacketList to_free;
  uint64_t submitted = 0;
  auto submit = [&](uint32_t len) {
    ++submitted;
    return q->enqueue(pk.get(len), to_free);
  };
  EXPECT_EQ(submit(1500), Verdict::success);
  EXPECT_EQ(submit(1500), Verdict::success);  // backlog == limit is allowed
  EXPECT_EQ(submit(1), Verdict::drop);
  EXPECT_EQ(submit(2001), Verdict::drop);     // above max_size
  expect_consistent(*q, 2, 3000);
  EXPECT_EQ(q->stats().drops, 2u);
  EXPECT_EQ(to_free.size(), 2u);

  ASSERT_NE(q->dequeue(), nullptr);  // 12 ms of the 16 ms bucket
  expect_consistent(*q, 1, 1500);
  EXPECT_EQ(submit(1000), Verdict::success);
  EXPECT_EQ(submit(600), Verdict::drop);
  EXPECT_EQ(submit(500), Verdict::success);
  expect_consistent(*q, 3, 3000);
  EXPECT_EQ(q->dequeue(), nullptr);
  EXPECT_EQ(q->dequeue(), nullptr);
  const QdiscStats s = q->stats();
  EXPECT_EQ(s.overlimits, 2u);
  EXPECT_EQ(s.packets, 1u);
  EXPECT_EQ(s.bytes, 1500u);
  EXPECT_EQ(s.drops, 3u);
  EXPECT_EQ(submitted, s.packets + s.drops + s.qlen);
  // FIFO order is kept across throttling.
  const Packet* head = q->peek();
  EXPECT_EQ(head, nullptr);
  g_now = q->watchdog_ns();
  Packet* p = q->dequeue();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->len, 1500u);
}

TEST(TbfBehaviour, DefaultClockIsUsable) {
  // env.clock == nullptr: the real clock. Only what holds at any speed is checked: a full bucket
  // lets the burst out immediately, and a huge backlog at a tiny rate is throttled.
  std::unique_ptr<Qdisc> q = make_qdisc("tbf rate 8bit burst 3000 limit 100000");
  Packets pk(4);
  PacketList to_free;
  for (int i = 0; i < 3; ++i) q->enqueue(pk.get(1500), to_free);
  EXPECT_NE(q->dequeue(), nullptr);
  EXPECT_NE(q->dequeue(), nullptr);
  EXPECT_EQ(q->dequeue(), nullptr);  // 1 B/s: the next 1500 B need 1500 s
  EXPECT_NE(q->watchdog_ns(), 0u);
}

}  // namespace
}  // namespace txpath
