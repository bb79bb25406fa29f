// SPDX-License-Identifier: MIT
// The bench's offered load and traffic (issue 16, section 5): the latency histogram
// (txpath/histogram.hpp) against known distributions, the pacer's arithmetic on a fake clock
// (bench/pacer.hpp), the flows a sender writes (bench/traffic.hpp: distinct ports, valid
// checksums, flow hashes, fq_codel's classification, the sink's per-flow order check), the pcap
// reader (bench/pcap_source.hpp) on good and malformed files, and the queueing-delay hook
// (Packet::sent_stamp, Device::note_departure) through a real TxQueue.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "bench/bench.hpp"
#include "bench/pacer.hpp"
#include "bench/pcap_source.hpp"
#include "bench/traffic.hpp"
#include "net/sink_tally.hpp"
#include "qdisc/fq_codel.hpp"
#include "support/bench_config.hpp"
#include "support/packet_arena.hpp"
#include "txpath/error.hpp"
#include "txpath/frame.hpp"
#include "txpath/histogram.hpp"
#include "txpath/qdisc.hpp"
#include "txpath/queue_select.hpp"

namespace txpath {
namespace {

using bench_detail::Capture;
using bench_detail::Pacer;
using bench_detail::SenderTraffic;

// ---- the histogram ---------------------------------------------------------------------------

TEST(LatencyHistogram, BucketsCoverEveryValueContiguouslyAndWithinTheirWidth) {
  using H = LatencyHistogram;
  EXPECT_EQ(H::bucket_low(0), 0u);
  for (std::size_t i = 1; i < H::kBuckets; ++i) {
    ASSERT_EQ(H::bucket_low(i), H::bucket_high(i - 1) + 1) << i;  // no gap, no overlap
    ASSERT_EQ(H::bucket_of(H::bucket_low(i)), i);
    ASSERT_EQ(H::bucket_of(H::bucket_high(i)), i);
    // A bucket is at most 1/32 of its lowest value wide (exact below 32).
    if (H::bucket_low(i) >= H::kSubBuckets)
      ASSERT_LE((H::bucket_high(i) - H::bucket_low(i) + 1) * H::kSubBuckets, H::bucket_low(i)) << i;
    else
      ASSERT_EQ(H::bucket_high(i), H::bucket_low(i));
  }
  // Past the last range: the last bucket.
  EXPECT_EQ(H::bucket_of(uint64_t{1} << 40), H::kBuckets - 1);
  EXPECT_EQ(H::bucket_of(UINT64_MAX), H::kBuckets - 1);
}

TEST(LatencyHistogram, PercentilesOfAUniformDistributionAreWithinTheBucketError) {
  LatencyHistogram h;
  for (uint64_t v = 1; v <= 100000; ++v) h.record(v);
  EXPECT_EQ(h.count(), 100000u);
  EXPECT_EQ(h.min(), 1u);
  EXPECT_EQ(h.max(), 100000u);
  for (const double q : {0.5, 0.9, 0.99, 0.999}) {
    const double truth = q * 100000;
    EXPECT_NEAR(h.percentile(q), truth, truth / 64 + 1) << q;
  }
  EXPECT_EQ(h.percentile(1.0), 100000.0);  // clamped to max
  EXPECT_EQ(h.percentile(0.0), 1.0);       // clamped to min
}

TEST(LatencyHistogram, PercentilesOfAnExponentialDistributionAreWithinTheBucketError) {
  std::mt19937_64 rng(42);
  std::exponential_distribution<double> dist(1.0 / 2000.0);  // mean 2 us
  LatencyHistogram h;
  std::vector<uint64_t> values;
  for (int i = 0; i < 200000; ++i) {
    values.push_back(static_cast<uint64_t>(dist(rng)));
    h.record(values.back());
  }
  std::sort(values.begin(), values.end());
  for (const double q : {0.5, 0.9, 0.99, 0.999}) {
    const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(values.size())));
    const double truth = static_cast<double>(values[rank - 1]);
    EXPECT_NEAR(h.percentile(q), truth, truth / 64 + 0.5) << q;
  }
}

TEST(LatencyHistogram, SmallValuesAreExactAndEmptyIsZero) {
  LatencyHistogram h;
  EXPECT_EQ(h.percentile(0.5), 0.0);
  EXPECT_EQ(h.count(), 0u);
  for (int i = 0; i < 10; ++i) h.record(7);
  h.record(20);
  EXPECT_EQ(h.percentile(0.5), 7.0);
  EXPECT_EQ(h.percentile(1.0), 20.0);
}

