// SPDX-License-Identifier: MIT
// fq: see fq.hpp for the semantics, the flow table and the invariants. Its tc options (parser,
// printed text) are in src/tc/qdisc_fq.cpp. Origin: written from
// Linux sch_fq / iproute2 q_fq.c semantics (docs/architecture.md, "Qdiscs");
// ECN CE marking per RFC 3168 with the checksum update of RFC 1624. No code copied.
// No atomics beyond Qdisc's counters: the qdisc is called by one thread at a time.
#include "qdisc/fq.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.hpp"
#include "qdisc/ecn.hpp"

namespace txpath {

namespace {

constexpr uint64_t kNsPerSec = 1'000'000'000;
constexpr uint64_t kGcAgeNs = 3 * kNsPerSec;  // the kernel's FQ_GC_AGE (3 s)
constexpr uint32_t kGcMax = 8;                // flows collected per lookup at most
constexpr uint32_t kGcVisit = 16;             // idle-list entries looked at per gc

uint64_t pool_flows(const FqConfig& c) {
  const uint64_t packets = std::min<uint64_t>(uint64_t{c.limit} * FqQdisc::kBands,
                                              FqQdisc::kMaxPoolFlows);
  // Headroom for idle flows (their credit and pacing state): 2*buckets, at most 65536.
  return packets + std::min<uint64_t>(2 * (uint64_t{1} << c.buckets_log), 65536) + 1;
}

}  // namespace

FqQdisc::FqQdisc(const FqConfig& cfg)
    : cfg_(cfg),
      horizon_ns_(uint64_t{cfg.horizon_us} * 1000),
      refill_delay_ns_(uint64_t{cfg.refill_delay_us} * 1000),
      ce_threshold_ns_(uint64_t{cfg.ce_threshold_us} * 1000),
      flows_(pool_flows(cfg)),
      buckets_(std::size_t{1} << cfg.buckets_log, kNone) {
  delayed_.reserve(flows_.size());  // never exceeded: at most one entry per flow
  for (std::size_t i = flows_.size(); i-- > 0;) free_flow(static_cast<uint32_t>(i));
  for (int b = 0; b < kBands; ++b) bands_[b].credit = cfg_.weights[b];
}

uint64_t FqQdisc::clock_ns() const noexcept { return cfg_.clock ? cfg_.clock() : now_ns(); }

uint32_t FqQdisc::bucket_of(uint32_t key) const noexcept {
  return static_cast<uint32_t>((key * 0x9E3779B1u) >> (32 - cfg_.buckets_log));
}

// ---- flow table ------------------------------------------------------------------------------

void FqQdisc::free_flow(uint32_t idx) noexcept {
  Flow& f = flows_[idx];
  f = Flow{};
  f.hnext = free_head_;
  free_head_ = idx;
}

// A free slot: from the free list, else the flow idle longest (reclaimed: gc).
uint32_t FqQdisc::alloc_flow() noexcept {
  if (free_head_ == kNone) {
    const uint32_t victim = idle_.head;
    if (victim == kNone) return kNone;
    Flow& v = flows_[victim];
    idle_unlink(victim);
    if (v.where == Where::new_list || v.where == Where::old_list) list_unlink(victim);
    uint32_t* link = &buckets_[bucket_of(v.key)];
    while (*link != victim) link = &flows_[*link].hnext;
    *link = v.hnext;
    --in_use_;
    ++xs_.gc_flows;
    free_flow(victim);
  }
  const uint32_t idx = free_head_;
  free_head_ = flows_[idx].hnext;
  return idx;
}

// The kernel's garbage collection: detached flows idle for more than 3 s, at most 8 per lookup.
void FqQdisc::gc(uint64_t now) noexcept {
  uint32_t collected = 0;
  uint32_t idx = idle_.head;
  for (uint32_t visited = 0; idx != kNone && visited < kGcVisit && collected < kGcMax; ++visited) {
    Flow& f = flows_[idx];
    const uint32_t next = f.inext;
    if (f.where == Where::detached) {
      if (now - f.age_ns <= kGcAgeNs) break;  // the idle list is in age order from here on
      idle_unlink(idx);
      uint32_t* link = &buckets_[bucket_of(f.key)];
      while (*link != idx) link = &flows_[*link].hnext;
      *link = f.hnext;
      --in_use_;
      ++collected;
      free_flow(idx);
    }
    idx = next;
  }
  xs_.gc_flows += collected;
}

uint32_t FqQdisc::lookup(uint32_t key, uint64_t now) noexcept {
  const uint32_t b = bucket_of(key);
  for (uint32_t i = buckets_[b]; i != kNone; i = flows_[i].hnext) {
    if (flows_[i].key == key) return i;
  }
  const uint32_t inactive = in_use_ - active_;
  if (in_use_ >= (2u << cfg_.buckets_log) && inactive > in_use_ / 2) gc(now);
  const uint32_t idx = alloc_flow();
  if (idx == kNone) return kNone;
  Flow& f = flows_[idx];
  f.key = key;
  f.credit = cfg_.initial_quantum;
  f.age_ns = now;
  f.where = Where::detached;
  f.hnext = buckets_[b];
  buckets_[b] = idx;
  idle_push(idx);  // no packets yet: reclaimable until enqueue() gives it one
  ++in_use_;
  return idx;
}

// ---- lists -----------------------------------------------------------------------------------

template <uint32_t FqQdisc::Flow::*Prev, uint32_t FqQdisc::Flow::*Next>
void FqQdisc::link_tail(List& l, uint32_t idx) noexcept {
  Flow& f = flows_[idx];
  f.*Next = kNone;
  f.*Prev = l.tail;
  if (l.tail != kNone) flows_[l.tail].*Next = idx; else l.head = idx;
  l.tail = idx;
}

template <uint32_t FqQdisc::Flow::*Prev, uint32_t FqQdisc::Flow::*Next>
void FqQdisc::unlink_from(List& l, uint32_t idx) noexcept {
  Flow& f = flows_[idx];
  if (f.*Prev != kNone) flows_[f.*Prev].*Next = f.*Next; else l.head = f.*Next;
  if (f.*Next != kNone) flows_[f.*Next].*Prev = f.*Prev; else l.tail = f.*Prev;
  f.*Prev = f.*Next = kNone;
}

void FqQdisc::list_push(uint32_t idx, uint8_t band, Where which) noexcept {
  Flow& f = flows_[idx];
  f.where = which;
  f.list_band = band;
  link_tail<&Flow::lprev, &Flow::lnext>(bands_[band].lists[which == Where::new_list ? 0 : 1], idx);
}

void FqQdisc::list_unlink(uint32_t idx) noexcept {
  Flow& f = flows_[idx];
  unlink_from<&Flow::lprev, &Flow::lnext>(
      bands_[f.list_band].lists[f.where == Where::new_list ? 0 : 1], idx);
  f.where = Where::detached;
}

void FqQdisc::idle_push(uint32_t idx) noexcept {
  flows_[idx].idle = true;
  link_tail<&Flow::iprev, &Flow::inext>(idle_, idx);
}

void FqQdisc::idle_unlink(uint32_t idx) noexcept {
  Flow& f = flows_[idx];
  unlink_from<&Flow::iprev, &Flow::inext>(idle_, idx);
  f.idle = false;
}

// ---- throttled flows: a binary min-heap on (time_next_packet, seq) ----------------------------

namespace {
bool earlier(uint64_t t1, uint64_t s1, uint64_t t2, uint64_t s2) noexcept {
  return t1 < t2 || (t1 == t2 && s1 < s2);
}
}  // namespace

void FqQdisc::heap_up(std::size_t i) noexcept {
  const Delayed d = delayed_[i];
  while (i > 0) {
    const std::size_t parent = (i - 1) / 2;
    if (!earlier(d.time, d.seq, delayed_[parent].time, delayed_[parent].seq)) break;
    delayed_[i] = delayed_[parent];
    i = parent;
  }
  delayed_[i] = d;
}

void FqQdisc::heap_down(std::size_t i) noexcept {
  const std::size_t n = delayed_.size();
  const Delayed d = delayed_[i];
  for (;;) {
    std::size_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && earlier(delayed_[c + 1].time, delayed_[c + 1].seq, delayed_[c].time,
                             delayed_[c].seq))
      ++c;
    if (!earlier(delayed_[c].time, delayed_[c].seq, d.time, d.seq)) break;
    delayed_[i] = delayed_[c];
    i = c;
  }
  delayed_[i] = d;
}

