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
      target_(codel::from_us(cfg.target_us)),
      interval_(codel::from_us(cfg.interval_us)),
      ce_threshold_(cfg.has_ce_threshold ? codel::from_us(cfg.ce_threshold_us)
                                         : codel::kDisabledThreshold),
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


// CoDel's per-packet test (sets ldelay, maxpacket, first_above_time); true = time to act.
bool FqCodelQdisc::should_drop(const Packet* p, Flow& f, codel::Time now) noexcept {
  codel::Vars& v = f.cvars;
  if (p == nullptr) {
    v.first_above_time = 0;
    return false;
  }
  v.ldelay = now - codel::from_ns(p->enqueue_ns);
  xs_.maxpacket = std::max(xs_.maxpacket, p->len);
  // "Below target, or the whole qdisc holds at most one MTU": good queue.
  if (codel::before(v.ldelay, target_) || backlog_ <= cfg_.mtu) {
    v.first_above_time = 0;
    return false;
  }
  if (v.first_above_time == 0) {
    v.first_above_time = now + interval_;
    return false;
  }
  return codel::after(now, v.first_above_time);
}

Packet* FqCodelQdisc::codel_dequeue(Flow& f) noexcept {
  codel::Vars& v = f.cvars;
  Packet* p = flow_pop(f);
  if (p == nullptr) {
    v.dropping = false;
    return nullptr;
  }
  const codel::Time now = codel::from_ns(clock_ns());
  const bool drop = should_drop(p, f, now);
  if (v.dropping) {
    if (!drop) {
      v.dropping = false;  // sojourn fell below target: leave the dropping state
    } else {
      // Act once per control-law interval that has passed; each action refines 1/sqrt(count).
      while (v.dropping && codel::after_eq(now, v.drop_next)) {
        ++v.count;
        codel::newton_step(v);
        if (cfg_.ecn && ecn::set_ce(*p)) {
          ++xs_.ecn_mark;
          v.drop_next = codel::control_law(v.drop_next, interval_, v.rec_inv_sqrt);
          break;  // a marked packet is delivered
        }
        codel_drop(p);
        p = flow_pop(f);
        if (!should_drop(p, f, now)) {
          v.dropping = false;
        } else {
          v.drop_next = codel::control_law(v.drop_next, interval_, v.rec_inv_sqrt);
        }
      }
    }
  } else if (drop) {
    // Enter the dropping state with this packet.
    if (cfg_.ecn && ecn::set_ce(*p)) {
      ++xs_.ecn_mark;
    } else {
      codel_drop(p);
      p = flow_pop(f);
      (void)should_drop(p, f, now);  // for its effects on ldelay / first_above_time
    }
    v.dropping = true;
    // Re-entering soon after leaving: resume near the previous drop rate.
    const uint32_t delta = v.count - v.lastcount;
    if (delta > 1 && codel::before(now - v.drop_next, 16 * interval_)) {
      v.count = delta;
      codel::newton_step(v);
    } else {
      v.count = 1;
      v.rec_inv_sqrt = codel::kRecInvSqrtOne;
    }
    v.lastcount = v.count;
    v.drop_next = codel::control_law(now, interval_, v.rec_inv_sqrt);
  }
  if (p != nullptr && cfg_.has_ce_threshold && codel::after(v.ldelay, ce_threshold_) && ecn::set_ce(*p))
    ++xs_.ce_mark;
  return p;
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

Verdict FqCodelQdisc::enqueue(Packet* p, PacketList& to_free) noexcept {
  to_free.splice_back(dropped_);  // earlier CoDel victims, already counted as drops

  const uint32_t idx = classify(*p);
  Flow& f = flows_[idx];
  p->enqueue_ns = clock_ns();
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
  if (qlen() <= cfg_.limit && !memory_limited) return Verdict::success;

  bool arriving_dropped = false;
  const uint64_t before = qlen();
  const uint32_t fat = drop_fat_flow(cfg_.drop_batch, to_free, arriving_dropped, p);
  const auto n = static_cast<uint32_t>(before - qlen());
  xs_.drop_overlimit += n;
  if (memory_limited) xs_.drop_overmemory += n;
  if (arriving_dropped) return Verdict::drop;
  return fat == idx ? Verdict::congestion : Verdict::success;
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
  if (f.cvars.dropping) {
    const int32_t d = codel::diff(f.cvars.drop_next, codel::from_ns(clock_ns()));
    s.drop_next_us = d < 0 ? -static_cast<int32_t>(codel::to_us(static_cast<codel::Time>(-d)))
                           : static_cast<int32_t>(codel::to_us(static_cast<codel::Time>(d)));
  }
  s.qlen = static_cast<uint32_t>(f.q.size());
  s.backlog = f.q.bytes();
  return s;
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
