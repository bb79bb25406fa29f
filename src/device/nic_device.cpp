// SPDX-License-Identifier: MIT
#include "device/nic_device.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <mutex>
#include <string>
#include <utility>

#include "base/clock.hpp"
#include "txpath/error.hpp"
#include "txpath/pool.hpp"

namespace txpath {

namespace {

constexpr uint32_t kMaxRing = 1u << 20;
constexpr uint32_t kMinFrame = 60;     // Ethernet minimum without FCS; shorter frames are padded
constexpr uint32_t kWireOverhead = 24;  // preamble+SFD 8, FCS 4, inter-frame gap 12

const NicConfig& validated(const NicConfig& c) {
  if (c.ring < 2 || c.ring > kMaxRing || (c.ring & (c.ring - 1)) != 0) {
    throw ConfigError("nic: ring=" + std::to_string(c.ring) +
                      " must be a power of two in [2, " + std::to_string(kMaxRing) + "]");
  }
  if (!(c.rate_gbit >= 1e-5 && c.rate_gbit <= 1e4)) {  // also rejects NaN
    throw ConfigError("nic: rate must be in [0.00001, 10000] Gbit/s");
  }
  if (c.clean_batch < 1 || c.clean_batch > c.ring) {
    throw ConfigError("nic: clean=" + std::to_string(c.clean_batch) + " must be in [1, ring=" +
                      std::to_string(c.ring) + "]");
  }
  if (c.pkt_ns > 1'000'000'000 || c.doorbell_ns > 1'000'000'000) {
    throw ConfigError("nic: pkt and doorbell costs must be at most 1000000000 ns");
  }
  return c;
}

std::string fmt_double(double v) {
  char buf[64];
  // Shortest fixed notation that round-trips: "10", "0.05", "0.00001" (no exponent to parse).
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
  return std::string(buf, r.ptr);
}

}  // namespace

NicWire::NicWire() : epoch_ns(now_ns()) {}

uint64_t NicWire::reserve(uint64_t now_ps, uint64_t ps) noexcept {
  // relaxed: the wire clock publishes nothing but itself; the CAS makes each batch's interval
  // [start, start + ps) disjoint from every other ring's.
  uint64_t busy_until = free_ps.load(std::memory_order_relaxed);
  uint64_t start;
  do {
    start = std::max(now_ps, busy_until);
  } while (!free_ps.compare_exchange_weak(busy_until, start + ps, std::memory_order_relaxed));
  return start;
}

NicDevice::NicDevice(const NicConfig& config, std::shared_ptr<NicWire> wire)
    : PolledDevice(config.mtu),
      cfg_(validated(config)),
      mask_(cfg_.ring - 1),
      wake_free_(std::max<uint64_t>(1, cfg_.ring / 4)),
      ps_per_byte_(8000.0 / cfg_.rate_gbit),
      ring_(cfg_.ring),
      wire_(wire ? std::move(wire) : std::make_shared<NicWire>()),
      epoch_ns_(wire_->epoch_ns) {
  if (cfg_.bql) enable_bql(cfg_.dql);
}

NicDevice::~NicDevice() {
  // Nobody else can hold tx_lock now; hand back whatever is still in the ring.
  PacketList rest;
  for (uint64_t i = head_; i != tail_; ++i) {
    rest.push_back(std::exchange(ring_[i & mask_].pkt, nullptr));
  }
  free_packets(std::move(rest));
}

std::string NicDevice::describe() const {
  const NicConfig def;
  std::string s = "nic:pkt=" + std::to_string(cfg_.pkt_ns) +
                  ",doorbell=" + std::to_string(cfg_.doorbell_ns) +
                  ",ring=" + std::to_string(cfg_.ring) + ",rate=" + fmt_double(cfg_.rate_gbit);
  if (cfg_.clean_batch != def.clean_batch) s += ",clean=" + std::to_string(cfg_.clean_batch);
  if (cfg_.bql != def.bql) s += cfg_.bql ? ",bql=1" : ",bql=0";
  if (cfg_.irq_ns != def.irq_ns) s += ",irq=" + std::to_string(cfg_.irq_ns);
  if (cfg_.mtu != def.mtu) s += ",mtu=" + std::to_string(cfg_.mtu);
  return s;
}

double NicDevice::wire_ns(uint32_t len) const noexcept {
  return static_cast<double>(std::max(len, kMinFrame) + kWireOverhead) * ps_per_byte_ / 1000.0;
}

XmitResult NicDevice::xmit(Packet* p, bool more) noexcept {
  // Clean on xmit, in batches: only once clean_batch visible descriptors are due. Completion
  // times are non-decreasing along the ring, so checking the clean_batch-th one suffices.
  if (visible_ - head_ >= cfg_.clean_batch) {
    const uint64_t now = now_ns();
    if (ring_[(head_ + cfg_.clean_batch - 1) & mask_].done_ns <= now) reap(now);
  }

  if (used() == cfg_.ring) {
    // NETDEV_TX_BUSY: stop, and announce whatever is pending so nothing is left unannounced.
    driver_stop();
    if (visible_ != tail_) ring_doorbell();
    busy_.add(1);
    return XmitResult::busy;
  }

  busy_wait_ns(cfg_.pkt_ns);  // the descriptor write and driver bookkeeping
  ring_[tail_ & mask_] = Slot{p, 0};
  ++tail_;
  tx_packets_.add(1);
  tx_bytes_.add(p->len);
  bql_sent(p->len);

  const bool full = used() == cfg_.ring;
  if (full) driver_stop();  // stop before the next xmit would find no room
  if (!more || full || stopped()) {
    ring_doorbell();
  } else {
    publish_hints();
  }
  return XmitResult::ok;
}

void NicDevice::ring_doorbell() noexcept {
  busy_wait_ns(cfg_.doorbell_ns);  // the uncached MMIO tail write
  const uint64_t now_ps = (std::max(now_ns(), epoch_ns_) - epoch_ns_) * 1000;
  // The wire serialises frames: each starts when both it is visible and the previous is done
  // (the previous of any ring on the same wire: the batch's time is reserved in one step).
  // First pass: each frame's wire time (kept in done_ns until the second pass) and the sum.
  uint64_t batch_ps = 0;
  for (uint64_t i = visible_; i != tail_; ++i) {
    Slot& s = ring_[i & mask_];
    const uint32_t wire_bytes = std::max(s.pkt->len, kMinFrame) + kWireOverhead;
    s.done_ns = static_cast<uint64_t>(std::llround(wire_bytes * ps_per_byte_));
    batch_ps += s.done_ns;
  }
  uint64_t t = wire_->reserve(now_ps, batch_ps);
  for (; visible_ != tail_; ++visible_) {
    Slot& s = ring_[visible_ & mask_];
    t += s.done_ns;
    s.done_ns = epoch_ns_ + (t + 999) / 1000;  // round up: never complete early
  }
  doorbells_.add(1);
  publish_hints();
}

void NicDevice::reap(uint64_t now) noexcept {
  last_clean_ns_ = now;
  PacketList done;
  while (head_ != visible_) {
    Slot& s = ring_[head_ & mask_];
    if (s.done_ns > now) break;
    done.push_back(std::exchange(s.pkt, nullptr));
    ++head_;
  }
  if (!done.empty()) {
    const uint64_t n = done.size();
    const uint64_t bytes = done.bytes();
    free_packets(std::move(done));  // one pass, one pool lock per run of same-pool packets
    completed_.add(n);
    bql_completed(n, bytes, now);  // may wake the queue (if the driver does not hold it)
  }
  if (drv_stopped_ && cfg_.ring - used() >= wake_free_) {
    drv_stopped_ = false;
    wake_queue();  // wakes (and notifies) unless BQL still holds the queue
  }
  publish_hints();
}

void NicDevice::poll() noexcept {
  std::lock_guard lock(tx_lock());
  reap(now_ns());
}

void NicDevice::driver_stop() noexcept {
  if (drv_stopped_) return;
  drv_stopped_ = true;
  stop_queue();
}

void NicDevice::publish_hints() noexcept {
  // The next completion interrupt: see the header comment.
  const uint64_t next =
      head_ != visible_ ? std::max(ring_[head_ & mask_].done_ns, last_clean_ns_ + cfg_.irq_ns) : 0;
  store_hints(tail_ - head_, next);
}

}  // namespace txpath
