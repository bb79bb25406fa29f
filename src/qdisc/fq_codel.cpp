// SPDX-License-Identifier: MIT
// fq_codel: see fq_codel.hpp for the semantics, codel.hpp for the fixed-point CoDel pieces. Its
// tc options (parser, printed text) are in src/tc/qdisc_fq_codel.cpp.
// Origin: written from the semantics of Linux sch_fq_codel / codel_impl.h
// semantics, RFC 8289, RFC 8290); ECN marking per RFC 3168, checksum update per RFC 1624.
// No atomics beyond Qdisc's counters: the qdisc is called by one thread at a time.
#include "qdisc/fq_codel.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "base/clock.hpp"
#include "qdisc/ecn.hpp"

namespace txpath {

FqCodelQdisc::FqCodelQdisc(const FqCodelConfig& cfg)
    : cfg_(cfg),
      cparams_(codel::params_from_us(cfg.target_us, cfg.interval_us, cfg.has_ce_threshold,
                                     cfg.ce_threshold_us, cfg.mtu, cfg.ecn)),
      flows_(cfg.flows) {}

uint32_t FqCodelQdisc::truesize(const Packet& p) noexcept {
  return std::max(p.capacity, p.len) + static_cast<uint32_t>(sizeof(Packet));
}

uint64_t FqCodelQdisc::clock_ns() const noexcept { return cfg_.clock ? cfg_.clock() : now_ns(); }

Packet* FqCodelQdisc::flow_pop(Flow& f) noexcept {
  Packet* p = f.q.pop_front();
  if (p) {
    --qlen_;
    backlog_ -= p->len;
    memory_ -= truesize(*p);
  }
  return p;
}

void FqCodelQdisc::codel_drop(Packet* p) noexcept {
  account_remove(*p);
  count_drop();
  dropped_.push_back(p);
}


// One flow as the queue codel::dequeue() serves: its packets, the whole qdisc's backlog for the
// "at most one MTU" test (as the kernel's fq_codel passes it), victims parked on dropped_.
struct FqCodelQdisc::FlowQueue {
  FqCodelQdisc& q;
  Flow& f;
  Packet* pop() noexcept { return q.flow_pop(f); }
  uint64_t backlog() const noexcept { return q.backlog_; }
  void drop(Packet* p) noexcept { q.codel_drop(p); }
};

Packet* FqCodelQdisc::codel_dequeue(Flow& f) noexcept {
  FlowQueue fq{*this, f};
  return codel::dequeue(fq, f.cvars, cparams_, cstats_, codel::from_ns(clock_ns()));
}

Packet* FqCodelQdisc::do_dequeue() noexcept {
  for (;;) {
    FlowList* list = new_.head ? &new_ : (old_.head ? &old_ : nullptr);
    if (list == nullptr) return nullptr;
    Flow* f = list->head;
    if (f->deficit <= 0) {
      // Quantum used up: refill and go to the back of the old flows.
      f->deficit += static_cast<int32_t>(cfg_.quantum);
      list->pop_front();
      old_.push_back(f);
      continue;
    }
    Packet* p = codel_dequeue(*f);
    if (p == nullptr) {
      // Empty flow: a new flow goes to the old list once (if others wait there), so that it
      // cannot re-enter as new right away; an old flow leaves the lists.
      list->pop_front();
      if (list == &new_ && old_.head != nullptr) {
        old_.push_back(f);
      } else {
        f->listed = false;
      }
      continue;
    }
    f->deficit -= static_cast<int32_t>(p->len);
    return p;
  }
}

uint32_t FqCodelQdisc::drop_fat_flow(uint32_t max_packets, PacketList& to_free,
                                     bool& arriving_dropped, const Packet* arriving) noexcept {
  uint32_t idx = 0;
  uint64_t max_backlog = 0;
  for (uint32_t i = 0; i < cfg_.flows; ++i) {
    if (flows_[i].q.bytes() > max_backlog) {
      max_backlog = flows_[i].q.bytes();
      idx = i;
    }
  }
  Flow& f = flows_[idx];
  const uint64_t threshold = max_backlog >> 1;
  uint64_t len = 0;
  uint32_t n = 0;
  do {
    Packet* p = flow_pop(f);
    if (p == nullptr) break;
    if (p == arriving) arriving_dropped = true;
    len += p->len;
    account_remove(*p);
    drop(p, to_free);
  } while (++n < max_packets && len < threshold);
  f.cvars.count += n;
  return idx;
}

template <bool Adopt>
Verdict FqCodelQdisc::enqueue_as(Packet* p, PacketList& to_free) noexcept {
  to_free.splice_back(dropped_);  // earlier CoDel victims, already counted as drops

  const uint32_t idx = classify(*p);
  Flow& f = flows_[idx];
  if (!Adopt || p->enqueue_ns == 0) p->enqueue_ns = clock_ns();
  f.q.push_back(p);
  ++qlen_;
  backlog_ += p->len;
  memory_ += truesize(*p);
  account_enqueue(*p);
  if (!f.listed) {
    f.listed = true;
    new_.push_back(&f);
    ++xs_.new_flow_count;
    f.deficit = static_cast<int32_t>(cfg_.quantum);
  }
  const bool memory_limited = memory_ > cfg_.memory_limit;
  if (Adopt || (qlen() <= cfg_.limit && !memory_limited)) return Verdict::success;

  bool arriving_dropped = false;
  const uint64_t before = qlen();
  const uint32_t fat = drop_fat_flow(cfg_.drop_batch, to_free, arriving_dropped, p);
  const auto n = static_cast<uint32_t>(before - qlen());
  xs_.drop_overlimit += n;
  if (memory_limited) xs_.drop_overmemory += n;
  if (arriving_dropped) return Verdict::drop;
  return fat == idx ? Verdict::congestion : Verdict::success;
}

Verdict FqCodelQdisc::enqueue(Packet* p, PacketList& to_free) noexcept {
  return enqueue_as<false>(p, to_free);
}

Verdict FqCodelQdisc::adopt(Packet* p, PacketList& to_free) noexcept {
  return enqueue_as<true>(p, to_free);
}

void FqCodelQdisc::settle(PacketList& to_free) noexcept {
  drop_dequeued_while([&] { return qlen() > cfg_.limit || memory_ > cfg_.memory_limit; }, to_free);
}

void FqCodelQdisc::reset(PacketList& to_free) noexcept {
  to_free.splice_back(dropped_);
  purge_peeked(to_free);
  for (Flow& f : flows_) {
    while (Packet* p = f.q.pop_front()) {
      account_remove(*p);
      to_free.push_back(p);
    }
    f.next = nullptr;
    f.listed = false;
    f.deficit = 0;
    f.cvars = codel::Vars{};
  }
  new_ = FlowList{};
  old_ = FlowList{};
  backlog_ = 0;
  qlen_ = 0;
  memory_ = 0;
}

FqCodelXstats FqCodelQdisc::detail_xstats() const noexcept {
  FqCodelXstats x = xs_;
  x.maxpacket = cstats_.maxpacket;
  x.ecn_mark = cstats_.ecn_mark;
  x.ce_mark = cstats_.ce_mark;
  x.memory_used = static_cast<uint32_t>(std::min<uint64_t>(memory_, UINT32_MAX));
  x.new_flows_len = new_.size;
  x.old_flows_len = old_.size;
  return x;
}

FqCodelFlowStats FqCodelQdisc::flow_stats(uint32_t flow) const noexcept {
  FqCodelFlowStats s;
  if (flow >= flows_.size()) return s;
  const Flow& f = flows_[flow];
  s.deficit = f.deficit;
  s.ldelay_us = static_cast<uint32_t>(codel::to_us(f.cvars.ldelay));
  s.count = f.cvars.count;
  s.lastcount = f.cvars.lastcount;
  s.dropping = f.cvars.dropping;
  s.drop_next_us = static_cast<int32_t>(codel::drop_next_us(f.cvars, codel::from_ns(clock_ns())));
  s.qlen = static_cast<uint32_t>(f.q.size());
  s.backlog = f.q.bytes();
  return s;
}

DumpAttrs FqCodelQdisc::dump_options() const {
  DumpAttrs d;
  d.number("limit", cfg_.limit)
      .number("flows", cfg_.flows)
      .number("quantum", cfg_.quantum)
      .number("target", codel::to_us(cparams_.target));
  if (cfg_.has_ce_threshold) d.number("ce_threshold", codel::to_us(cparams_.ce_threshold));
  return d.number("interval", codel::to_us(cparams_.interval))
      .number("memory_limit", cfg_.memory_limit)
      .flag("ecn", cfg_.ecn)
      .number("drop_batch", cfg_.drop_batch);
}

Xstats FqCodelQdisc::xstats() const {
  const FqCodelXstats d = detail_xstats();
  Xstats x = {{"maxpacket", d.maxpacket},
              {"drop_overlimit", d.drop_overlimit},
              {"new_flow_count", d.new_flow_count},
              {"ecn_mark", d.ecn_mark}};
  if (d.ce_mark) x.emplace_back("ce_mark", d.ce_mark);
  if (d.memory_used) x.emplace_back("memory_used", d.memory_used);
  if (d.drop_overmemory) x.emplace_back("drop_overmemory", d.drop_overmemory);
  x.emplace_back("new_flows_len", d.new_flows_len);
  x.emplace_back("old_flows_len", d.old_flows_len);
  return x;
}

}  // namespace txpath
