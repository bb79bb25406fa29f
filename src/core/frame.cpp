// SPDX-License-Identifier: MIT
// Ethernet II / IPv4 / UDP test frames (see frame.hpp for the payload layout).
//
// Header fields written by FrameTemplate:
//   Ethernet: dst, src, type 0x0800
//   IPv4:     version 4, IHL 5, TOS from the spec, total length, id 0, DF set (RFC 6864: id 0
//             is fine for atomic datagrams), TTL 64, protocol 17, header checksum, src, dst
//   UDP:      ports from the spec, length, checksum 0 ("not computed", allowed over IPv4)
// parse_frame() accepts exactly that shape (any TTL/TOS/id/DF), plus a nonzero UDP checksum if
// it verifies, plus Ethernet padding up to the 60-byte minimum frame. parse_ipv4_packet() applies
// the same checks to an IPv4 packet without link header (a TUN device), padding not allowed.
#include "txpath/frame.hpp"

#include <cstring>
#include <string>

#include "core/byte_order.hpp"
#include "txpath/error.hpp"

namespace txpath {

namespace {

constexpr std::size_t kEthLen = 14;
constexpr std::size_t kIpLen = 20;
constexpr std::size_t kUdpLen = 8;
constexpr std::size_t kIpOff = kEthLen;
constexpr std::size_t kUdpOff = kEthLen + kIpLen;
constexpr std::size_t kPayloadOff = kHeadersLen;
constexpr std::size_t kMaxFrame = 9000;
constexpr std::size_t kMinEthFrame = 60;  // without FCS
constexpr uint16_t kEtherTypeIpv4 = 0x0800;
constexpr uint8_t kIpProtoUdp = 17;

using namespace byte_order;

// One's-complement sum of big-endian 16-bit words (odd length padded with a zero byte), folded.
uint32_t ones_sum(const std::byte* p, std::size_t n, uint32_t sum = 0) noexcept {
  for (std::size_t i = 0; i + 1 < n; i += 2) sum += load16(p + i);
  if (n & 1) sum += uint32_t{u8(p + n - 1)} << 8;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return sum;
}

}  // namespace

FrameTemplate::FrameTemplate(const FrameSpec& spec) {
  if (spec.payload < kMinPayload) {
    throw ConfigError("frame: payload of " + std::to_string(spec.payload) +
                      " bytes is below the minimum of " + std::to_string(kMinPayload));
  }
  if (spec.payload > kMaxFrame - kHeadersLen) {
    throw ConfigError("frame: payload of " + std::to_string(spec.payload) + " bytes makes a " +
                      std::to_string(spec.payload + kHeadersLen) + "-byte frame (max " +
                      std::to_string(kMaxFrame) + ")");
  }
  bytes_.assign(kHeadersLen + spec.payload, std::byte{0});
  std::byte* f = bytes_.data();

  // Ethernet II
  std::memcpy(f, spec.dst_mac.data(), 6);
  std::memcpy(f + 6, spec.src_mac.data(), 6);
  store16(f + 12, kEtherTypeIpv4);

  // IPv4
  std::byte* ip = f + kIpOff;
  store8(ip + 0, 0x45);  // version 4, IHL 5 (no options)
  store8(ip + 1, spec.tos);
  store16(ip + 2, static_cast<uint16_t>(kIpLen + kUdpLen + spec.payload));
  store16(ip + 4, 0);       // identification
  store16(ip + 6, 0x4000);  // DF, fragment offset 0
  store8(ip + 8, 64);       // TTL
  store8(ip + 9, kIpProtoUdp);
  store16(ip + 10, 0);  // checksum, filled in below
  store32(ip + 12, spec.src_ip);
  store32(ip + 16, spec.dst_ip);
  store16(ip + 10, static_cast<uint16_t>(~ones_sum(ip, kIpLen) & 0xffff));

  // UDP
  std::byte* udp = f + kUdpOff;
  store16(udp + 0, spec.src_port);
  store16(udp + 2, spec.dst_port);
  store16(udp + 4, static_cast<uint16_t>(kUdpLen + spec.payload));
  store16(udp + 6, 0);  // no checksum

  // Payload: magic; sender and seq are stamped by write(); the rest stays zero.
  store32(f + kPayloadOff, kFrameMagic);
}

std::size_t FrameTemplate::write(std::span<std::byte> out, uint32_t sender,
                                 uint64_t seq) const noexcept {
  if (out.size() < bytes_.size()) return 0;
  std::memcpy(out.data(), bytes_.data(), bytes_.size());
  store32(out.data() + kPayloadOff + 4, sender);
  store64(out.data() + kPayloadOff + 8, seq);
  return bytes_.size();
}

namespace {

// The IPv4 + UDP + payload checks shared by parse_frame() and parse_ipv4_packet(). `ip` points at
// `l3_len` bytes; `padding_ok`: bytes after the IPv4 total length are tolerated (Ethernet padding).
std::optional<FrameInfo> parse_ip(const std::byte* ip, std::size_t l3_len,
                                  bool padding_ok) noexcept {
  if (l3_len < kIpLen + kUdpLen + kMinPayload) return std::nullopt;
  if (u8(ip) != 0x45) return std::nullopt;  // IPv4 without options only
  const std::size_t ip_total = load16(ip + 2);
  if (ip_total < kIpLen + kUdpLen + kMinPayload) return std::nullopt;
  if (ip_total > l3_len) return std::nullopt;  // truncated
  if (ip_total < l3_len && !padding_ok) return std::nullopt;
  if ((load16(ip + 6) & 0x3fff) != 0) return std::nullopt;  // MF or a fragment offset
  if (u8(ip + 9) != kIpProtoUdp) return std::nullopt;
  if (ones_sum(ip, kIpLen) != 0xffff) return std::nullopt;  // header checksum

  const std::byte* udp = ip + kIpLen;
  const std::size_t udp_len = load16(udp + 4);
  if (udp_len != ip_total - kIpLen) return std::nullopt;
  if (const uint16_t csum = load16(udp + 6); csum != 0) {
    // Verify over the pseudo-header (src, dst, zero+proto, UDP length) and the datagram.
    uint32_t sum = ones_sum(ip + 12, 8);
    sum += kIpProtoUdp;
    sum += static_cast<uint32_t>(udp_len);
    if (ones_sum(udp, udp_len, sum) != 0xffff) return std::nullopt;
  }

  const std::byte* payload = udp + kUdpLen;
  if (load32(payload) != kFrameMagic) return std::nullopt;

  FrameInfo info;
  info.sender = load32(payload + 4);
  info.seq = load64(payload + 8);
  info.payload = udp_len - kUdpLen;
  return info;
}

}  // namespace

std::optional<FrameInfo> parse_frame(std::span<const std::byte> frame) noexcept {
  const std::size_t n = frame.size();
  if (n < kHeadersLen + kMinPayload || n > kMaxFrame) return std::nullopt;
  const std::byte* f = frame.data();
  if (load16(f + 12) != kEtherTypeIpv4) return std::nullopt;
  // Trailing bytes are only legal as Ethernet padding up to the minimum frame size.
  return parse_ip(f + kIpOff, n - kEthLen, n <= kMinEthFrame);
}

std::optional<FrameInfo> parse_ipv4_packet(std::span<const std::byte> packet) noexcept {
  const std::size_t n = packet.size();
  if (n > kMaxFrame - kEthLen) return std::nullopt;
  return parse_ip(packet.data(), n, false);
}

}  // namespace txpath