void FqQdisc::throttle(uint32_t idx) noexcept {
  Flow& f = flows_[idx];
  f.where = Where::throttled;
  delayed_.push_back(Delayed{f.time_next_packet, seq_++, idx});  // within the reserved capacity
  heap_up(delayed_.size() - 1);
  ++xs_.throttled;
}

void FqQdisc::unthrottle(uint64_t now) noexcept {
  while (!delayed_.empty() && delayed_.front().time <= now) {
    const uint32_t idx = delayed_.front().flow;
    delayed_.front() = delayed_.back();
    delayed_.pop_back();
    if (!delayed_.empty()) heap_down(0);
    list_push(idx, flows_[idx].band, Where::old_list);
  }
}

uint64_t FqQdisc::watchdog_ns() const noexcept {
  return delayed_.empty() ? 0 : delayed_.front().time;
}

// ---- enqueue / dequeue -----------------------------------------------------------------------

template <bool Adopt>
Verdict FqQdisc::enqueue_as(Packet* p, PacketList& to_free) noexcept {
  const uint8_t band = band_of(*p);
  if (!Adopt && band_pkts_[band] >= cfg_.limit) {
    ++xs_.band_drops[band];
    return drop(p, to_free);
  }
  const uint64_t now = clock_ns();
  if (Adopt && p->enqueue_ns != 0) {
    // kept: its time to send as the qdisc before set it
  } else if (p->tstamp_ns == 0) {
    p->enqueue_ns = now;
  } else {
    if (p->tstamp_ns > now + horizon_ns_) {
      if (cfg_.horizon_drop) {
        ++xs_.horizon_drops;
        return drop(p, to_free);
      }
      ++xs_.horizon_caps;
      p->tstamp_ns = now + horizon_ns_;
    }
    p->enqueue_ns = p->tstamp_ns;
  }
  const uint32_t idx = lookup(p->flow_hash, now);
  if (idx == kNone) {
    ++xs_.allocation_errors;
    return drop(p, to_free);
  }
  Flow& f = flows_[idx];
  if (!Adopt && f.qlen >= cfg_.flow_limit) {
    ++xs_.flows_plimit;
    return drop(p, to_free);
  }
  f.band = band;
  if (f.where == Where::detached) {
    list_push(idx, band, Where::new_list);
    if (now - f.age_ns > refill_delay_ns_) f.credit = std::max<int64_t>(f.credit, cfg_.quantum);
  }
  if (f.qlen == 0) {
    if (f.idle) idle_unlink(idx);
    ++active_;
  }
  // Insert in time_to_send order (stable: after packets due at the same time).
  const uint64_t t = p->enqueue_ns;
  if (f.tail == nullptr || f.tail->enqueue_ns <= t) {
    p->next = nullptr;
    if (f.tail) f.tail->next = p; else f.head = p;
    f.tail = p;
  } else if (t < f.head->enqueue_ns) {
    p->next = f.head;
    f.head = p;
  } else {
    Packet* q = f.head;
    while (q->next->enqueue_ns <= t) q = q->next;  // stops before the tail: tail's time > t
    p->next = q->next;
    q->next = p;
  }
  ++f.qlen;
  ++band_pkts_[band];
  account_enqueue(*p);
  return Verdict::success;
}

