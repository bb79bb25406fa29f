// SPDX-License-Identifier: MIT
#include "device/fault_device.hpp"

#include <charconv>
#include <mutex>
#include <string>
#include <utility>

#include "base/clock.hpp"
#include "txpath/error.hpp"
#include "txpath/frame.hpp"
#include "txpath/pool.hpp"

namespace txpath {

namespace {

std::string fmt_double(double v) {
  char buf[64];
  // Shortest fixed notation that round-trips: "10", "0.05", "0.00001" (no exponent to parse).
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
  return std::string(buf, r.ptr);
}

FaultConfig validated(FaultConfig c) {
  if (!(c.busy_prob >= 0.0 && c.busy_prob <= 1.0)) {  // also rejects NaN
    throw ConfigError("fault: busy=" + fmt_double(c.busy_prob) + " must be in [0, 1]");
  }
  if (!(c.stop_prob >= 0.0 && c.stop_prob <= 1.0)) {
    throw ConfigError("fault: stop=" + fmt_double(c.stop_prob) + " must be in [0, 1]");
  }
  if (c.max_stop_ns > 60'000'000'000ull) {
    throw ConfigError("fault: stop_ns=" + std::to_string(c.max_stop_ns) +
                      " must be at most 60000000000 (one minute)");
  }
  if (!c.order_key) c.order_key = [](const Packet& p) { return p.priority; };
  return c;
}

}  // namespace

FaultDevice::FaultDevice(FaultConfig config)
    : Device(config.mtu),
      cfg_(validated(std::move(config))),
      rng_(cfg_.seed),
      last_seq_(std::size_t{kMaxSenders} * kMaxKeys, 0),
      sent_by_(kMaxSenders) {}

FaultDevice::~FaultDevice() { free_packets(std::move(pending_)); }

std::string FaultDevice::describe() const {
  std::string s = "fault:busy=" + fmt_double(cfg_.busy_prob) +
                  ",stop=" + fmt_double(cfg_.stop_prob) +
                  ",stop_ns=" + std::to_string(cfg_.max_stop_ns) +
                  ",seed=" + std::to_string(cfg_.seed);
  if (cfg_.mtu != 1500) s += ",mtu=" + std::to_string(cfg_.mtu);
  return s;
}

uint64_t FaultDevice::next_u64() noexcept {
  // splitmix64: a 64-bit state stepped by the golden-ratio increment and mixed; every seed
  // (including 0) gives a full-period, well-mixed stream.
  uint64_t z = (rng_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double FaultDevice::uniform() noexcept {
  return static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
}

void FaultDevice::fault_stop() noexcept {
  // Draw first, so that the RNG stream does not depend on the queue state.
  const uint64_t span = cfg_.max_stop_ns;
  const uint64_t delay = span == UINT64_MAX ? next_u64() : next_u64() % (span + 1);
  if (drv_stopped_) return;  // keep the earlier wake time
  flush();  // doorbell before stopping: nothing accepted stays unannounced
  drv_stopped_ = true;
  // relaxed: a hint for next_poll_ns() readers; poll() re-reads it under tx_lock, where the lock
  // orders it against this store.
  wake_at_.store(now_ns() + delay, std::memory_order_relaxed);
  stop_queue();
}

void FaultDevice::flush() noexcept {
  if (pending_.empty()) return;
  doorbells_.add(1);
  const uint64_t n = pending_.size();
  free_packets(std::move(pending_));
  completed_.add(n);
}

void FaultDevice::record(const Packet& p) noexcept {
  const auto info = parse_frame(p.frame());
  if (!info) {
    unparsable_.add(1);
    return;
  }
  const uint32_t key = cfg_.order_key(p);
  if (info->sender >= kMaxSenders || key >= kMaxKeys) {
    untracked_.add(1);
    return;
  }
  sent_by_[info->sender].add(1);
  uint64_t& last = last_seq_[std::size_t{info->sender} * kMaxKeys + key];
  // Stored as seq + 1 (0 = none yet); a seq of UINT64_MAX wraps to 0 and is simply not checked
  // against the next one.
  if (last != 0 && info->seq + 1 <= last) order_violations_.add(1);
  last = info->seq + 1;
}

XmitResult FaultDevice::xmit(Packet* p, bool more) noexcept {
  if (drv_stopped_) {
    flush();
    busy_.add(1);
    return XmitResult::busy;
  }
  if (uniform() < cfg_.busy_prob) {
    if (uniform() < 0.5) fault_stop();
    flush();
    busy_.add(1);
    return XmitResult::busy;
  }
  tx_packets_.add(1);
  tx_bytes_.add(p->len);
  record(*p);
  pending_.push_back(p);
  if (uniform() < cfg_.stop_prob) fault_stop();  // flushes pending first
  if (!more) flush();
  return XmitResult::ok;
}

void FaultDevice::poll() noexcept {
  std::lock_guard lock(tx_lock());
  // relaxed: written only under tx_lock, which we hold.
  if (!drv_stopped_ || now_ns() < wake_at_.load(std::memory_order_relaxed)) return;
  drv_stopped_ = false;
  // relaxed: see fault_stop().
  wake_at_.store(0, std::memory_order_relaxed);
  wake_queue();
}

uint64_t FaultDevice::next_poll_ns() const noexcept {
  // relaxed: a hint (see fault_stop()).
  return wake_at_.load(std::memory_order_relaxed);
}

uint64_t FaultDevice::in_flight() const noexcept {
  // Two relaxed counter reads (written under tx_lock): clamp rather than underflow.
  const uint64_t done = completed_.get();
  const uint64_t sent = tx_packets_.get();
  return sent > done ? sent - done : 0;
}

uint64_t FaultDevice::sent_by(uint32_t sender) const noexcept {
  return sender < kMaxSenders ? sent_by_[sender].get() : 0;
}

}  // namespace txpath
