// SPDX-License-Identifier: MIT
// Real Ethernet/IPv4/UDP frames whose payload carries a sender id and a sequence number, so that
// any receiver (a test device, a pcap reader, the sink) can check loss, duplication and order.
//
// Payload layout (network byte order), at least kMinPayload bytes:
//   offset 0: u32 magic 'TXP1' (0x54585031)
//   offset 4: u32 sender id
//   offset 8: u64 sequence number (per sender, starting at 0)
//   rest:     zero
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace txpath {

inline constexpr uint32_t kFrameMagic = 0x54585031;   // "TXP1"
inline constexpr std::size_t kMinPayload = 16;
inline constexpr std::size_t kHeadersLen = 14 + 20 + 8;  // Ethernet + IPv4 + UDP

struct FrameSpec {
  std::size_t payload = 32;  // UDP payload bytes (>= kMinPayload)
  std::array<uint8_t, 6> dst_mac{0x02, 0, 0, 0, 0, 0x02};
  std::array<uint8_t, 6> src_mac{0x02, 0, 0, 0, 0, 0x01};
  uint32_t src_ip = 0x0a000001;  // 10.0.0.1 (host order)
  uint32_t dst_ip = 0x0a000002;  // 10.0.0.2
  uint16_t src_port = 9000;
  uint16_t dst_port = 9000;
  uint8_t tos = 0;
};

struct FrameInfo {
  uint32_t sender = 0;
  uint64_t seq = 0;
  std::size_t payload = 0;
};

// A prebuilt frame: senders copy it and stamp their id and sequence number (UDP checksum 0,
// which IPv4 allows; the IPv4 header checksum does not cover the payload).
class FrameTemplate {
 public:
  explicit FrameTemplate(const FrameSpec& spec = {});  // throws ConfigError if payload too small
  std::size_t size() const noexcept { return bytes_.size(); }
  // Writes the frame into `out` and returns its length, or 0 if `out` is too small.
  std::size_t write(std::span<std::byte> out, uint32_t sender, uint64_t seq) const noexcept;

 private:
  std::vector<std::byte> bytes_;
};

// Parses a frame written by FrameTemplate (checks Ethernet type, IPv4 header and checksum,
// UDP, lengths and magic). nullopt for anything else.
std::optional<FrameInfo> parse_frame(std::span<const std::byte> frame) noexcept;

// The same for an IPv4 packet without link header (what a TUN device or an L3 interface carries):
// IPv4 header and checksum, UDP, lengths (no trailing bytes) and magic. nullopt for anything else.
std::optional<FrameInfo> parse_ipv4_packet(std::span<const std::byte> packet) noexcept;

}  // namespace txpath
