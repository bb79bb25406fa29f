// SPDX-License-Identifier: MIT
// mq / mqprio: one child per TX queue. Semantics: see mq.hpp. Written from Linux sch_mq.c and
// sch_mqprio.c behaviour; no kernel code was copied.
#include "qdisc/mq.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "qdisc/pfifo_fast.hpp"
#include "txpath/error.hpp"

namespace txpath {

namespace {

std::unique_ptr<Qdisc> default_child(const QdiscEnv& env) {
  return std::make_unique<PfifoFastQdisc>(env.txqueuelen);
}

}  // namespace

MqQdisc::MqQdisc(uint32_t queues, const Mapping& mapping, const QdiscEnv& env)
    : mapping_(mapping), env_(env), seen_(std::max<uint32_t>(queues, 1)) {
  env_.handle_major = 0;  // the default children have handle 0 (Linux's qdisc_create_dflt)
  children_.reserve(seen_.size());
  for (std::size_t i = 0; i < seen_.size(); ++i) children_.push_back(default_child(env_));
  set_class_ops(this);
}

MqQdisc::~MqQdisc() = default;

int MqQdisc::queue_class(uint32_t q) const noexcept {
  if (mapping_.num_tc == 0) return 0;
  for (std::size_t t = 0; t < mapping_.tc_queues.size(); ++t) {
    const TrafficClasses::Range& r = mapping_.tc_queues[t];
    if (q >= r.offset && q - r.offset < r.count) return static_cast<int>(t);
  }
  return -1;
}

void MqQdisc::sync_child(std::size_t i) noexcept {
  const Qdisc& c = *children_[i];
  Seen& s = seen_[i];
  if (const uint64_t d = c.drops(); d != s.drops) {
    count_drops(d - s.drops);
    s.drops = d;
  }
  const uint64_t q = c.qlen();
  const uint64_t bl = c.backlog();
  if (q == s.qlen && bl == s.backlog) return;
  account_adjust(static_cast<int64_t>(q - s.qlen), static_cast<int64_t>(bl - s.backlog));
  s.qlen = q;
  s.backlog = bl;
}

std::size_t MqQdisc::pick(const Packet& p) const noexcept {
  if (p.tx_queue < children_.size()) return p.tx_queue;
  if (mapping_.num_tc) {
    const TrafficClasses::Range& r = mapping_.tc_queues[mapping_.prio_tc[p.priority & 15u]];
    if (r.offset < children_.size()) return r.offset;
  }
  return 0;
}

Verdict MqQdisc::enqueue(Packet* p, PacketList& to_free) noexcept {
  const std::size_t i = pick(*p);
  const Verdict v = children_[i]->enqueue(p, to_free);
  sync_child(i);
  return v;
}

Packet* MqQdisc::dequeue() noexcept {
  for (std::size_t n = 0; n < children_.size(); ++n) {
    const std::size_t i = next_;
    next_ = next_ + 1 == children_.size() ? 0 : next_ + 1;
    Packet* p = children_[i]->dequeue();
    if (p) {
      account_dequeue(*p);
      seen_[i].qlen -= 1;
      seen_[i].backlog -= p->len;
    }
    sync_child(i);
    if (p) return p;
  }
  return nullptr;
}

Packet* MqQdisc::peek() noexcept {
  // The child dequeue() serves next: the first non-empty one from next_ on.
  for (std::size_t n = 0; n < children_.size(); ++n) {
    const std::size_t i = (next_ + n) % children_.size();
    Packet* p = children_[i]->peek();
    sync_child(i);
    if (p) {
      next_ = i;
      return p;
    }
  }
  return nullptr;
}

void MqQdisc::reset(PacketList& to_free) noexcept {
  for (std::size_t i = 0; i < children_.size(); ++i) {
    children_[i]->reset(to_free);
    sync_child(i);
  }
}

void MqQdisc::take_dequeue_drops(PacketList& out) noexcept {
  for (auto& c : children_) c->take_dequeue_drops(out);
}

uint64_t MqQdisc::watchdog_ns() const noexcept {
  uint64_t earliest = 0;
  for (const auto& c : children_) {
    const uint64_t t = c->watchdog_ns();
    if (t != 0 && (earliest == 0 || t < earliest)) earliest = t;
  }
  return earliest;
}

DumpAttrs MqQdisc::dump_options() const {
  if (mapping_.num_tc == 0) return {};
  std::vector<uint64_t> first, last;
  for (uint32_t t = 0; t < mapping_.num_tc; ++t) {
    const TrafficClasses::Range& r = mapping_.tc_queues[t];
    first.push_back(r.offset);
    last.push_back(r.offset + r.count - 1);
  }
  return DumpAttrs()
      .number("num_tc", mapping_.num_tc)
      .array("map", std::vector<uint64_t>(mapping_.prio_tc.begin(), mapping_.prio_tc.end()))
      .array("queue_first", std::move(first))
      .array("queue_last", std::move(last));
}

QdiscStats MqQdisc::children_stats() const noexcept {
  QdiscStats sum;
  for (const auto& c : children_) add_counts(sum, c->stats());
  return sum;
}

std::vector<QdiscClassInfo> MqQdisc::classes() const {
  // Linux's walk: mqprio's traffic classes first, then one class per TX queue.
  std::vector<QdiscClassInfo> out;
  for (uint16_t t = 0; t < mapping_.num_tc; ++t)
    out.push_back({.minor = static_cast<uint16_t>(kTcClassBase + t), .parent_minor = 0,
                   .print_root = true, .leaf = false});
  for (std::size_t i = 0; i < children_.size(); ++i) {
    QdiscClassInfo c{.minor = static_cast<uint16_t>(i + 1), .parent_minor = 0, .print_root = true,
                     .leaf = true};
    if (mapping_.num_tc) {
      const int t = queue_class(static_cast<uint32_t>(i));
      c.print_root = false;
      c.parent_none = t < 0;
      c.parent_minor = t < 0 ? 0 : static_cast<uint16_t>(kTcClassBase + t);
    }
    out.push_back(c);
  }
  return out;
}

Qdisc* MqQdisc::child(uint16_t minor) noexcept {
  if (minor == 0 || minor > children_.size()) return nullptr;
  return children_[minor - 1u].get();
}

void MqQdisc::graft(uint16_t minor, std::unique_ptr<Qdisc> child, PacketList& to_free) {
  if (minor == 0 || minor > children_.size()) throw ConfigRejected("Specified class not found.");
  const std::size_t i = minor - 1u;
  if (!child) child = default_child(env_);
  children_[i]->reset(to_free);
  sync_child(i);
  children_[i] = std::move(child);
  seen_[i].drops = children_[i]->drops();
  sync_child(i);
}

std::unique_ptr<Qdisc> MqQdisc::take_child(uint16_t minor) {
  if (minor == 0 || minor > children_.size()) return nullptr;
  std::unique_ptr<Qdisc> out = default_child(env_);
  children_[minor - 1u].swap(out);
  sync_child(minor - 1u);  // the packets it holds (if any) leave mq's counters with it
  seen_[minor - 1u].drops = children_[minor - 1u]->drops();
  return out;
}

QdiscStats MqQdisc::class_stats(uint16_t minor) const {
  if (is_tc_class(minor)) {
    const TrafficClasses::Range& r = mapping_.tc_queues[minor - kTcClassBase];
    QdiscStats sum;
    for (uint32_t q = r.offset; q < r.offset + r.count && q < children_.size(); ++q)
      add_counts(sum, children_[q]->stats());
    return sum;
  }
  if (minor == 0 || minor > children_.size()) return {};
  return children_[minor - 1u]->stats();
}

}  // namespace txpath