Verdict FqQdisc::enqueue(Packet* p, PacketList& to_free) noexcept {
  return enqueue_as<false>(p, to_free);
}

Verdict FqQdisc::adopt(Packet* p, PacketList& to_free) noexcept {
  return enqueue_as<true>(p, to_free);
}

void FqQdisc::settle(PacketList& to_free) noexcept {
  // None may be due yet (pacing): then it stops, as fq_change does.
  drop_dequeued_while([&] { return qlen() > cfg_.limit; }, to_free);
}

void FqQdisc::next_band() noexcept {
  band_nr_ = band_nr_ + 1 == kBands ? 0 : band_nr_ + 1;
  Band& b = bands_[band_nr_];
  b.credit = std::min<int64_t>(b.credit + cfg_.weights[band_nr_], cfg_.weights[band_nr_]);
}

void FqQdisc::pace(Flow& f, const Packet& p, uint64_t now) noexcept {
  if (!cfg_.pacing) return;
  uint64_t rate = cfg_.maxrate == FqConfig::kUnlimited ? ~uint64_t{0} : cfg_.maxrate;
  uint64_t plen = p.len;
  if (p.tstamp_ns == 0) {
    // An EDT packet is only held to maxrate; otherwise the socket's rate counts too.
    if (p.pacing_rate != 0) rate = std::min(rate, p.pacing_rate);
    if (rate <= cfg_.low_rate_threshold) {
      f.credit = 0;
    } else {
      plen = std::max<uint64_t>(plen, cfg_.quantum);
      if (f.credit > 0) return;
    }
  }
  if (rate == ~uint64_t{0}) return;
  uint64_t delay = plen * kNsPerSec;  // plen < 2^33: no overflow
  if (rate != 0) delay /= rate;
  if (delay > kNsPerSec) {
    delay = kNsPerSec;
    ++xs_.pkts_too_long;
  }
  // The previous packet's slot: a late dequeue earns back up to half of this delay.
  if (f.time_next_packet != 0 && now > f.time_next_packet)
    delay -= std::min(delay / 2, now - f.time_next_packet);
  f.time_next_packet = now + delay;
}

