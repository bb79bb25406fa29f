// SPDX-License-Identifier: MIT
// prio: strict-priority bands, each a child qdisc. Semantics: see prio.hpp. Its tc options
// (parser, printed text) are in src/tc/qdisc_prio.cpp. Written from Linux sch_prio semantics
// and tc-prio(8); no kernel or iproute2 code was copied.
#include "qdisc/prio.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <stdexcept>
#include <vector>

#include "qdisc/fifo.hpp"
#include "txpath/error.hpp"

namespace txpath {

namespace {

std::unique_ptr<Qdisc> default_child(uint32_t limit) { return std::make_unique<PfifoQdisc>(limit); }

}  // namespace

PrioQdisc::PrioQdisc(std::size_t bands, const Priomap& priomap, uint32_t child_limit,
                     uint16_t handle_major)
    : bands_(std::clamp(bands, kMinBands, kMaxBands)),
      priomap_(priomap),
      child_limit_(child_limit),
      handle_major_(handle_major) {
  for (uint8_t& b : priomap_)
    if (b >= bands_) b = 0;  // make_prio() rejects this; never index past the bands
  for (std::size_t b = 0; b < bands_; ++b) children_[b] = default_child(child_limit_);
  set_class_ops(this);
}

PrioQdisc::~PrioQdisc() = default;

DumpAttrs PrioQdisc::dump_options() const {
  return DumpAttrs()
      .number("bands", bands_)
      .array("priomap", std::vector<uint64_t>(priomap_.begin(), priomap_.end()))
      .flag("multiqueue", false);
}

std::size_t PrioQdisc::classify(uint32_t priority) const noexcept {
  const uint32_t major = priority >> 16;
  if (handle_major_ != 0 && major == handle_major_) {
    // Minor m selects class major:m, i.e. band m-1; minor 0 wraps to a huge value -> fallback.
    const uint32_t band = (priority & 0xffffu) - 1u;
    return band < bands_ ? band : priomap_[0];
  }
  if (major != 0) return priomap_[0];  // a classid that is not ours
  return priomap_[priority & 15u];
}


void PrioQdisc::sync_band(std::size_t b) noexcept {
  const Qdisc& c = *children_[b];
  const uint64_t q = c.qlen();
  const uint64_t bl = c.backlog();
  Seen& s = seen_[b];
  if (const uint64_t d = c.drops(); d != s.drops) {
    count_drops(d - s.drops);
    s.drops = d;
  }
  if (q == s.qlen && bl == s.backlog) return;
  account_adjust(static_cast<int64_t>(q - s.qlen), static_cast<int64_t>(bl - s.backlog));
  s.qlen = q;
  s.backlog = bl;
}

void PrioQdisc::continue_classes(const ClassOps& old) noexcept {
  (void)old;
  for (std::size_t b = 0; b < bands_; ++b) seen_[b].drops = children_[b]->drops();
}

Verdict PrioQdisc::enqueue(Packet* p, PacketList& to_free) noexcept {
  const std::size_t b = classify(p->priority);
  const Verdict v = children_[b]->enqueue(p, to_free);
  sync_band(b);  // +1 packet, or the child's drops (all of them, batch victims included)
  return v;
}

Verdict PrioQdisc::adopt(Packet* p, PacketList& to_free) noexcept {
  const std::size_t b = classify(p->priority);
  const Verdict v = children_[b]->adopt(p, to_free);
  sync_band(b);
  return v;
}

void PrioQdisc::settle(PacketList& to_free) noexcept {
  for (std::size_t b = 0; b < bands_; ++b) {
    children_[b]->settle(to_free);
    sync_band(b);
  }
}

Packet* PrioQdisc::dequeue() noexcept {
  for (std::size_t b = 0; b < bands_; ++b) {
    Packet* p = children_[b]->dequeue();
    if (p) {
      account_dequeue(*p);
      seen_[b].qlen -= 1;
      seen_[b].backlog -= p->len;
      sync_band(b);  // anything the child dropped while dequeuing (AQM)
      return p;
    }
    sync_band(b);  // an AQM child may have dropped everything it held
  }
  return nullptr;
}

Packet* PrioQdisc::peek() noexcept {
  for (std::size_t b = 0; b < bands_; ++b) {
    Packet* p = children_[b]->peek();
    sync_band(b);  // a child's peek may dequeue internally (and drop, for an AQM)
    if (p) return p;
  }
  return nullptr;
}

void PrioQdisc::reset(PacketList& to_free) noexcept {
  for (std::size_t b = 0; b < bands_; ++b) {
    children_[b]->reset(to_free);
    sync_band(b);
  }
}

uint64_t PrioQdisc::watchdog_ns() const noexcept {
  uint64_t earliest = 0;
  for (std::size_t b = 0; b < bands_; ++b) {
    const uint64_t t = children_[b]->watchdog_ns();
    if (t != 0 && (earliest == 0 || t < earliest)) earliest = t;
  }
  return earliest;
}

void PrioQdisc::take_dequeue_drops(PacketList& out) noexcept {
  for (std::size_t b = 0; b < bands_; ++b) children_[b]->take_dequeue_drops(out);
}

void PrioQdisc::graft_band(std::size_t band, std::unique_ptr<Qdisc> child, PacketList& to_free) {
  if (band >= bands_)
    throw std::out_of_range("prio graft: band " + std::to_string(band) + " >= bands " +
                            std::to_string(bands_));
  if (!child) child = default_child(child_limit_);
  children_[band]->reset(to_free);
  sync_band(band);  // the old child's packets leave prio's qlen/backlog
  children_[band] = std::move(child);
  seen_[band].drops = children_[band]->drops();  // its earlier drops are not prio's
  sync_band(band);  // the new child's packets (if any) join them
}

std::vector<QdiscClassInfo> PrioQdisc::classes() const {
  std::vector<QdiscClassInfo> out;
  for (std::size_t b = 0; b < bands_; ++b)
    out.push_back({.minor = static_cast<uint16_t>(b + 1), .parent_minor = 0, .print_root = false,
                   .leaf = true});
  return out;
}

QdiscStats PrioQdisc::class_stats(uint16_t minor) const {
  if (minor == 0 || minor > bands_) return {};
  return children_[minor - 1]->stats();
}

Qdisc* PrioQdisc::child(uint16_t minor) noexcept {
  if (minor == 0 || minor > bands_) return nullptr;
  return children_[minor - 1].get();
}

void PrioQdisc::graft(uint16_t minor, std::unique_ptr<Qdisc> child, PacketList& to_free) {
  if (minor == 0 || minor > bands_)
    throw ConfigRejected("prio has no class " + std::to_string(minor) + " (bands " +
                         std::to_string(bands_) + ")");
  graft_band(minor - 1u, std::move(child), to_free);
}

}  // namespace txpath
