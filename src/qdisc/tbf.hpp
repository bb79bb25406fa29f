// SPDX-License-Identifier: MIT
// tbf: token bucket filter shaper (Linux sch_tbf semantics).
//
// Origin: written from Linux sch_tbf / iproute2 q_tbf.c semantics (docs/architecture.md)
// and tc-tbf(8); no code copied.
//
// Buckets hold TIME, in ns of transmission time at the configured rate: l2t is RateCfg's
// (rate.hpp: wire length with overhead, mpu and ATM cells, rounded up to whole ns), one RateCfg
// for the rate and one for the peak rate, sharing overhead, mpu and linklayer.
//   buffer   = l2t_rate(burst)  (bucket depth),  mtu_ns = l2t_peak(minburst) (peak bucket depth).
// Dequeue at time now with head length len:
//   elapsed = min(now - t_c, buffer)
//   toks  = min(tokens + elapsed, buffer) - l2t_rate(len)
//   ptoks = min(ptokens + elapsed, mtu_ns) - l2t_peak(len)     (only with a peak rate)
//   both >= 0 -> the head leaves; tokens = toks, ptokens = ptoks, t_c = now, watchdog = 0.
//   else      -> nothing leaves (no reordering), overlimits++, watchdog = now + max(-toks, -ptoks).
// Enqueue: len > max_size (= min(burst, minburst)) -> drop (counted by tbf); otherwise the packet
//   goes to the child qdisc, by default bfifo(limit) (accept iff backlog + len <= limit); a child
//   verdict other than success counts as a drop of tbf too (as prio does). reset() resets the
//   child and refills both buckets.
// The head examined at dequeue is the child's peek(); only a head that may leave is dequeued from
//   the child (qdisc_dequeue_peeked), so nothing is reordered, whatever the child.
//
// Classes (tc class): one leaf class, minor 1 ("class tbf H:1 parent H:"), whose qdisc is the
// child. graft(1, q) replaces it (nullptr: a fresh bfifo(limit)); the configured limit then no
// longer applies, as in Linux. class_stats(1) is the child's statistics.
//
// Invariants (on top of Qdisc's): qlen() == child's qlen() and backlog() == child's backlog()
// after every call (sync_child() folds in whatever the child did, including drops it made inside
// its own enqueue/peek/dequeue, as prio's sync_band() does); with the default child backlog() <=
// limit; 0 <= tokens <= buffer and 0 <= ptokens <= mtu_ns between calls; watchdog_ != 0 only
// after a dequeue()/peek() that found a head it could not send yet (watchdog_ns() otherwise
// reports the child's own, for a shaping child).
// Threading: like every Qdisc, called by one thread at a time; no atomics besides the base
// class's SingleWriterCounter statistics; no allocation after construction except in graft()
// (control path).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "qdisc/rate.hpp"
#include "txpath/qdisc.hpp"

namespace txpath {

struct TbfConfig {
  uint64_t rate = 0;       // bytes per second, > 0
  uint64_t burst = 0;      // bucket size in bytes, > 0
  uint32_t limit = 0;      // bytes the child FIFO may hold
  uint64_t peakrate = 0;   // bytes per second; 0 = no peak bucket; else > rate
  uint64_t minburst = 0;   // peak bucket size in bytes ("mtu"); > 0 when peakrate is set
  uint32_t mpu = 0;        // minimum packet unit, bytes (0..65535)
  uint32_t overhead = 0;   // bytes added per packet (0..65535)
  bool atm = false;        // linklayer atm/adsl: 48-byte payload per 53-byte cell
};

class TbfQdisc final : public Qdisc, public ClassOps {
 public:
  // `clock` is the env clock; nullptr means txpath's now_ns(). psched_mtu only configures the
  // default child bfifo (its bypass rule, which a child never uses).
  TbfQdisc(const TbfConfig& cfg, uint64_t (*clock)(), uint32_t psched_mtu = 1514);
  ~TbfQdisc() override;

