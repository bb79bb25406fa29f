// SPDX-License-Identifier: MIT
// fq_codel: flow queueing (DRR++ over new/old flow lists) with a CoDel AQM per flow, after Linux
// sch_fq_codel (RFC 8290), written from its semantics (docs/architecture.md, "Qdiscs").
//
//   tc spec: fq_codel [limit PACKETS] [flows N] [quantum BYTES] [target TIME] [interval TIME]
//                     [ecn | noecn] [ce_threshold TIME] [memory_limit BYTES] [drop_batch N]
//   defaults: limit 10240, flows 1024 (1..65536), quantum psched_mtu (min 256, max 1 MiB),
//   target 5ms, interval 100ms, ecn on, ce_threshold off, memory_limit 32 MiB (capped at 2^31),
//   drop_batch 64 (min 1). Bare times are usec, as in tc. ce_threshold_selector is not supported.
//
// Classification: flow = reciprocal_scale(flow_hash, flows) = (flow_hash * flows) >> 32. The
// kernel's first step (skb->priority whose major equals the qdisc handle picks flow minor-1) and
// tc filters are not modelled: txpath qdiscs have no handle.
//
// Enqueue stamps the packet with the qdisc clock (QdiscEnv::clock, or now_ns()): it OVERWRITES
// Packet::enqueue_ns, as the kernel overwrites the skb's codel cb, so CoDel sojourn times are in
// the qdisc's own time base (a simulated clock in tests). If qlen exceeds limit or memory use
// exceeds memory_limit, the flow with the largest byte backlog loses packets from its head until
// at least half its backlog or drop_batch packets are gone (drop_overlimit += n, and
// drop_overmemory += n when memory was the cause, and that flow's CoDel count += n); enqueue then
// returns Verdict::congestion if that was the arriving packet's flow (Verdict::drop if the
// arriving packet itself went).
//
// "truesize" (memory_used, memory_limit) of a packet = max(capacity, len) + sizeof(Packet).
//
// Dequeue-side CoDel drops: dequeue() has no to_free list, so packets CoDel drops are counted as
// drops at once (stats().drops, as tc shows them) and parked on an internal list; the next
// enqueue() moves them onto its to_free, and take_dropped() hands them to a caller (under the
// same serialisation as every other call). reset() also moves them onto its to_free. TODO(lead):
// The driver loop collects them after every bulk dequeue (Qdisc::take_dequeue_drops) and frees
// them outside the root lock, and before reset() at teardown.
//
// Accounting: qlen()/backlog() include a packet held by peek() (like qdisc_peek_dequeued);
// the internal backlog_/qlen_/memory_ (CoDel's "backlog <= mtu" test on the whole qdisc uses
// backlog_) exclude it.
//
// Threading: none of its own; called by one thread at a time (qdisc.hpp). Nothing allocates after
// construction (the flow table is sized once).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "qdisc/codel.hpp"
#include "qdisc/peek_dequeued.hpp"
#include "txpath/qdisc.hpp"
#include "txpath/queue_select.hpp"

namespace txpath {

struct FqCodelConfig {
  uint32_t limit = 10240;
  uint32_t flows = 1024;
  uint32_t quantum = 1514;
  uint64_t target_us = 5000;
  uint64_t interval_us = 100000;
  uint64_t ce_threshold_us = 0;      // used only if has_ce_threshold
  bool has_ce_threshold = false;
  bool ecn = true;
  uint32_t memory_limit = 32u << 20;
  uint32_t drop_batch = 64;
  uint32_t mtu = 1514;               // CoDel's "backlog <= mtu" (psched_mtu)
  uint64_t (*clock)() = nullptr;     // nullptr: now_ns()
};

// tc -s xstats of fq_codel (tc_fq_codel_qd_stats).
struct FqCodelXstats {
  uint32_t maxpacket = 0;
  uint32_t drop_overlimit = 0;
  uint32_t new_flow_count = 0;
  uint32_t ecn_mark = 0;
  uint32_t ce_mark = 0;
  uint32_t memory_used = 0;
  uint32_t drop_overmemory = 0;
  uint32_t new_flows_len = 0;
  uint32_t old_flows_len = 0;
};

// tc -s class xstats of one flow (tc_fq_codel_cl_stats).
struct FqCodelFlowStats {
  int32_t deficit = 0;
  uint32_t ldelay_us = 0;
  uint32_t count = 0;
  uint32_t lastcount = 0;
  bool dropping = false;
  int32_t drop_next_us = 0;  // relative to now
  uint32_t qlen = 0;
  uint64_t backlog = 0;
};

class FqCodelQdisc final : public PeekDequeued<FqCodelQdisc> {
 public:
  explicit FqCodelQdisc(const FqCodelConfig& cfg);

