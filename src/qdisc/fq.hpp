// SPDX-License-Identifier: MIT
// fq: per-flow fair queueing with pacing and earliest departure times (EDT), after Linux sch_fq
// (v6.7+, with bands), written from its semantics (docs/architecture.md, "Qdiscs").
// No code copied.
//
//   tc spec: fq [limit PACKETS] [flow_limit PACKETS] [quantum BYTES] [initial_quantum BYTES]
//               [maxrate RATE] [buckets N] [pacing | nopacing] [refill_delay TIME]
//               [bands 3 priomap P0 .. P15] [weights W0 W1 W2] [low_rate_threshold RATE]
//               [orphan_mask MASK] [timer_slack TIME] [ce_threshold TIME] [horizon TIME]
//               [horizon_drop | horizon_cap]
//   defaults (psched_mtu = MTU + 14 = 1514): limit 10000, flow_limit 100, quantum 2*psched_mtu,
//   initial_quantum 10*psched_mtu, maxrate unlimited, buckets 1024, pacing, refill_delay 40ms,
//   low_rate_threshold 550Kbit, orphan_mask 1023, timer_slack 10us, horizon 10s, horizon_drop,
//   ce_threshold off, bands 3 with prio2band = pfifo_fast's map, weights 589824 196608 65536.
//   Numbers are tc's get_unsigned (base 0: "0x80000000", "010" = 8); refill_delay, ce_threshold
//   and horizon are tc times (bare = usec); timer_slack is a 64-bit tc time (bare = NANOseconds,
//   "ns" accepted), as tc parses it. Kernel refusals (ConfigRejected, tc exit 2): quantum 0 or
//   > 1 MiB, initial_quantum > INT_MAX, buckets giving log2 outside 1..18.
//   Not supported: defrate, offload_horizon (unknown options), `tc qdisc change`.
//
// Flows: a flow is one Packet::flow_hash value (the socket identity here; orphan_mask is kept
// and printed but not applied, since every packet carries a hash). A flow has a FIFO of packets
// ordered by time_to_send (a packet whose EDT is earlier than the tail's is inserted in order,
// after packets with an equal time: the kernel's per-flow rb-tree of out-of-order EDT packets),
// credit (bytes; initial_quantum when created), band, time_next_packet and the time it became
// idle.
//
// Enqueue(p), now = the env clock:
//   band = priomap[p.priority & 15]; band already holds `limit` packets -> drop (bandN_drops).
//   time_to_send = p.tstamp_ns, or now if 0; tstamp > now + horizon -> horizon_drop: drop
//   (horizon_drops); horizon_cap: tstamp = now + horizon (horizon_caps). time_to_send is kept
//   in Packet::enqueue_ns (overwritten, as fq_codel overwrites it with its own clock).
//   Flow lookup/create; flow holds flow_limit packets -> drop (flows_plimit). An idle detached
//   flow joins its band's new list, and if it has been detached longer than refill_delay its
//   credit becomes max(credit, quantum).
// Dequeue, now = the env clock: throttled flows whose time_next_packet <= now go to the tail of
//   their band's old list. Bands are served weighted round robin: the current band serves until
//   its byte credit is <= 0 (then the next band gets credit = min(credit + weight, weight)) or it
//   has nothing to send. In a band, the head of new, else of old: credit <= 0 -> credit +=
//   quantum, to old tail; empty -> from new: to old tail, from old: detached; head packet not
//   due (max(time_to_send, time_next_packet) > now) -> throttled with time_next_packet = that
//   time; else the packet leaves (CE-marked if now - due > ce_threshold), credit -= len, then
//   pacing (when pacing is on): rate = maxrate, and for a packet without EDT tstamp
//   min(pacing_rate, maxrate) (pacing_rate 0 = unlimited); without tstamp: rate <=
//   low_rate_threshold -> credit = 0 and every packet is paced by len/rate; else nothing
//   happens while credit > 0, and max(len, quantum)/rate once it is spent. With a finite rate:
//   delay = len*1e9/rate ns, capped at 1 s (pkts_too_long), minus min(delay/2, now -
//   time_next_packet) (lateness compensation), time_next_packet = now + delay.
// dequeue() returns nullptr when every held packet is in a throttled flow; watchdog_ns() then
// names the earliest time_next_packet (exactly: timer_slack is printed, not used as a window).
//
// Flow table (allocation-free after construction): a pool of P flow slots, P = min(3*limit,
// 2^18) + min(2*buckets, 65536) + 1, with 2^log hash chains (the buckets option) keyed by flow_hash. Every
// flow holding a packet holds at least one of the at most 3*limit queued packets, so with that P
// a slot is always available: when the free list is empty the flow idle longest (no packets;
// detached, or still on a list) is reclaimed (gc++). Besides, as in the kernel, when flows >=
// 2*buckets and more than half of them are inactive, a lookup that finds no flow collects up
// to 8 detached flows idle for more than 3 s, oldest first, from the whole table rather than
// from one bucket's tree (gc++ each). Only with limit > 2^18/3 can the pool run out: the packet
// is then dropped (alloc_errors). The throttled set is a binary min-heap on (time_next_packet,
// insertion sequence) in a vector reserved for P entries (one per flow at most: no reallocation).
// Memory: about 72 bytes per slot, e.g. 2.3 MB for the defaults.
//
// Not modelled: the fast path `internal` queue (fastpath), highprio (always 0), tcp retrans,
// unthrottle latency, timer slack, orphan_mask, a socket changing hash.
//
// Accounting: qlen()/backlog() include a packet held by peek() (qdisc_peek_dequeued).
// Invariants between calls: sum of flow qlens + (peeked ? 1 : 0) == qlen(); band_pkts[b] ==
// queued packets of band b (peeked excluded); every flow with packets is on exactly one band list
// or in the throttled heap; every in-use flow with no packets is on the idle list; in_use ==
// flows on a list + throttled + detached.
// Threading: none of its own; called by one thread at a time (qdisc.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "qdisc/peek_dequeued.hpp"
#include "txpath/qdisc.hpp"

