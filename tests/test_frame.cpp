// SPDX-License-Identifier: MIT
// Ethernet/IPv4/UDP test frames: build/parse roundtrip, header fields, checksum, rejection of
// truncated and corrupted frames.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "txpath/error.hpp"
#include "txpath/frame.hpp"

using namespace txpath;

namespace {

uint16_t be16(const std::vector<std::byte>& f, std::size_t off) {
  return static_cast<uint16_t>((std::to_integer<unsigned>(f[off]) << 8) |
                               std::to_integer<unsigned>(f[off + 1]));
}
void put16(std::vector<std::byte>& f, std::size_t off, uint16_t v) {
  f[off] = std::byte(v >> 8);
  f[off + 1] = std::byte(v & 0xff);
}

// RFC 1071 sum, written independently of the implementation under test.
uint32_t fold(uint64_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint32_t>(sum);
}
uint32_t sum16(const std::vector<std::byte>& f, std::size_t off, std::size_t len) {
  uint64_t s = 0;
  for (std::size_t i = 0; i < len; i += 2) {
    s += (std::to_integer<unsigned>(f[off + i]) << 8) |
         (i + 1 < len ? std::to_integer<unsigned>(f[off + i + 1]) : 0u);
  }
  return fold(s);
}

std::vector<std::byte> build(std::size_t payload, uint32_t sender, uint64_t seq) {
  FrameTemplate t(FrameSpec{.payload = payload});
  std::vector<std::byte> buf(t.size());
  EXPECT_EQ(t.write(buf, sender, seq), buf.size());
  return buf;
}

}  // namespace

TEST(Frame, RoundtripAllPayloadSizes) {
  for (std::size_t payload = kMinPayload; payload <= 1472; ++payload) {
    const uint32_t sender = static_cast<uint32_t>(payload * 7 + 1);
    const uint64_t seq = 0x0102030405060708ull + payload;
    const auto f = build(payload, sender, seq);
    ASSERT_EQ(f.size(), kHeadersLen + payload);
    const auto info = parse_frame(f);
    ASSERT_TRUE(info.has_value()) << "payload " << payload;
    EXPECT_EQ(info->sender, sender);
    EXPECT_EQ(info->seq, seq);
    EXPECT_EQ(info->payload, payload);
  }
}

TEST(Frame, HeaderFields) {
  FrameSpec spec{.payload = 100, .src_ip = 0xc0a80101, .dst_ip = 0xc0a80102, .src_port = 1234,
                 .dst_port = 5678, .tos = 0x10};
  FrameTemplate t(spec);
  std::vector<std::byte> f(t.size());
  ASSERT_EQ(t.write(f, 3, 0x1122334455667788ull), f.size());
  EXPECT_EQ(f.size(), 142u);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(std::to_integer<uint8_t>(f[i]), spec.dst_mac[i]);
    EXPECT_EQ(std::to_integer<uint8_t>(f[6 + i]), spec.src_mac[i]);
  }
  EXPECT_EQ(be16(f, 12), 0x0800);
  EXPECT_EQ(std::to_integer<unsigned>(f[14]), 0x45u);        // v4, IHL 5
  EXPECT_EQ(std::to_integer<unsigned>(f[15]), 0x10u);        // TOS
  EXPECT_EQ(be16(f, 16), 128);                                 // total length = 20 + 8 + 100
  EXPECT_EQ(std::to_integer<unsigned>(f[22]), 64u);          // TTL
  EXPECT_EQ(std::to_integer<unsigned>(f[23]), 17u);          // UDP
  EXPECT_EQ(be16(f, 26), 0xc0a8);
  EXPECT_EQ(be16(f, 28), 0x0101);
  EXPECT_EQ(be16(f, 30), 0xc0a8);
  EXPECT_EQ(be16(f, 32), 0x0102);
  EXPECT_EQ(sum16(f, 14, 20), 0xffffu);                      // header checksum verifies
  EXPECT_EQ(be16(f, 34), 1234);
  EXPECT_EQ(be16(f, 36), 5678);
  EXPECT_EQ(be16(f, 38), 108);                                 // UDP length
  EXPECT_EQ(be16(f, 40), 0);                                   // no UDP checksum
  EXPECT_EQ(be16(f, 42), 0x5458);                              // 'TX'
  EXPECT_EQ(be16(f, 44), 0x5031);                              // 'P1'
  EXPECT_EQ(be16(f, 46), 0);                                   // sender 3, big-endian
  EXPECT_EQ(be16(f, 48), 3);
  EXPECT_EQ(be16(f, 50), 0x1122);                              // seq, big-endian
  EXPECT_EQ(be16(f, 56), 0x7788);
  for (std::size_t i = 58; i < f.size(); ++i) EXPECT_EQ(std::to_integer<int>(f[i]), 0);
}