TEST(LatencyHistogram, MergeEqualsRecordingEverythingInOne) {
  LatencyHistogram a, b, all;
  for (uint64_t v = 0; v < 5000; v += 3) {
    (v % 2 ? a : b).record(v * 37);
    all.record(v * 37);
  }
  b.record(uint64_t{1} << 50);  // beyond the last range
  all.record(uint64_t{1} << 50);
  LatencyHistogram merged;
  merged.merge(a);
  merged.merge(LatencyHistogram{});  // an empty one changes nothing
  merged.merge(b);
  EXPECT_EQ(merged.count(), all.count());
  EXPECT_EQ(merged.min(), all.min());
  EXPECT_EQ(merged.max(), uint64_t{1} << 50);
  EXPECT_TRUE(std::equal(merged.counts().begin(), merged.counts().end(), all.counts().begin()));
  for (const double q : {0.5, 0.99, 0.999}) EXPECT_EQ(merged.percentile(q), all.percentile(q));
}

// ---- the pacer -------------------------------------------------------------------------------

TEST(Pacer, UnpacedIsAlwaysDue) {
  Pacer p;
  EXPECT_FALSE(p.paced());
  EXPECT_EQ(p.due(0), 1u);
  EXPECT_EQ(p.ns_until_next(123), 0u);
}

TEST(Pacer, RateGivesOneSlotPerIntervalOnAFakeClock) {
  Pacer p = Pacer::at_rate(1e6, 8);  // one slot per 1000 ns
  const uint64_t t0 = 5'000'000;
  p.start(t0);
  EXPECT_EQ(p.due(t0), 1u);  // slot 0 is due at the start
  p.take(1);
  EXPECT_EQ(p.due(t0 + 999), 0u);
  EXPECT_EQ(p.ns_until_next(t0 + 999), 1u);
  EXPECT_EQ(p.due(t0 + 1000), 1u);
  p.take(1);
  // Over a simulated second of on-time sends: exactly the rate.
  uint64_t sent = 2;
  for (uint64_t t = t0 + 1000; t < t0 + 1'000'000'000; t += 250) {
    const uint64_t n = p.due(t);
    p.take(n);
    sent += n;
  }
  EXPECT_EQ(sent, 1'000'000u);
  EXPECT_EQ(p.skipped(), 0u);
}