namespace txpath {

struct FqConfig {
  static constexpr uint32_t kUnlimited = ~0u;  // maxrate / ce_threshold "off" (the kernel's ~0U)
  uint32_t limit = 10000;              // packets per band
  uint32_t flow_limit = 100;           // packets per flow
  uint32_t quantum = 3028;             // bytes
  uint32_t initial_quantum = 15140;    // bytes
  uint32_t maxrate = kUnlimited;       // bytes/s per flow
  uint32_t low_rate_threshold = 68750; // bytes/s
  uint32_t buckets_log = 10;           // 2^log hash chains, 1..18
  bool pacing = true;
  uint32_t refill_delay_us = 40000;
  uint32_t orphan_mask = 1023;
  uint32_t timer_slack_ns = 10000;
  uint32_t ce_threshold_us = kUnlimited;  // kUnlimited = off
  uint32_t horizon_us = 10000000;
  bool horizon_drop = true;
  std::array<uint8_t, 16> priomap = {1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
  std::array<int32_t, 3> weights = {589824, 196608, 65536};
  uint64_t (*clock)() = nullptr;       // nullptr: now_ns()
};

// tc -s xstats of fq (tc_fq_qd_stats), as far as modelled.
struct FqXstats {
  uint32_t flows = 0;
  uint32_t inactive_flows = 0;
  uint32_t throttled_flows = 0;
  std::array<uint32_t, 3> band_pkts{};
  uint64_t next_packet_delay_ns = 0;  // earliest throttled flow's time_next_packet - now
  uint64_t gc_flows = 0;
  uint64_t highprio_packets = 0;
  uint64_t throttled = 0;             // times a flow was throttled
  uint64_t ce_mark = 0;
  uint64_t flows_plimit = 0;
  uint64_t pkts_too_long = 0;
  uint64_t allocation_errors = 0;
  uint64_t horizon_drops = 0;
  uint64_t horizon_caps = 0;
  std::array<uint64_t, 3> band_drops{};
};

class FqQdisc final : public PeekDequeued<FqQdisc> {
 public:
  static constexpr int kBands = 3;
  static constexpr uint32_t kMaxPoolFlows = 1u << 18;

  explicit FqQdisc(const FqConfig& cfg);

  // ---- data path (dequeue() and peek(): PeekDequeued, over do_dequeue()) ----
  Verdict enqueue(Packet* p, PacketList& to_free) noexcept override;
  // A live change: the old queue is kept with its times to send, whatever the new limits (adopt),
  // then dequeued and dropped until within the limit (settle), as fq_change does.
  Verdict adopt(Packet* p, PacketList& to_free) noexcept override;
  void settle(PacketList& to_free) noexcept override;
  void reset(PacketList& to_free) noexcept override;
  uint64_t watchdog_ns() const noexcept override;
  Xstats xstats() const override;

  // ---- dump (printed by src/tc/qdisc_fq.cpp) ----
  std::string_view kind() const noexcept override { return "fq"; }
  // fq_dump: limit, flow_limit (packets), buckets, orphan_mask, pacing, bands, priomap, weights,
  // quantum, initial_quantum (bytes), maxrate, low_rate_threshold (bytes/s; maxrate ~0U: none),
  // refill_delay (us), ce_threshold (us; ~0U: off), timer_slack (ns), horizon (us), horizon_drop.
  DumpAttrs dump_options() const override;

