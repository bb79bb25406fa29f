// SPDX-License-Identifier: MIT
#include "strategy/peer_queue.hpp"

#include <algorithm>
#include <mutex>

#include "base/clock.hpp"
#include "base/cpu_relax.hpp"
#include "engine/admission.hpp"
#include "txpath/error.hpp"
#include "txpath/pool.hpp"

namespace txpath {

PeerQueue::PeerQueue(Device& device, std::string_view name) : device_(device), name_(name) {
  // The drainer polls the device itself; the (empty) wake handler only claims the device.
  device_.attach_queue([] {});
}

PeerQueue::~PeerQueue() { shutdown(); }

void PeerQueue::start_drainer() {
  drainer_ = std::thread([this] { drainer_main(); });
}

void PeerQueue::shutdown() noexcept {
  if (shut_down_) return;  // ~PeerQueue calls it again, when push/pop are gone
  shut_down_ = true;
  if (drainer_.joinable()) {
    stop_.store(true, std::memory_order_release);  // release: pairs with the drainer's acquire
    drainer_.join();
  }
  device_.detach_queue();
  PacketList to_free;
  to_free.splice_back(pending_);
  Packet* burst[kBurst];
  for (std::size_t n; (n = pop_burst(burst, kBurst)) > 0;)
    for (std::size_t i = 0; i < n; ++i) to_free.push_back(burst[i]);
  purged_.add(to_free.size());
  pending_count_.set(0);
  free_packets(std::move(to_free));
}

SendStatus PeerQueue::send(Packet* p) noexcept {
  if (const SendStatus refused = admission(p, device_.max_frame_len());
      refused != SendStatus::queued) [[unlikely]]
    return refused;
  submitted_.add(1);
  if (push(p)) return SendStatus::queued;
  dropped_.add(1);
  PacketList victim;
  victim.push_back(p);
  free_packets(std::move(victim));
  return SendStatus::dropped;
}

std::size_t PeerQueue::send_burst(std::span<Packet* const> packets,
                                  std::span<SendStatus> status) noexcept {
  const std::size_t n = std::min(packets.size(), status.size());
  const uint32_t max_len = device_.max_frame_len();
  Packet* admitted[kBurst];
  std::size_t at[kBurst];  // admitted[j] is packets[at[j]]
  std::size_t m = 0, accepted = 0;
  for (std::size_t i = 0; i < n; ++i) {
    status[i] = admission(packets[i], max_len);  // too_big, invalid, in_flight stay out
    if (status[i] != SendStatus::queued) [[unlikely]]
      continue;
    admitted[m] = packets[i];
    at[m++] = i;
    ++accepted;
    if (m == kBurst) {
      push_or_drop(admitted, at, m, status);
      m = 0;
    }
  }
  if (m > 0) push_or_drop(admitted, at, m, status);
  return accepted;
}

void PeerQueue::push_or_drop(Packet* const* admitted, const std::size_t* at, std::size_t n,
                             std::span<SendStatus> status) noexcept {
  submitted_.add(n);
  const std::size_t pushed = push_burst(admitted, n);
  if (pushed == n) return;
  PacketList victims;
  for (std::size_t j = pushed; j < n; ++j) {
    status[at[j]] = SendStatus::dropped;
    victims.push_back(admitted[j]);
  }
  dropped_.add(victims.size());
  free_packets(std::move(victims));
}

int PeerQueue::xmit_pending() noexcept {
  int sent = 0;
  std::lock_guard tx(device_.tx_lock());
  while (!pending_.empty() && !device_.stopped()) {
    Packet* p = pending_.pop_front();
    if (device_.xmit_sampled(p, !pending_.empty()) != XmitResult::ok) {
      pending_.push_front(p);
      break;
    }
    ++sent;
  }
  sent_.add(static_cast<uint64_t>(sent));
  pending_count_.set(pending_.size());
  return sent;
}

void PeerQueue::drainer_main() {
  Packet* burst[kBurst];
  unsigned idle = 0;
  // acquire: pairs with the release store in shutdown().
  while (!stop_.load(std::memory_order_acquire)) {
    // acquire: pairs with drain()'s fetch_add; what senders pushed before drain() is visible.
    const uint64_t req = drain_req_.load(std::memory_order_acquire);
    const uint64_t poll_at = device_.next_poll_ns();
    if (poll_at != 0 && poll_at <= now_ns()) device_.poll();
    serve_snapshot();  // between bursts: pending_ and the counters agree here

    if (pending_.empty()) {
      const std::size_t n = pop_burst(burst, kBurst);
      for (std::size_t i = 0; i < n; ++i) pending_.push_back(burst[i]);
      pending_count_.set(pending_.size());
    }
    if (!pending_.empty() && xmit_pending() > 0) {
      idle = 0;
      continue;
    }
    if (pending_.empty() && size() == 0) {
      // release: pairs with drain()'s acquire load; our counters are final for this request.
      drain_ack_.store(req, std::memory_order_release);
    }
    // Idle (or the device is stopped): spin a little, then yield, then nap — a real TX core
    // would spin forever; on a machine with fewer cores than threads that would starve senders.
    // Not spin_then_park (park.hpp): this wait has no notifier. It ends on any of a sender's
    // push into the subclass's queue, a device poll deadline or restart, a drain() request or
    // shutdown; parking would need one word that all of them bump and notify, i.e. an RMW and a
    // notify on every send() (the hot path the peers exist to measure without extra cost).
    if (++idle < 256) {
      cpu_relax();
    } else if (idle < 1024) {
      sched_yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
}

bool PeerQueue::drain(std::chrono::milliseconds timeout) {
  // acq_rel: publishes "senders have stopped" to the drainer (pairs with its acquire load).
  const uint64_t req = drain_req_.fetch_add(1, std::memory_order_acq_rel) + 1;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    // acquire: pairs with the drainer's release store of the acknowledgement.
    if (drain_ack_.load(std::memory_order_acquire) >= req && device_.in_flight() == 0) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

TxQueueStats PeerQueue::stats() const {
  TxQueueStats s;
  s.submitted = submitted_.sum();
  s.sent = sent_.get();
  s.dropped = dropped_.sum() + purged_.get();
  s.queued = size() + pending_count_.get();
  s.device = device_.stats();
  s.batches = s.device.doorbells;
  return s;
}

void PeerQueue::serve_snapshot() noexcept {
  // relaxed: a hint, one load per burst; the request itself is read under snapshot_mutex_.
  if (snapshot_req_.load(std::memory_order_relaxed) == snapshot_served_) return;
  std::lock_guard lock(snapshot_mutex_);
  snapshot_ = stats();
  snapshot_served_ = snapshot_req_.load(std::memory_order_relaxed);  // relaxed: under the mutex
  snapshot_cv_.notify_all();
}

std::optional<TxQueueStats> PeerQueue::consistent_stats(std::chrono::milliseconds timeout) {
  std::unique_lock lock(snapshot_mutex_);
  // relaxed: under snapshot_mutex_, which the drainer takes before it answers; its unlocked
  // read of the counter is only a hint (a request it misses is seen at its next burst).
  const uint64_t req = snapshot_req_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (!snapshot_cv_.wait_for(lock, timeout, [&] { return snapshot_served_ >= req; }))
    return std::nullopt;
  return snapshot_;
}

}  // namespace txpath