Packet* FqQdisc::do_dequeue() noexcept {
  const uint64_t now = clock_ns();
  unthrottle(now);
  for (int empty_bands = 0; empty_bands < kBands;) {
    Band& band = bands_[band_nr_];
    List* list = &band.lists[0];
    if (list->head == kNone) list = &band.lists[1];
    if (list->head == kNone) {
      next_band();
      ++empty_bands;
      continue;
    }
    const uint32_t idx = list->head;
    Flow& f = flows_[idx];
    if (f.credit <= 0) {
      f.credit += cfg_.quantum;
      list_unlink(idx);
      list_push(idx, f.band, Where::old_list);
      continue;
    }
    Packet* p = f.head;
    if (p == nullptr) {
      const bool was_new = f.where == Where::new_list;
      list_unlink(idx);
      if (was_new) {
        list_push(idx, f.band, Where::old_list);  // one pass through old: no starving old flows
      } else {
        f.age_ns = now;  // detached: refill_delay and gc count from here
        if (f.idle) idle_unlink(idx);
        idle_push(idx);  // the idle list stays in age order
      }
      continue;
    }
    const uint64_t due = std::max(p->enqueue_ns, f.time_next_packet);
    if (now < due) {
      list_unlink(idx);
      f.time_next_packet = due;
      throttle(idx);
      continue;
    }
    if (cfg_.ce_threshold_us != FqConfig::kUnlimited && now - due > ce_threshold_ns_ &&
        ecn::set_ce(*p))
      ++xs_.ce_mark;
    f.head = p->next;
    if (f.head == nullptr) f.tail = nullptr;
    p->next = nullptr;
    if (--f.qlen == 0) {
      --active_;
      idle_push(idx);
    }
    --band_pkts_[band_of(*p)];
    f.credit -= p->len;
    pace(f, *p, now);
    band.credit -= p->len;
    if (band.credit <= 0) next_band();
    return p;
  }
  return nullptr;
}

void FqQdisc::reset(PacketList& to_free) noexcept {
  purge_peeked(to_free);
  for (Flow& f : flows_) {
    while (Packet* p = f.head) {
      f.head = p->next;
      account_remove(*p);
      to_free.push_back(p);
    }
  }
  std::fill(buckets_.begin(), buckets_.end(), kNone);
  free_head_ = kNone;
  for (std::size_t i = flows_.size(); i-- > 0;) free_flow(static_cast<uint32_t>(i));
  delayed_.clear();
  idle_ = List{};
  for (int b = 0; b < kBands; ++b) {
    bands_[b] = Band{};
    bands_[b].credit = cfg_.weights[b];
  }
  band_pkts_ = {};
  band_nr_ = 0;
  in_use_ = 0;
  active_ = 0;
}

