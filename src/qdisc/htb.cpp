// SPDX-License-Identifier: MIT
// htb: hierarchical token bucket (see htb.hpp for the semantics and invariants): the data path
// and the class tree. Its tc options (parsers, printed text) are in src/tc/qdisc_htb.cpp.
// Origin: written from Linux sch_htb semantics (docs/architecture.md) and tc-htb(8); no kernel
// or iproute2 code copied.
#include "qdisc/htb.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <limits>
#include <string>

#include "base/clock.hpp"
#include "qdisc/fifo.hpp"
#include "qdisc/psched.hpp"
#include "txpath/error.hpp"

namespace txpath {

namespace {

constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();

uint64_t default_clock() noexcept { return now_ns(); }

// A cost from RateCfg (at most RateCfg::kMaxNs = 2^62) as a signed token amount.
int64_t ns(uint64_t cost) noexcept { return static_cast<int64_t>(cost); }

// Capacity for n elements, grown geometrically (add_class() calls this once per class).
template <class V>
void grow(V& v, std::size_t n) {
  if (v.capacity() < n) v.reserve(std::max(n, 2 * v.capacity()));
}

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%x", v);
  return buf;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// DRR lists

void HtbQdisc::DrrList::insert(Class* c) {
  const auto it = std::lower_bound(v.begin(), v.end(), c,
                                   [](const Class* a, const Class* b) { return a->minor < b->minor; });
  const auto pos = static_cast<std::size_t>(it - v.begin());
  const bool at_end = ptr >= v.size();
  v.insert(it, c);  // capacity reserved by add_class(): no allocation
  if (lost) return;  // recover() finds the class by its minor
  if (at_end) ptr = v.size();  // a NULL pointer (past the end, or an empty list) stays NULL
  else if (pos <= ptr) ++ptr;  // keep pointing at the same class
}

void HtbQdisc::DrrList::remove(Class* c, bool remember) noexcept {
  const auto it = std::lower_bound(v.begin(), v.end(), c,
                                   [](const Class* a, const Class* b) { return a->minor < b->minor; });
  if (it == v.end() || *it != c) return;
  const auto pos = static_cast<std::size_t>(it - v.begin());
  v.erase(it);
  if (lost) return;
  if (remember && pos == ptr) {
    lost = true;
    lost_minor = c->minor;
    return;
  }
  // A row's pointer at the removed class now names the next one (or the end).
  if (pos < ptr) --ptr;
  if (ptr > v.size()) ptr = v.size();
}

void HtbQdisc::DrrList::recover() noexcept {
  if (!lost) return;
  lost = false;
  const uint16_t m = lost_minor;
  ptr = static_cast<std::size_t>(
      std::lower_bound(v.begin(), v.end(), m, [](const Class* a, uint16_t b) { return a->minor < b; }) -
      v.begin());
}

// ---------------------------------------------------------------------------------------------
// Construction, helpers

HtbQdisc::HtbQdisc(uint32_t defcls, uint32_t r2q, uint32_t direct_qlen, const QdiscEnv& env)
    : clock_(env.clock ? env.clock : &default_clock),
      defcls_(defcls),
      r2q_(r2q == 0 ? 1 : r2q),
      direct_qlen_(direct_qlen),
      child_limit_(env.txqueuelen),
      handle_major_(env.handle_major) {
  next_event_.fill(kNone);
  set_class_ops(this);
}

HtbQdisc::~HtbQdisc() = default;

uint64_t HtbQdisc::now() const noexcept { return clock_(); }

std::size_t HtbQdisc::preallocated_bytes() const noexcept {
  return by_minor_.page_bytes() + classes_.size() * sizeof(Class);
}

std::unique_ptr<Qdisc> HtbQdisc::default_child() const {
  return std::make_unique<PfifoQdisc>(child_limit_);
}

HtbQdisc::Class* HtbQdisc::classify(uint32_t priority) const noexcept {
  if (priority == (uint32_t{handle_major_} << 16)) return nullptr;  // H:0 -> direct
  if ((priority >> 16) == handle_major_) {
    Class* c = by_minor_.get(static_cast<uint16_t>(priority & 0xffffu));
    if (c && c->level == 0) return c;
  }
  Class* d = by_minor_.get(static_cast<uint16_t>(defcls_ & 0xffffu));
  if (d && d->level == 0) return d;
  return nullptr;
}

int HtbQdisc::class_level(uint16_t minor) const noexcept {
  const Class* c = find(minor);
  return c ? c->level : -1;
}

const HtbClassConfig* HtbQdisc::class_config(uint16_t minor) const noexcept {
  const Class* c = find(minor);
  return c ? &c->cfg : nullptr;
}


void HtbQdisc::sync_leaf(Class& c) noexcept {
  const uint64_t d = c.q->drops();
  if (d != c.seen_drops) {
    count_drops(d - c.seen_drops);
    c.drops += d - c.seen_drops;
    c.seen_drops = d;
  }
  const uint64_t q = c.q->qlen();
  const uint64_t b = c.q->backlog();
  if (q == c.seen_qlen && b == c.seen_backlog) return;
  account_adjust(static_cast<int64_t>(q - c.seen_qlen), static_cast<int64_t>(b - c.seen_backlog));
  c.seen_qlen = q;
  c.seen_backlog = b;
}

void HtbQdisc::update_activity(Class& c) noexcept {
  if (c.seen_qlen > 0 && c.activity == 0) activate(c);
  else if (c.seen_qlen == 0 && c.activity != 0) deactivate(c);
}

void HtbQdisc::purge_leaf(Class& c) noexcept {
  PacketList purged;
  c.q->reset(purged);
  c.q->take_dequeue_drops(parked_);  // already counted by the child
  sync_leaf(c);
  for (std::size_t i = purged.size(); i > 0; --i) {
    count_drop();
    ++c.drops;
  }
  parked_.splice_back(purged);
  update_activity(c);
}

// ---------------------------------------------------------------------------------------------
// Activation: rows, feeds, modes, wait lists

void HtbQdisc::add_to_row(Class& c, unsigned mask) noexcept {
  row_mask_[c.level] = static_cast<uint8_t>(row_mask_[c.level] | mask);
  for (unsigned m = mask; m; m &= m - 1) row_[c.level][std::countr_zero(m)].insert(&c);
}

void HtbQdisc::remove_from_row(Class& c, unsigned mask) noexcept {
  for (unsigned m = mask; m; m &= m - 1) {
    const int p = std::countr_zero(m);
    DrrList& row = row_[c.level][p];
    row.remove(&c);
    if (row.v.empty()) row_mask_[c.level] = static_cast<uint8_t>(row_mask_[c.level] & ~(1u << p));
  }
}

void HtbQdisc::activate_prios(Class& c) noexcept {
  Class* cl = &c;
  unsigned m = cl->activity;
  while (cl->mode == Mode::may_borrow && cl->parent && m) {
    Class* p = cl->parent;
    unsigned fresh = m;  // prios the parent did not feed yet
    for (unsigned b = m; b; b &= b - 1) {
      const int prio = std::countr_zero(b);
      if (!p->feed[prio].v.empty()) fresh &= ~(1u << prio);
      p->feed[prio].insert(cl);
    }
    p->activity = static_cast<uint8_t>(p->activity | fresh);
    cl = p;
    m = fresh;
  }
  if (cl->mode == Mode::can_send && m) add_to_row(*cl, m);
}

void HtbQdisc::deactivate_prios(Class& c) noexcept {
  Class* cl = &c;
  unsigned m = cl->activity;
  while (cl->mode == Mode::may_borrow && cl->parent && m) {
    Class* p = cl->parent;
    unsigned emptied = 0;
    for (unsigned b = m; b; b &= b - 1) {
      const int prio = std::countr_zero(b);
      p->feed[prio].remove(cl, /*remember=*/true);
      if (p->feed[prio].v.empty()) emptied |= 1u << prio;
    }
    p->activity = static_cast<uint8_t>(p->activity & ~emptied);
    cl = p;
    m = emptied;
  }
  if (cl->mode == Mode::can_send && m) remove_from_row(*cl, m);
}

void HtbQdisc::activate(Class& c) noexcept {
  if (c.activity) return;
  c.activity = static_cast<uint8_t>(1u << c.cfg.prio);
  activate_prios(c);
}

void HtbQdisc::deactivate(Class& c) noexcept {
  if (!c.activity) return;
  deactivate_prios(c);
  c.activity = 0;
}

HtbQdisc::Mode HtbQdisc::class_mode(const Class& c, int64_t& diff) const noexcept {
  int64_t toks = c.ctokens + diff;
  if (toks < 0) {
    diff = -toks;
    return Mode::cant_send;
  }
  toks = c.tokens + diff;
  if (toks >= 0) return Mode::can_send;
  diff = -toks;
  return Mode::may_borrow;
}

void HtbQdisc::change_mode(Class& c, int64_t& diff) noexcept {
  const Mode m = class_mode(c, diff);
  if (m == c.mode) return;
  if (m == Mode::cant_send) {
    ++c.overlimits;
    count_overlimit();
  }
  if (c.activity) {
    if (c.mode != Mode::cant_send) deactivate_prios(c);
    c.mode = m;
    if (m != Mode::cant_send) activate_prios(c);
  } else {
    c.mode = m;
  }
}

void HtbQdisc::wait_add(Class& c, uint64_t key) noexcept {
  std::vector<Class*>& w = wait_[c.level];
  c.pq_key = key;
  c.wait_pos = static_cast<std::ptrdiff_t>(w.size());
  w.push_back(&c);  // reserved by add_class()
  if (key < next_event_[c.level]) next_event_[c.level] = key;
}

void HtbQdisc::wait_remove(Class& c) noexcept {
  if (c.wait_pos < 0) return;
  std::vector<Class*>& w = wait_[c.level];
  const auto pos = static_cast<std::size_t>(c.wait_pos);
  w[pos] = w.back();
  w[pos]->wait_pos = static_cast<std::ptrdiff_t>(pos);
  w.pop_back();
  c.wait_pos = -1;
  // next_event_ may now be early: a spurious event scan finds nothing due and recomputes it.
}

void HtbQdisc::do_events(int level, uint64_t t) noexcept {
  std::vector<Class*>& w = wait_[level];
  uint64_t earliest = kNone;
  for (std::size_t i = 0; i < w.size();) {
    Class& c = *w[i];
    if (c.pq_key > t) {
      earliest = std::min(earliest, c.pq_key);
      ++i;
      continue;
    }
    int64_t diff = static_cast<int64_t>(std::min<uint64_t>(t > c.t_c ? t - c.t_c : 0, kMbufferNs));
    change_mode(c, diff);
    if (c.mode != Mode::can_send) {
      c.pq_key = t + static_cast<uint64_t>(std::max<int64_t>(diff, 1));
      earliest = std::min(earliest, c.pq_key);
      ++i;
    } else {
      wait_remove(c);  // swaps the last entry into slot i: look at slot i again
    }
  }
  next_event_[level] = earliest;
}

void HtbQdisc::charge(Class& leaf, int level, uint32_t len, uint64_t t) noexcept {
  const int64_t mbuffer = static_cast<int64_t>(kMbufferNs);
  for (Class* c = &leaf; c; c = c->parent) {
    int64_t diff = static_cast<int64_t>(std::min<uint64_t>(t > c->t_c ? t - c->t_c : 0, kMbufferNs));
    if (c->level >= level) {
      if (c->level == level) ++c->lends;
      int64_t toks = std::min(c->tokens + diff, c->buffer) - ns(c->rate.l2t_ns(len));
      if (toks <= -mbuffer) toks = 1 - mbuffer;
      c->tokens = toks;
    } else {
      ++c->borrows;
      c->tokens += diff;  // t_c moves: keep the elapsed credit
    }
    int64_t ctoks = std::min(c->ctokens + diff, c->cbuffer) - ns(c->ceil.l2t_ns(len));
    if (ctoks <= -mbuffer) ctoks = 1 - mbuffer;
    c->ctokens = ctoks;
    c->t_c = t;

    const Mode old = c->mode;
    diff = 0;
    change_mode(*c, diff);
    if (old != c->mode) {
      if (old != Mode::can_send) wait_remove(*c);
      if (c->mode != Mode::can_send) wait_add(*c, t + static_cast<uint64_t>(std::max<int64_t>(diff, 1)));
    }
    if (c->level) {  // leaves were counted at dequeue
      c->bytes += len;
      ++c->packets;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Enqueue / dequeue

Verdict HtbQdisc::enqueue(Packet* p, PacketList& to_free) noexcept {
  return enqueue_as<false>(p, to_free);
}

Verdict HtbQdisc::adopt(Packet* p, PacketList& to_free) noexcept {
  return enqueue_as<true>(p, to_free);
}

void HtbQdisc::settle(PacketList& to_free) noexcept {
  for (auto& c : classes_) {
    if (c->level != 0) continue;
    c->q->settle(to_free);
    sync_leaf(*c);
    update_activity(*c);
  }
}

template <bool Adopt>
Verdict HtbQdisc::enqueue_as(Packet* p, PacketList& to_free) noexcept {
  if (!parked_.empty()) to_free.splice_back(parked_);
  Class* c = classify(p->priority);
  if (!c) {
    if (direct_.size() >= direct_qlen_) return drop(p, to_free);
    direct_.push_back(p);
    account_enqueue(*p);
    ++direct_pkts_;
    return Verdict::success;
  }
  const Verdict v = Adopt ? c->q->adopt(p, to_free) : c->q->enqueue(p, to_free);
  sync_leaf(*c);  // the child's drops, if any, become the class's and htb's
  update_activity(*c);
  return v;
}

HtbQdisc::Class* HtbQdisc::lookup_leaf(int level, int prio) noexcept {
  std::array<DrrList*, kLevels + 1> stack{};
  int depth = 0;
  stack[0] = &row_[level][prio];
  // Every list on the way is non-empty (activation keeps feeds and rows consistent); the bound
  // only guards against a broken invariant.
  for (std::size_t guard = 0; guard < 4 * classes_.size() + 64; ++guard) {
    DrrList& l = *stack[depth];
    if (l.v.empty()) return nullptr;
    l.recover();
    if (l.ptr >= l.v.size()) {  // past the end: rewind, and move the pointer above on
      l.ptr = 0;
      if (depth > 0) stack[--depth]->advance();
      continue;
    }
    Class* c = l.v[l.ptr];
    if (c->level == 0) return c;
    if (depth == kLevels) return nullptr;
    stack[++depth] = &c->feed[prio];
  }
  return nullptr;
}

void HtbQdisc::continue_classes(const ClassOps& old_ops) noexcept {
  // A leaf's grafted child goes on with its own drop count (a default child starts at zero):
  // already counted by its class and by htb.
  for (auto& c : classes_)
    if (c->level == 0 && c->q) c->seen_drops = c->q->drops();
  const auto* old = dynamic_cast<const HtbQdisc*>(&old_ops);
  if (!old) return;
  direct_pkts_ += old->direct_pkts_;
  for (auto& c : classes_) {
    const Class* o = old->find(c->minor);
    if (!o) continue;
    c->bytes = o->bytes;
    c->packets = o->packets;
    c->drops = o->drops;
    c->overlimits = o->overlimits;
    c->lends = o->lends;
    c->borrows = o->borrows;
    c->giants = o->giants;
    c->tokens = o->tokens;
    c->ctokens = o->ctokens;
    c->t_c = o->t_c;
    c->deficit = o->deficit;
    // No packets here yet (activity 0): only the mode and the wait list to set. A class that
    // could not send waits for the event the old one waited for.
    wait_remove(*c);
    c->mode = o->mode;
    if (c->mode != Mode::can_send) wait_add(*c, o->wait_pos >= 0 ? o->pq_key : now() + 1);
  }
}

Packet* HtbQdisc::dequeue_tree(int level, int prio, uint64_t t) noexcept {
  Class* start = lookup_leaf(level, prio);
  Class* cl = start;
  Packet* p = nullptr;
  for (std::size_t guard = 0; cl && guard < 2 * classes_.size() + 2; ++guard) {
    if (cl->seen_qlen == 0) {  // cannot stay active without packets
      deactivate(*cl);
      if (!(row_mask_[level] & (1u << prio))) return nullptr;
      Class* next = lookup_leaf(level, prio);
      if (cl == start) start = next;
      cl = next;
      continue;
    }
    p = cl->q->dequeue();
    if (p) break;
    // A non-work-conserving child (a shaper): note its watchdog and try the next class.
    sync_leaf(*cl);
    if (const uint64_t w = cl->q->watchdog_ns(); w != 0 && (child_watchdog_ == 0 || w < child_watchdog_))
      child_watchdog_ = w;
    if (cl->seen_qlen == 0) continue;  // it dropped everything (AQM): deactivated above
    (level ? cl->parent->feed[prio] : row_[0][prio]).advance();
    cl = lookup_leaf(level, prio);
    if (cl == start) break;
  }
  if (!p) return nullptr;

  account_dequeue(*p);
  cl->seen_qlen -= 1;
  cl->seen_backlog -= p->len;
  sync_leaf(*cl);  // anything the child dropped while dequeuing
  ++cl->packets;
  cl->bytes += p->len;
  if (cl->cfg.mtu && p->len > cl->cfg.mtu) ++cl->giants;
  cl->deficit[level] -= p->len;
  if (cl->deficit[level] < 0) {
    cl->deficit[level] += cl->cfg.quantum;
    (level ? cl->parent->feed[prio] : row_[0][prio]).advance();
  }
  if (cl->seen_qlen == 0) deactivate(*cl);
  charge(*cl, level, p->len, t);
  return p;
}

Packet* HtbQdisc::dequeue_internal() noexcept {
  if (Packet* p = direct_.pop_front()) {
    account_dequeue(*p);
    watchdog_ = 0;
    return p;
  }
  if (qlen() == 0) {
    watchdog_ = 0;
    return nullptr;
  }
  const uint64_t t = now();
  uint64_t next_event = t + kMaxWatchdogAheadNs;
  child_watchdog_ = 0;
  for (int level = 0; level < kLevels; ++level) {
    if (next_event_[level] <= t) do_events(level, t);
    next_event = std::min(next_event, next_event_[level]);
    for (unsigned m = row_mask_[level]; m; m &= m - 1) {
      const int prio = std::countr_zero(m);
      if (!(row_mask_[level] & (1u << prio))) continue;  // emptied meanwhile
      if (Packet* p = dequeue_tree(level, prio, t)) {
        watchdog_ = 0;
        return p;
      }
    }
  }
  if (child_watchdog_ != 0 && child_watchdog_ < next_event) next_event = child_watchdog_;
  watchdog_ = qlen() == 0 ? 0 : std::max(next_event, t + 1);
  return nullptr;
}

Packet* HtbQdisc::dequeue() noexcept {
  if (Packet* p = peeked_) {
    peeked_ = nullptr;
    account_remove(*p);  // sent statistics were counted when it was peeked
    return p;
  }
  return dequeue_internal();
}

Packet* HtbQdisc::peek() noexcept {
  // As qdisc_peek_dequeued(): the packet really leaves its class (tokens, statistics) and is
  // held here, still counted in qlen/backlog, until dequeue().
  if (!peeked_) {
    peeked_ = dequeue_internal();
    if (peeked_) account_enqueue(*peeked_);
  }
  return peeked_;
}

void HtbQdisc::reset(PacketList& to_free) noexcept {
  if (peeked_) {
    account_remove(*peeked_);
    to_free.push_back(peeked_);
    peeked_ = nullptr;
  }
  while (Packet* p = direct_.pop_front()) {
    account_remove(*p);
    to_free.push_back(p);
  }
  for (auto& c : classes_) {
    if (c->level == 0) {
      c->q->reset(to_free);
      c->q->take_dequeue_drops(to_free);
      sync_leaf(*c);
    } else {
      for (DrrList& f : c->feed) f.clear();
    }
    c->activity = 0;
    c->mode = Mode::can_send;
    c->wait_pos = -1;
  }
  for (auto& level : row_)
    for (DrrList& r : level) r.clear();
  row_mask_.fill(0);
  for (auto& w : wait_) w.clear();
  next_event_.fill(kNone);
  to_free.splice_back(parked_);
  watchdog_ = 0;
}

void HtbQdisc::take_dequeue_drops(PacketList& out) noexcept {
  out.splice_back(parked_);
  for (Class* c : custom_children_) c->q->take_dequeue_drops(out);
}

// ---------------------------------------------------------------------------------------------
// Classes

std::vector<QdiscClassInfo> HtbQdisc::classes() const {
  std::vector<QdiscClassInfo> out;
  std::vector<const Class*> stack;
  std::vector<const Class*> tops;
  for (const auto& c : classes_)
    if (!c->parent) tops.push_back(c.get());
  auto by_minor_desc = [](const Class* a, const Class* b) { return a->minor > b->minor; };
  std::sort(tops.begin(), tops.end(), by_minor_desc);
  stack = tops;
  while (!stack.empty()) {  // depth-first, parents before children, minors ascending
    const Class* c = stack.back();
    stack.pop_back();
    out.push_back({.minor = c->minor,
                   .parent_minor = c->parent ? c->parent->minor : uint16_t{0},
                   .print_root = c->parent == nullptr,
                   .leaf = c->level == 0});
    std::vector<const Class*> kids(c->children.begin(), c->children.end());
    std::sort(kids.begin(), kids.end(), by_minor_desc);
    stack.insert(stack.end(), kids.begin(), kids.end());
  }
  return out;
}

QdiscStats HtbQdisc::class_stats(uint16_t minor) const {
  const Class* c = find(minor);
  if (!c) return {};
  QdiscStats s;
  s.bytes = c->bytes;
  s.packets = c->packets;
  s.drops = c->drops;
  s.overlimits = c->overlimits;
  if (c->level == 0) {
    s.qlen = c->q->qlen();
    s.backlog = c->q->backlog();
  }
  return s;
}

Xstats HtbQdisc::class_xstats(uint16_t minor) const {
  const Class* c = find(minor);
  if (!c) return {};
  auto ticks = [](int64_t ns) {  // psched ticks (ns >> 6), clamped to s32 as the kernel does
    return std::clamp<int64_t>(ns >> 6, std::numeric_limits<int32_t>::min(),
                               std::numeric_limits<int32_t>::max());
  };
  return {{"lended", static_cast<int64_t>(c->lends)},
          {"borrowed", static_cast<int64_t>(c->borrows)},
          {"giants", static_cast<int64_t>(c->giants)},
          {"tokens", ticks(c->tokens)},
          {"ctokens", ticks(c->ctokens)}};
}

DumpAttrs HtbQdisc::dump_options() const {
  return DumpAttrs()
      .number("r2q", r2q_)
      .number("default", defcls_)
      .number("direct_packets_stat", direct_pkts_)
      .word("ver", "3.17")
      .number("direct_qlen", direct_qlen_);
}

DumpAttrs HtbQdisc::class_dump(uint16_t minor) const {
  const Class* c = find(minor);
  if (!c) return {};
  const HtbClassConfig& cfg = c->cfg;
  DumpAttrs d;
  d.number("level", static_cast<uint64_t>(c->level));
  if (c->level == 0) d.number("prio", cfg.prio).number("quantum", cfg.quantum);
  return d.number("rate", cfg.rate)
      .number("overhead", cfg.overhead)
      .number("ceil", cfg.ceil)
      .word("linklayer", cfg.atm ? "atm" : "ethernet")
      .number("buffer", ns_to_ticks(static_cast<uint64_t>(c->buffer)))
      .number("cbuffer", ns_to_ticks(static_cast<uint64_t>(c->cbuffer)))
      .number("mpu", cfg.mpu);
}

Qdisc* HtbQdisc::child(uint16_t minor) noexcept {
  Class* c = find(minor);
  return c && c->level == 0 ? c->q.get() : nullptr;
}

void HtbQdisc::graft(uint16_t minor, std::unique_ptr<Qdisc> child, PacketList& to_free) {
  Class* c = find(minor);
  if (!c) throw ConfigRejected("htb has no class " + hex(handle_major_) + ":" + hex(minor));
  if (c->level != 0)
    throw ConfigRejected("htb class " + hex(handle_major_) + ":" + hex(minor) +
                         " is not a leaf: it has no qdisc to replace");
  const bool is_default = !child;
  if (!child) child = default_child();
  c->q->reset(to_free);
  c->q->take_dequeue_drops(to_free);
  sync_leaf(*c);
  update_activity(*c);
  c->q = std::move(child);
  c->seen_drops = c->q->drops();  // the new child's earlier drops are not this class's
  std::erase(custom_children_, c);
  c->default_child = is_default;
  if (!is_default) custom_children_.push_back(c);
  sync_leaf(*c);  // a child that already holds packets
  update_activity(*c);
}


void HtbQdisc::apply_config(Class& c, const HtbClassConfig& given) {
  HtbClassConfig cfg = given;
  c.quantum_given = cfg.quantum != 0;
  if (cfg.quantum == 0) {
    const uint64_t q = cfg.rate / r2q_;
    cfg.quantum = static_cast<uint32_t>(std::clamp<uint64_t>(q, 1000, 200000));
  }
  const bool reprio = c.level == 0 && c.activity && cfg.prio != c.cfg.prio;
  if (reprio) deactivate(c);
  c.cfg = cfg;
  c.rate = RateCfg{.rate = cfg.rate, .overhead = cfg.overhead, .mpu = cfg.mpu, .atm = cfg.atm};
  c.ceil = c.rate;
  c.ceil.rate = cfg.ceil;
  // The bucket depths: the times given (the kernel takes tc's buffer time as is), else the raw
  // burst bytes at the rates.
  c.buffer = ns(cfg.buffer_ns ? std::min(*cfg.buffer_ns, RateCfg::kMaxNs) : c.rate.bytes_to_ns(cfg.burst));
  c.cbuffer = ns(cfg.cbuffer_ns ? std::min(*cfg.cbuffer_ns, RateCfg::kMaxNs) : c.ceil.bytes_to_ns(cfg.cburst));
  if (reprio) activate(c);
}

void HtbQdisc::reserve_all(Class* parent) {
  const std::size_t n = classes_.size();
  for (auto& level : row_)
    for (DrrList& r : level) grow(r.v, n);
  for (auto& w : wait_) grow(w, n);
  // Only the parent of the class just added has one child more (every other feed list keeps its
  // capacity): not a walk over every class, which made building n classes O(n^2).
  if (parent)
    for (DrrList& f : parent->feed) grow(f.v, parent->children.size());
  grow(custom_children_, n);
}

void HtbQdisc::add_configured_class(uint16_t minor, uint16_t parent_minor,
                                    const HtbClassConfig& cfg, uint32_t child_limit) {
  const std::string id = hex(handle_major_) + ":" + hex(minor);
  if (minor == 0) throw ConfigRejected("class " + id + " is the qdisc itself");
  if (find(minor)) throw ConfigRejected("class " + id + " already exists");
  Class* parent = nullptr;
  if (parent_minor != 0) {
    parent = find(parent_minor);
    if (!parent)
      throw ConfigRejected("parent class " + hex(handle_major_) + ":" + hex(parent_minor) +
                           " does not exist");
    if (parent->parent && parent->parent->level < 2)
      throw ConfigRejected("sch_htb: tree is too deep. (max 8 levels)");  // the kernel's words
  }

  auto owned = std::make_unique<Class>();
  Class& c = *owned;
  c.minor = minor;
  c.parent = parent;
  c.level = 0;
  apply_config(c, cfg);
  c.tokens = c.buffer;
  c.ctokens = c.cbuffer;
  c.t_c = now();
  c.mode = Mode::can_send;
  c.q = std::make_unique<PfifoQdisc>(child_limit);
  by_minor_.reserve(minor);  // the last allocation that may fail before the tree changes

  if (parent && parent->level == 0) {
    // The leaf becomes an inner class: its queue is purged, its child destroyed.
    purge_leaf(*parent);
    if (parent->mode != Mode::can_send) {
      wait_remove(*parent);
      parent->mode = Mode::can_send;
    }
    std::erase(custom_children_, parent);
    parent->q.reset();
    parent->seen_qlen = parent->seen_backlog = 0;
    parent->level = (parent->parent ? parent->parent->level : kLevels) - 1;
    for (DrrList& f : parent->feed) f.clear();
  }
  if (parent) parent->children.push_back(&c);
  by_minor_.set(minor, &c);
  classes_.push_back(std::move(owned));
  reserve_all(parent);
}

void HtbQdisc::change_configured_class(uint16_t minor, const HtbClassConfig& cfg) {
  Class* c = find(minor);
  if (!c) throw ConfigRejected("class " + hex(handle_major_) + ":" + hex(minor) + " does not exist");
  apply_config(*c, cfg);
}

void HtbQdisc::delete_class(uint16_t minor) {
  Class* c = find(minor);
  const std::string id = hex(handle_major_) + ":" + hex(minor);
  if (!c) throw ConfigRejected("htb has no class " + id);
  if (!c->children.empty()) throw ConfigRejected("htb class " + id + " has children: delete them first");
  purge_leaf(*c);
  deactivate(*c);
  wait_remove(*c);
  std::erase(custom_children_, c);
  Class* parent = c->parent;
  by_minor_.clear(minor);
  if (parent) {
    std::erase(parent->children, c);
    if (parent->children.empty()) {
      // The last child went: the parent becomes a leaf again, with a fresh default child and
      // full buckets.
      if (parent->activity) deactivate_prios(*parent);  // (its feeds emptied with c's removal)
      wait_remove(*parent);
      for (DrrList& f : parent->feed) f.clear();
      parent->level = 0;
      parent->activity = 0;
      parent->q = default_child();
      parent->default_child = true;
      parent->seen_qlen = parent->seen_backlog = 0;
      parent->seen_drops = 0;
      parent->tokens = parent->buffer;
      parent->ctokens = parent->cbuffer;
      parent->t_c = now();
      parent->mode = Mode::can_send;
    }
  }
  std::erase_if(classes_, [c](const std::unique_ptr<Class>& x) { return x.get() == c; });
}

}  // namespace txpath
