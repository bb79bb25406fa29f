// SPDX-License-Identifier: MIT
// tbf: token bucket shaper (see tbf.hpp for the algorithm and invariants): the data path and the
// class. Its tc options (parser, printed text) are in src/tc/qdisc_tbf.cpp. Origin: written from
// Linux sch_tbf semantics and tc-tbf(8); no code copied.
#include "qdisc/tbf.hpp"

#include <algorithm>
#include <memory>
#include <string>

#include "base/clock.hpp"
#include "qdisc/fifo.hpp"
#include "qdisc/psched.hpp"
#include "txpath/error.hpp"

namespace txpath {

namespace {

uint64_t default_clock() noexcept { return now_ns(); }

}  // namespace

TbfQdisc::TbfQdisc(const TbfConfig& cfg, uint64_t (*clock)(), uint32_t psched_mtu)
    : cfg_(cfg),
      rate_{.rate = cfg.rate, .overhead = cfg.overhead, .mpu = cfg.mpu, .atm = cfg.atm},
      peak_{.rate = cfg.peakrate, .overhead = cfg.overhead, .mpu = cfg.mpu, .atm = cfg.atm},
      clock_(clock ? clock : &default_clock),
      psched_mtu_(psched_mtu) {
  child_ = default_child();
  max_size_ = cfg_.burst;
  buffer_ = l2t_rate(cfg_.burst);
  if (cfg_.peakrate) {
    max_size_ = std::min(max_size_, cfg_.minburst);
    mtu_ns_ = l2t_peak(cfg_.minburst);
  }
  tokens_ = static_cast<int64_t>(buffer_);
  ptokens_ = static_cast<int64_t>(mtu_ns_);
  t_c_ = now();
  set_class_ops(this);
}

TbfQdisc::~TbfQdisc() = default;

// The kernel takes the burst in bytes (TCA_TBF_BURST) and holds it as its transmit time at the
// rate with the framing, rounded its way (psched_l2t_ns); it dumps that time in ticks.
DumpAttrs TbfQdisc::dump_options() const {
  DumpAttrs d;
  d.number("rate", cfg_.rate)
      .number("buffer", ns_to_ticks(kernel_l2t_ns(cfg_.rate, wire_len(cfg_.burst))))
      .number("limit", cfg_.limit);
  if (cfg_.peakrate)
    d.number("peakrate", cfg_.peakrate)
        .number("mtu", ns_to_ticks(kernel_l2t_ns(cfg_.peakrate, wire_len(cfg_.minburst))));
  d.number("mpu", cfg_.mpu).number("overhead", cfg_.overhead).word("linklayer", cfg_.atm ? "atm" : "ethernet");
  return d;
}

uint64_t TbfQdisc::now() const noexcept { return clock_(); }

std::unique_ptr<Qdisc> TbfQdisc::default_child() const {
  return std::make_unique<BfifoQdisc>(cfg_.limit, psched_mtu_);
}

void TbfQdisc::sync_child() noexcept {
  if (const uint64_t d = child_->drops(); d != child_drops_) {
    count_drops(d - child_drops_);  // every drop below tbf is tbf's too
    child_drops_ = d;
  }
  account_adjust(static_cast<int64_t>(child_->qlen() - qlen()),
                 static_cast<int64_t>(child_->backlog() - backlog()));
}

bool TbfQdisc::eligible(const Packet& head, uint64_t t, int64_t& toks, int64_t& ptoks,
                        uint64_t& when) const noexcept {
  // Elapsed time since the last send, capped at the bucket depth (a clock that went backwards
  // counts as no time).
  const uint64_t since = t > t_c_ ? t - t_c_ : 0;
  const int64_t elapsed = static_cast<int64_t>(std::min<uint64_t>(since, buffer_));
  ptoks = 0;
  if (cfg_.peakrate) {
    ptoks = std::min<int64_t>(ptokens_ + elapsed, static_cast<int64_t>(mtu_ns_));
    ptoks -= static_cast<int64_t>(l2t_peak(head.len));
  }
  toks = std::min<int64_t>(tokens_ + elapsed, static_cast<int64_t>(buffer_));
  toks -= static_cast<int64_t>(l2t_rate(head.len));
  if (toks >= 0 && ptoks >= 0) return true;
  when = t + static_cast<uint64_t>(std::max(-toks, -ptoks));
  return false;
}

Verdict TbfQdisc::enqueue(Packet* p, PacketList& to_free) noexcept {
  // No GSO here, so an oversized packet can never be sent: drop it now.
  if (p->len > max_size_) return drop(p, to_free);
  const Verdict v = child_->enqueue(p, to_free);
  sync_child();  // +1 packet, or the child's drops (every one counts as tbf's too)
  return v;
}

Verdict TbfQdisc::adopt(Packet* p, PacketList& to_free) noexcept {
  if (p->len > max_size_) return drop(p, to_free);
  const Verdict v = child_->adopt(p, to_free);
  sync_child();
  return v;
}

void TbfQdisc::settle(PacketList& to_free) noexcept {
  child_->settle(to_free);
  sync_child();
}

Packet* TbfQdisc::dequeue() noexcept {
  Packet* head = child_->peek();
  sync_child();  // a child's peek may dequeue internally (and drop, for an AQM)
  if (!head) {
    watchdog_ = 0;
    return nullptr;
  }
  const uint64_t t = now();
  int64_t toks = 0, ptoks = 0;
  uint64_t when = 0;
  if (!eligible(*head, t, toks, ptoks, when)) {
    watchdog_ = when;
    count_overlimit();
    return nullptr;
  }
  Packet* p = child_->dequeue();  // the peeked head
  if (p != head) {
    // A child whose dequeue() disagrees with its peek() breaks the Qdisc contract; send what
    // it gave without spending tokens on a packet that was not measured.
    sync_child();
    if (p) {
      account_enqueue(*p);  // sync_child() already removed it; count it as sent instead
      account_dequeue(*p);
    }
    watchdog_ = 0;
    return p;
  }
  account_dequeue(*head);
  sync_child();  // anything else the child dropped while dequeuing
  tokens_ = toks;
  ptokens_ = ptoks;
  t_c_ = t;
  watchdog_ = 0;
  return head;
}

Packet* TbfQdisc::peek() noexcept {
  // The kernel's tbf peeks by dequeueing: only a packet that may leave now is visible. Peeking
  // spends no tokens and counts no overlimit; the buckets only grow until the next dequeue.
  Packet* head = child_->peek();
  sync_child();
  if (!head) {
    watchdog_ = 0;
    return nullptr;
  }
  int64_t toks = 0, ptoks = 0;
  uint64_t when = 0;
  if (!eligible(*head, now(), toks, ptoks, when)) {
    watchdog_ = when;
    return nullptr;
  }
  return head;
}

void TbfQdisc::reset(PacketList& to_free) noexcept {
  child_->reset(to_free);
  sync_child();
  tokens_ = static_cast<int64_t>(buffer_);
  ptokens_ = static_cast<int64_t>(mtu_ns_);
  t_c_ = now();
  watchdog_ = 0;
}

uint64_t TbfQdisc::watchdog_ns() const noexcept {
  // Our own when we hold back an eligible-later head; else a shaping child's (its peek() found
  // nothing it may send yet).
  return watchdog_ != 0 ? watchdog_ : child_->watchdog_ns();
}

void TbfQdisc::take_dequeue_drops(PacketList& out) noexcept { child_->take_dequeue_drops(out); }

std::vector<QdiscClassInfo> TbfQdisc::classes() const {
  return {{.minor = 1, .parent_minor = 0, .print_root = false, .leaf = true}};
}

QdiscStats TbfQdisc::class_stats(uint16_t minor) const {
  if (minor != 1) return {};
  return child_->stats();
}

Qdisc* TbfQdisc::child(uint16_t minor) noexcept { return minor == 1 ? child_.get() : nullptr; }

void TbfQdisc::graft(uint16_t minor, std::unique_ptr<Qdisc> child, PacketList& to_free) {
  if (minor != 1)
    throw ConfigRejected("tbf has no class " + std::to_string(minor) + " (its only class is 1)");
  if (!child) child = default_child();
  child_->reset(to_free);
  sync_child();  // the old child's packets leave tbf's qlen/backlog
  child_ = std::move(child);
  child_drops_ = child_->drops();  // its earlier drops are not tbf's
  sync_child();  // the new child's packets (if any) join them
  watchdog_ = 0;
}

}  // namespace txpath
