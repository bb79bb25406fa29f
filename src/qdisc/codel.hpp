// SPDX-License-Identifier: MIT
// CoDel (Nichols & Jacobson, "Controlling Queue Delay", ACM Queue 2012; RFC 8289) in the fixed
// point Linux uses (include/net/codel.h, codel_impl.h), written from the semantics:
//   - time is a u32 in 1.024 us units (ns >> 10), compared wrap-safely through a signed
//     difference, so every quantity below is a CoDel time, never ns;
//   - rec_inv_sqrt is a Q0.16 approximation of 1/sqrt(count), refined by one Newton step
//     x' = x * (3 - count * x^2) / 2 per count change (evaluated in Q0.32);
//   - the control law is drop_next = t + interval * rec_inv_sqrt / 2^16.
// The dequeue state machine (codel::dequeue below, the kernel's codel_dequeue) is shared by its
// two users, codel (one queue) and fq_codel (one per flow); each owns its packet queue, the
// backlog the "at most one MTU" test reads, and what a drop does (count, park the victim).
//
// Invariants: rec_inv_sqrt == 0xFFFF right after a reset of count to 1; count >= 1 while
// dropping. No atomics: one CodelVars belongs to one flow of a qdisc, and a qdisc is called by
// one thread at a time (qdisc.hpp), so there is no memory ordering to speak of.
#pragma once

#include <algorithm>
#include <cstdint>

#include "qdisc/ecn.hpp"
#include "txpath/packet.hpp"

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

// The settings of one CoDel instance (Linux codel_params), in CoDel time units.
struct Params {
  Time target = 0;
  Time interval = 0;
  Time ce_threshold = kDisabledThreshold;  // kDisabledThreshold: no CE marking by sojourn
  uint32_t mtu = 1514;                     // "the whole queue holds at most one MTU": good queue
  bool ecn = false;                        // mark ECT packets instead of dropping them
};

// Params from the usec values tc carries; without a ce_threshold, marking by sojourn is off.
constexpr Params params_from_us(uint64_t target_us, uint64_t interval_us, bool has_ce_threshold,
                                uint64_t ce_threshold_us, uint32_t mtu, bool ecn) noexcept {
  return {from_us(target_us), from_us(interval_us),
          has_ce_threshold ? from_us(ce_threshold_us) : kDisabledThreshold, mtu, ecn};
}

// The counters CoDel keeps (Linux codel_stats): what tc -s prints as maxpacket, ecn_mark, ce_mark.
struct Stats {
  uint32_t maxpacket = 0;
  uint32_t ecn_mark = 0;
  uint32_t ce_mark = 0;
};

// CoDel's per-packet test (the kernel's codel_should_drop): records the packet's sojourn in
// v.ldelay and maxpacket; true when the sojourn has stayed at or above target for an interval.
// `backlog` is the queue's byte backlog with `p` already taken out.
inline bool should_drop(const Packet* p, uint64_t backlog, Vars& v, const Params& prm, Stats& st,
                        Time now) noexcept {
  if (p == nullptr) {
    v.first_above_time = 0;
    return false;
  }
  v.ldelay = now - from_ns(p->enqueue_ns);
  st.maxpacket = std::max(st.maxpacket, p->len);
  if (before(v.ldelay, prm.target) || backlog <= prm.mtu) {
    v.first_above_time = 0;
    return false;
  }
  if (v.first_above_time == 0) {
    v.first_above_time = now + prm.interval;
    return false;
  }
  return after(now, v.first_above_time);
}

// The CoDel dequeue (RFC 8289 section 5; the kernel's codel_dequeue) over queue `q`, which offers
//   Packet* pop() noexcept;            the head, nullptr when empty (no Qdisc accounting)
//   uint64_t backlog() const noexcept; bytes still queued (the "one MTU" test)
//   void drop(Packet* p) noexcept;     a victim: counted as a drop and kept for to_free
// Returns the packet to send (maybe CE-marked), or nullptr when the queue ran empty. In the
// dropping state it acts once per control-law interval that has passed (drop_next = previous
// drop_next + interval / sqrt(count)); entering it soon after leaving (within 16 intervals)
// resumes near the previous rate: count = count - lastcount when that is above 1.
template <class Queue>
Packet* dequeue(Queue& q, Vars& v, const Params& prm, Stats& st, Time now) noexcept {
  Packet* p = q.pop();
  if (p == nullptr) {
    v.dropping = false;
    return nullptr;
  }
  const bool drop = should_drop(p, q.backlog(), v, prm, st, now);
  if (v.dropping) {
    if (!drop) {
      v.dropping = false;  // sojourn fell below target: leave the dropping state
    } else {
      while (v.dropping && after_eq(now, v.drop_next)) {
        ++v.count;
        newton_step(v);
        if (prm.ecn && ecn::set_ce(*p)) {
          ++st.ecn_mark;
          v.drop_next = control_law(v.drop_next, prm.interval, v.rec_inv_sqrt);
          break;  // a marked packet is delivered
        }
        q.drop(p);
        p = q.pop();
        if (!should_drop(p, q.backlog(), v, prm, st, now)) {
          v.dropping = false;
        } else {
          v.drop_next = control_law(v.drop_next, prm.interval, v.rec_inv_sqrt);
        }
      }
    }
  } else if (drop) {
    // Enter the dropping state with this packet.
    if (prm.ecn && ecn::set_ce(*p)) {
      ++st.ecn_mark;
    } else {
      q.drop(p);
      p = q.pop();
      (void)should_drop(p, q.backlog(), v, prm, st, now);  // for ldelay / first_above_time
    }
    v.dropping = true;
    const uint32_t delta = v.count - v.lastcount;
    if (delta > 1 && before(now - v.drop_next, 16 * prm.interval)) {
      v.count = delta;
      newton_step(v);
    } else {
      v.count = 1;
      v.rec_inv_sqrt = kRecInvSqrtOne;
    }
    v.lastcount = v.count;
    v.drop_next = control_law(now, prm.interval, v.rec_inv_sqrt);
  }
  if (p != nullptr && prm.ce_threshold != kDisabledThreshold && after(v.ldelay, prm.ce_threshold) &&
      ecn::set_ce(*p))
    ++st.ce_mark;
  return p;
}

// The drop_next tc -s reports: signed microseconds from `now` while dropping, else 0.
inline int64_t drop_next_us(const Vars& v, Time now) noexcept {
  if (!v.dropping) return 0;
  const int32_t d = diff(v.drop_next, now);
  return d < 0 ? -static_cast<int64_t>(to_us(static_cast<Time>(-d)))
               : static_cast<int64_t>(to_us(static_cast<Time>(d)));
}

}  // namespace txpath::codel