  const FqConfig& config() const noexcept { return cfg_; }
  FqXstats detail_xstats() const noexcept;
  std::size_t pool_size() const noexcept { return flows_.size(); }
  // The flow of `flow_hash` (nullptr if it has no slot): its credit and time_next_packet.
  struct FlowView {
    int64_t credit;
    uint64_t time_next_packet;
    uint32_t qlen;
    bool throttled;
  };
  bool flow_view(uint32_t flow_hash, FlowView& out) const noexcept;
  std::size_t preallocated_bytes() const noexcept override {
    return flows_.capacity() * sizeof(Flow) + buckets_.capacity() * sizeof(uint32_t) +
           delayed_.capacity() * sizeof(Delayed);
  }

 private:
  // enqueue() and (Adopt) adopt(): the latter keeps the packet's time to send and enforces no
  // band or flow limit.
  template <bool Adopt>
  Verdict enqueue_as(Packet* p, PacketList& to_free) noexcept;
  static constexpr uint32_t kNone = ~0u;
  enum class Where : uint8_t { free, new_list, old_list, throttled, detached };

  struct Flow {
    Packet* head = nullptr;  // ordered by time_to_send (Packet::enqueue_ns)
    Packet* tail = nullptr;
    uint32_t qlen = 0;
    uint32_t key = 0;        // flow_hash
    int64_t credit = 0;
    uint64_t time_next_packet = 0;
    uint64_t age_ns = 0;     // when it was created or last detached
    uint32_t hnext = kNone;  // hash chain / free list
    uint32_t lprev = kNone, lnext = kNone;  // band list
    uint32_t iprev = kNone, inext = kNone;  // idle list
    uint8_t band = 0;        // band of its newest packet
    uint8_t list_band = 0;   // band whose list holds it (Where new_list / old_list)
    Where where = Where::free;
    bool idle = false;       // on the idle list
  };
  struct List {
    uint32_t head = kNone, tail = kNone;
  };
  struct Band {
    List lists[2];  // [0] new, [1] old
    int64_t credit = 0;
  };
  struct Delayed {
    uint64_t time;
    uint64_t seq;
    uint32_t flow;
  };

  uint64_t clock_ns() const noexcept;
  uint32_t bucket_of(uint32_t key) const noexcept;
  uint32_t lookup(uint32_t key, uint64_t now) noexcept;  // kNone: no slot (alloc error)
  uint32_t alloc_flow() noexcept;
  void free_flow(uint32_t idx) noexcept;
  void gc(uint64_t now) noexcept;
  // The two intrusive lists through the flows: a band list (lprev/lnext), the idle list
  // (iprev/inext).
  template <uint32_t Flow::*Prev, uint32_t Flow::*Next>
  void link_tail(List& l, uint32_t idx) noexcept;
  template <uint32_t Flow::*Prev, uint32_t Flow::*Next>
  void unlink_from(List& l, uint32_t idx) noexcept;
  void list_push(uint32_t idx, uint8_t band, Where which) noexcept;
  void list_unlink(uint32_t idx) noexcept;
  void idle_push(uint32_t idx) noexcept;
  void idle_unlink(uint32_t idx) noexcept;
  void throttle(uint32_t idx) noexcept;
  void unthrottle(uint64_t now) noexcept;
  void heap_up(std::size_t i) noexcept;
  void heap_down(std::size_t i) noexcept;
  void next_band() noexcept;
  void pace(Flow& f, const Packet& p, uint64_t now) noexcept;
  uint8_t band_of(const Packet& p) const noexcept { return cfg_.priomap[p.priority & 15]; }
  friend class PeekDequeued;      // dequeue() and peek() call do_dequeue()
  Packet* do_dequeue() noexcept;  // the scheduler: the next packet, not accounted

  FqConfig cfg_;
  uint64_t horizon_ns_ = 0;
  uint64_t refill_delay_ns_ = 0;
  uint64_t ce_threshold_ns_ = 0;
  std::vector<Flow> flows_;
  std::vector<uint32_t> buckets_;
  std::vector<Delayed> delayed_;  // capacity flows_.size(); size() = throttled flows
  uint32_t free_head_ = kNone;
  List idle_;                     // linked through iprev/inext, oldest first
  std::array<Band, kBands> bands_{};
  std::array<uint32_t, kBands> band_pkts_{};
  uint32_t band_nr_ = 0;
  uint32_t in_use_ = 0;
  uint32_t active_ = 0;           // flows with qlen > 0
  uint64_t seq_ = 0;
  FqXstats xs_;
};

}  // namespace txpath
