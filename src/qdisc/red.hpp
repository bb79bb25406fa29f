// SPDX-License-Identifier: MIT
// red: Random Early Detection (Floyd & Jacobson, "Random Early Detection Gateways for Congestion
// Avoidance", IEEE/ACM ToN 1993), as Linux sch_red / include/net/red.h run it, with Adaptive RED
// (Floyd, Gummadi & Shenker, 2001). A byte FIFO of at most `limit` bytes in front of which every
// arriving packet meets RED's test on the AVERAGE queue:
//   - qavg, a fixed-point number with Wlog fraction bits, follows the backlog as an EWMA of weight
//     W = 2^-Wlog at each arrival: qavg += backlog - qavg / 2^Wlog;
//   - after an idle period it decays instead, as if m = idle / (avpkt / bandwidth) empty arrivals
//     had been seen: qavg >>= Stab[idle_us >> Scell_log] (the table tc computes), or, where the
//     table says 0, linearly by qavg * idle_us / 2^Scell_log, at most by half;
//   - qavg below min: the packet passes. At or above max: a "hard mark". Between: a "probable
//     mark" with probability max_P * (qavg - min) / (max - min), spread out by counting the
//     packets since the last mark (qcount) against a random number qR drawn after each mark
//     (qR uniform in 0 .. 2^32 / (max_P / (max - min))).
//   - a mark drops the packet, or with `ecn` sets CE on an ECT packet (RFC 3168) and queues it;
//     a non-ECT packet is dropped (queued with `nodrop`); `harddrop` drops even ECT packets on a
//     hard mark. Packets that pass the test but do not fit under `limit` are dropped (pdrop).
//   - adaptive: every 500 ms max_P moves towards keeping qavg in the middle fifth of [min, max]
//     (+min(1%, max_P/4) above it while max_P <= 50%, *0.9 below it while max_P >= 1%).
// Counters: every mark (probable or hard) is an overlimit; xstats marked (CE set), early (RED
// drops), pdrop (limit drops), other (always 0, kept for tc).
//
// Randomness is injectable (set_random) and the clock is the env clock, so tests are exact.
// The adaptive update runs lazily, at the next enqueue or dequeue after each 500 ms tick, in the
// qdisc's own serialised context (the kernel runs a timer under the root lock).
// Threading: none of its own (qdisc.hpp). Nothing allocates after construction.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "txpath/qdisc.hpp"

namespace txpath {

// The parameters tc computes and the kernel keeps (tc_red_qopt + stab + max_P + flags).
struct RedConfig {
  uint32_t limit = 0;      // bytes
  uint32_t qth_min = 0;    // bytes
  uint32_t qth_max = 0;    // bytes
  uint8_t wlog = 0;        // W = 2^-wlog
  uint8_t plog = 0;        // max_P = (max - min) / 2^plog when max_p is 0
  uint8_t scell_log = 0;   // idle-time cell: 2^scell_log usec
  std::array<uint8_t, 256> stab{};  // qavg shift per idle cell
  uint32_t max_p = 0;      // probability in Q0.32; 0: from plog
  bool ecn = false, harddrop = false, nodrop = false, adaptive = false;
  uint64_t (*clock)() = nullptr;  // nullptr: now_ns()
};

// RED's counters (the kernel's red_stats).
struct RedStats {
  uint32_t prob_drop = 0;    // probable marks that dropped
  uint32_t prob_mark = 0;    // probable marks that set CE
  uint32_t forced_drop = 0;  // hard marks that dropped
  uint32_t forced_mark = 0;  // hard marks that set CE
  uint32_t pdrop = 0;        // over the byte limit
};

class RedQdisc final : public Qdisc {
 public:
  explicit RedQdisc(const RedConfig& cfg);

  std::string_view kind() const noexcept override { return "red"; }
  // red_dump (TCA_RED_PARMS, TCA_RED_MAX_P): limit, min, max in bytes; the flags ecn, harddrop,
  // adaptive, nodrop; ewma (Wlog), plog, scell_log, max_p (Q0.32, as adapted now). Printed by
  // src/tc/qdisc_red.cpp.
  DumpAttrs dump_options() const override;
  Xstats xstats() const override;  // marked early pdrop other

  Verdict enqueue(Packet* p, PacketList& to_free) noexcept override;
  // A live change that changed red (tc always sends its limit) drops what it held, as red_change
  // flushes the old child it replaces; an unchanged red keeps its queue.
  void changed_in_place() noexcept override { flush_ = true; }
  Verdict adopt(Packet* p, PacketList& to_free) noexcept override;
  void settle(PacketList& to_free) noexcept override { (void)to_free; flush_ = false; }
  Packet* dequeue() noexcept override;
  Packet* peek() noexcept override { return queue_.front(); }
  void reset(PacketList& to_free) noexcept override;

  // The random numbers RED draws (the kernel's prandom_u32); default: an internal xorshift.
  void set_random(std::function<uint32_t()> random) { random_ = std::move(random); }

  const RedConfig& config() const noexcept { return cfg_; }
  const RedStats& red_stats() const noexcept { return stats_; }
  uint64_t qavg() const noexcept { return qavg_; }          // Wlog-scaled
  uint32_t max_p() const noexcept { return max_p_; }        // Q0.32, adapted
  bool idling() const noexcept { return idling_; }

 private:
  bool flush_ = false;  // between changed_in_place() and settle()
  enum class Action { pass, probable_mark, hard_mark };
  uint64_t clock_ns() const noexcept;
  uint32_t draw() noexcept;
  void set_max_p_reciprocal(uint32_t max_p_delta) noexcept { max_p_delta_ = max_p_delta ? max_p_delta : 1; }
  uint64_t qavg_after_idle(uint64_t now) const noexcept;
  uint64_t average(uint64_t now) const noexcept;
  Action action(uint64_t qavg) noexcept;
  // Whether a marked packet is dropped (counting it), else it was CE-marked or spared (nodrop).
  bool mark_drops(Packet& p, bool hard) noexcept;
  void adapt_until(uint64_t now) noexcept;
  void adapt(uint64_t now) noexcept;

  RedConfig cfg_;
  uint32_t qth_min_, qth_max_;  // Wlog-scaled
  uint32_t qth_delta_;          // max - min in bytes, at least 1
  uint32_t target_min_, target_max_;  // adaptive's band, bytes
  uint32_t max_p_;
  uint32_t max_p_delta_ = 1;    // max_P / (max - min): qR = random / max_p_delta_
  uint64_t qavg_ = 0;
  int32_t qcount_ = -1;
  uint32_t qr_ = 0;
  bool idling_ = false;
  uint64_t idle_start_ns_ = 0;
  uint64_t next_adapt_ns_ = 0;
  RedStats stats_;
  PacketList queue_;
  std::function<uint32_t()> random_;
  uint64_t rng_ = 0x9E3779B97F4A7C15ull;
};

}  // namespace txpath