TEST(Frame, ChecksumVerifiesForManyHeaders) {
  for (uint32_t ip = 0; ip < 2000; ++ip) {
    FrameTemplate t(FrameSpec{.payload = 16 + ip % 64, .src_ip = ip * 2654435761u,
                              .dst_ip = ~ip, .tos = static_cast<uint8_t>(ip)});
    std::vector<std::byte> f(t.size());
    t.write(f, ip, ip);
    ASSERT_EQ(sum16(f, 14, 20), 0xffffu);
    ASSERT_TRUE(parse_frame(f).has_value());
  }
}

TEST(Frame, RejectsTruncated) {
  const auto f = build(64, 1, 2);
  for (std::size_t n = 0; n < f.size(); ++n) {
    EXPECT_FALSE(parse_frame(std::span(f.data(), n)).has_value()) << "length " << n;
  }
}

TEST(Frame, RejectsCorruptedHeaders) {
  const auto good = build(200, 9, 77);
  ASSERT_TRUE(parse_frame(good).has_value());
  // Every byte the parser checks: EtherType, the whole IPv4 header (checksummed), UDP length and
  // checksum, the payload magic. (MACs and UDP ports are not checked.)
  std::vector<std::size_t> offsets = {12, 13, 38, 39, 40, 41, 42, 43, 44, 45};
  for (std::size_t i = 14; i < 34; ++i) offsets.push_back(i);
  for (std::size_t off : offsets) {
    for (uint8_t bit = 1; bit != 0; bit = static_cast<uint8_t>(bit << 1)) {
      auto f = good;
      f[off] ^= std::byte{bit};
      EXPECT_FALSE(parse_frame(f).has_value()) << "offset " << off << " bit " << int(bit);
    }
  }
}

TEST(Frame, RejectsTrailingGarbageButAcceptsPadding) {
  auto small = build(kMinPayload, 1, 1);  // 58 bytes: below the 60-byte Ethernet minimum
  ASSERT_EQ(small.size(), 58u);
  small.resize(60, std::byte{0});         // padded by a NIC
  EXPECT_TRUE(parse_frame(small).has_value());
  small.resize(61, std::byte{0});
  EXPECT_FALSE(parse_frame(small).has_value());

  auto big = build(100, 1, 1);
  big.push_back(std::byte{0});
  EXPECT_FALSE(parse_frame(big).has_value());
}

TEST(Frame, RejectsWrongProtocolAndFragments) {
  auto f = build(32, 1, 1);
  auto fix_csum = [](std::vector<std::byte>& g) {
    put16(g, 24, 0);
    put16(g, 24, static_cast<uint16_t>(~sum16(g, 14, 20)));
  };
  auto tcp = f;
  tcp[23] = std::byte{6};
  fix_csum(tcp);
  EXPECT_FALSE(parse_frame(tcp).has_value());
  auto mf = f;
  put16(mf, 20, 0x2000);  // more fragments
  fix_csum(mf);
  EXPECT_FALSE(parse_frame(mf).has_value());
  auto opts = f;
  opts[14] = std::byte{0x46};  // IHL 6
  fix_csum(opts);
  EXPECT_FALSE(parse_frame(opts).has_value());
  auto ok = f;
  ok[22] = std::byte{1};  // TTL is not checked (a routed frame is still ours)
  fix_csum(ok);
  EXPECT_TRUE(parse_frame(ok).has_value());
}

TEST(Frame, AcceptsValidUdpChecksumRejectsInvalid) {
  auto f = build(50, 4, 5);
  // Pseudo-header: src, dst, proto, UDP length; then the UDP header and payload.
  const std::size_t udp_len = be16(f, 38);
  uint64_t s = sum16(f, 26, 8) + 17 + udp_len + sum16(f, 34, udp_len);
  uint16_t csum = static_cast<uint16_t>(~fold(s));
  if (csum == 0) csum = 0xffff;
  put16(f, 40, csum);
  EXPECT_TRUE(parse_frame(f).has_value());
  put16(f, 40, static_cast<uint16_t>(csum ^ 0x0100));
  EXPECT_FALSE(parse_frame(f).has_value());
}

TEST(Frame, PayloadBounds) {
  EXPECT_THROW(FrameTemplate(FrameSpec{.payload = kMinPayload - 1}), ConfigError);
  EXPECT_THROW(FrameTemplate(FrameSpec{.payload = 0}), ConfigError);
  EXPECT_NO_THROW(FrameTemplate(FrameSpec{.payload = 9000 - kHeadersLen}));
  EXPECT_THROW(FrameTemplate(FrameSpec{.payload = 9000 - kHeadersLen + 1}), ConfigError);
  try {
    FrameTemplate(FrameSpec{.payload = 3});
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
}

TEST(Frame, WriteIntoSmallBufferFails) {
  FrameTemplate t(FrameSpec{.payload = 32});
  std::vector<std::byte> buf(t.size() - 1);
  EXPECT_EQ(t.write(buf, 1, 1), 0u);
  buf.resize(t.size() + 10);
  EXPECT_EQ(t.write(buf, 1, 1), t.size());
}

TEST(Frame, RejectsOversized) {
  std::vector<std::byte> f(9001);
  EXPECT_FALSE(parse_frame(f).has_value());
}
