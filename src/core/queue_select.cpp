// SPDX-License-Identifier: MIT
// frame_flow_hash() and pick_tx_queue(): see include/txpath/queue_select.hpp. Written from the
// semantics of Linux's netdev_pick_tx() / get_xps_queue() / skb_tx_hash() and the flow
// dissector (docs/background.md, "Choosing a TX queue"); no kernel code was copied.
#include "txpath/queue_select.hpp"

#include <algorithm>
#include <array>

#include "core/byte_order.hpp"

namespace txpath {

namespace {

constexpr uint16_t kEtherIpv4 = 0x0800, kEtherIpv6 = 0x86dd;
constexpr uint16_t kEtherVlan = 0x8100, kEtherQinQ = 0x88a8;

uint16_t be16(std::span<const std::byte> b, std::size_t at) noexcept {
  return byte_order::load16(b.data() + at);
}
uint32_t be32(std::span<const std::byte> b, std::size_t at) noexcept {
  return byte_order::load32(b.data() + at);
}

bool has_ports(uint8_t proto) noexcept {
  return proto == 6 || proto == 17 || proto == 136 || proto == 132;  // TCP, UDP, UDP-Lite, SCTP
}

// The ports word (source << 16 | destination) at `at`, or 0 when the frame ends first.
uint32_t ports_at(std::span<const std::byte> l3, std::size_t at) noexcept {
  return at + 4 <= l3.size() ? be32(l3, at) : 0;
}

// A multiply-xorshift mix of the tuple's words with a fixed seed: the same tuple gives the same
// hash in every process (a queue choice that tests and users can reproduce).
uint32_t mix(std::span<const uint32_t> words) noexcept {
  uint64_t h = 0x6a09e667f3bcc909ull;  // fixed seed (the fractional bits of sqrt(2))
  for (const uint32_t w : words) {
    h ^= w;
    h *= 0x9e3779b97f4a7c15ull;  // odd constant (2^64 / golden ratio)
    h ^= h >> 29;
  }
  h ^= h >> 32;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 31;
  const auto out = static_cast<uint32_t>(h);
  return out != 0 ? out : 1;  // 0 means "no hash"
}

std::optional<uint32_t> ipv4_hash(std::span<const std::byte> l3) noexcept {
  if (l3.size() < 20 || std::to_integer<unsigned>(l3[0]) >> 4 != 4) return std::nullopt;
  const std::size_t ihl = (std::to_integer<unsigned>(l3[0]) & 0x0f) * 4u;
  if (ihl < 20 || ihl > l3.size()) return std::nullopt;
  const auto proto = std::to_integer<uint8_t>(l3[9]);
  const bool fragment = (be16(l3, 6) & 0x3fff) != 0;  // more-fragments flag or an offset
  const uint32_t ports = !fragment && has_ports(proto) ? ports_at(l3, ihl) : 0;
  const std::array<uint32_t, 4> words = {be32(l3, 12), be32(l3, 16), ports, proto};
  return mix(words);
}

std::optional<uint32_t> ipv6_hash(std::span<const std::byte> l3) noexcept {
  if (l3.size() < 40 || std::to_integer<unsigned>(l3[0]) >> 4 != 6) return std::nullopt;
  const auto next = std::to_integer<uint8_t>(l3[6]);  // an extension header: addresses only
  std::array<uint32_t, 10> words{};
  for (std::size_t i = 0; i < 8; ++i) words[i] = be32(l3, 8 + 4 * i);  // source, destination
  words[8] = has_ports(next) ? ports_at(l3, 40) : 0;
  words[9] = next;
  return mix(words);
}

}  // namespace

std::optional<uint32_t> frame_flow_hash(std::span<const std::byte> frame) noexcept {
  std::size_t at = 12;  // the EtherType after both MAC addresses
  if (frame.size() < at + 2) return std::nullopt;
  uint16_t type = be16(frame, at);
  for (int tags = 0; tags < 2 && (type == kEtherVlan || type == kEtherQinQ); ++tags) {
    at += 4;
    if (frame.size() < at + 2) return std::nullopt;
    type = be16(frame, at);
  }
  const std::span<const std::byte> l3 = frame.subspan(at + 2);
  if (type == kEtherIpv4) return ipv4_hash(l3);
  if (type == kEtherIpv6) return ipv6_hash(l3);
  return std::nullopt;
}

namespace {

// Bits [from, to) of a bitmap.
uint32_t count_bits(std::span<const uint64_t> mask, uint32_t from, uint32_t to) noexcept {
  uint32_t k = 0;
  for (uint32_t q = from; q < to && q / 64 < mask.size(); ++q) k += (mask[q / 64] >> (q % 64)) & 1;
  return k;
}

// The queue of the `index`-th set bit in [from, to) (index < count_bits(mask, from, to)).
uint32_t nth_bit(std::span<const uint64_t> mask, uint32_t from, uint32_t to,
                 uint32_t index) noexcept {
  for (uint32_t q = from; q < to; ++q) {
    if (((mask[q / 64] >> (q % 64)) & 1) && index-- == 0) return q;
  }
  return from;  // not reached when index is in range
}

}  // namespace

uint32_t pick_tx_queue(const QueuePick& pick) noexcept {
  const uint32_t n = pick.num_queues > 0 ? pick.num_queues : 1;
  if (pick.explicit_queue && *pick.explicit_queue < n) return *pick.explicit_queue;
  uint32_t from = 0, count = n;
  if (pick.class_count > 0 && pick.class_offset < n) {
    from = pick.class_offset;
    count = std::min(pick.class_count, n - from);
  }
  const uint32_t in_map = count_bits(pick.xps_mask, from, from + count);
  if (in_map > 0) return nth_bit(pick.xps_mask, from, from + count, scale_hash(pick.flow_hash, in_map));
  return from + scale_hash(pick.flow_hash, count);
}

}  // namespace txpath
