// SPDX-License-Identifier: MIT
// RFC 3168 CE marking (INET_ECN_set_ce) for the AQM qdiscs (fq_codel, fq's ce_threshold).
#pragma once

#include <cstddef>
#include <cstdint>

#include "txpath/packet.hpp"

namespace txpath::ecn {

// Marks an ECN-capable IPv4 or IPv6 packet behind an Ethernet header Congestion Experienced.
// Returns true if the packet now carries CE (also when it already did), false if it is not ECN
// capable (Not-ECT, not IP, too short). IPv4's header checksum is updated incrementally
// (RFC 1624 eqn. 3).
inline bool set_ce(Packet& p) noexcept {
  constexpr std::size_t kEth = 14;
  auto at = [&p](std::size_t i) { return std::to_integer<uint8_t>(p.data[i]); };
  if (p.data == nullptr || p.len < kEth + 1) return false;
  const uint16_t ethertype = static_cast<uint16_t>(at(12) << 8 | at(13));
  if (ethertype == 0x0800) {
    if (p.len < kEth + 20 || (at(kEth) >> 4) != 4) return false;
    const uint8_t tos = at(kEth + 1);
    const uint8_t ecn = tos & 3;
    if (ecn == 3) return true;
    if (ecn == 0) return false;
    // HC' = ~(~HC + ~m + m'), m = the 16-bit word holding version/IHL and TOS.
    const uint16_t m = static_cast<uint16_t>(at(kEth) << 8 | tos);
    const uint16_t m2 = static_cast<uint16_t>(m | 3);
    const uint16_t hc = static_cast<uint16_t>(at(kEth + 10) << 8 | at(kEth + 11));
    uint32_t sum = uint32_t{static_cast<uint16_t>(~hc)} + uint32_t{static_cast<uint16_t>(~m)} + m2;
    sum = (sum & 0xFFFF) + (sum >> 16);
    sum = (sum & 0xFFFF) + (sum >> 16);
    const auto hc2 = static_cast<uint16_t>(~sum);
    p.data[kEth + 1] = std::byte{static_cast<uint8_t>(tos | 3)};
    p.data[kEth + 10] = std::byte{static_cast<uint8_t>(hc2 >> 8)};
    p.data[kEth + 11] = std::byte{static_cast<uint8_t>(hc2 & 0xFF)};
    return true;
  }
  if (ethertype == 0x86DD) {
    // Traffic class = low nibble of byte 0 and high nibble of byte 1; ECN = its low 2 bits.
    if (p.len < kEth + 40 || (at(kEth) >> 4) != 6) return false;
    const uint8_t b1 = at(kEth + 1);
    const uint8_t ecn = (b1 >> 4) & 3;
    if (ecn == 3) return true;
    if (ecn == 0) return false;
    p.data[kEth + 1] = std::byte{static_cast<uint8_t>(b1 | 0x30)};
    return true;
  }
  return false;
}

}  // namespace txpath::ecn