TEST(Pacer, AFallenBehindSenderCatchesUpAtMostOneBurst) {
  Pacer p = Pacer::at_rate(1e6, 8);
  p.start(0);
  EXPECT_EQ(p.due(0), 1u);
  p.take(1);
  // 100 us asleep: 100 slots passed, only 8 are due at once, the rest skipped.
  EXPECT_EQ(p.due(100'000), 8u);
  EXPECT_EQ(p.skipped(), 101u - 1u - 8u);
  p.take(8);
  EXPECT_EQ(p.due(100'000), 0u);
  EXPECT_EQ(p.ns_until_next(100'000), 1000u);
  // Offered over the whole time: never more than the rate plus one burst.
  EXPECT_LE(p.taken() - p.skipped(), 100'000 / 1000 + 1 + 8);
}

TEST(Pacer, FractionalIntervalsKeepTheRateOverTime) {
  Pacer p = Pacer::at_rate(3e6, 64);  // 333.33 ns
  p.start(0);
  uint64_t sent = 0;
  for (uint64_t t = 0; t < 1'000'000'000; t += 1000) {
    const uint64_t n = p.due(t);
    p.take(n);
    sent += n;
  }
  EXPECT_NEAR(static_cast<double>(sent), 3e6, 4);
}

TEST(Pacer, ScheduleRepeatsOffsetsEveryPeriod) {
  Pacer p(1000.0, {0.0, 100.0, 700.0}, 16);  // slots at 0, 100, 700, 1000, 1100, 1700, ...
  p.start(10);
  EXPECT_EQ(p.due(10), 1u);
  p.take(1);
  EXPECT_EQ(p.ns_until_next(10), 100u);
  EXPECT_EQ(p.due(10 + 699), 1u);
  p.take(1);
  EXPECT_EQ(p.due(10 + 1000), 2u);  // 700 and 1000
  p.take(2);
  EXPECT_EQ(p.ns_until_next(10 + 1000), 100u);
}

// ---- flows ------------------------------------------------------------------------------------

// One's complement checksum of the IPv4 header (valid: 0xffff).
uint32_t ip_header_sum(std::span<const std::byte> f) {
  uint32_t sum = 0;
  for (std::size_t i = 14; i < 34; i += 2)
    sum += (std::to_integer<uint32_t>(f[i]) << 8) | std::to_integer<uint32_t>(f[i + 1]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return sum;
}

uint16_t src_port(std::span<const std::byte> f) {
  return static_cast<uint16_t>((std::to_integer<unsigned>(f[34]) << 8) | std::to_integer<unsigned>(f[35]));
}

TEST(Flows, EverySendersFlowsHaveDistinctPortsValidChecksumsAndTheirOwnHash) {
  constexpr uint32_t kSenders = 3, kFlows = 5;
  std::set<uint16_t> ports;
  std::set<uint32_t> hashes;
  for (uint32_t t = 0; t < kSenders; ++t) {
    const SenderTraffic traffic = SenderTraffic::generated(FrameSpec{}, t, kFlows, false);
    EXPECT_EQ(traffic.flows(), kFlows);
    std::vector<std::byte> buf(2048);
    for (uint64_t i = 0; i < 3 * kFlows; ++i) {
      Packet p;
      p.data = buf.data();
      p.capacity = static_cast<uint32_t>(buf.size());
      p.sent_stamp = 99;
      traffic.write(p, i);
      EXPECT_EQ(p.sent_stamp, 0u);  // unsampled unless the sender stamps it
      const auto frame = p.frame();
      const auto info = parse_frame(frame);  // checks the IPv4 checksum, a UDP checksum if any
      ASSERT_TRUE(info.has_value());
      EXPECT_EQ(ip_header_sum(frame), 0xffffu);
      // Round-robin: packet i is flow i % N, numbered i / N, the sink's stream t * N + f.
      EXPECT_EQ(info->sender, t * kFlows + i % kFlows);
      EXPECT_EQ(info->seq, i / kFlows);
      EXPECT_EQ(p.flow_hash, frame_flow_hash(frame).value());  // the library's own hash
      EXPECT_EQ(src_port(frame), FrameSpec{}.src_port + t * kFlows + i % kFlows);
      ports.insert(src_port(frame));
      hashes.insert(p.flow_hash);
    }
  }
  EXPECT_EQ(ports.size(), kSenders * kFlows);
  EXPECT_EQ(hashes.size(), kSenders * kFlows);
}

TEST(Flows, OneFlowKeepsTheSeedExperimentsFrames) {
  const SenderTraffic a = SenderTraffic::generated(FrameSpec{}, 0, 1, false);
  const SenderTraffic b = SenderTraffic::generated(FrameSpec{}, 1, 1, false);
  std::vector<std::byte> fa(2048), fb(2048);
  Packet pa, pb;
  pa.data = fa.data();
  pa.capacity = 2048;
  pb.data = fb.data();
  pb.capacity = 2048;
  a.write(pa, 7);
  b.write(pb, 7);
  EXPECT_EQ(pa.flow_hash, 0u);  // the seed experiment's packets carry no hash
  EXPECT_EQ(src_port(pa.frame()), src_port(pb.frame()));
  EXPECT_EQ(parse_frame(pb.frame())->sender, 1u);
  EXPECT_EQ(parse_frame(pb.frame())->seq, 7u);
}

// fq_codel classifies by the flow hash: N flows of T senders are T * N flows to it (and the
// seed experiment's frames one).
uint32_t fq_codel_flows_seen(uint32_t senders, uint32_t flows) {
  QdiscEnv env;
  std::unique_ptr<Qdisc> q = make_qdisc("fq_codel flows 65536", env);
  auto* fq = dynamic_cast<FqCodelQdisc*>(q.get());
  if (fq == nullptr) return 0;
  test::PacketArena arena(senders * flows * 2);
  PacketList to_free;
  for (uint32_t t = 0; t < senders; ++t) {
    const SenderTraffic traffic = SenderTraffic::generated(FrameSpec{}, t, flows, false);
    for (uint64_t i = 0; i < 2 * flows; ++i) {
      Packet* p = arena.take(0);
      traffic.write(*p, i);
      fq->enqueue(p, to_free);
    }
  }
  const uint32_t seen = fq->detail_xstats().new_flow_count;
  while (Packet* p = fq->dequeue()) arena.put(p);
  return seen;
}

TEST(Flows, FqCodelSeesEveryFlowOfEverySender) {
  EXPECT_EQ(fq_codel_flows_seen(2, 8), 16u);
  EXPECT_EQ(fq_codel_flows_seen(4, 16), 64u);
  EXPECT_EQ(fq_codel_flows_seen(2, 1), 1u);  // the seed experiment: one flow
}

TEST(Flows, SinkChecksOrderPerFlowSoReorderingAcrossFlowsIsNotCounted) {
  constexpr uint32_t kFlows = 4;
  const SenderTraffic traffic = SenderTraffic::generated(FrameSpec{}, 2, kFlows, false);
  std::vector<std::vector<std::byte>> frames;
  for (uint64_t i = 0; i < 400; ++i) {
    frames.emplace_back(256);
    frames.back().resize(traffic.write(frames.back(), i));
  }
  // What a flow-aware qdisc may do: serve flow 3 first, then 2, 1, 0 (each flow in order).
  std::vector<std::size_t> order;
  for (int f = kFlows - 1; f >= 0; --f)
    for (std::size_t i = static_cast<std::size_t>(f); i < frames.size(); i += kFlows) order.push_back(i);
  net::SinkTally tally;
  for (const std::size_t i : order) {
    const auto info = parse_frame(frames[i]);
    ASSERT_TRUE(info.has_value());
    tally.count(info->sender, info->seq, frames[i].size());
  }
  SinkReport r = tally.report();
  EXPECT_EQ(r.received, 400u);
  EXPECT_EQ(r.out_of_order, 0u);
  EXPECT_EQ(r.lost, 0u);
  EXPECT_EQ(r.senders.size(), kFlows);  // one stream per flow
  // Reordering inside a flow is still caught: flow 0's packets 1 and 0 swapped.
  net::SinkTally swapped;
  for (const std::size_t i : {std::size_t{4}, std::size_t{0}, std::size_t{8}}) {
    const auto info = parse_frame(frames[i]);
    swapped.count(info->sender, info->seq, frames[i].size());
  }
  EXPECT_EQ(swapped.report().out_of_order, 1u);
}

// ---- the pcap reader ----------------------------------------------------------------------------

// A classic pcap file: `magic` as the writer's native value, written little- or big-endian.
struct PcapWriter {
  std::vector<std::byte> bytes;
  bool big = false;

  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) {
      const int shift = big ? 24 - 8 * i : 8 * i;
      bytes.push_back(static_cast<std::byte>(v >> shift));
    }
  }
  void u16(uint16_t v) {
    for (int i = 0; i < 2; ++i) bytes.push_back(static_cast<std::byte>(big ? v >> (8 - 8 * i) : v >> (8 * i)));
  }
  PcapWriter(uint32_t magic, bool big_endian, uint32_t linktype = 1) : big(big_endian) {
    u32(magic);
    u16(2);
    u16(4);
    u32(0);
    u32(0);
    u32(65535);
    u32(linktype);
  }
  void record(uint32_t sec, uint32_t sub, std::span<const std::byte> frame, uint32_t orig = 0) {
    u32(sec);
    u32(sub);
    u32(static_cast<uint32_t>(frame.size()));
    u32(orig ? orig : static_cast<uint32_t>(frame.size()));
    bytes.insert(bytes.end(), frame.begin(), frame.end());
  }
};

std::vector<std::byte> test_frame(uint32_t sender, uint64_t seq, uint16_t port = 9000) {
  FrameSpec spec;
  spec.src_port = port;
  FrameTemplate tmpl(spec);
  std::vector<std::byte> f(tmpl.size());
  tmpl.write(f, sender, seq);
  return f;
}

constexpr uint32_t kMicro = 0xa1b2c3d4, kNano = 0xa1b23c4d;

TEST(PcapSource, ReadsBothByteOrdersAndBothTimeUnits) {
  for (const bool big : {false, true}) {
    for (const uint32_t magic : {kMicro, kNano}) {
      PcapWriter w(magic, big);
      w.record(100, 0, test_frame(0, 0));
      w.record(100, magic == kNano ? 500'000 : 500, test_frame(0, 1, 9001));  // 500 us later
      w.record(101, 0, test_frame(0, 2));
      const Capture cap = bench_detail::parse_pcap(w.bytes, 1514, "t.pcap");
      ASSERT_EQ(cap.frames.size(), 3u) << big << magic;
      EXPECT_EQ(cap.frames[0].time_ns, 0u);
      EXPECT_EQ(cap.frames[1].time_ns, 500'000u);
      EXPECT_EQ(cap.frames[2].time_ns, 1'000'000'000u);
      EXPECT_EQ(cap.span_ns, 1'000'000'000u);
      EXPECT_EQ(cap.max_len, test_frame(0, 0).size());
      const auto f1 = cap.frame(1);
      EXPECT_TRUE(std::equal(f1.begin(), f1.end(), test_frame(0, 1, 9001).begin()));
      EXPECT_EQ(cap.frames[1].flow_hash, frame_flow_hash(f1).value());
    }
  }
}

TEST(PcapSource, ATimeStampThatGoesBackCountsAsThePreviousOne) {
  PcapWriter w(kMicro, false);
  w.record(10, 500, test_frame(0, 0));
  w.record(10, 900, test_frame(0, 1));
  w.record(10, 100, test_frame(0, 2));  // earlier than the first
  const Capture cap = bench_detail::parse_pcap(w.bytes, 1514, "t.pcap");
  EXPECT_EQ(cap.frames[2].time_ns, cap.frames[1].time_ns);
}

// The error of parse_pcap() on `bytes`, or "" if it parsed.
std::string pcap_error(const std::vector<std::byte>& bytes, std::size_t max_len = 1514) {
  try {
    bench_detail::parse_pcap(bytes, max_len, "bad\nname.pcap");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(PcapSource, EachMalformedFileIsOneLineNamingTheFile) {
  const auto frame = test_frame(0, 0);
  std::vector<std::pair<std::string, std::vector<std::byte>>> cases;
  cases.reserve(16);  // (GCC 12 warns -Warray-bounds on the first emplace_back otherwise)
  {
    PcapWriter w(0x0a0d0d0a, false);  // pcapng's section header block
    cases.emplace_back("magic", w.bytes);
  }
  {
    PcapWriter w(kMicro, false, 113);  // Linux cooked capture
    w.record(0, 0, frame);
    cases.emplace_back("link type 113", w.bytes);
  }
  {
    PcapWriter w(kMicro, false);
    w.record(0, 0, frame);
    w.bytes.resize(w.bytes.size() - 3);  // the last frame cut short
    cases.emplace_back("cut short", w.bytes);
  }
  {
    PcapWriter w(kMicro, false);
    w.record(0, 0, frame);
    w.bytes.resize(w.bytes.size() + 5);  // half a record header
    // (libpcap's detail, after the reader's own words: "cut short by the end of the file")
    cases.emplace_back("cut short by the end of the file (truncated dump file; tried to read 16 header bytes", w.bytes);
  }
  {
    PcapWriter w(kMicro, false);
    w.record(0, 0, frame, static_cast<uint32_t>(frame.size()) + 100);  // snap length cut it
    cases.emplace_back("snap length", w.bytes);
  }
  {
    PcapWriter w(kMicro, false);
    w.record(0, 0, std::vector<std::byte>(2000));
    cases.emplace_back("over the device's maximum frame of 1514", w.bytes);
  }
  {
    PcapWriter w(kMicro, false);
    w.record(0, 0, std::vector<std::byte>(10));
    cases.emplace_back("shorter than an Ethernet header", w.bytes);
  }
  {
    PcapWriter w(kMicro, false);
    w.record(0, 1'000'000, frame);
    cases.emplace_back("sub-second field", w.bytes);
  }
  cases.emplace_back("no frame", PcapWriter(kNano, true).bytes);
  cases.emplace_back("shorter than its 24-byte header", std::vector<std::byte>(10));
  {
    PcapWriter w(kMicro, false);
    w.bytes[4] = std::byte{3};  // version 3.4
    cases.emplace_back("version 3.4", w.bytes);
  }
  for (const auto& [why, bytes] : cases) {
    const std::string err = pcap_error(bytes);
    EXPECT_NE(err.find(why), std::string::npos) << why << ": " << err;
    EXPECT_NE(err.find("\"bad\\x0aname.pcap\""), std::string::npos) << err;  // quoted, escaped
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
}

// A pcapng file (draft-ietf-opsawg-pcapng: Section Header, Interface Description and Enhanced
// Packet Blocks), written in either byte order; `tsresol` 9 says nanoseconds, 0 leaves the
// default (microseconds).
struct PcapngWriter {
  PcapWriter raw{0, false};  // its u32/u16 in the chosen order; the classic header is dropped

  explicit PcapngWriter(bool big, uint8_t tsresol = 9, uint16_t linktype = 1) {
    raw.big = big;
    raw.bytes.clear();
    block(0x0a0d0d0a, [&] {  // SHB: byte-order magic, version 1.0, section length unknown
      raw.u32(0x1a2b3c4d);
      raw.u16(1);
      raw.u16(0);
      raw.u32(0xffffffff);
      raw.u32(0xffffffff);
    });
    block(0x00000001, [&] {  // IDB: link type, reserved, snaplen, options
      raw.u16(linktype);
      raw.u16(0);
      raw.u32(65535);
      if (tsresol) {
        raw.u16(9);  // if_tsresol, one byte, padded to 4
        raw.u16(1);
        raw.bytes.push_back(static_cast<std::byte>(tsresol));
        raw.bytes.resize(raw.bytes.size() + 3);
        raw.u32(0);  // opt_endofopt
      }
    });
  }
  template <class Body>
  void block(uint32_t type, Body body) {
    const std::size_t start = raw.bytes.size();
    raw.u32(type);
    raw.u32(0);  // total length, patched below
    body();
    raw.u32(0);
    const auto len = static_cast<uint32_t>(raw.bytes.size() - start);
    PcapWriter patch{0, raw.big};
    patch.bytes.clear();
    patch.u32(len);
    std::copy(patch.bytes.begin(), patch.bytes.end(), raw.bytes.begin() + static_cast<std::ptrdiff_t>(start + 4));
    std::copy(patch.bytes.begin(), patch.bytes.end(), raw.bytes.end() - 4);
  }
  void packet(uint64_t ts, std::span<const std::byte> frame, uint32_t caplen = 0) {
    block(0x00000006, [&] {  // EPB: interface 0, time stamp (high, low), lengths, data padded
      raw.u32(0);
      raw.u32(static_cast<uint32_t>(ts >> 32));
      raw.u32(static_cast<uint32_t>(ts));
      raw.u32(caplen ? caplen : static_cast<uint32_t>(frame.size()));
      raw.u32(static_cast<uint32_t>(frame.size()));
      raw.bytes.insert(raw.bytes.end(), frame.begin(), frame.end());
      raw.bytes.resize((raw.bytes.size() + 3) / 4 * 4);
    });
  }
};

// libpcap reads pcapng as tcpdump does: both byte orders, nanosecond or default (microsecond)
// time stamps, frames byte-identical.
TEST(PcapSource, ReadsPcapngInBothByteOrders) {
  for (const bool big : {false, true}) {
    for (const uint8_t tsresol : {uint8_t{9}, uint8_t{0}}) {
      const uint64_t tick = tsresol == 9 ? 1 : 1000;  // ns per time stamp unit
      PcapngWriter w(big, tsresol);
      const uint64_t t0 = 1'700'000'000ull * 1'000'000'000ull / tick;
      w.packet(t0, test_frame(0, 0));
      w.packet(t0 + 500'000 / tick, test_frame(0, 1, 9001));
      w.packet(t0 + 1'000'000'000 / tick, test_frame(0, 2));
      const Capture cap = bench_detail::parse_pcap(w.raw.bytes, 1514, "t.pcapng");
      ASSERT_EQ(cap.frames.size(), 3u) << big << tsresol;
      EXPECT_EQ(cap.frames[1].time_ns, 500'000u);
      EXPECT_EQ(cap.span_ns, 1'000'000'000u);
      const auto f1 = cap.frame(1);
      const auto want = test_frame(0, 1, 9001);
      EXPECT_TRUE(std::equal(f1.begin(), f1.end(), want.begin(), want.end()));
    }
  }
}

// Nanosecond classic pcap written big-endian (a swapped file on this little-endian machine):
// the sub-second field is nanoseconds, and a value of a second or more is refused.
TEST(PcapSource, ReadsASwappedNanosecondFileAndRefusesAnOutOfRangeNanosecond) {
  PcapWriter w(kNano, true);
  w.record(7, 123'456'789, test_frame(0, 0));
  w.record(7, 123'456'790, test_frame(0, 1));
  const Capture cap = bench_detail::parse_pcap(w.bytes, 1514, "t.pcap");
  ASSERT_EQ(cap.frames.size(), 2u);
  EXPECT_EQ(cap.frames[1].time_ns, 1u);
  w.record(8, 1'000'000'000, test_frame(0, 2));
  EXPECT_NE(pcap_error(w.bytes).find("sub-second field 1000000000 ns out of range"), std::string::npos)
      << pcap_error(w.bytes);
}

// Hostile files: each one line naming the file, nothing read past the end, memory bounded.
TEST(PcapSource, HostileFilesAreOneLineEach) {
  const auto frame = test_frame(0, 0);
  std::vector<std::pair<std::string, std::vector<std::byte>>> cases;
  cases.reserve(8);
  {
    PcapWriter w(kNano, false);
    w.bytes.resize(23);  // a classic header cut short
    cases.emplace_back("shorter than its 24-byte header", w.bytes);
  }
  {
    PcapngWriter w(false);
    w.raw.bytes.resize(26);  // pcapng's section header cut short
    cases.emplace_back("cut short by the end of the file", w.raw.bytes);
  }
  {
    PcapWriter w(kMicro, false);
    w.record(0, 0, frame);
    w.record(0, 1, frame);
    w.bytes.resize(w.bytes.size() - frame.size() / 2);  // the second record's data cut short
    cases.emplace_back("frame 2: cut short by the end of the file", w.bytes);
  }
  {
    PcapWriter w(kMicro, false);
    w.record(0, 0, frame);
    for (int i = 8; i < 12; ++i) w.bytes[w.bytes.size() - frame.size() - 16 + static_cast<std::size_t>(i)] = std::byte{0xff};
    cases.emplace_back("frame 1: invalid packet capture length 4294967295", w.bytes);  // absurd caplen
  }
  {
    PcapngWriter w(false);
    w.packet(0, frame, 0xfffffff0);  // an EPB whose captured length exceeds its block
    cases.emplace_back("frame 1: ", w.raw.bytes);
  }
  {
    PcapngWriter w(true, 9, 113);  // pcapng, Linux cooked capture
    w.packet(0, frame);
    cases.emplace_back("link type 113, not Ethernet (1)", w.raw.bytes);
  }
  cases.emplace_back("no frame", PcapngWriter(false).raw.bytes);
  for (const auto& [why, bytes] : cases) {
    const std::string err = pcap_error(bytes);
    EXPECT_NE(err.find(why), std::string::npos) << why << ": " << err;
    EXPECT_NE(err.find("\"bad\\x0aname.pcap\""), std::string::npos) << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
}

TEST(PcapSource, LoadReadsAFileAndRefusesWhatIsNotOne) {
  PcapWriter w(kNano, true);
  for (uint32_t i = 0; i < 10; ++i) w.record(1, i * 1000, test_frame(0, i));
  const std::string path = ::testing::TempDir() + "traffic_test.pcap";
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(w.bytes.data()), static_cast<std::streamsize>(w.bytes.size()));
  }
  EXPECT_EQ(bench_detail::load_pcap(path, 1514).frames.size(), 10u);
  EXPECT_THROW(bench_detail::load_pcap(path + ".missing", 1514), ConfigError);
  EXPECT_THROW(bench_detail::load_pcap(::testing::TempDir(), 1514), ConfigError);  // a directory
  std::remove(path.c_str());
}

TEST(PcapSource, SendersShareTheFramesRoundRobinAndReplayInALoop) {
  PcapWriter w(kMicro, false);
  for (uint32_t i = 0; i < 5; ++i) w.record(0, i * 100, test_frame(0, i));  // every 100 us
  const Capture cap = bench_detail::parse_pcap(w.bytes, 1514, "t.pcap");
  const SenderTraffic s1 = SenderTraffic::replayed(cap, 1, 2);  // frames 1, 3
  const SenderTraffic s3 = SenderTraffic::replayed(cap, 5, 6);  // none
  EXPECT_FALSE(s1.idle());
  EXPECT_TRUE(s3.idle());
  std::vector<std::byte> buf(2048);
  for (uint64_t i = 0; i < 6; ++i) {
    buf.resize(2048);
    buf.resize(s1.write(buf, i));
    EXPECT_EQ(parse_frame(buf)->seq, i % 2 == 0 ? 1u : 3u) << i;
  }
  // Its timing at speed 2: frames at 50 us and 150 us, again every (400 + 100) / 2 us.
  Pacer p = s1.replay_pacer(2.0, 8);
  p.start(0);
  EXPECT_EQ(p.due(49'999), 0u);
  EXPECT_EQ(p.due(50'000), 1u);
  p.take(1);
  EXPECT_EQ(p.ns_until_next(50'000), 100'000u);
  p.take(1);
  EXPECT_EQ(p.ns_until_next(50'000), 250'000u);  // 250 us + 50 us
}

// ---- through the bench ----------------------------------------------------------------------

// A one-round bench of these strategies at one thread count on the null device.
BenchConfig traffic_bench(std::vector<std::string> strategies, int threads) {
  return test::null_bench(std::move(strategies), {threads}, 0.05, 1);
}

// Every row's send() latency and its queueing delay (the device's departure log) are sampled,
// whole histograms and ordered percentiles; the kernel row has none here (no real device).
TEST(BenchTraffic, EveryRowHasSendAndQueueingDelayHistograms) {
  BenchConfig c = traffic_bench({"floor", "busylock", "drainer", "nolock", "peer:ck_ring"}, 2);
  c.duration_s = 0.3;  // enough windowed packets for samples (1 in 64) under a sanitizer too
  c.queues = {1, 2};
  c.qdisc = "pfifo";
  for (const BenchPoint& p : run_bench(c)) {
    SCOPED_TRACE(p.strategy + " queues " + std::to_string(p.queues) + ": sent " + std::to_string(p.sent) +
                 ", dropped " + std::to_string(p.dropped) + ", send() samples " + std::to_string(p.send_latency.count()));
    EXPECT_TRUE(p.conserved);
    EXPECT_GT(p.send_latency.count(), 0u);
    EXPECT_GT(p.queue_delay.count(), 0u);  // sampled packets reached the device's xmit
    EXPECT_LE(p.queue_delay.count(), p.sent);
    EXPECT_LE(p.send_p50_ns, p.send_p90_ns);
    EXPECT_LE(p.send_p90_ns, p.send_p99_ns);
    EXPECT_LE(p.send_p99_ns, p.send_p999_ns);
    EXPECT_LE(p.queue_p50_ns, p.queue_p999_ns);
    EXPECT_GT(p.queue_p50_ns, 0.0);
    EXPECT_EQ(p.offered_mpps, 0.0);
  }
}

// Paced: what was achieved is never above what was offered by more than the pacer's one
// catch-up burst per sender (an upper bound only: a slow machine sends less).
TEST(BenchTraffic, RateCapsWhatEveryRowSends) {
  BenchConfig c = traffic_bench({"floor", "busylock"}, 2);
  c.rate_pps = 20000;
  c.duration_s = 0.2;
  for (const BenchPoint& p : run_bench(c)) {
    EXPECT_DOUBLE_EQ(p.offered_mpps, 0.02);
    EXPECT_GT(p.sent, 0u);
    EXPECT_LE(p.mpps, 0.02 * 1.2) << p.strategy;
    EXPECT_TRUE(p.conserved);
  }
  c.rate_pps = 0;
  c.rate_per_sender_pps = 5000;
  for (const BenchPoint& p : run_bench(c)) {
    EXPECT_DOUBLE_EQ(p.offered_mpps, 0.01);
    EXPECT_LE(p.mpps, 0.01 * 1.2) << p.strategy;
  }
}

TEST(BenchTraffic, FlowsRunOnFqCodelAndConserve) {
  BenchConfig c = traffic_bench({"floor", "busylock"}, 2);
  c.flows = 8;
  c.qdisc = "fq_codel";
  for (const BenchPoint& p : run_bench(c)) {
    EXPECT_EQ(p.flows, 8u);
    EXPECT_TRUE(p.conserved) << p.strategy;
    EXPECT_GT(p.sent, 0u);
  }
}

TEST(BenchTraffic, BadTrafficOptionsAreOneLineErrors) {
  BenchConfig c = traffic_bench({"busylock"}, 2);
  c.rate_pps = -1;
  test::expect_error(c, "rate must be");
  c.rate_pps = 1000;
  c.rate_per_sender_pps = 1000;
  test::expect_error(c, "not both");
  c = traffic_bench({"busylock"}, 2);
  c.flows = 0;
  test::expect_error(c, "flows 0 out of range");
  c.flows = 4000;
  test::expect_error(c, "the sink's stream ids");
  c = traffic_bench({"busylock"}, 2);
  c.replay_speed = 2;
  test::expect_error(c, "needs a capture");
  c.source = "file:x";
  test::expect_error(c, "is not pcap:FILE");
  c.source = "pcap:/nonexistent/x.pcap";
  test::expect_error(c, "\"/nonexistent/x.pcap\"");
}

// A capture replayed flat out by 3 senders through a FIFO: every frame the device took is one
// of the capture's, conservation holds, and the sink does not count foreign frames.
TEST(BenchTraffic, ACaptureIsReplayedAndConserved) {
  PcapWriter w(kMicro, false);
  for (uint32_t i = 0; i < 7; ++i) w.record(0, i, test_frame(9, i, static_cast<uint16_t>(1000 + i)));
  const std::string path = ::testing::TempDir() + "traffic_replay.pcap";
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(w.bytes.data()), static_cast<std::streamsize>(w.bytes.size()));
  }
  BenchConfig c = traffic_bench({"floor", "busylock"}, 3);
  c.source = "pcap:" + path;
  for (const BenchPoint& p : run_bench(c)) {
    EXPECT_TRUE(p.conserved) << p.strategy;
    EXPECT_GT(p.sent, 0u);
    EXPECT_FALSE(p.sink_checked);
  }
  c.replay_speed = 1000;  // 7 frames 1 us apart: ~1 us per frame at speed 1, about 1 ns here
  c.threads = {8};        // senders beyond the capture's 7 frames idle
  for (const BenchPoint& p : run_bench(c)) EXPECT_TRUE(p.conserved) << p.strategy;
  std::remove(path.c_str());
}

}  // namespace
}  // namespace txpath