  // ---- data path (can_bypass(): false, the default: a shaper is never skipped) ----
  uint64_t watchdog_ns() const noexcept override;
  Verdict enqueue(Packet* p, PacketList& to_free) noexcept override;
  // A live change: into the child's adopt() (tbf_change sets the default bfifo's limit, which
  // keeps its queue: fifo_set_limit), then its settle().
  Verdict adopt(Packet* p, PacketList& to_free) noexcept override;
  void settle(PacketList& to_free) noexcept override;
  Packet* dequeue() noexcept override;
  Packet* peek() noexcept override;
  void reset(PacketList& to_free) noexcept override;
  void take_dequeue_drops(PacketList& out) noexcept override;

  std::string_view kind() const noexcept override { return "tbf"; }
  // What the kernel's tbf_dump reports (TCA_TBF_PARMS): rate and (with a peak rate) peakrate in
  // bytes/s, limit in bytes, buffer and (with a peak rate) mtu as the buckets' psched ticks at
  // their rates (qdisc/psched.hpp: the kernel's rounding, not this shaper's), mpu, overhead, and
  // linklayer "ethernet" or "atm". tc turns the ticks back into sizes (src/tc/qdisc_tbf.cpp).
  DumpAttrs dump_options() const override;

  // ---- classful API: one class, minor 1 ----
  std::vector<QdiscClassInfo> classes() const override;
  QdiscStats class_stats(uint16_t minor) const override;
  // The kernel reports no counters for tbf's class: tc -s prints its line alone.
  bool class_has_stats() const noexcept override { return false; }
  Qdisc* child(uint16_t minor) noexcept override;
  // A live change: the child goes on with its own drop count, which tbf has seen.
  void continue_classes(const ClassOps& old) noexcept override {
    (void)old;
    child_drops_ = child_->drops();
  }
  // The old child's packets go to to_free (not drops); nullptr installs a fresh bfifo(limit).
  // Throws ConfigRejected for a minor other than 1. Allocates (control path only).
  void graft(uint16_t minor, std::unique_ptr<Qdisc> child, PacketList& to_free) override;

  const TbfConfig& config() const noexcept { return cfg_; }
  uint64_t max_size() const noexcept { return max_size_; }
  uint64_t buffer_ns() const noexcept { return buffer_; }
  uint64_t peak_buffer_ns() const noexcept { return mtu_ns_; }
  // Transmission time of a `len`-byte packet at the rate / the peak rate (0 without a peak).
  uint64_t l2t_rate(uint64_t len) const noexcept { return rate_.l2t_ns(len); }
  uint64_t l2t_peak(uint64_t len) const noexcept { return cfg_.peakrate ? peak_.l2t_ns(len) : 0; }
  // The packet length the buckets are charged for (overhead, mpu, ATM cells).
  uint64_t wire_len(uint64_t len) const noexcept { return rate_.wire_len(len); }

 private:
  uint64_t now() const noexcept;
  // Whether the head may leave at `now`; fills the bucket levels it would leave behind, or the
  // time it becomes eligible.
  bool eligible(const Packet& head, uint64_t now, int64_t& toks, int64_t& ptoks,
                uint64_t& when) const noexcept;
  // Brings qlen()/backlog() to the child's (see the invariants).
  void sync_child() noexcept;
  std::unique_ptr<Qdisc> default_child() const;

  const TbfConfig cfg_;
  const RateCfg rate_;  // cfg_.rate with cfg_'s framing
  const RateCfg peak_;  // cfg_.peakrate with the same framing (unused without a peak rate)
  uint64_t (*const clock_)();
  uint64_t max_size_ = 0;
  uint64_t buffer_ = 0;  // ns
  uint64_t mtu_ns_ = 0;  // ns; 0 without a peak rate
  int64_t tokens_ = 0;
  int64_t ptokens_ = 0;
  uint64_t t_c_ = 0;
  uint64_t watchdog_ = 0;
  const uint32_t psched_mtu_;
  std::unique_ptr<Qdisc> child_;  // never null
  uint64_t child_drops_ = 0;      // the child's drops already counted as tbf's
};

}  // namespace txpath
