// SPDX-License-Identifier: MIT
// red: see red.hpp for the semantics. Its tc options (parser, the parameters tc derives, printed
// text) are in src/tc/qdisc_red.cpp.
// Origin: written from the semantics of Linux sch_red.c / include/net/red.h, Floyd & Jacobson
// 1993 and Floyd, Gummadi & Shenker 2001; ECN marking per RFC 3168. No atomics beyond Qdisc's
// counters: the qdisc is called by one thread at a time (qdisc.hpp).
#include "qdisc/red.hpp"

#include <algorithm>
#include <utility>

#include "base/clock.hpp"
#include "qdisc/ecn.hpp"

namespace txpath {

namespace {

constexpr uint64_t kAdaptPeriodNs = 500ull * 1000 * 1000;  // Adaptive RED's interval
constexpr uint32_t kOnePercent = 42949673;                 // round(2^32 / 100)
constexpr uint32_t kMaxPMin = kOnePercent;                 // 1%
constexpr uint32_t kMaxPMax = 50 * kOnePercent;            // 50%
// Ticks a late adaptive update catches up at most: by then max_P has long reached a bound.
constexpr int kMaxAdaptCatchUp = 128;

}  // namespace

RedQdisc::RedQdisc(const RedConfig& cfg)
    : cfg_(cfg),
      qth_min_(cfg.qth_min << cfg.wlog),
      qth_max_(cfg.qth_max << cfg.wlog) {
  const int64_t delta = int64_t{cfg.qth_max} - cfg.qth_min;
  qth_delta_ = delta <= 0 ? 1 : static_cast<uint32_t>(delta);
  // Without an explicit max_P: max_P = (max - min) / 2^Plog, in u32 as the kernel computes it.
  max_p_ = cfg.max_p ? cfg.max_p
                     : (cfg.plog < 32 ? (~0u >> cfg.plog) : ~0u) * qth_delta_;
  set_max_p_reciprocal(max_p_ / qth_delta_);
  target_min_ = cfg.qth_min + 2 * (qth_delta_ / 5);
  target_max_ = cfg.qth_min + 3 * (qth_delta_ / 5);
  const uint64_t now = clock_ns();
  idling_ = true;  // created empty: an idle period starts now
  idle_start_ns_ = now;
  next_adapt_ns_ = now + kAdaptPeriodNs;
}

uint64_t RedQdisc::clock_ns() const noexcept { return cfg_.clock ? cfg_.clock() : now_ns(); }

uint32_t RedQdisc::draw() noexcept {
  if (random_) return random_();
  // xorshift64*: a cheap generator; RED needs spread, not unpredictability.
  rng_ ^= rng_ >> 12;
  rng_ ^= rng_ << 25;
  rng_ ^= rng_ >> 27;
  return static_cast<uint32_t>((rng_ * 0x2545F4914F6CDD1Dull) >> 32);
}

uint64_t RedQdisc::qavg_after_idle(uint64_t now) const noexcept {
  const uint64_t scell_max = uint64_t{255} << cfg_.scell_log;
  const uint64_t idle_us = std::min((now - idle_start_ns_) / 1000, scell_max);
  const uint8_t shift = cfg_.stab[(idle_us >> cfg_.scell_log) & 255];
  if (shift) return qavg_ >> shift;
  // (1-W)^m ~ 1 - mW for small m: a linear decay, at most by half.
  const uint64_t decay = (qavg_ * idle_us) >> cfg_.scell_log;
  return decay < (qavg_ >> 1) ? qavg_ - decay : qavg_ >> 1;
}

uint64_t RedQdisc::average(uint64_t now) const noexcept {
  if (idling_) return qavg_after_idle(now);
  // qavg = qavg*(1-W) + backlog*W with qavg scaled by 2^Wlog (unsigned wrap cancels out).
  return qavg_ + (backlog() - (qavg_ >> cfg_.wlog));
}

RedQdisc::Action RedQdisc::action(uint64_t qavg) noexcept {
  if (qavg < qth_min_) {
    qcount_ = -1;
    return Action::pass;
  }
  if (qavg >= qth_max_) {
    qcount_ = -1;
    return Action::hard_mark;
  }
  if (++qcount_ == 0) {  // first packet above min since a pass or a mark: draw qR
    qr_ = draw() / max_p_delta_;
    return Action::pass;
  }
  // max_P * (qavg - min) / (max - min) >= qR / qcount, without a division.
  if (((qavg - qth_min_) >> cfg_.wlog) * static_cast<uint64_t>(qcount_) < qr_) return Action::pass;
  qcount_ = 0;
  qr_ = draw() / max_p_delta_;
  return Action::probable_mark;
}

bool RedQdisc::mark_drops(Packet& p, bool hard) noexcept {
  count_overlimit();
  uint32_t& dropped = hard ? stats_.forced_drop : stats_.prob_drop;
  if (!cfg_.ecn || (hard && cfg_.harddrop)) {
    ++dropped;
    return true;
  }
  if (ecn::set_ce(p)) {
    ++(hard ? stats_.forced_mark : stats_.prob_mark);
    return false;
  }
  if (cfg_.nodrop) return false;  // a non-ECT packet is queued unmarked
  ++dropped;
  return true;
}

void RedQdisc::adapt(uint64_t now) noexcept {
  const uint64_t qavg = (idling_ ? qavg_after_idle(now) : qavg_) >> cfg_.wlog;
  if (qavg > target_max_ && max_p_ <= kMaxPMax)
    max_p_ += std::min(kMaxPMin, max_p_ / 4);  // + alpha
  else if (qavg < target_min_ && max_p_ >= kMaxPMin)
    max_p_ = (max_p_ / 10) * 9;  // * beta
  set_max_p_reciprocal((max_p_ + qth_delta_ / 2) / qth_delta_);  // rounded to nearest
}

void RedQdisc::adapt_until(uint64_t now) noexcept {
  if (!cfg_.adaptive) return;
  for (int i = 0; now >= next_adapt_ns_; ++i) {
    if (i == kMaxAdaptCatchUp) {  // long asleep: skip the ticks that would change nothing
      next_adapt_ns_ = now - (now - next_adapt_ns_) % kAdaptPeriodNs;
      i = kMaxAdaptCatchUp - 1;
    }
    adapt(next_adapt_ns_);
    next_adapt_ns_ += kAdaptPeriodNs;
  }
}

Verdict RedQdisc::enqueue(Packet* p, PacketList& to_free) noexcept {
  const uint64_t now = clock_ns();
  adapt_until(now);
  qavg_ = average(now);
  idling_ = false;
  const Action a = action(qavg_);
  if (a != Action::pass && mark_drops(*p, a == Action::hard_mark)) return drop(p, to_free);
  if (backlog() + p->len > cfg_.limit) {
    ++stats_.pdrop;
    return drop(p, to_free);
  }
  queue_.push_back(p);
  account_enqueue(*p);
  return Verdict::success;
}

Verdict RedQdisc::adopt(Packet* p, PacketList& to_free) noexcept {
  if (flush_) return drop(p, to_free);
  queue_.push_back(p);  // unchanged: kept as it was
  account_enqueue(*p);
  return Verdict::success;
}

Packet* RedQdisc::dequeue() noexcept {
  const uint64_t now = cfg_.adaptive || queue_.size() == 0 ? clock_ns() : 0;
  adapt_until(now);
  Packet* p = queue_.pop_front();
  if (p) {
    account_dequeue(*p);
  } else if (!idling_) {
    idling_ = true;
    idle_start_ns_ = now;
  }
  return p;
}

void RedQdisc::reset(PacketList& to_free) noexcept {
  while (Packet* p = queue_.pop_front()) {
    account_remove(*p);
    to_free.push_back(p);
  }
  // The kernel's red_restart: not idling, the average and the count start over.
  idling_ = false;
  qavg_ = 0;
  qcount_ = -1;
}

DumpAttrs RedQdisc::dump_options() const {
  return DumpAttrs()
      .number("limit", cfg_.limit)
      .number("min", cfg_.qth_min)
      .number("max", cfg_.qth_max)
      .flag("ecn", cfg_.ecn)
      .flag("harddrop", cfg_.harddrop)
      .flag("adaptive", cfg_.adaptive)
      .flag("nodrop", cfg_.nodrop)
      .number("ewma", cfg_.wlog)
      .number("plog", cfg_.plog)
      .number("scell_log", cfg_.scell_log)
      .number("max_p", max_p_);
}

Xstats RedQdisc::xstats() const {
  return {{"marked", int64_t{stats_.prob_mark} + stats_.forced_mark},
          {"early", int64_t{stats_.prob_drop} + stats_.forced_drop},
          {"pdrop", stats_.pdrop},
          {"other", 0}};
}

}  // namespace txpath
