// SPDX-License-Identifier: MIT
// codel: the classless CoDel qdisc (Linux sch_codel; RFC 8289): one FIFO of at most `limit`
// packets whose head is dequeued through CoDel's state machine (codel.hpp, codel::dequeue), so
// that packets are dropped (or, with ecn, ECT packets CE-marked) at the head once their sojourn
// time has stayed at or above `target` for an `interval`, at a rate that grows with the square
// root of the drops since entering the dropping state.
//
// Enqueue: below `limit` packets the packet is stamped and queued; else it is dropped and counts
// in drop_overlimit. Dequeue-time victims are counted as drops at once and parked until the
// driver loop collects them (Qdisc::take_dequeue_drops) or the next enqueue hands them to its
// to_free, as fq_codel's are.
//
// tc -s xstats (tc_codel_xstats, in tc's order): count lastcount ldelay [dropping] drop_next
// maxpacket ecn_mark drop_overlimit [ce_mark]; ldelay and drop_next in usec, dropping only while
// in the dropping state, ce_mark only when non-zero (tc prints them so).
//
// Accounting: qlen()/backlog() include a packet held by peek() (qdisc_peek_dequeued); the internal
// backlog_ (the "at most one MTU" test) excludes it. Threading: none of its own (qdisc.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "qdisc/codel.hpp"
#include "qdisc/peek_dequeued.hpp"
#include "txpath/qdisc.hpp"

namespace txpath {

struct CodelConfig {
  uint32_t limit = 1000;          // packets (the kernel's DEFAULT_CODEL_LIMIT)
  uint64_t target_us = 5000;
  uint64_t interval_us = 100000;
  uint64_t ce_threshold_us = 0;   // used only if has_ce_threshold
  bool has_ce_threshold = false;
  bool ecn = false;               // codel's default (fq_codel's is on)
  uint32_t mtu = 1514;            // psched_mtu of the device
  uint64_t (*clock)() = nullptr;  // nullptr: now_ns()
};

// tc -s xstats of codel.
struct CodelXstats {
  uint32_t maxpacket = 0;
  uint32_t count = 0;
  uint32_t lastcount = 0;
  uint32_t ldelay_us = 0;
  int32_t drop_next_us = 0;  // relative to now; 0 when not dropping
  uint32_t drop_overlimit = 0;
  uint32_t ecn_mark = 0;
  bool dropping = false;
  uint32_t ce_mark = 0;
};

class CodelQdisc final : public PeekDequeued<CodelQdisc> {
 public:
  explicit CodelQdisc(const CodelConfig& cfg);

  std::string_view kind() const noexcept override { return "codel"; }
  // codel_dump: limit (packets), target, ce_threshold (when set), interval, in the usec the
  // kernel reports for its CoDel times (5ms -> 4999), ecn (printed by src/tc/qdisc_codel.cpp).
  DumpAttrs dump_options() const override;
  // count lastcount ldelay dropping drop_next maxpacket ecn_mark drop_overlimit ce_mark.
  Xstats xstats() const override;

  Verdict enqueue(Packet* p, PacketList& to_free) noexcept override;
  // A live change: the old queue is kept with its time stamps (adopt), then its head dropped
  // until it is within the new limit (settle), as codel_change does.
  Verdict adopt(Packet* p, PacketList& to_free) noexcept override;
  void settle(PacketList& to_free) noexcept override;
  void reset(PacketList& to_free) noexcept override;
  bool can_bypass() const noexcept override { return cfg_.limit >= 1; }
  void take_dequeue_drops(PacketList& out) noexcept override { out.splice_back(dropped_); }

  CodelXstats detail_xstats() const noexcept;
  const CodelConfig& config() const noexcept { return cfg_; }
  const codel::Params& params() const noexcept { return params_; }

 private:
  friend class PeekDequeued;      // dequeue() and peek() call do_dequeue()
  Packet* do_dequeue() noexcept;  // CoDel over the FIFO, not accounted
  uint64_t clock_ns() const noexcept;
  // The FIFO as codel::dequeue()'s queue (pop, backlog, drop).
  struct Fifo {
    CodelQdisc& q;
    Packet* pop() noexcept;
    uint64_t backlog() const noexcept { return q.queue_.bytes(); }
    void drop(Packet* p) noexcept;
  };

  CodelConfig cfg_;
  codel::Params params_;
  codel::Vars vars_;
  codel::Stats cstats_;
  uint32_t drop_overlimit_ = 0;
  PacketList queue_;    // bytes() is CoDel's backlog (excludes peeked_)
  PacketList dropped_;  // CoDel victims awaiting a to_free
};

}  // namespace txpath
