// SPDX-License-Identifier: MIT
// tbf: token bucket shaper (see tbf.hpp for the algorithm and invariants) and its tc option
// parser. Origin: written from Linux sch_tbf semantics and tc-tbf(8); no code copied.
//
// Grammar (tokens after "tbf"; option names exact, "lat" also accepted for latency as tc's
// prefix matching does):
//   rate RATE  burst|buffer|maxburst BYTES[/CELL]  ( latency|lat TIME | limit BYTES )
//   [mpu BYTES] [peakrate RATE  mtu|minburst BYTES[/CELL]] [overhead N] [linklayer ethernet|atm|adsl]
// rate, burst and one of latency/limit are mandatory; peakrate needs mtu and must exceed rate.
// latency becomes limit = min(rate * latency + burst, peakrate * latency + mtu), as tc computes
// it. CELL (a power of two) only sized tc's legacy rate tables: it is checked and ignored. mtu
// without peakrate is accepted and ignored (tc uses it for the rate table only).
// Every error is one line, via QdiscOptions::fail().
#include "qdisc/tbf.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <optional>
#include <string>

#include "core/clock.hpp"
#include "qdisc/fifo.hpp"
#include "qdisc/spec.hpp"
#include "qdisc/tc_units.hpp"
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

double TbfQdisc::latency_ns() const noexcept {
  double latency = static_cast<double>(cfg_.limit) * 1e9 / static_cast<double>(cfg_.rate) -
                   static_cast<double>(buffer_);
  if (cfg_.peakrate) {
    const double lat2 = static_cast<double>(cfg_.limit) * 1e9 / static_cast<double>(cfg_.peakrate) -
                        static_cast<double>(mtu_ns_);
    latency = std::max(latency, lat2);
  }
  return latency;
}

std::string TbfQdisc::options() const {
  // As tc prints it: burst/minburst as the bucket depth times the rate, i.e. the wire size the
  // bucket holds (overhead, mpu and ATM cells included); "lat" when the limit leaves a
  // non-negative queueing latency, else the limit itself.
  std::string s = "rate " + tc::format_rate(cfg_.rate) + " burst " + tc::format_size(wire_len(cfg_.burst));
  if (cfg_.peakrate) {
    s += " peakrate " + tc::format_rate(cfg_.peakrate) + " minburst " +
         tc::format_size(wire_len(cfg_.minburst));
  }
  const double latency = latency_ns();
  if (latency >= 0) {
    s += " lat " + tc::format_time(static_cast<uint64_t>(latency));
  } else {
    s += " limit " + tc::format_size(cfg_.limit);
  }
  if (cfg_.overhead) s += " overhead " + std::to_string(cfg_.overhead);
  if (cfg_.atm) s += " linklayer atm";
  return s;
}

std::string TbfQdisc::options_json() const {
  std::string s = "{\"rate\":" + std::to_string(cfg_.rate) +
                  ",\"burst\":" + std::to_string(wire_len(cfg_.burst));
  if (cfg_.peakrate) s += ",\"minburst\":" + std::to_string(wire_len(cfg_.minburst));
  const double latency = latency_ns();
  if (latency >= 0) {
    s += ",\"lat\":" + std::to_string(static_cast<uint64_t>(latency) / 1000);  // usec
  } else {
    s += ",\"limit\":" + std::to_string(cfg_.limit);
  }
  if (cfg_.overhead) s += ",\"overhead\":" + std::to_string(cfg_.overhead);
  if (cfg_.atm) s += ",\"linklayer\":\"atm\"";
  s += "}";
  return s;
}

// ---------------------------------------------------------------------------------------------
// Option parsing

