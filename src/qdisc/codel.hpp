// SPDX-License-Identifier: MIT
// CoDel (Nichols & Jacobson, "Controlling Queue Delay", ACM Queue 2012; RFC 8289) in the fixed
// point Linux uses (include/net/codel.h, codel_impl.h), written from the semantics:
//   - time is a u32 in 1.024 us units (ns >> 10), compared wrap-safely through a signed
//     difference, so every quantity below is a CoDel time, never ns;
//   - rec_inv_sqrt is a Q0.16 approximation of 1/sqrt(count), refined by one Newton step
//     x' = x * (3 - count * x^2) / 2 per count change (evaluated in Q0.32);
//   - the control law is drop_next = t + interval * rec_inv_sqrt / 2^16.
// The dequeue state machine itself lives with its user (fq_codel.cpp), which owns the packet
// queue, the backlog test and the drop / mark actions.
//
// Invariants: rec_inv_sqrt == 0xFFFF right after a reset of count to 1; count >= 1 while
// dropping. No atomics: one CodelVars belongs to one flow of a qdisc, and a qdisc is called by
// one thread at a time (qdisc.hpp), so there is no memory ordering to speak of.
#pragma once

#include <cstdint>

namespace txpath::codel {

using Time = uint32_t;  // 1.024 us units, wraps every ~73 minutes

inline constexpr int kTimeShift = 10;

constexpr Time from_ns(uint64_t ns) noexcept { return static_cast<Time>(ns >> kTimeShift); }
// The usec value the kernel reports for a CoDel time (truncating): 4882 -> 4999.
constexpr uint64_t to_us(Time t) noexcept { return (uint64_t{t} << kTimeShift) / 1000; }
// The CoDel time of a tc value in usec: 5000 us -> 4882.
constexpr Time from_us(uint64_t us) noexcept { return static_cast<Time>((us * 1000) >> kTimeShift); }

// Wrap-safe comparisons: a is after b iff the signed distance b -> a is positive.
constexpr int32_t diff(Time a, Time b) noexcept { return static_cast<int32_t>(a - b); }
constexpr bool after(Time a, Time b) noexcept { return diff(a, b) > 0; }
constexpr bool after_eq(Time a, Time b) noexcept { return diff(a, b) >= 0; }
constexpr bool before(Time a, Time b) noexcept { return diff(a, b) < 0; }

// "ce_threshold off": no delay exceeds it.
inline constexpr Time kDisabledThreshold = 0x7FFFFFFF;

inline constexpr uint16_t kRecInvSqrtOne = 0xFFFF;  // ~1.0 in Q0.16

// Per-flow CoDel state (Linux codel_vars).
struct Vars {
  uint32_t count = 0;          // drops (or marks) since entering the dropping state, roughly
  uint32_t lastcount = 0;      // count when the last dropping state was entered
  bool dropping = false;       // in the dropping state
  uint16_t rec_inv_sqrt = 0;   // Q0.16 approximation of 1/sqrt(count)
  Time first_above_time = 0;   // when sojourn has been above target for an interval; 0 = not above
  Time drop_next = 0;          // next drop / mark time while dropping
  Time ldelay = 0;             // sojourn time of the last packet examined
};

// One Newton-Raphson refinement of rec_inv_sqrt for the current count.
// In Q0.32: y = x^2; v = 3 - count*y (Q32.32, needs 34 bits, so it is pre-shifted right by 2 to
// keep v*x inside 64 bits); x' = v*x/2, renormalised to Q0.32 and truncated to Q0.16.
constexpr void newton_step(Vars& v) noexcept {
  const uint64_t x = uint64_t{v.rec_inv_sqrt} << 16;    // Q0.32
  const uint64_t x2 = (x * x) >> 32;                    // Q0.32
  uint64_t t = (uint64_t{3} << 32) - uint64_t{v.count} * x2;  // Q32.32
  t >>= 2;                                              // Q30.30
  t = (t * x) >> 31;                                    // Q30.30 * Q0.32 / 2 -> Q0.32 (>> 32+1-2)
  v.rec_inv_sqrt = static_cast<uint16_t>(t >> 16);
}

// drop_next for a drop at time t: t + interval / sqrt(count), scaled by the Q0.16 estimate.
constexpr Time control_law(Time t, Time interval, uint16_t rec_inv_sqrt) noexcept {
  return t + static_cast<Time>((uint64_t{interval} * (uint64_t{rec_inv_sqrt} << 16)) >> 32);
}

}  // namespace txpath::codel
