// SPDX-License-Identifier: MIT
// Peer baseline `peer:mutex_deque`: the plainest thing that works — std::mutex around a
// std::deque<Packet*> (which allocates in chunks as it grows: a baseline, not a hot path), one
// drainer thread taking bursts under the same mutex. Capacity: txqueuelen packets.
#include <deque>
#include <mutex>

#include "strategy/peer_queue.hpp"

namespace txpath {

namespace {

class MutexDequeQueue : public PeerQueue {
 public:
  MutexDequeQueue(Device& device, const TxQueueConfig& config)
      : PeerQueue(device, "peer:mutex_deque"), limit_(std::max<uint32_t>(config.txqueuelen, 1)) {}

 protected:
  bool push(Packet* p) noexcept override {
    std::lock_guard lock(mutex_);
    if (queue_.size() >= limit_) return false;
    queue_.push_back(p);
    size_.store(queue_.size(), std::memory_order_relaxed);  // relaxed: a hint for size()
    return true;
  }
  // One mutex hold for the whole burst.
  std::size_t push_burst(Packet* const* ps, std::size_t n) noexcept override {
    std::lock_guard lock(mutex_);
    const std::size_t k = std::min(n, limit_ - std::min(limit_, queue_.size()));
    queue_.insert(queue_.end(), ps, ps + k);
    size_.store(queue_.size(), std::memory_order_relaxed);  // relaxed: a hint for size()
    return k;
  }
  std::size_t pop_burst(Packet** out, std::size_t n) noexcept override {
    std::lock_guard lock(mutex_);
    std::size_t got = 0;
    while (got < n && !queue_.empty()) {
      out[got++] = queue_.front();
      queue_.pop_front();
    }
    size_.store(queue_.size(), std::memory_order_relaxed);  // relaxed: a hint for size()
    return got;
  }
  uint64_t size() const noexcept override {
    // relaxed: a hint while running; exact at quiescence, after the mutex hand-offs.
    return size_.load(std::memory_order_relaxed);
  }

 private:
  const std::size_t limit_;
  std::mutex mutex_;
  std::deque<Packet*> queue_;
  std::atomic<std::size_t> size_{0};
};

}  // namespace

std::unique_ptr<PeerQueue> make_peer_mutex_deque(Device& device, const TxQueueConfig& config) {
  return std::make_unique<FinalizedPeer<MutexDequeQueue>>(device, config);
}

}  // namespace txpath