namespace {

constexpr uint64_t kU32 = std::numeric_limits<uint32_t>::max();

// The options as given (none has a default before all are read).
struct TbfArgs {
  std::optional<uint64_t> rate, peakrate, burst, mtu, limit, latency_ns;
  std::optional<uint32_t> mpu, overhead;
  std::optional<bool> atm;
};

// SIZE[/CELL] of "burst" or "mtu" (`name`; `opt` is the spelling given), at most 4 GiB.
uint64_t parse_bucket(const QdiscOptions& o, std::string_view opt, std::string_view name,
                      std::string_view v) {
  const auto sc = tc::parse_size_cell(v);
  if (!sc) fail_illegal(o, opt, v);
  if (name == "burst" && *sc == 0) o.fail("\"burst\" must be greater than 0");
  if (*sc > kU32) o.fail(quoted(name) + " " + quoted(v) + " is out of range (max 4294967295 bytes)");
  return *sc;
}

// The limit or the latency (they exclude each other).
void parse_queue_bound(const QdiscOptions& o, std::string_view opt, std::string_view v, TbfArgs& a) {
  if (opt == "limit") {
    a.limit = tc::parse_size(v);
    if (!a.limit) fail_illegal(o, opt, v);
    if (*a.limit > kU32) o.fail("\"limit\" " + quoted(v) + " is out of range (max 4294967295 bytes)");
  } else {
    a.latency_ns = tc::parse_time_ns(v);
    if (!a.latency_ns) fail_illegal(o, "latency", v);
  }
}

// Option o[i] and its value (i advances past it).
void parse_tbf_option(const QdiscOptions& o, std::size_t& i, TbfArgs& a) {
  const std::string_view opt = o[i];
  if (opt == "rate" || opt == "peakrate") {
    auto& slot = opt == "rate" ? a.rate : a.peakrate;
    fail_if_seen(o, slot.has_value(), opt);
    const std::string_view v = o.value(i);
    slot = tc::parse_rate(v);
    if (!slot) fail_illegal(o, opt, v);
    if (*slot == 0) o.fail(quoted(opt) + " must be greater than 0");
  } else if (opt == "burst" || opt == "buffer" || opt == "maxburst" || opt == "mtu" || opt == "minburst") {
    const bool is_burst = opt[0] == 'b' || opt == "maxburst";
    auto& slot = is_burst ? a.burst : a.mtu;
    fail_if_seen(o, slot.has_value(), is_burst ? "burst" : "mtu");
    slot = parse_bucket(o, opt, is_burst ? "burst" : "mtu", o.value(i));
  } else if (opt == "limit" || opt == "latency" || opt == "lat") {
    fail_if_seen(o, opt == "limit" ? a.limit.has_value() : a.latency_ns.has_value(),
                 opt == "limit" ? "limit" : "latency");
    if (opt == "limit" ? a.latency_ns.has_value() : a.limit.has_value())
      o.fail("specifying both \"latency\" and \"limit\" is not allowed");
    parse_queue_bound(o, opt, o.value(i), a);
  } else if (opt == "mpu") {
    fail_if_seen(o, a.mpu.has_value(), "mpu");
    const std::string_view v = o.value(i);
    const auto b = tc::parse_size(v);
    if (!b) fail_illegal(o, opt, v);
    if (*b > 65535) o.fail("\"mpu\" " + quoted(v) + " is out of range (max 65535 bytes)");
    a.mpu = static_cast<uint32_t>(*b);
  } else if (opt == "overhead") {
    fail_if_seen(o, a.overhead.has_value(), "overhead");
    a.overhead = parse_u16_option(o, opt, o.value(i));
  } else if (opt == "linklayer") {
    fail_if_seen(o, a.atm.has_value(), "linklayer");
    a.atm = parse_linklayer_atm(o, o.value(i));
  } else {
    o.fail("unknown option " + quoted(opt) +
           " (known: rate, burst, buffer, maxburst, latency, limit, mpu, peakrate, mtu, minburst, "
           "overhead, linklayer)");
  }
}

// The mandatory options and how they fit together.
void check_tbf_args(const QdiscOptions& o, const TbfArgs& a) {
  if (!a.rate) o.fail("\"rate\" is required");
  if (!a.burst) o.fail("\"burst\" is required");
  if (!a.limit && !a.latency_ns) o.fail("either \"limit\" or \"latency\" is required");
  if (a.peakrate) {
    if (!a.mtu || *a.mtu == 0) o.fail("\"mtu\" is required, if \"peakrate\" is requested");
    if (*a.peakrate <= *a.rate)
      o.fail("peakrate " + tc::format_rate(*a.peakrate) + " must be greater than rate " +
             tc::format_rate(*a.rate));
  }
}

// The configuration of checked arguments; a latency becomes the limit tc computes for it.
TbfConfig tbf_config(const QdiscOptions& o, const TbfArgs& a) {
  const auto& [rate, peakrate, burst, mtu, limit, latency_ns, mpu, overhead, atm] = a;
  TbfConfig cfg;
  cfg.rate = *rate;
  cfg.burst = *burst;
  cfg.peakrate = peakrate.value_or(0);
  cfg.minburst = peakrate ? *mtu : 0;
  cfg.mpu = mpu.value_or(0);
  cfg.overhead = overhead.value_or(0);
  cfg.atm = atm.value_or(false);
  if (limit) {
    if (*limit == 0) o.fail("\"limit\" must be greater than 0");
    cfg.limit = static_cast<uint32_t>(*limit);
  } else {
    // tc: limit = rate * latency + burst, or the peak bucket's equivalent if smaller.
    const double secs = static_cast<double>(*latency_ns) / 1e9;
    double lim = static_cast<double>(cfg.rate) * secs + static_cast<double>(cfg.burst);
    if (cfg.peakrate)
      lim = std::min(lim, static_cast<double>(cfg.peakrate) * secs + static_cast<double>(cfg.minburst));
    if (!(lim < 4294967296.0))
      o.fail("latency " + tc::format_time(*latency_ns) + " gives a limit above 4294967295 bytes");
    cfg.limit = static_cast<uint32_t>(lim);
  }
  return cfg;
}

}  // namespace

std::unique_ptr<Qdisc> make_tbf(const QdiscOptions& o, const QdiscEnv& env) {
  TbfArgs args;
  for (std::size_t i = 0; i < o.size(); ++i) parse_tbf_option(o, i, args);
  check_tbf_args(o, args);
  return std::make_unique<TbfQdisc>(tbf_config(o, args), env.clock, env.psched_mtu());
}

}  // namespace txpath