  std::string_view kind() const noexcept override { return "fq_codel"; }
  // fq_codel_dump: limit, flows, quantum, target, ce_threshold (when set), interval (the usec
  // the kernel reports for its CoDel times: 5ms -> 4999), memory_limit (bytes), ecn, drop_batch
  // (printed by src/tc/qdisc_fq_codel.cpp).
  DumpAttrs dump_options() const override;
  // tc -s: maxpacket drop_overlimit new_flow_count ecn_mark [ce_mark] [memory_used]
  // [drop_overmemory] new_flows_len old_flows_len, in tc's order; the bracketed ones only when
  // non-zero (tc prints them only then, in text and in JSON).
  Xstats xstats() const override;
  // dequeue() and peek(): PeekDequeued, over do_dequeue().
  Verdict enqueue(Packet* p, PacketList& to_free) noexcept override;
  // A live change: the old queue is kept with its time stamps, whatever the new limits (adopt),
  // then dequeued and dropped until within them (settle), as fq_codel_change does.
  Verdict adopt(Packet* p, PacketList& to_free) noexcept override;
  void settle(PacketList& to_free) noexcept override;
  void reset(PacketList& to_free) noexcept override;
  bool can_bypass() const noexcept override { return cfg_.limit >= 1; }

  FqCodelXstats detail_xstats() const noexcept;
  FqCodelFlowStats flow_stats(uint32_t flow) const noexcept;
  const FqCodelConfig& config() const noexcept { return cfg_; }
  uint32_t classify(const Packet& p) const noexcept {
    return scale_hash(p.flow_hash, cfg_.flows);  // the kernel's reciprocal_scale
  }
  // CoDel-dropped packets not yet handed out (already counted as drops).
  PacketList take_dropped() noexcept { return std::move(dropped_); }
  void take_dequeue_drops(PacketList& out) noexcept override { out.splice_back(dropped_); }
  std::size_t dropped_pending() const noexcept { return dropped_.size(); }
  // peek() holds a packet already taken from its flow.
  bool peek_held() const noexcept { return peeked_ != nullptr; }
  std::size_t preallocated_bytes() const noexcept override {
    return flows_.capacity() * sizeof(Flow);
  }

 private:
  // enqueue() and (Adopt) adopt(): the latter keeps the packet's stamp and enforces no limit.
  template <bool Adopt>
  Verdict enqueue_as(Packet* p, PacketList& to_free) noexcept;
  struct Flow {
    PacketList q;          // bytes() is the flow's backlog (the kernel's backlogs[idx])
    Flow* next = nullptr;  // link on new_ or old_
    bool listed = false;   // on new_ or old_
    int32_t deficit = 0;
    codel::Vars cvars;
  };
  // A FIFO of flows linked through Flow::next; only the head is ever removed or moved.
  struct FlowList {
    Flow* head = nullptr;
    Flow* tail = nullptr;
    uint32_t size = 0;
    void push_back(Flow* f) noexcept {
      f->next = nullptr;
      if (tail) tail->next = f; else head = f;
      tail = f;
      ++size;
    }
    Flow* pop_front() noexcept {
      Flow* f = head;
      head = f->next;
      if (!head) tail = nullptr;
      f->next = nullptr;
      --size;
      return f;
    }
  };

  static uint32_t truesize(const Packet& p) noexcept;
  uint64_t clock_ns() const noexcept;
  Packet* flow_pop(Flow& f) noexcept;              // the kernel's dequeue_func
  void codel_drop(Packet* p) noexcept;             // the kernel's drop_func
  struct FlowQueue;                                // a flow as codel::dequeue()'s queue
  Packet* codel_dequeue(Flow& f) noexcept;
  friend class PeekDequeued;      // dequeue() and peek() call do_dequeue()
  Packet* do_dequeue() noexcept;  // the scheduler: the next packet, not accounted
  uint32_t drop_fat_flow(uint32_t max_packets, PacketList& to_free, bool& arriving_dropped,
                         const Packet* arriving) noexcept;

  FqCodelConfig cfg_;
  codel::Params cparams_;
  codel::Stats cstats_;     // maxpacket, ecn_mark, ce_mark (detail_xstats() copies them)
  std::vector<Flow> flows_;
  FlowList new_, old_;
  uint64_t backlog_ = 0;    // bytes queued in flows (excludes peeked_)
  uint32_t qlen_ = 0;       // packets queued in flows (excludes peeked_)
  uint64_t memory_ = 0;     // truesize of packets queued in flows (excludes peeked_)
  PacketList dropped_;      // CoDel victims awaiting a to_free
  FqCodelXstats xs_;
};

}  // namespace txpath