bool FqQdisc::flow_view(uint32_t flow_hash, FlowView& out) const noexcept {
  for (uint32_t i = buckets_[bucket_of(flow_hash)]; i != kNone; i = flows_[i].hnext) {
    const Flow& f = flows_[i];
    if (f.key != flow_hash) continue;
    out = FlowView{f.credit, f.time_next_packet, f.qlen, f.where == Where::throttled};
    return true;
  }
  return false;
}

// ---- tc -s -----------------------------------------------------------------------------------

FqXstats FqQdisc::detail_xstats() const noexcept {
  FqXstats x = xs_;
  x.flows = in_use_;
  x.inactive_flows = in_use_ - active_;
  x.throttled_flows = static_cast<uint32_t>(delayed_.size());
  for (int b = 0; b < kBands; ++b) x.band_pkts[b] = band_pkts_[b];
  if (peeked_ != nullptr) ++x.band_pkts[band_of(*peeked_)];
  if (!delayed_.empty()) {
    const uint64_t now = clock_ns();
    const uint64_t t = delayed_.front().time;
    x.next_packet_delay_ns = t > now ? t - now : 0;
  }
  return x;
}

DumpAttrs FqQdisc::dump_options() const {
  const FqConfig& c = cfg_;
  return DumpAttrs()
      .number("limit", c.limit)
      .number("flow_limit", c.flow_limit)
      .number("buckets", uint64_t{1} << c.buckets_log)
      .number("orphan_mask", c.orphan_mask)
      .flag("pacing", c.pacing)
      .number("bands", kBands)
      .array("priomap", std::vector<uint64_t>(c.priomap.begin(), c.priomap.end()))
      .array("weights", std::vector<uint64_t>(c.weights.begin(), c.weights.end()))
      .number("quantum", c.quantum)
      .number("initial_quantum", c.initial_quantum)
      .number("maxrate", c.maxrate)
      .number("low_rate_threshold", c.low_rate_threshold)
      .number("refill_delay", c.refill_delay_us)
      .number("ce_threshold", c.ce_threshold_us)
      .number("timer_slack", c.timer_slack_ns)
      .number("horizon", c.horizon_us)
      .flag("horizon_drop", c.horizon_drop);
}

Xstats FqQdisc::xstats() const {
  const FqXstats d = detail_xstats();
  auto i64 = [](uint64_t v) {
    return static_cast<int64_t>(std::min<uint64_t>(v, std::numeric_limits<int64_t>::max()));
  };
  // tc prints "throttled" twice (flows, then events); the second is named throttled_events here
  // so that names stay unique.
  Xstats x = {{"flows", d.flows},
              {"inactive", d.inactive_flows},
              {"throttled", d.throttled_flows},
              {"band0_pkts", d.band_pkts[0]},
              {"band1_pkts", d.band_pkts[1]},
              {"band2_pkts", d.band_pkts[2]}};
  if (d.next_packet_delay_ns) x.emplace_back("next_packet_delay", i64(d.next_packet_delay_ns));
  x.emplace_back("gc", i64(d.gc_flows));
  x.emplace_back("highprio", i64(d.highprio_packets));
  x.emplace_back("throttled_events", i64(d.throttled));
  auto optional = [&x, &i64](const char* name, uint64_t v) {
    if (v) x.emplace_back(name, i64(v));
  };
  optional("ce_mark", d.ce_mark);
  optional("flows_plimit", d.flows_plimit);
  optional("pkts_too_long", d.pkts_too_long);
  optional("alloc_errors", d.allocation_errors);
  optional("horizon_drops", d.horizon_drops);
  optional("horizon_caps", d.horizon_caps);
  optional("band0_drops", d.band_drops[0]);
  optional("band1_drops", d.band_drops[1]);
  optional("band2_drops", d.band_drops[2]);
  return x;
}

}  // namespace txpath
