// SPDX-License-Identifier: MIT
// RateCfg: a shaping rate and the framing a packet is charged for, with the bytes <-> time
// conversion of the token-bucket qdiscs (tbf, htb). It plays the role of the kernel's
// struct psched_ratecfg (include/net/sch_generic.h: rate, overhead, mpu, linklayer;
// psched_l2t_ns()), written from its semantics; no code copied.
//
//   wire_len(len) = max(len + overhead, mpu), then for linklayer atm/adsl ceil(wire / 48) * 53
//                   (one 53-byte cell per 48 payload bytes);
//   bytes_to_ns(b) = ceil(b * 1e9 / rate), clamped to kMaxNs (also for rate 0);
//   l2t_ns(len)   = bytes_to_ns(wire_len(len)): the transmission time a packet costs.
// The kernel computes l2t with a mult/shift that rounds down; rounding up makes "bytes sent in
// [0, T] <= burst + rate * T" hold exactly for rates of whole ns per byte.
// Plain value type: no state, no threads; every function is inline (the packet path calls them).
#pragma once

#include <cstdint>

namespace txpath {

struct RateCfg {
  // Bucket depths and per-packet costs are clamped here so that int64 token arithmetic
  // (tokens + elapsed, now + deficit) cannot overflow: 2^62 ns is about 146 years.
  static constexpr uint64_t kMaxNs = uint64_t{1} << 62;

  uint64_t rate = 0;      // bytes per second; 0 lets nothing pass (every cost is kMaxNs)
  uint32_t overhead = 0;  // bytes added per packet
  uint32_t mpu = 0;       // minimum packet unit, bytes
  bool atm = false;       // linklayer atm/adsl

  uint64_t wire_len(uint64_t len) const noexcept {
    len += overhead;
    if (len < mpu) len = mpu;
    if (atm) len = (len + 47) / 48 * 53;
    return len;
  }
  uint64_t bytes_to_ns(uint64_t bytes) const noexcept {
    if (rate == 0) return kMaxNs;
    const unsigned __int128 num = static_cast<unsigned __int128>(bytes) * 1'000'000'000u;
    const unsigned __int128 ns = (num + rate - 1) / rate;
    return ns > kMaxNs ? kMaxNs : static_cast<uint64_t>(ns);
  }
  uint64_t l2t_ns(uint64_t len) const noexcept { return bytes_to_ns(wire_len(len)); }
};

}  // namespace txpath
