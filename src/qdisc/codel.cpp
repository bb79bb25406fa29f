// SPDX-License-Identifier: MIT
// codel: see codel_qdisc.hpp for the semantics, codel.hpp for the CoDel state machine it shares
// with fq_codel. Its tc options (parser, printed text) are in src/tc/qdisc_codel.cpp.
// Origin: written from the semantics of Linux sch_codel / codel_impl.h and RFC 8289; ECN
// marking per RFC 3168. No atomics beyond Qdisc's counters: one thread at a time (qdisc.hpp).
#include "qdisc/codel_qdisc.hpp"

#include "base/clock.hpp"

namespace txpath {

CodelQdisc::CodelQdisc(const CodelConfig& cfg)
    : cfg_(cfg),
      params_(codel::params_from_us(cfg.target_us, cfg.interval_us, cfg.has_ce_threshold,
                                    cfg.ce_threshold_us, cfg.mtu, cfg.ecn)) {}

uint64_t CodelQdisc::clock_ns() const noexcept { return cfg_.clock ? cfg_.clock() : now_ns(); }

Packet* CodelQdisc::Fifo::pop() noexcept { return q.queue_.pop_front(); }

void CodelQdisc::Fifo::drop(Packet* p) noexcept {
  q.account_remove(*p);
  q.count_drop();
  q.dropped_.push_back(p);
}

Packet* CodelQdisc::do_dequeue() noexcept {
  Fifo fifo{*this};
  return codel::dequeue(fifo, vars_, params_, cstats_, codel::from_ns(clock_ns()));
}

Verdict CodelQdisc::enqueue(Packet* p, PacketList& to_free) noexcept {
  to_free.splice_back(dropped_);  // earlier CoDel victims, already counted as drops
  if (qlen() >= cfg_.limit) {
    ++drop_overlimit_;
    return drop(p, to_free);
  }
  p->enqueue_ns = clock_ns();
  queue_.push_back(p);
  account_enqueue(*p);
  return Verdict::success;
}

Verdict CodelQdisc::adopt(Packet* p, PacketList& to_free) noexcept {
  to_free.splice_back(dropped_);
  if (p->enqueue_ns == 0) p->enqueue_ns = clock_ns();  // from a qdisc that kept no stamp
  queue_.push_back(p);
  account_enqueue(*p);
  return Verdict::success;
}

void CodelQdisc::settle(PacketList& to_free) noexcept {
  while (qlen() > cfg_.limit) {
    Packet* p = queue_.pop_front();
    account_remove(*p);
    drop(p, to_free);
  }
}

void CodelQdisc::reset(PacketList& to_free) noexcept {
  to_free.splice_back(dropped_);
  purge_peeked(to_free);
  while (Packet* p = queue_.pop_front()) {
    account_remove(*p);
    to_free.push_back(p);
  }
  vars_ = codel::Vars{};  // the kernel's codel_reset: the state starts over, the counters stay
}

CodelXstats CodelQdisc::detail_xstats() const noexcept {
  CodelXstats x;
  x.maxpacket = cstats_.maxpacket;
  x.count = vars_.count;
  x.lastcount = vars_.lastcount;
  x.ldelay_us = static_cast<uint32_t>(codel::to_us(vars_.ldelay));
  x.dropping = vars_.dropping;
  x.drop_next_us = static_cast<int32_t>(codel::drop_next_us(vars_, codel::from_ns(clock_ns())));
  x.drop_overlimit = drop_overlimit_;
  x.ecn_mark = cstats_.ecn_mark;
  x.ce_mark = cstats_.ce_mark;
  return x;
}

DumpAttrs CodelQdisc::dump_options() const {
  DumpAttrs d;
  d.number("limit", cfg_.limit).number("target", codel::to_us(params_.target));
  if (cfg_.has_ce_threshold) d.number("ce_threshold", codel::to_us(params_.ce_threshold));
  return d.number("interval", codel::to_us(params_.interval)).flag("ecn", cfg_.ecn);
}

Xstats CodelQdisc::xstats() const {
  const CodelXstats d = detail_xstats();
  Xstats x = {{"count", d.count}, {"lastcount", d.lastcount}, {"ldelay", d.ldelay_us}};
  if (d.dropping) x.emplace_back("dropping", 1);
  x.emplace_back("drop_next", d.drop_next_us);
  x.emplace_back("maxpacket", d.maxpacket);
  x.emplace_back("ecn_mark", d.ecn_mark);
  x.emplace_back("drop_overlimit", d.drop_overlimit);
  if (d.ce_mark) x.emplace_back("ce_mark", d.ce_mark);
  return x;
}

}  // namespace txpath
